"""A small Kubernetes API server for tests and benchmarks: serves a snapshot's objects read-only.

It speaks enough of the real protocol for the real `kubernetes` client and the real `kubectl`:
/version, discovery (/api, /apis, group/version resource lists), list and get on cluster-scoped and
namespaced paths, label selectors (=, ==, !=, in, notin, exists, !key), field selectors, limit/continue
paging, meta.k8s.io/v1 Table responses, watches (`?watch=1`: ADDED/MODIFIED/DELETED from a resourceVersion, BOOKMARKs
when asked for, `410 Gone` once the history is compacted (or to every watch), a watch dropped mid-stream, watches
ended at once, a server restart on the same port), bearer tokens over TLS, an optional RBAC policy, injectable
faults (403 per resource, missing API group, 429 with Retry-After, 500, latency per request and per
connection), hostile answers (none at all, a body that stalls or is dribbled a byte at a time, lists that
never end, list heads naming a continue token the page does not, unasked-for gzip, error messages
carrying terminal escapes, raw headers and reason phrases, connections reset or closed before an answer,
header floods, chunk lengths that are no number), a clock of its own (every answer's Date, skewed from the
machine's) and a request log; a forwarder in front of it that goes down
and comes back as a restarting API server does (Restarting).
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import datetime
import email.utils
import functools
import ipaddress
import json
import re
import socket
import ssl
import struct
import sys
import threading
import time
import zlib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from sunkcheck.snapshot import RESOURCES as FILES
from sunkcheck.snapshot import Snapshot

Obj = dict[str, Any]
"""A Kubernetes object, or a part of one, as the API server serves it."""


@dataclass(frozen=True)
class Kind:
    plural: str
    group: str
    version: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()


KINDS = (
    Kind("nodes", "", "v1", "Node", False, ("no",)),
    Kind("pods", "", "v1", "Pod", True, ("po",)),
    Kind("events", "", "v1", "Event", True, ("ev",)),
    Kind("namespaces", "", "v1", "Namespace", False, ("ns",)),
    Kind("daemonsets", "apps", "v1", "DaemonSet", True, ("ds",)),
    Kind("nodepools", "compute.coreweave.com", "v1alpha1", "NodePool", False, ("np",)),
    Kind("nodesets", "sunk.coreweave.com", "v1alpha1", "NodeSet", True, ()),
)
BY_PLURAL = {k.plural: k for k in KINDS}


@dataclass
class Faults:
    """What to break. Counts are decremented as faults are served."""

    forbidden: set[str] = field(default_factory=set)  # plurals answered 403
    forbidden_cluster_wide: set[str] = field(default_factory=set)  # plurals answered 403 outside a namespace (a Role)
    missing_groups: set[str] = field(default_factory=set)  # API groups that do not exist (404)
    throttle: dict[str, int] = field(default_factory=dict)  # plural -> how many 429s first
    errors: dict[str, int] = field(default_factory=dict)  # plural -> how many 500s first
    retry_after: str = "1"
    latency: float = 0.0  # seconds before every answer
    connect_latency: float = 0.0  # seconds before a new connection's first answer (TCP + TLS handshakes)
    silent: bool = False  # read each request and never answer it
    stall_after: int | None = None  # send the headers and this many bytes of the body, then nothing more
    dribble: float = 0.0  # seconds between one byte of the answer (headers, then body) and the next
    endless: str = ""  # lists never end: "same" sends one continue token again, "new" a new one every page
    gzip_bomb: int = 0  # answer every list with this many bytes of JSON, gzip-compressed, asked for or not
    message: str | None = None  # the message of every error answer (401, 403, 404, 429, 500)
    bodies: dict[str, bytes] = field(default_factory=dict)  # plural -> the raw body of every list of it
    lying_heads: bool = False  # a list page's head names a continue token (`lie-N`) its last metadata does not
    unfiltered: set[str] = field(default_factory=set)  # plurals whose lists and watches ignore the field selector
    endless_body: set[str] = field(default_factory=set)  # plurals answered with a chunked body that never ends
    watch_garbage: dict[str, bytes] = field(default_factory=dict)  # plural -> a line every watch of it sends first
    watch_gone: str = ""  # every watch answered 410 Gone: "status" (the HTTP status) or "event" (an ERROR event)
    watch_empty: bool = False  # every watch ended at once, with nothing in it
    watch_modes: dict[str, str] = field(default_factory=dict)  # plural -> how every watch of it misbehaves (HOSTILE)
    watch_pace: float = 0.2  # seconds "error-held" waits before its ERROR, and "trickle" between blank lines
    resets: dict[str, int] = field(default_factory=dict)  # plural -> how many requests answered by a TCP reset
    hangups: dict[str, int] = field(default_factory=dict)  # plural -> how many connections closed without an answer
    truncated: dict[str, int] = field(default_factory=dict)  # plural -> how many answers cut off mid-body, then closed
    header_flood: dict[str, str] = field(default_factory=dict)  # plural -> "many" (101 headers) or "long" (a 64 KiB line)
    bad_chunks: set[str] = field(default_factory=set)  # plurals answered with a chunked body whose chunk length is `zz`
    headers: dict[str, str] = field(default_factory=dict)  # sent raw with every answer
    reason: str | None = None  # the reason phrase of every status line, sent raw


HOSTILE = {
    "wrongtype": "an event of a type no server sends, then the end",
    "badshape": "an ADDED object the watch selects, under a name the API server would refuse, then the end",
    "wrongkind": "an ADDED Pod in the watch's namespace (whatever it watches), then the end",
    "othername": "an ADDED copy of an object the watch selects under another name (outside a watch by name), then the "
                 "events as usual",
    "error-held": "nothing for `watch_pace` seconds, then an ERROR event with a 500 Status, then the end",
    "bookmark-end": "one BOOKMARK with the current resourceVersion, then the end",
    "bookmark-410": "one BOOKMARK with the current resourceVersion, then an ERROR event with a 410 Status, then the end",
    "event-end": "one MODIFIED event of the first object the watch selects, as it is at the current resourceVersion, "
                 "then the end",
    "dribble": "not 200 and chunked: the status line and headers a byte every `watch_pace` seconds, never done, until "
               "the client leaves",
    "silent": "not a byte after the headers, past timeoutSeconds, until the watch is dropped",
    "trickle": "a blank line every `watch_pace` seconds, past timeoutSeconds, until the watch is dropped",
}
"""Faults.watch_modes: hostile answers to a watch (each answered 200, chunked, but "dribble"), as a broken proxy or
server sends."""


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    status: int
    accept: str
    size: int


class State:
    """The objects served, by plural, and their history for watches. Served objects are immutable (their encoding
    is cached): change what the server serves with `load()`, `put()` or `delete()`, which are thread-safe, record
    each change as a watch event and wake the watches."""

    FIRST_VERSION = 4242

    def __init__(self, snapshot: Snapshot):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.objects: dict[str, list[Obj]] = {}
        self.version = self.FIRST_VERSION  # the resourceVersion of the last change (etcd's revision)
        self.oldest = self.version  # a watch from before this is answered 410 Gone (the history was compacted)
        self.history: list[tuple[int, str, str, Obj, Obj | None]] = []  # (version, type, plural, object, before)
        self.load(snapshot, events=False)

    def load(self, snapshot: Snapshot, events: bool = True) -> None:
        """Serve `snapshot`'s objects from now on; with `events`, each object added, changed or gone since is a
        watch event."""
        objects = {stem: [dict(o) for o in getattr(snapshot, stem) or ()] for stem in FILES}
        namespaces = sorted({n for objs in objects.values() for o in objs
                             if (n := (o.get("metadata") or {}).get("namespace")) is not None})
        objects["namespaces"] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces]
        with self.lock:
            if events:
                for plural in sorted(set(objects) | set(self.objects)):
                    old = {_key(o): o for o in self.objects.get(plural, ())}
                    new = {_key(o): o for o in objects.get(plural, ())}
                    for key in sorted(set(old) | set(new)):
                        if not _same(old.get(key), new.get(key)):
                            self._record(plural, new.get(key), old.get(key))
                objects = self.objects  # _record kept them in place, each changed one with its new version
            self.objects = objects
            self._index()

    def put(self, plural: str, obj: Obj) -> None:
        """Add `obj`, or replace the object of its namespace and name: ADDED or MODIFIED."""
        with self.lock:
            old = next((o for o in self.objects.get(plural, ()) if _key(o) == _key(obj)), None)
            self._record(plural, dict(obj), old)
            self._index()

    def put_all(self, plural: str, objs: list[Obj]) -> None:
        """`put` each of `objs` (an event each), indexed once: a benchmark's scale-up, thousands of changes in batches."""
        with self.lock:
            current = {_key(o): o for o in self.objects.get(plural, ())}
            for obj in objs:
                self._record(plural, dict(obj), current.get(_key(obj)))
            self._index()

    def delete(self, plural: str, namespace: str | None, name: str) -> None:
        with self.lock:
            old = next((o for o in self.objects.get(plural, ()) if _key(o) == (namespace or "", name)), None)
            if old is not None:
                self._record(plural, None, old)
                self._index()

    def delete_all(self, plural: str, keys: set[tuple[str, str]]) -> None:
        """`delete` the objects of `keys` ((namespace, name)), an event each, the list rebuilt once: a flood undone."""
        with self.lock:
            gone = [o for o in self.objects.get(plural, ()) if _key(o) in keys]
            self.objects[plural] = [o for o in self.objects.get(plural, ()) if _key(o) not in keys]
            for old in gone:
                self._record(plural, None, old)
            self._index()

    def compact(self) -> None:
        """Forget the history, as etcd's compaction does: a watch from an older resourceVersion gets 410 Gone."""
        with self.lock:
            self.history.clear()
            self.oldest = self.version

    def _record(self, plural: str, new: Obj | None, old: Obj | None) -> None:
        """One change, under the lock: the object list updated in place, and the watch event."""
        self.version += 1
        objs = self.objects.setdefault(plural, [])
        if old is not None:
            objs[:] = [o for o in objs if o is not old]
        if new is not None:
            new["metadata"] = dict(new.get("metadata") or {}, resourceVersion=str(self.version))
            objs.append(new)
        kind = "ADDED" if old is None else "DELETED" if new is None else "MODIFIED"
        gone = old if new is None else None
        if gone is not None:  # a deleted object's last state, at the deletion's version
            gone = dict(gone, metadata=dict(gone.get("metadata") or {}, resourceVersion=str(self.version)))
        self.history.append((self.version, kind, plural, new or gone or {}, old))
        self.changed.notify_all()

    def _index(self) -> None:
        """Rebuild what answers are read from, under the lock."""
        # like the apiserver's watch-cache serialization cache: encode each object once
        self.encoded: dict[int, bytes] = {}
        self.rows: dict[tuple[str, int], Obj] = {}
        self.pods_by_node: dict[str, list[Obj]] = {}
        for pod in self.objects.get("pods", ()):
            self.pods_by_node.setdefault((pod.get("spec") or {}).get("nodeName") or "", []).append(pod)
        # etcd keys start with the namespace: a namespaced list never reads another namespace
        self.in_namespace: dict[tuple[str, str], list[Obj]] = {}
        for plural, objs in self.objects.items():
            for obj in objs:
                if (obj.get("metadata") or {}).get("namespace"):
                    self.in_namespace.setdefault((plural, obj["metadata"]["namespace"]), []).append(obj)


