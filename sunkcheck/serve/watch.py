"""List, then watch, one source of objects: the list's resourceVersion carried into the watch, bookmarks asked
for, `410 Gone` answered by a relist, broken watches reconnected with capped exponential backoff and jitter, and
every wait bounded (connect, each read, each backoff). What arrives is slimmed and handed to a sink (the cache)."""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from sunkcheck import duration
from sunkcheck.collect.kube import MAX_RESPONSE, CallError, Kube, Resource, api_version, unmanaged
from sunkcheck.collect.cluster import why
from sunkcheck.model import InputError
from sunkcheck.snapshot import ShapeError, check_items
from sunkcheck.text import safe

if TYPE_CHECKING:
    import urllib3

WATCH_SECONDS = 300
"""timeoutSeconds asked of the server (jittered by up to a fifth): a watch ends and is renewed from its last
resourceVersion at least this often, as client-go's reflector does."""
READ_GRACE = 30.0
"""Seconds past timeoutSeconds a read may wait for the server's next byte before the watch counts as broken."""
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
WATCH_ROLE = "sunkcheck rbac --serve"
"""The command printing the role a watching client needs: get, list and watch."""


@dataclass(frozen=True)
class Source:
    """One list+watch: what `check` reads of a resource, with the same server-side selectors."""

    name: str
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    slim: Callable[[dict], dict] = unmanaged
    """Cut an object to what the analysis reads, as it arrives (the memory budget depends on it)."""


class Sink(Protocol):
    def replace(self, source: Source, items: list[dict]) -> None: ...

    def apply(self, source: Source, kind: str, obj: dict) -> None: ...


@dataclass
class Health:
    """What /metrics says of one watch: a stale or failing cache is visible and alertable."""

    synced: bool = False
    last_event: float | None = None  # time.time() of the last event or bookmark (or of the last list)
    relists: int = 0
    errors: int = 0
    last_error: str = ""
    reason: str = ""
    lasting: bool = False
    """Whether the last failure is one waiting cannot clear (401, 403, a missing API: the error's `lasting`)."""
    """Why the last read failed, briefly, as `check` says it in a step's summary (collect.cluster.why)."""
    watch_refused: bool | None = None
    """Whether the last watch was answered 403 (a role with get and list only, as `check` needs); None before
    one was answered."""
    failed_at: float | None = None  # time.time() of the last failure
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def down(self) -> bool:
        """Whether it failed since it last heard from the server: what it holds may be out of date."""
        return self.failed_at is not None and (self.last_event is None or self.failed_at >= self.last_event)

    def saw(self) -> None:
        with self.lock:
            self.last_event = time.time()

    def failed(self, error: str, reason: str = "", lasting: bool = False) -> None:
        with self.lock:
            self.errors += 1
            self.failed_at = time.time()
            self.last_error, self.reason, self.lasting = error, reason, lasting


class Expired(Exception):
    """The server no longer holds the resourceVersion asked for (410 Gone): relist."""


