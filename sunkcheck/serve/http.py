"""serve's HTTP side: GET only, bounded (a deadline for the whole request, request-line and header limits, no
body, a fixed number of connections reading and of requests answered at once), and it only reads what the loop
last published, so a slow or hostile client never stalls the diagnosis nor the liveness probe."""

from __future__ import annotations

import contextlib
import datetime
import io
import ipaddress
import json
import re
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sunkcheck import __version__
from sunkcheck.render.html import policy
from sunkcheck.render.prometheus import _labels, render_textfile
from sunkcheck.serve.loop import Loop, Published
from sunkcheck.serve.watch import Fault, Health
from sunkcheck.text import safe

TIMEOUT = 10.0
"""Seconds a connection may take to send its whole request line and headers, then to take the whole answer (not
each write: a client reading a byte at a time is closed too)."""
MAX_HEADER_BYTES = 8 << 10
"""Bytes of a request's headers; a scrape sends a few hundred."""
MAX_REQUEST_BYTES = 64 << 10
"""Bytes of a request's line and headers read at most (http.server's own line limit); past them, 431 or 414."""
MAX_READING = 64
"""Connections still sending their request; one more closes the one that has been sending longest, so clients
that send nothing, or a byte at a time, cannot keep a scrape out."""
MAX_CONCURRENT = 16
"""Documents (the page, /api/v1/check: megabytes at a hundred NodeSets) sent at once; one more is answered 503."""
MAX_PROBES = 16
"""Other answers (/metrics: what Prometheus asks for) sent at once, in slots of their own: clients that never read
the page cannot hold them. The probes, /healthz and /readyz, a few lines each (the socket's buffer takes them
whole, read or not), are answered besides: no client holds Kubernetes' probes out."""
PROBES = ("/healthz", "/readyz")
"""The paths answered without a slot."""
DOCUMENTS = ("/", "/api/v1/check")
"""The paths whose answers take MAX_CONCURRENT's slots."""
MAX_DOCUMENT_NODES = 250_000
"""Node verdicts (a target's pool Nodes, every target together) a publication's page and document may hold:
rendering them takes about 70 MB a hundred thousand, and keeping them 20 MB, on top of the cache's budget. Past
it, both are refused (503, saying why); /metrics and /readyz answer as ever."""
CHECKED_AT = "Sunkcheck-Checked-At"
"""The header saying when the document's verdict was last known true (its checked_at), on a 304 as on a 200."""


NOT_READY_PAGE = (b"<!doctype html><meta charset=utf-8><title>sunkcheck: not ready</title>"
                  b"<p>Not ready: the first list of the cluster is not complete. This page does not reload itself.</p>")
"""The page before the first diagnosis (then Published.page_at: sunkcheck.render.html's, updating itself)."""


WATCH_HELP = {
    "serve_ready": ("gauge", "1 once every watched source was listed completely (what /readyz answers)."),
    "watch_synced": ("gauge", "1 once the source was listed completely."),
    "watch_last_event_age_seconds": ("gauge", "Seconds since the source's last event, bookmark or list: a stale "
                                              "cache shows here."),
    "watch_relists_total": ("counter", "Lists after the first (410 Gone, a restarted API server)."),
    "watch_errors_total": ("counter", "Failed lists and broken watches (each retried with backoff)."),
    "diagnosis_duration_seconds": ("gauge", "Seconds the last diagnosis took."),
    "diagnosis_targets_judged": ("gauge", "Targets judged again by the last diagnosis (the others were unaffected)."),
    "diagnoses_total": ("counter", "Diagnoses made: changes nothing reads (another workload's Pod on a Node no "
                                   "verdict weighs) make none."),
    "serve_cache_bytes": ("gauge", "Bytes the cached objects are charged, estimated, every source together: a "
                                   "source that would take it past the budget is in error until it fits."),
    "serve_cache_budget_bytes": ("gauge", "The budget of serve_cache_bytes."),
    "serve_cache_refused": ("gauge", "1 for a source the cache refused (past its budget, or an object larger than "
                                     "any API server sends): its objects dropped, in error until a list of it fits."),
}