def _same(a: Obj | None, b: Obj | None) -> bool:
    """Equal but for the resourceVersion the server stamped."""
    def unversioned(o: Obj | None) -> Obj | None:
        return o and dict(o, metadata={k: v for k, v in (o.get("metadata") or {}).items() if k != "resourceVersion"})
    return unversioned(a) == unversioned(b)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


# --- selectors ----------------------------------------------------------------------------------------

_REQ = re.compile(r"\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9._-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$")


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p for p in [*parts, current] if p.strip()]


Requirement = tuple[str, str, str, frozenset[str]]
"""One requirement of a label selector: key, operator (`!` for `!key`), value, set of values."""


@functools.lru_cache(maxsize=256)
def label_requirements(selector: str) -> tuple[Requirement, ...]:
    """apimachinery label selector syntax, parsed once per selector; malformed raises ValueError (400)."""
    parsed = []
    for part in _split(selector or ""):
        m = _REQ.match(part)
        if not m:
            raise ValueError(f"unable to parse requirement: {part!r}")
        bang, key, op, value, setop, values = m.groups()
        if bang and (op or setop):
            raise ValueError(f"unable to parse requirement: {part!r}")
        vals = frozenset(v.strip() for v in values.split(",") if v.strip()) if setop else frozenset()
        parsed.append((key, "!" if bang else op or setop or "exists", value, vals))
    return tuple(parsed)