class Reflector:
    """Keeps `sink` current for `source` from a thread of its own until `stop` is set."""

    def __init__(self, kube: Kube, source: Source, sink: Sink, stop: threading.Event,
                 watch_seconds: float = WATCH_SECONDS):
        self.kube, self.source, self.sink, self.stop = kube, source, sink, stop
        kube.role = WATCH_ROLE  # a 403 to its lists says which role watches too
        self.watch_seconds = watch_seconds
        self.health = Health()
        self.cancelled = threading.Event()
        self._resp = None  # the watch being read: closed by cancel()
        self.thread = threading.Thread(target=self.run, name=f"watch {source.name}", daemon=True)

    def cancel(self) -> None:
        """Stop this watch alone (the read plan no longer names what it selects), its connection at once."""
        self.cancelled.set()
        resp = self._resp
        sock = getattr(resp.connection, "sock", None) if resp is not None else None
        if sock is not None:
            # shut down, not closed: closing the response waits for the lock of the read under way in the other
            # thread (until its read timeout, minutes); a shut-down socket ends that read at once
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        version, failures = "", 0
        while not (self.stop.is_set() or self.cancelled.is_set()):
            try:
                if not version:
                    version = self._list()
                version = self._watch(version)
                failures = 0
            except Expired:
                version = ""  # relist at once: the server said what to do
                continue
            except (CallError, InputError, ShapeError, OSError, ValueError) as e:  # Unreachable is an InputError
                self.health.failed(safe(str(e), one_line=True), why(e) if isinstance(e, (CallError, ShapeError)) else "",
                                   bool(getattr(e, "lasting", False)))
                failures += 1
            except Exception as e:  # a watch thread must never die silently: retried, and counted
                self.health.failed(f"{type(e).__name__}: {safe(str(e), one_line=True)}")
                failures += 1
            if failures:
                self.stop.wait(backoff(failures))

    def _list(self) -> str:
        s = self.source
        items, version = self.kube.listed(s.resource, s.namespace, label_selector=s.label_selector,
                                          field_selector=s.field_selector, keep=s.slim)
        self.sink.replace(s, items)
        with self.health.lock:
            self.health.relists += self.health.synced
            self.health.synced = True
        self.health.saw()
        return version

    def _watch(self, version: str) -> str:
        """Follow the watch from `version` until the server ends it (the new version returned), or raise."""
        import urllib3

        s = self.source
        seconds = int(self.watch_seconds * (1 + random.random() / 5))  # renewals spread, not all at once
        query = {k: v for k, v in {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": version,
                                   "timeoutSeconds": str(seconds), "labelSelector": s.label_selector,
                                   "fieldSelector": s.field_selector}.items() if v}
        path = s.resource.path(s.namespace)
        url = self.kube.cfg.host + path + "?" + urllib.parse.urlencode(query)
        timeout = urllib3.Timeout(connect=duration.HANDSHAKE_TIMEOUT, read=seconds + READ_GRACE)
        resp = self.kube.pool.request("GET", url, headers=self.kube.headers(), timeout=timeout, retries=False,
                                      redirect=False, preload_content=False, decode_content=False)
        ended, self._resp = False, resp
        try:
            if self.cancelled.is_set():
                return version
            if resp.status == 410:
                raise Expired()
            self.health.watch_refused = resp.status == 403
            if resp.status != 200:
                raise CallError(path, resp.status, f"watch {path} failed ({resp.status})" + (
                    f"; `{WATCH_ROLE}` prints the role with watch" if resp.status == 403 else ""))
            self.health.saw()  # a watch (re)started is a sign of life too: a quiet resource is not a stale one
            for line in _lines(resp):
                version = self._event(json.loads(line), version)
            ended = True
        finally:
            self._resp = None
            if not ended:  # the rest of a broken or abandoned body must never be read as the next answer
                resp.close()
            resp.release_conn()
        return version

    def _event(self, event: dict, version: str) -> str:
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            raise ValueError("a watch event without an object")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired()
            raise CallError(self.source.resource.path(), int(obj.get("code") or 0),
                            f"watch error: {obj.get('message') or obj.get('reason')}")
        meta = obj.get("metadata")
        found = meta.get("resourceVersion") if isinstance(meta, dict) else None
        new = found if isinstance(found, str) and found else version
        self.health.saw()
        if kind == "BOOKMARK":
            return new
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"a watch event of type {safe(str(kind), one_line=True)}")
        r = self.source.resource
        obj["kind"], obj["apiVersion"] = r.kind, api_version(r)
        check_items([obj], r.kind, r.plural)  # what a list would refuse, a watch refuses
        self.sink.apply(self.source, kind, self.source.slim(unmanaged(obj)))
        return new


def _lines(resp: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The newline-separated events of a watch body, each at most MAX_RESPONSE bytes."""
    buffer = b""
    for chunk in resp.stream(1 << 16, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        yield from (line for line in lines if line.strip())
        if len(buffer) > MAX_RESPONSE:
            raise ValueError(f"a watch event larger than {MAX_RESPONSE >> 20} MiB")
    if buffer.strip():
        yield buffer


def backoff(failures: int) -> float:
    """Seconds before retry number `failures` (1, 2, ...): doubling from BACKOFF_FIRST up to BACKOFF_MAX, with
    full jitter on the upper half so that many servers restarted at once do not come back in step."""
    cap = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(failures - 1, 16))
    return cap / 2 + random.random() * cap / 2