def too_large(held: int, page: bool) -> bytes:
    """The answer for a page or document past MAX_DOCUMENT_NODES: why, and what to serve instead."""
    why = (f"too large: the targets judged hold {held:,} Node verdicts together, more than serve renders "
           f"({MAX_DOCUMENT_NODES:,}); serve fewer NodeSets (--nodeset, -n): /metrics has every target")
    if page:
        return f"<!doctype html><meta charset=utf-8><title>sunkcheck: too large</title><p>{why}</p>\n".encode()
    return json.dumps({"error": why}).encode() + b"\n"


def exposition(published: Published | None, health: dict[str, Health], ready: bool, now: float,
               diagnoses: int = 0, cache: tuple[int, int] | None = None, current: float | None = None,
               refused: Iterable[str] = ()) -> str:
    """The check's metrics (the textfile's names, their time `current`: Loop.current), then the watches' health
    and `cache` (Cache.budget: bytes charged and the budget) and the sources it `refused`, computed at the scrape."""
    samples: dict[str, list[str]] = {name: [] for name in WATCH_HELP}
    samples["serve_ready"].append(f" {int(ready)}")
    for source in sorted(refused):
        samples["serve_cache_refused"].append(f"{_source_labels(source)} 1")
    for source, h in sorted(health.items()):
        with h.lock:
            label = _source_labels(source)
            samples["watch_synced"].append(f"{label} {int(h.synced)}")
            if h.last_event is not None:
                samples["watch_last_event_age_seconds"].append(f"{label} {max(now - h.last_event, 0):.3f}")
            samples["watch_relists_total"].append(f"{label} {h.relists}")
            samples["watch_errors_total"].append(f"{label} {h.errors}")
    if published is not None:
        samples["diagnosis_duration_seconds"].append(f" {published.took:.6f}")
        samples["diagnosis_targets_judged"].append(f" {published.judged}")
    samples["diagnoses_total"].append(f" {diagnoses}")
    if cache is not None:
        samples["serve_cache_bytes"].append(f" {cache[0]}")
        samples["serve_cache_budget_bytes"].append(f" {cache[1]}")
    checked = published.metrics_at(current or published.at) if published else render_textfile(None, now)
    lines = [checked.rstrip("\n")]
    for name, (kind, help_text) in WATCH_HELP.items():
        if samples[name]:
            lines += [f"# HELP sunkcheck_{name} {help_text}", f"# TYPE sunkcheck_{name} {kind}"]
            lines += [f"sunkcheck_{name}{sample}" for sample in samples[name]]
    return "\n".join(lines) + "\n"


def _source_labels(source: str) -> str:
    """A source's labels: a watch of some of a source's objects says which (`nodes/SELECTOR`)."""
    kind, _, selector = source.partition("/")
    return _labels(source=kind, **({"selector": selector} if selector else {}))


def waiting(health: dict[str, Health]) -> str:
    """The sources not listed yet, each with its last error: a refused token says so at once, not in 60 s."""
    unlisted = []
    for name, h in sorted(health.items()):
        with h.lock:
            if not h.synced:
                unlisted.append(said(name, h.last_error))
    return ", ".join(unlisted) or "the diagnosis"


def said(name: str, error: str) -> str:
    """A source named with its error, if any, as /readyz says it."""
    return f"{name} ({safe(error, one_line=True)[:300]})" if error else name


def failing_lines(failing: tuple[str, ...], faults: Mapping[str, Fault]) -> str:
    """/readyz's answer while sources fail: one line per error, naming the sources failing with it (the API server
    gone fails every watch alike: its error once, not once a source), each source's own name not repeated."""
    by_error: dict[str, list[str]] = {}
    for name in failing:
        error = fault.beside(name) if (fault := faults.get(name)) else ""  # the source named once
        by_error.setdefault(safe(error, one_line=True)[:300], []).append(name)
    return "".join(f"not ready: failing: {', '.join(names)}" + (f": {error}" if error else "") + "\n"
                   for error, names in by_error.items())


HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._~-]+))(?::(?P<port>[0-9]{1,5}))?")
"""A Host as browsers and HTTP clients send it: a name or IPv4 address, or an IPv6 address in brackets, and a port."""
ABSOLUTE = re.compile(r"(?i:http)://(?P<authority>[^/?#]*)(?P<path>.*)", re.DOTALL)
"""An absolute-form request target (a proxy's): `http://HOST[:PORT]` and the path."""


def host_name(header: str) -> str | None:
    """The name in a Host header: `[::1]:8080` -> `::1`, `localhost:8080` -> `localhost`; None for a form no client
    sends (`[::1]evil`, an IPv6 address without brackets, a port that is not a number or past 65535, userinfo)."""
    found = HOST.fullmatch(header.strip())
    if found is None or int(found["port"] or 0) > 65535:
        return None
    if (v6 := found["v6"]) is None:
        return found["name"]
    try:
        return str(ipaddress.IPv6Address(v6))
    except ValueError:
        return None


def destination(target: str, hosts: list[str]) -> tuple[str | None, str]:
    """The host a request names (None: none) and its path, from its request target and its Host headers; a
    ValueError saying why for a request no client sends. An absolute-form target (a proxy's) names its host in
    place of Host, as RFC 9112 has a server take it, and its path (`/` when it names none)."""
    if len(hosts) > 1:
        raise ValueError("more than one Host header")
    host = hosts[0] if hosts else None
    if not target.startswith("/"):
        absolute = ABSOLUTE.fullmatch(target)
        if absolute is None:
            raise ValueError("the request target is neither a path nor an http:// URL")
        host, path = absolute["authority"], absolute["path"]
        target = path if path.startswith("/") else "/" + path
    name = None if host is None else host_name(host)
    if host is not None and name is None:
        raise ValueError("a host that is not HOST[:PORT]")
    return name, target


def loopback(host: str) -> bool:
    """Whether `host` (an address or a name) can only be this machine: 127.0.0.0/8, ::1, localhost."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_head(conn: socket.socket, deadline: float) -> bytes:
    """The request line and headers, up to the blank line, the client's end of sending, or just past
    MAX_REQUEST_BYTES; TimeoutError at `deadline` (time.monotonic()), however the bytes trickle in."""
    head = b""
    while len(head) <= MAX_REQUEST_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        conn.settimeout(remaining)
        chunk = conn.recv(MAX_REQUEST_BYTES + 1 - len(head))
        if not chunk:
            break
        start = max(len(head) - 3, 0)  # the blank line may straddle two reads
        head = (head + chunk).lstrip(b"\r\n")  # blank lines before the request line are ignored (RFC 9112 2.2)
        start = min(start, len(head))
        if head.find(b"\r\n\r\n", start) >= 0 or head.find(b"\n\n", start) >= 0 or simple(head):
            break
    return head


def simple(head: bytes) -> bool:
    """Whether `head` opens with a whole request line of HTTP/0.9 (`GET /`: no version, so no headers follow)."""
    line, newline, _ = head.partition(b"\n")
    return bool(newline) and len(line.split()) == 2


def drain(conn: socket.socket, deadline: float) -> None:
    """Read and drop what the client still sends, until it closes, the deadline or MAX_REQUEST_BYTES more:
    closing with unread bytes would reset the connection, and the client would never read the answer."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
        left = MAX_REQUEST_BYTES
        while left > 0 and (remaining := deadline - time.monotonic()) > 0:
            conn.settimeout(remaining)
            chunk = conn.recv(left)
            if not chunk:
                break
            left -= len(chunk)