def label_match(requirements: tuple[Requirement, ...], labels: dict[str, str]) -> bool:
    """apimachinery label selector semantics: every requirement holds."""
    for key, op, value, vals in requirements:
        present = key in labels
        if op == "!":
            ok = not present
        elif op in ("=", "=="):
            ok = present and labels[key] == value
        elif op == "!=":
            ok = not present or labels[key] != value
        elif op == "in":
            ok = present and labels[key] in vals
        elif op == "notin":
            ok = not present or labels[key] not in vals
        else:
            ok = present
        if not ok:
            return False
    return True


def _field(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


@functools.lru_cache(maxsize=256)
def field_requirements(selector: str) -> tuple[tuple[str, str, str], ...]:
    parsed = []
    for part in _split(selector or ""):
        m = re.match(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise ValueError(f"invalid field selector: {part!r}")
        parsed.append((m[1], m[2], m[3]))
    return tuple(parsed)


def field_match(requirements: tuple[tuple[str, str, str], ...], obj: Obj) -> bool:
    return all((_field(obj, path) == value) == (op != "!=") for path, op, value in requirements)


# --- tables (what kubectl prints) --------------------------------------------------------------------

def _age(obj: Obj) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    delta = datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    return f"{delta.days}d" if delta.days else f"{delta.seconds // 3600}h"


def _cond(obj: Obj, ctype: str) -> str:
    return next((c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == ctype), "")


COLUMNS: dict[str, list[tuple[str, Callable[[Obj], object]]]] = {  # kubectl get's columns, by plural
    "nodes": [("Name", lambda o: o["metadata"]["name"]),
              ("Status", lambda o: "Ready" if _cond(o, "Ready") == "True" else "NotReady"),
              ("Age", _age), ("Version", lambda o: o["status"].get("nodeInfo", {}).get("kubeletVersion", ""))],
    "nodepools": [("Name", lambda o: o["metadata"]["name"]),
                  ("Instance Type", lambda o: o["spec"].get("instanceType", "")),
                  ("Target", lambda o: o["spec"].get("targetNodes", "")),
                  ("Current", lambda o: o.get("status", {}).get("currentNodes", ""))],
    "nodesets": [("Name", lambda o: o["metadata"]["name"])] + [
        (col.title(), (lambda field: lambda o: o.get("status", {}).get(field, ""))(f))
        for col, f in (("Desired", "desiredNumberScheduled"), ("Feasible", "numberFeasible"),
                       ("Current", "currentNumberScheduled"), ("Ready", "numberReady"))],
    "pods": [("Name", lambda o: o["metadata"]["name"]),
             ("Status", lambda o: o.get("status", {}).get("phase", "")),
             ("Node", lambda o: o["spec"].get("nodeName", "<none>"))],
    "events": [("Type", lambda o: o.get("type", "")), ("Reason", lambda o: o.get("reason", "")),
               ("Object", lambda o: f"{o['involvedObject']['kind'].lower()}/{o['involvedObject']['name']}"),
               ("Message", lambda o: o.get("message", ""))],
    "daemonsets": [("Name", lambda o: o["metadata"]["name"]),
                   ("Desired", lambda o: o.get("status", {}).get("desiredNumberScheduled", ""))],
    "namespaces": [("Name", lambda o: o["metadata"]["name"])],
}


def table_row(plural: str, obj: Obj) -> Obj:
    return {"cells": [str(f(obj)) for _, f in COLUMNS[plural]],
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}}


def table(plural: str, rows: list[Obj], meta: Obj) -> Obj:
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [{"name": n, "type": "string", "format": "name" if n == "Name" else "",
                                   "description": "", "priority": 0} for n, _ in COLUMNS[plural]],
            "rows": rows}


# --- the server ---------------------------------------------------------------------------------------

