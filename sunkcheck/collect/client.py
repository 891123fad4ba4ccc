"""The kubernetes client's Configuration and urllib3 transport, imported without the package __init__s a check
never needs, and what sunkcheck sets on that Configuration: a kubeconfig's connection and credentials (inline
certificates as private temporary files), a proxy's credentials, one warning for a server whose certificate is not
verified; and the exchanges its connections belong to, which another thread can end at any moment."""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.machinery
import importlib.util
import os
import socket
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Any

from sunkcheck import scratch

_IMPORTING = threading.Lock()  # transport's bare package must never be seen by another thread's import
_TEMP_FILES: dict[bytes, str] = {}


def transport() -> tuple[ModuleType, ModuleType]:
    """The kubernetes client's Configuration and REST transport (its urllib3 pool, TLS and proxy set up as
    the client does), imported without the package __init__s of `kubernetes`, `kubernetes.utils` and
    `urllib3.http2`, which a check never needs: a quarter of a second of every live run (docs/kubernetes-client.md).
    Each is a bare stand-in while these modules import, removed at once: a later import of one runs its real
    __init__, which finds the modules already loaded."""
    with _IMPORTING:
        bare = [name for name in ("kubernetes", "kubernetes.utils", "urllib3.http2") if name not in sys.modules]
        for name in bare:
            sys.modules[name] = _uninitialised(name)
        try:
            from kubernetes.client import configuration, rest
        finally:
            for name in bare:
                del sys.modules[name]
    return configuration, rest


def pool_manager(rest: ModuleType, cfg: Any) -> Any:
    """The client's urllib3 pool manager for `cfg` (direct, through an HTTP proxy or a SOCKS one), its connections
    joining the Exchange of the thread that sends each request."""
    manager = rest.RESTClientObject(cfg).pool_manager
    manager.pool_classes_by_scheme = {scheme: _joining(pool) for scheme, pool in manager.pool_classes_by_scheme.items()}
    return manager


_CURRENT = threading.local()  # the Exchange the requests this thread sends belong to


class Exchange:
    """One request, which another thread (a deadline, a watch stopped) can end at any moment: connecting, waiting
    for the status line and headers, reading the body. Every socket timeout bounds one wait alone, so a server
    sending a byte every few seconds holds a request for as long as it likes; ending it here shuts its connection
    down, and the thread sending it is released at once, whatever it waits for. `with exchange:` around the
    request, in the thread that sends it."""

    def __init__(self) -> None:
        self.why = ""
        """Why it was ended (empty while it was not): the first reason given."""
        self._lock = threading.Lock()
        self._connection: Any = None
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Exchange:
        _CURRENT.exchange = self
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.exchange = None
        self.end_in(None)
        with self._lock:
            self._connection = None  # pooled again from here on: another request's

    def end_in(self, seconds: float | None, why: str = "") -> None:
        """End it, saying `why`, `seconds` from now unless this is called again first (None: not on a timer)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None
            if seconds is not None:
                self._timer = threading.Timer(max(seconds, 0.0), self.end, (why,))
                self._timer.daemon = True
                self._timer.start()

    def end(self, why: str) -> None:
        """End it now: its connection shut down (not closed: closing waits for the lock of the read under way in the
        other thread; a shut-down socket ends that read at once), and any it connects with refused."""
        with self._lock:
            self.why = self.why or why
            _shut(self._connection)

    def join(self, connection: Any) -> None:
        """`connection` is the one this exchange sends on; an OSError when it was ended already."""
        with self._lock:
            self._connection = connection
            if self.why:
                raise ConnectionAbortedError(f"the request was abandoned: {self.why}")


def _shut(connection: Any) -> None:
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


@functools.cache
def _joining(pool: Any) -> type:
    """`pool` (a urllib3 connection pool class) whose connections join their thread's Exchange when they connect
    (a proxy's CONNECT included) and as each request is sent on them."""
    base = pool.ConnectionCls

    def connect(self: Any) -> None:
        _join(self)
        base.connect(self)

    def request(self: Any, *args: Any, **kwargs: Any) -> None:
        _join(self)
        base.request(self, *args, **kwargs)

    connection = type(base.__name__, (base,), {"connect": connect, "request": request})
    return type(pool.__name__, (pool,), {"ConnectionCls": connection})


def _join(connection: Any) -> None:
    exchange = getattr(_CURRENT, "exchange", None)
    if exchange is not None:
        exchange.join(connection)


def in_cluster_loader() -> tuple[type[Exception], Any]:
    """The client's in-cluster config loader and the error it raises, imported under `transport`'s lock: no import
    may run while a bare stand-in holds the name `kubernetes`."""
    with _IMPORTING:
        from kubernetes.config import ConfigException
        from kubernetes.config.incluster_config import InClusterConfigLoader
    return ConfigException, InClusterConfigLoader


def _uninitialised(name: str) -> ModuleType:
    """Package `name` as a module whose __init__ has not run (its submodules import as usual), found without
    importing its parent."""
    parent, _, _ = name.rpartition(".")
    spec = importlib.util.find_spec(parent) if parent else None
    found = importlib.machinery.PathFinder.find_spec(name, spec.submodule_search_locations if spec else None)
    assert found is not None  # dependencies of sunkcheck
    return importlib.util.module_from_spec(found)


def configure(cfg: Any, settings: Any) -> None:
    """kubeconfig.connection's settings on the client's Configuration, which its transport reads."""
    cfg.host = settings.host
    authorize(cfg, settings)
    cfg.ssl_ca_cert = _as_file(settings.ca)
    cfg.verify_ssl, cfg.tls_server_name, cfg.proxy = settings.verify_ssl, settings.tls_server_name, settings.proxy


def authorize(cfg: Any, settings: Any) -> None:
    """The credentials of kubeconfig.connection's settings on the client's Configuration (again when renewed)."""
    if settings.authorization:
        cfg.api_key["BearerToken"] = settings.authorization
    else:
        cfg.api_key.pop("BearerToken", None)
    cfg.cert_file, cfg.key_file = map(_as_file, (settings.cert, settings.key))


def _as_file(value: str | bytes | None) -> str | None:
    """A path as is; inline data (a certificate, a key) in a private temporary file, as the client's loader
    writes it (Python's TLS reads files only), once per content, removed at exit."""
    if not isinstance(value, bytes):
        return value
    if value not in _TEMP_FILES:
        # mode 0600, locked while this run lives (its descriptor stays open): a later run removes it only if a
        # SIGKILL left it (scratch.sweep); a stop runs the exit handlers too
        path, fd = scratch.make(Path(tempfile.gettempdir()) / "credential")
        with os.fdopen(os.dup(fd), "wb") as f:
            f.write(value)
        atexit.register(Path(path).unlink, missing_ok=True)
        _TEMP_FILES[value] = str(path)
    return _TEMP_FILES[value]


def proxy_authorization(url: str) -> dict | None:
    """Basic credentials for the proxy from its URL's `user:password@`, as Go sends them (urllib3 does not)."""
    import urllib3

    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return None
    credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
    return urllib3.make_headers(proxy_basic_auth=credentials)


_WARNED: set[str] = set()


def warn_insecure(server: str) -> None:
    """One line for a server whose certificate is not verified (not urllib3's warning on every request), once
    a run: `--wait` connects again each poll."""
    import urllib3

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    if server not in _WARNED:
        _WARNED.add(server)
        sys.stderr.write(f"sunkcheck: warning: {server}: the API server's certificate is not verified "
                         "(insecure-skip-tls-verify)\n")