def unchanged(if_none_match: str | None, etag: str) -> bool:
    """If-None-Match (RFC 9110): `*` or a list of tags, compared weakly (a `W/` prefix ignored)."""
    tags = [t.strip().removeprefix("W/") for t in (if_none_match or "").split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection: nothing is held open between scrapes
    server_version = f"sunkcheck/{__version__}"

    def version_string(self) -> str:  # http.server appends the Python version after a space
        return self.server_version

    def log_message(self, format: str, *args: object) -> None:  # requests are not logged: transitions are what the log is for
        pass

    def _send(self, code: int, body: bytes | tuple[bytes | memoryview, ...], content_type: str = "text/plain; charset=utf-8",
              headers: dict | None = None) -> None:
        """The answer, in pieces (a document kept whole, its time between them), within TIMEOUT in all."""
        pieces = (body,) if isinstance(body, bytes) else body
        self.send_response(code)
        if code != 304:  # a 304 has no content, and no length but the 200's
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(sum(map(len, pieces))))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        deadline = time.monotonic() + TIMEOUT
        self.connection.settimeout(TIMEOUT)
        self.end_headers()
        for piece in pieces if self.command != "HEAD" else ():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.connection.settimeout(remaining)  # sendall's bound: what is left of the answer's
            self.connection.sendall(piece)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's errors (a malformed request line, a bad version, too many headers) as one short line of
        plain text, not its HTML page; the line the client sent stays text."""
        self.request_version = self.protocol_version  # a status line even when the request line had no version
        reason = (message or self.responses.get(code, ("error",))[0]).split(" (", 1)[0]  # not what it quotes
        self._send(code, f"{safe(reason, one_line=True)[:200]}\n".encode())

    def handle(self) -> None:
        """One request: its line and headers read within TIMEOUT in all, the probes (PROBES) answered at once, a
        document in one of MAX_CONCURRENT slots, anything else in one of MAX_PROBES."""
        server: Server = self.server  # type: ignore[assignment]
        self.command = self.requestline = ""  # what an answer before the request line is parsed reads
        deadline = time.monotonic() + TIMEOUT
        try:
            head = read_head(self.connection, deadline)
        except OSError:  # the deadline or a reset
            head = b""
        finally:
            still = server.done_reading(self.connection)
        if not (still and head):  # no request, or closed for a newer connection: no answer to give
            return
        self.rfile = io.BytesIO(head)
        self.raw_requestline = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        if len(head) > MAX_REQUEST_BYTES:
            self.send_error(431 if self.raw_requestline.endswith(b"\n") else 414)
            return drain(self.connection, deadline)
        if not self.parse_request():
            return
        if self.request_version == "HTTP/0.9":  # its answer would have no status line: a client could not tell it
            return self.send_error(400, "HTTP/0.9 is not served")  # from an error
        try:
            host, self.path = destination(self.path, self.headers.get_all("Host") or [])
        except ValueError as e:
            return self.send_error(400, str(e))
        if not server.answers_to(host):
            return self._send(421, b"misdirected: this server answers to its loopback address only\n")
        if self.command not in ("GET", "HEAD"):
            return self._send(405, b"read-only: GET and HEAD only\n", headers={"Allow": "GET, HEAD"})
        path = self.path.split("?", 1)[0]
        if path in PROBES:
            return self.answer()
        slots = server.slots if path in DOCUMENTS else server.probes
        if not slots.acquire(blocking=False):
            return self._send(503, b"busy: too many requests at once\n", headers={"Retry-After": "1"})
        try:
            self.answer()
        finally:
            slots.release()

    def answer(self) -> None:
        """The answer to a GET or HEAD whose request was read whole."""
        if sum(len(k) + len(v) + 4 for k, v in self.headers.items()) > MAX_HEADER_BYTES:
            return self._send(431, b"request headers too large\n")
        if self.headers.get("Content-Length", "0") != "0" or self.headers.get("Transfer-Encoding"):
            return self._send(413, b"a GET has no body\n")
        loop: Loop = self.server.loop  # type: ignore[attr-defined]
        published, current = loop.current()
        # when the verdict was last known true; none where nothing was checked (a report of errors alone)
        checked_at = datetime.datetime.fromtimestamp(current, datetime.UTC).isoformat(timespec="seconds") \
            if published is not None and published.report.checked_at else ""
        ready = published is not None and published.complete and not published.failing  # /readyz's answer
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            alive = loop.thread.is_alive()
            return self._send(200 if alive else 500, b"ok\n" if alive else b"the diagnosis loop stopped\n")
        if path == "/readyz":
            failing = published.failing if published is not None else ()  # reported as errors: not current
            if ready and not failing:
                return self._send(200, b"ok\n")
            if failing:
                return self._send(503, failing_lines(failing, loop.faults).encode())
            return self._send(503, f"not ready: waiting for the first list of {waiting(loop.health)}\n".encode())
        if path == "/metrics":
            return self._send(200, exposition(published, loop.health, ready, time.time(), loop.diagnoses,
                                              loop.cache.budget, current, loop.cache.refused).encode(),
                              "text/plain; version=0.0.4; charset=utf-8")
        if path in DOCUMENTS and published is not None and (held := published.nodes) > MAX_DOCUMENT_NODES:
            return self._send(503, too_large(held, path == "/"), "text/html; charset=utf-8" if path == "/"
                              else "application/json")
        if path == "/api/v1/check":
            if published is None:
                return self._send(503, b'{"error": "not ready"}\n', "application/json")
            headers = {"ETag": published.etag, **({CHECKED_AT: checked_at} if checked_at else {})}  # on a 304 too
            if unchanged(self.headers.get("If-None-Match"), published.etag):  # the live page's poll, most of the time
                return self._send(304, b"", headers=headers)
            return self._send(200, published.document_at(checked_at), "application/json", headers)
        if path == "/":
            return self._send(200, published.page_at(checked_at) if published else NOT_READY_PAGE,
                              "text/html; charset=utf-8", {"Content-Security-Policy": policy()})
        return self._send(404, f"not found: {safe(path, one_line=True)[:200]}\n".encode())


class Server(ThreadingHTTPServer):
    """A thread a connection, at most MAX_READING of them reading their request (the longest-reading one closed
    for a newcomer), MAX_CONCURRENT sending a document and MAX_PROBES another answer."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], loop: Loop):
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__(address, Handler)
        self.loop = loop
        self.loopback = loopback(host)
        self.slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        self.probes = threading.BoundedSemaphore(MAX_PROBES)
        self.reading: dict[socket.socket, bool] = {}  # in the order they connected
        self.reading_lock = threading.Lock()

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        assert isinstance(request, socket.socket)  # a TCP server's request is the connection
        with self.reading_lock:
            if len(self.reading) >= MAX_READING:
                oldest = next(iter(self.reading))
                del self.reading[oldest]
                with contextlib.suppress(OSError):  # its thread's read ends, and the thread with it
                    oldest.shutdown(socket.SHUT_RDWR)
            self.reading[request] = True
        super().process_request(request, client_address)

    def answers_to(self, host: str | None) -> bool:
        """Listening on loopback, only a request for a loopback name (`host`, None when it names none): a web page
        whose DNS name an attacker points at 127.0.0.1 (DNS rebinding) sends its own name as Host, and must not
        read the cluster's state through the browser. Listening elsewhere (a Pod's `:8080`), any: Prometheus and
        port-forwards name it as they reach it."""
        return not self.loopback or host is None or loopback(host)

    def done_reading(self, request: socket.socket) -> bool:
        """Whether `request` was still reading (not closed for a newer connection), which it no longer is."""
        with self.reading_lock:  # held by process_request across a shutdown: the socket is not closed under it
            return self.reading.pop(request, False)

    def handle_error(self, request: object, client_address: object) -> None:  # a client gone mid-answer is no error of ours
        pass