def _status(code: int, reason: str, message: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # or every keep-alive request stalls ~40 ms
    stream = ""  # the watch being streamed: its resource and selectors (streamed_by's key)
    _headers_buffer: list[bytes]  # http.server's, the status line and headers not sent yet

    def setup(self) -> None:
        super().setup()
        with self.server.api.lock:
            self.server.api.connections.add(self.connection)
        if self.server.api.faults.connect_latency:  # once per connection, in its own thread
            time.sleep(self.server.api.faults.connect_latency)

    def finish(self) -> None:
        with self.server.api.lock:
            self.server.api.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, *args: object) -> None:  # quiet; the server keeps its own log
        pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        """Every answer's Date header: the real time, on a server clock `skew` seconds ahead of the machine's, less
        the lag of a replica answering its path (`date_lag`)."""
        api = self.server.api
        lag = sum(seconds for part, seconds in api.date_lag.items() if part in self.path)
        return email.utils.formatdate(time.time() + api.skew - lag if timestamp is None else timestamp, usegmt=True)

    def send_header(self, keyword: str, value: str) -> None:
        if keyword != "Date" or self.server.api.dated:  # without: a proxy that strips it
            super().send_header(keyword, value)

    cut: str | None = None  # this answer is cut off mid-body (Faults.truncated)

    def _reply(self, code: int, doc: Obj | bytes, headers: dict[str, str] | None = None) -> None:
        faults: Faults = self.server.api.faults
        if faults.message is not None and code >= 400 and isinstance(doc, dict):
            doc = dict(doc, message=faults.message)
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        self.send_response(code, faults.reason)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in ((headers or {}) | faults.headers).items():
            self.send_header(k, v)
        self.server.api.record(self, code, len(body))
        if faults.dribble:  # the status line and headers too: each byte resets a socket's read timeout
            self._headers_buffer.append(b"\r\n")
            raw, self._headers_buffer = b"".join(self._headers_buffer) + body, []
            for i in range(len(raw)):
                self.wfile.write(raw[i:i + 1])
                self.wfile.flush()
                if self.server.api.released.wait(faults.dribble):
                    return
            return
        self.end_headers()
        if self.cut:
            self.wfile.write(body[:len(body) // 2])
            return self._hang_up()
        if faults.stall_after is not None:
            self.wfile.write(body[:faults.stall_after])
            self.wfile.flush()
            self.server.api.released.wait()
        else:
            self.wfile.write(body)

    def do_GET(self) -> None:  # the name http.server calls
        api: FakeApi = self.server.api
        api.arrived.set()
        if api.faults.latency:
            time.sleep(api.faults.latency)
        if api.faults.silent:  # until the test ends
            api.released.wait()
            return
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        if api.token and not (scheme.lower() == "bearer" and token.strip() == api.token):  # as kube-apiserver: any case
            return self._reply(401, _status(401, "Unauthorized", "Unauthorized"))
        segments = set(urllib.parse.urlparse(self.path).path.split("/"))
        if api.faults.endless_body & segments:
            return self._endless()
        if api.faults.bad_chunks & segments:
            api.record(self, 200, 0)
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
            return
        for dropped, drop in ((api.faults.resets, self._reset), (api.faults.hangups, self._hang_up)):
            plural = next((p for p in segments if dropped.get(p, 0) > 0), None)
            if plural:
                dropped[plural] -= 1
                api.record(self, 0, 0)
                return drop()
        code, doc, headers = api.answer(self)
        if isinstance(doc, Watch):
            if api.faults.watch_gone == "status":
                return self._reply(410, _status(410, "Gone", "too old resource version"))
            return self._watch(doc)
        self.cut = next((p for p in segments if api.faults.truncated.get(p, 0) > 0), None)
        if self.cut:
            api.faults.truncated[self.cut] -= 1
        flood = next((api.faults.header_flood[p] for p in segments if p in api.faults.header_flood), None)
        if flood:
            headers = {f"X-Flood-{i}": "x" for i in range(101)} if flood == "many" else {"X-Flood": "x" * (64 << 10)}
        if isinstance(doc, GzipBomb):
            doc, headers = bytes(doc), {"Content-Encoding": "gzip"}
        self._reply(code, doc, headers)

    def _watch(self, watch: Watch) -> None:
        """Stream the events after the asked-for resourceVersion (every object as ADDED first without one), a
        BOOKMARK every `bookmark_every` seconds when asked for, until timeoutSeconds, the server stops or
        `drop_watches()` cuts the connection."""
        api: FakeApi = self.server.api
        state, query = api.state, watch.query
        if api.faults.watch_modes.get(watch.kind.plural) == "dribble":
            return self._dribble(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        api.record(self, 200, 0)
        self.end_headers()
        table = "as=Table" in (self.headers.get("Accept") or "")
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(query.get("timeoutSeconds") or 1800)
        end = time.monotonic() + timeout
        since = query.get("resourceVersion") or "0"
        self.stream = " ".join([watch.kind.plural, *(query[k] for k in ("labelSelector", "fieldSelector") if k in query)])
        with api.lock:
            api.watching.add(self.connection)
        try:
            if watch.kind.plural in api.faults.watch_modes and self._hostile(api.faults.watch_modes[watch.kind.plural],
                                                                             watch):
                return
            if api.faults.watch_gone == "event":
                self._event("ERROR", _status(410, "Expired", "too old resource version"))
            if api.faults.watch_gone == "event" or api.faults.watch_empty:
                return self._chunk(b"")
            if watch.kind.plural in api.faults.watch_garbage:
                self._chunk(api.faults.watch_garbage[watch.kind.plural] + b"\n")
            with state.lock:
                if since == "0":  # "any version": the current state as ADDED events, then what follows
                    events = [("ADDED", o, o) for o in state.objects.get(watch.kind.plural, ()) if watch.matches(o)]
                    position, since_version = len(state.history), state.version
                else:
                    since_version = int(since) if since.isdigit() else -1
                    if since_version < state.oldest:
                        self._event("ERROR", _status(410, "Expired", f"too old resource version: {since} ({state.oldest})"))
                        return self._chunk(b"")
                    position = bisect.bisect_right([v for v, *_ in state.history], since_version)
                    events = []
            for kind, obj, _ in events:
                self._event(kind, self._shown(watch.kind.plural, obj, table))
            last_sent = time.monotonic()
            while not api.released.is_set() and self.connection in api.watching:
                now = time.monotonic()
                if now >= end:
                    return self._chunk(b"")
                wait = min(end - now, api.bookmark_every if bookmarks else end - now, 0.25)
                with state.changed:
                    if position >= len(state.history):
                        state.changed.wait(wait)
                    fresh, position, version = state.history[position:], len(state.history), state.version
                for _, kind, plural, obj, before in fresh:
                    if plural != watch.kind.plural:
                        continue
                    shown = watch.event(kind, obj, before)
                    if shown == "DELETED" and kind != "DELETED" and before:  # stopped matching: its last state
                        obj = dict(before, metadata=dict(before["metadata"],  # that did, as kube-apiserver sends it
                                                         resourceVersion=obj["metadata"]["resourceVersion"]))
                    if shown:
                        self._event(shown, self._shown(plural, obj, table))
                        last_sent = time.monotonic()
                if bookmarks and time.monotonic() - last_sent >= api.bookmark_every:
                    api_version = f"{watch.kind.group}/{watch.kind.version}" if watch.kind.group else watch.kind.version
                    self._event("BOOKMARK", {"kind": watch.kind.kind, "apiVersion": api_version,
                                             "metadata": {"resourceVersion": str(version)}})
                    last_sent = time.monotonic()
        finally:
            with api.lock:
                api.watching.discard(self.connection)

    def _hostile(self, mode: str, watch: Watch) -> bool:
        """Answer the watch as HOSTILE[mode] says, from the objects it selects now; whether that ended it."""
        api: FakeApi = self.server.api
        with api.state.lock:
            selected = [o for o in api.state.objects.get(watch.kind.plural, ()) if watch.matches(o)]
            version = str(api.state.version)
        model = self._shown(watch.kind.plural, selected[0] if selected else {"metadata": {}}, False)
        meta = dict(model["metadata"], resourceVersion=version)
        if mode in ("silent", "trickle"):
            while not api.released.wait(api.faults.watch_pace) and self.connection in api.watching:
                if mode == "trickle":
                    self._chunk(b"\n")
            return True
        if mode == "error-held":
            api.released.wait(api.faults.watch_pace)
            self._event("ERROR", _status(500, "InternalError", "etcdserver: leader changed"))
        elif mode == "wrongtype":
            self._event("WEIRD", dict(model, metadata=meta))
        elif mode == "badshape":
            self._event("ADDED", dict(model, metadata=dict(meta, name="--all")))
        elif mode == "wrongkind":
            self._event("ADDED", {"kind": "Pod", "apiVersion": "v1", "spec": {"containers": []},
                                  "metadata": {"name": "x", "namespace": watch.namespace or "default",
                                               "resourceVersion": version}})
        elif mode in ("bookmark-end", "bookmark-410"):
            self._event("BOOKMARK", {"kind": model["kind"], "apiVersion": model["apiVersion"],
                                     "metadata": {"resourceVersion": version}})
            if mode == "bookmark-410":
                self._event("ERROR", _status(410, "Expired", "too old resource version"))
        elif mode == "event-end" and selected:
            self._event("MODIFIED", dict(model, metadata=meta))
        elif mode == "othername":
            self._event("ADDED", dict(model, metadata=dict(meta, name=f"{meta.get('name')}-other")))
            return False
        self._chunk(b"")
        return True

    def _shown(self, plural: str, obj: Obj, table_: bool) -> Obj:
        if table_:
            return table(plural, [table_row(plural, obj)], {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
        kind = BY_PLURAL[plural]
        return {"kind": kind.kind, "apiVersion": f"{kind.group}/{kind.version}" if kind.group else kind.version, **obj}

    def _event(self, kind: str, obj: Obj) -> None:
        self._chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

    def _chunk(self, data: bytes) -> None:
        """One chunk of a chunked body; empty ends the body."""
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()
        api = self.server.api
        with api.lock:
            api.streamed += len(data)
            api.streamed_by[self.stream] = api.streamed_by.get(self.stream, 0) + len(data)

    def _dribble(self, head: bytes) -> None:
        """`head`, then a byte every `watch_pace` seconds, never a whole answer: every socket read the client makes
        ends well within its timeout, until it leaves (a write fails) or the server stops."""
        api: FakeApi = self.server.api
        api.record(self, 200, 0)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.write(head)
            self.wfile.flush()
            while not api.released.wait(api.faults.watch_pace):
                self.wfile.write(b"a")
                self.wfile.flush()

    def _reset(self) -> None:
        """The request read, then a TCP reset (SO_LINGER 0): what a restarting API server or a load balancer sends."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._hang_up()

    def _hang_up(self) -> None:
        """The request read, then the connection closed before a status line: an idle keep-alive connection
        the server (or a load balancer) closed just as the client sent on it."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _endless(self) -> None:
        """200 and a JSON object that never ends, a MiB of spaces a chunk, as fast as the client reads it."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.server.api.record(self, 200, 0)
        self.end_headers()
        self.wfile.write(b"1\r\n{\r\n")
        chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        while not self.server.api.released.is_set():
            self.wfile.write(chunk)  # an OSError when the client leaves ends the handler

    def _refuse(self) -> None:
        self.server.api.writes += 1
        self._reply(405, _status(405, "MethodNotAllowed", "this test server is read-only"))

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse


@dataclass
class Watch:
    """A watch asked for: which objects it sees."""

    kind: Kind
    namespace: str | None
    query: dict[str, str]
    labels: tuple[Requirement, ...]
    fields: tuple[tuple[str, str, str], ...]

    def matches(self, obj: Obj | None) -> bool:
        return obj is not None and (not self.namespace or (obj.get("metadata") or {}).get("namespace") == self.namespace) \
            and label_match(self.labels, (obj.get("metadata") or {}).get("labels") or {}) and field_match(self.fields, obj)

    def event(self, kind: str, obj: Obj, before: Obj | None) -> str | None:
        """What this watch sees of a change, as the apiserver's watch cache filters it: an object that starts
        matching is ADDED, one that stops is DELETED; None when it never matched."""
        was = before is not None and self.matches(before)
        now = kind != "DELETED" and self.matches(obj)
        return "MODIFIED" if was and now else "ADDED" if now else "DELETED" if was else None


class _Server(ThreadingHTTPServer):
    api: FakeApi

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client that left mid-answer is no server bug
            super().handle_error(request, client_address)


class FakeApi:
    """Start with `with FakeApi(snapshot, tls=..., token=...) as api:`; `api.url` is its address."""

    kubeconfig: Path  # a kubeconfig naming it, where a test writes one (the serve fixture)

    def __init__(self, snapshot: Snapshot, *, cert: tuple[str, str] | None = None, token: str | None = None,
                 version: str = "v1.32.4", rbac: Obj | None = None, client_ca: str | None = None, skew: float = 0.0):
        self.state = State(snapshot)
        self.skew = skew  # seconds its clock (its answers' Date) runs ahead of the machine's: a control plane's own
        self.dated = True  # whether its answers carry a Date header (False: a proxy strips it)
        self.date_lag: dict[str, float] = {}  # seconds the Date of answers to paths holding a key trails the clock
        self.faults = Faults()
        self.token = token
        self.version = version
        self.rbac = rbac
        self.log: list[Request] = []
        self.writes = 0
        self.bookmark_every = 1.0  # seconds between a watch's BOOKMARKs when it asks for them (a real server: ~60)
        self.lock = threading.Lock()
        self.watching: set[socket.socket] = set()  # the connections of watches in progress
        self.streamed = 0  # bytes of watch events sent (the request log records a watch's size as 0)
        self.streamed_by: dict[str, int] = {}  # those bytes by watch: resource and selectors, as benchmarks read them
        self.connections: set[socket.socket] = set()  # every connection open (a restart or a drop cuts them)
        self.released = threading.Event()  # set when the server stops: handlers holding a connection let go
        self.arrived = threading.Event()  # set when a GET first arrives: a client is mid-request
        self._log_lock = threading.Lock()
        self._cert, self._client_ca = cert, client_ca
        self._listen(0)
        scheme = "https" if cert else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def _listen(self, port: int) -> None:
        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.api = self
        if self._cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self._cert)
            if self._client_ca:  # mutual TLS: only clients with a certificate this CA signed get in
                ctx.load_verify_locations(self._client_ca)
                ctx.verify_mode = ssl.CERT_REQUIRED
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._cut(self.connections)

    def _cut(self, connections: set[socket.socket]) -> None:
        """Close connections under their handlers, as a crashed server's kernel would (no goodbye)."""
        with self.lock:
            cut = list(connections)
            connections.clear()
        for conn in cut:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def drop_watches(self) -> int:
        """Cut every watch in progress mid-stream; how many there were."""
        with self.lock:
            n = len(self.watching)
        self._cut(self.watching)
        return n

    def stop(self) -> None:
        """The server goes away (a crash, a restart): nothing listens on its port and every connection is cut.
        Its objects and their history are kept for `start()`."""
        self.__exit__(None, None, None)

    def start(self) -> None:
        """Listen again on the same port after `stop()`, serving the same objects (etcd outlives the server)."""
        self.released = threading.Event()
        self._listen(int(self.url.rsplit(":", 1)[1]))
        self.__enter__()

    def pod_nodes(self) -> list[str] | None:
        """The Nodes whose Pods a live run listed (its meta.json podNodes), for a replay to know them too; None when
        it listed every Pod (no field selector naming a Node)."""
        found = set()
        for r in self.log:
            if r.path.endswith("/pods") and "labelSelector" not in r.query:
                node = next((f.split("=", 1)[1] for f in r.query.get("fieldSelector", "").split(",")
                             if f.startswith("spec.nodeName=")), None)
                if node is None:
                    return None
                found.add(node)
        return sorted(found)

    def record(self, handler: Handler, code: int, size: int) -> None:
        parsed = urllib.parse.urlparse(handler.path)
        with self._log_lock:
            self.log.append(Request(handler.command, parsed.path, dict(urllib.parse.parse_qsl(parsed.query)), code,
                                    handler.headers.get("Accept", ""), size))

    # --- routing ------------------------------------------------------------------------------------
    def answer(self, handler: Handler) -> tuple[int, Obj | bytes | Watch, dict[str, str]]:
        parsed = urllib.parse.urlparse(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        parts = [p for p in parsed.path.split("/") if p]
        if parts == ["version"]:
            major, minor = self.version.lstrip("v").split(".")[:2]
            return 200, {"major": major, "minor": minor, "gitVersion": self.version, "platform": "linux/amd64"}, {}
        if parts == ["api"]:
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}, {}
        if parts == ["apis"]:
            return 200, self._groups(), {}
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return 404, _status(404, "NotFound", "the server could not find the requested resource"), {}
        if group in self.faults.missing_groups or not any(k.group == group and k.version == version for k in KINDS):
            return 404, _status(404, "NotFound", "the server could not find the requested resource"), {}
        if not rest:
            return 200, self._resources(group, version), {}
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        kind = BY_PLURAL.get(rest[0])
        if kind is None or kind.group != group or (namespace and not kind.namespaced):
            return 404, _status(404, "NotFound", "the server could not find the requested resource"), {}
        name = rest[1] if len(rest) > 1 else None
        watching = query.get("watch") in ("1", "true") and not name
        verb = "watch" if watching else "get" if name else "list"
        refused = self._refused(kind, verb, namespace)
        if refused:
            return 403, _status(403, "Forbidden", refused), {}
        for faults, code in ((self.faults.throttle, 429), (self.faults.errors, 500)):
            if faults.get(kind.plural, 0) > 0:
                faults[kind.plural] -= 1
                return code, _status(code, "TooManyRequests" if code == 429 else "InternalError", "try again later"), \
                    {"Retry-After": self.faults.retry_after} if code == 429 else {}
        if watching:
            try:
                fields = () if kind.plural in self.faults.unfiltered else field_requirements(query.get("fieldSelector", ""))
                return 200, Watch(kind, namespace, query, label_requirements(query.get("labelSelector", "")), fields), {}
            except ValueError as e:
                return 400, _status(400, "BadRequest", str(e)), {}
        node_field = re.search(r"(?:^|,)spec\.nodeName==?([^,]*)", query.get("fieldSelector", ""))
        with self.state.lock:
            if kind.plural == "pods" and node_field:  # the real apiserver indexes Pods by Node too
                objects = list(self.state.pods_by_node.get(node_field.group(1), ()))
                objects = [o for o in objects if not namespace or o["metadata"].get("namespace") == namespace]
            elif namespace:
                objects = list(self.state.in_namespace.get((kind.plural, namespace), ()))
            else:
                objects = list(self.state.objects.get(kind.plural, ()))
        if name:
            found = next((o for o in objects if o["metadata"]["name"] == name), None)
            if found is None:
                return 404, _status(404, "NotFound", f'{kind.plural}.{group or "core"} "{name}" not found'), {}
            return 200, found, {}
        try:
            return 200, self._page(kind, objects, query, handler.headers.get("Accept", "")), {}
        except ValueError as e:
            return 400, _status(400, "BadRequest", str(e)), {}

    def _page(self, kind: Kind, objects: list[Obj], query: dict[str, str], accept: str) -> Obj | bytes:
        """One page of matches. Like etcd-backed continuation, the token is a position in the whole list,
        so each page scans on from where the last one stopped instead of from the start."""
        token = query.get("continue") or ""
        start = int(token[5:]) if token.startswith("page-") else int(base64.b64decode(token).decode()) if token else 0
        limit = int(query.get("limit") or 0) or len(objects)
        labels = label_requirements(query.get("labelSelector", ""))
        fields = () if kind.plural in self.faults.unfiltered else field_requirements(query.get("fieldSelector", ""))
        page: list[Obj] = []
        position = start
        while position < len(objects) and len(page) < limit:
            o = objects[position]
            position += 1
            if label_match(labels, o["metadata"].get("labels") or {}) and field_match(fields, o):
                page.append(o)
        meta: dict[str, Any] = {"resourceVersion": str(self.state.version)}
        if kind.plural in self.faults.bodies:
            return self.faults.bodies[kind.plural]
        if self.faults.gzip_bomb:
            return gzip_bomb(self.faults.gzip_bomb)
        if self.faults.endless:
            meta["continue"] = f"page-{0 if self.faults.endless == 'same' else start + 1}"
            return {"kind": f"{kind.kind}List", "apiVersion": "v1", "metadata": meta, "items": []}
        if position < len(objects):
            meta["continue"] = base64.b64encode(str(position).encode()).decode()
            if not labels and not fields:  # known only for an unfiltered list, as on a real server
                meta["remainingItemCount"] = len(objects) - position
        if "as=Table" in accept:
            return table(kind.plural, [self._row(kind.plural, o) for o in page], meta)
        api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
        lie = {"continue": f"lie-{start}"} if self.faults.lying_heads else meta  # JSON's last `metadata` wins
        head = json.dumps({"kind": f"{kind.kind}List", "apiVersion": api_version, "metadata": lie})[:-1]
        tail = f', "metadata": {json.dumps(meta)}}}' if self.faults.lying_heads else "}"
        return (head + ', "items": [').encode() + b", ".join(self._encoded(o) for o in page) + b"]" + tail.encode()

    def _encoded(self, obj: Obj) -> bytes:
        """The object as a list item (the real server omits kind/apiVersion there), encoded once."""
        cache = self.state.encoded
        if id(obj) not in cache:
            cache[id(obj)] = json.dumps({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}).encode()
        return cache[id(obj)]

    def _row(self, plural: str, obj: Obj) -> Obj:
        cache = self.state.rows
        if (plural, id(obj)) not in cache:
            cache[(plural, id(obj))] = table_row(plural, obj)
        return cache[(plural, id(obj))]

    def _refused(self, kind: Kind, verb: str, namespace: str | None) -> str | None:
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        message = (f'{kind.plural}{"." + kind.group if kind.group else ""} is forbidden: User "system:serviceaccount:'
                   f'monitoring:sunkcheck" cannot {verb} resource "{kind.plural}" in API group "{kind.group}"{where}')
        if kind.plural in self.faults.forbidden or (kind.plural in self.faults.forbidden_cluster_wide and not namespace):
            return message
        if self.rbac is not None and not any(
                kind.group in rule.get("apiGroups", ()) and kind.plural in rule.get("resources", ())
                and verb in rule.get("verbs", ()) for rule in self.rbac.get("rules", ())):
            return message
        return None

    def _groups(self) -> Obj:
        groups = {}
        for k in KINDS:
            if k.group and k.group not in self.faults.missing_groups:
                gv = {"groupVersion": f"{k.group}/{k.version}", "version": k.version}
                groups[k.group] = {"name": k.group, "versions": [gv], "preferredVersion": gv}
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}

    def _resources(self, group: str, version: str) -> Obj:
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version,
                "resources": [{"name": k.plural, "singularName": k.kind.lower(), "namespaced": k.namespaced,
                               "kind": k.kind, "verbs": ["get", "list", "watch"], "shortNames": list(k.short)}
                              for k in KINDS if k.group == group and k.version == version]}


class Listener:
    """A TCP listener on loopback whose thread hands each connection it accepts to `took`; on exit it closes them.
    Its thread is woken (shutdown) and joined before the socket is closed: a thread still in accept() would go on
    accepting on the closed socket's number once a later test's API server reuses it, taking that server's
    connections (the client sees EOF or a reset). A subclass sets what `took` reads before calling __init__."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.open: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def took(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        while True:
            try:
                conn = self.sock.accept()[0]
            except OSError:  # shut down
                return
            self.open.append(conn)
            self.took(conn)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # ends a blocked accept() (EINVAL); close() alone does not
        self.thread.join(10)
        self.sock.close()
        for conn in self.open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread reading it
            conn.close()


class Mute(Listener):
    """A TCP listener that accepts connections and sends each `greeting` (by default nothing, not even a TLS
    handshake's), then never another byte."""

    def __init__(self, greeting: bytes = b""):
        self.greeting = greeting
        super().__init__()
        self.url = f"https://127.0.0.1:{self.port}"

    def took(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(self.greeting)


class ConnectProxy(Listener):
    """An HTTP CONNECT proxy on loopback that tunnels every CONNECT to 127.0.0.1 whatever host it names (so a
    test server can have a name no resolver knows), logging each `host:port` asked for; with `refuse`, it
    answers every CONNECT with that status line instead (`refusals`: the next CONNECTs, one each); with `answer`,
    with those bytes, then closes the connection (resets it with `reset`); with `credentials`, 407 to a CONNECT
    without them. Tunnels end when either side closes, or on exit."""

    def __init__(self, refuse: str | None = None, credentials: str | None = None, refusals: list[str] | None = None,
                 answer: bytes | None = None, reset: bool = False):
        self.refusals = refusals or []
        self.answer, self.reset = answer, reset
        self.credentials = credentials  # `user:password` a CONNECT must carry (Proxy-Authorization: Basic), else 407
        self.refuse = refuse
        self.log: list[str] = []
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def took(self, conn: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError):
            conn.settimeout(30)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            self.log.append(target)
            basic = "basic " + base64.b64encode((self.credentials or "").encode()).decode().lower()
            if self.credentials and basic.encode() not in head.lower():
                conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                return conn.close()
            refusal = self.refuse or (self.refusals.pop(0) if self.refusals else None)
            if self.answer is not None:
                conn.sendall(self.answer)
                if self.reset:  # SO_LINGER 0: close() sends RST
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return conn.close()
            if method != "CONNECT" or refusal:
                conn.sendall(f"HTTP/1.1 {refusal or '405 Method Not Allowed'}\r\nContent-Length: 0\r\n\r\n".encode())
                return conn.close()
            upstream = socket.create_connection(("127.0.0.1", int(target.rpartition(":")[2])), timeout=30)
            self.open.append(upstream)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            threading.Thread(target=self._pipe, args=(upstream, conn), daemon=True).start()
            self._pipe(conn, upstream)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class Restarting:
    """A TCP forwarder to `api` on loopback that goes down as a restarting API server does: `down()` resets every
    connection through it and closes its port, so that new connections are refused until `up()`."""

    def __init__(self, api: FakeApi):
        self.upstream = int(api.url.rpartition(":")[2])
        self.port = 0
        self.conns: list[socket.socket] = []
        self.up()
        self.url = f"{api.url.rpartition(':')[0]}:{self.port}"

    def up(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again at once
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, args=(self.sock,), daemon=True)
        self.thread.start()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn = sock.accept()[0]
            except OSError:  # down
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream), timeout=30)
            self.conns += [conn, upstream]
            for source, sink in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=ConnectProxy._pipe, args=(source, sink), daemon=True).start()

    def down(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # ends the blocked accept(), as in Mute
        self.thread.join(10)
        self.sock.close()
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
                conn.close()
        self.conns.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


class GzipBomb(bytes):
    """A gzip-compressed body: sent with Content-Encoding: gzip."""


@functools.lru_cache(maxsize=2)
def gzip_bomb(size: int) -> GzipBomb:
    """A valid, empty JSON list padded with `size` bytes of whitespace, gzip-compressed (about 1,000:1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    chunk = b" " * (1 << 20)
    parts = [packer.compress(b'{"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}')]
    parts += [packer.compress(chunk) for _ in range(size >> 20)]
    return GzipBomb(b"".join(parts) + packer.flush())


# --- TLS and kubeconfig --------------------------------------------------------------------------------

PROXIED_NAME = "apiserver.test"
"""A name only ConnectProxy resolves (to 127.0.0.1): a server that is not loopback to the client."""


def make_cert(directory: Path) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and PROXIED_NAME (it is its own CA): (cert path, key path)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sunkcheck-test-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName(PROXIED_NAME)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def kubeconfig(path: Path, server: str, *, token: str | None = None, ca: str | None = None,
               namespace: str = "tenant-slurm", context: str = "test", client_cert: tuple[str, str] | None = None) -> Path:
    cluster = {"server": server} | ({"certificate-authority": ca} if ca else {})
    user = {"token": token} if token else {}
    if client_cert:
        user |= {"client-certificate": client_cert[0], "client-key": client_cert[1]}
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": context, "cluster": cluster}], "users": [{"name": context, "user": user}],
           "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}]}
    path.write_text(json.dumps(doc))
    return path
