"""The kubernetes client's Configuration and urllib3 transport, imported without the package __init__s a check
never needs, and what sunkcheck sets on that Configuration: a kubeconfig's connection and credentials (inline
certificates as private temporary files), a proxy's credentials, one warning for a server whose certificate is not
verified."""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import os
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
