"""serve's HTTP side: GET only, bounded (a socket timeout per connection, request-line and header limits, no
body, a fixed number of requests at once), and it only reads what the loop last published, so a slow or hostile
client never stalls the diagnosis."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sunkcheck.model import Report
from sunkcheck.render.html import page as rendered
from sunkcheck.render.html import policy
from sunkcheck.render.prometheus import _labels, render_textfile
from sunkcheck.serve.loop import Loop, Published
from sunkcheck.serve.watch import Health
from sunkcheck.text import safe

TIMEOUT = 10.0
"""Seconds a connection may take to send its request or read the answer."""
MAX_HEADER_BYTES = 8 << 10
"""Bytes of a request's headers; a scrape sends a few hundred."""
MAX_CONCURRENT = 16
"""Requests handled at once; one more is answered 503 at once."""


def page(report: Report | None) -> str:
    """The status page (sunkcheck.render.html, as `check -o html` writes it), updating itself from /api/v1/check;
    before the first diagnosis, a line saying so."""
    if report is None:
        return ("<!doctype html><meta charset=utf-8><title>sunkcheck: not ready</title>"
                "<p>Not ready: the first list of the cluster is not complete. This page does not reload itself.</p>")
    return rendered(report, live_url="/api/v1/check")


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
}


def exposition(published: Published | None, health: dict[str, Health], ready: bool, now: float,
               diagnoses: int = 0) -> str:
    """The check's metrics (the textfile's names), then the watches' health, computed at the scrape."""
    samples: dict[str, list[str]] = {name: [] for name in WATCH_HELP}
    samples["serve_ready"].append(f" {int(ready)}")
    for source, h in sorted(health.items()):
        with h.lock:
            kind, _, selector = source.partition("/")  # a watch of some of a source's objects says which
            label = _labels(source=kind, **({"selector": selector} if selector else {}))
            samples["watch_synced"].append(f"{label} {int(h.synced)}")
            if h.last_event is not None:
                samples["watch_last_event_age_seconds"].append(f"{label} {max(now - h.last_event, 0):.3f}")
            samples["watch_relists_total"].append(f"{label} {h.relists}")
            samples["watch_errors_total"].append(f"{label} {h.errors}")
    if published is not None:
        samples["diagnosis_duration_seconds"].append(f" {published.took:.6f}")
        samples["diagnosis_targets_judged"].append(f" {published.judged}")
    samples["diagnoses_total"].append(f" {diagnoses}")
    lines = [published.metrics.rstrip("\n") if published else render_textfile(None, now).rstrip("\n")]
    for name, (kind, help_text) in WATCH_HELP.items():
        if samples[name]:
            lines += [f"# HELP sunkcheck_{name} {help_text}", f"# TYPE sunkcheck_{name} {kind}"]
            lines += [f"sunkcheck_{name}{sample}" for sample in samples[name]]
    return "\n".join(lines) + "\n"


def unchanged(if_none_match: str | None, etag: str) -> bool:
    """If-None-Match (RFC 9110): `*` or a list of tags, compared weakly (a `W/` prefix ignored)."""
    tags = [t.strip().removeprefix("W/") for t in (if_none_match or "").split(",")]
    return "*" in tags or etag in tags


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection: nothing is held open between scrapes
    timeout = TIMEOUT
    server_version = "sunkcheck"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:  # requests are not logged: transitions are what the log is for
        pass

    def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
              headers: dict | None = None) -> None:
        self.send_response(code)
        if code != 304:  # a 304 has no content, and no length but the 200's
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # the name http.server calls
        if sum(len(k) + len(v) + 4 for k, v in self.headers.items()) > MAX_HEADER_BYTES:
            return self._send(431, b"request headers too large\n")
        if self.headers.get("Content-Length", "0") != "0" or self.headers.get("Transfer-Encoding"):
            return self._send(413, b"a GET has no body\n")
        loop: Loop = self.server.loop  # type: ignore[attr-defined]
        published = loop.published
        ready = published is not None and published.complete
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            alive = loop.thread.is_alive()
            return self._send(200 if alive else 500, b"ok\n" if alive else b"the diagnosis loop stopped\n")
        if path == "/readyz":
            if ready:
                return self._send(200, b"ok\n")
            waiting = sorted(name for name, h in loop.health.items() if not h.synced)
            return self._send(503, f"not ready: waiting for the first list of {', '.join(waiting) or 'the diagnosis'}\n"
                              .encode())
        if path == "/metrics":
            return self._send(200, exposition(published, loop.health, ready, time.time(), loop.diagnoses).encode(),
                              "text/plain; version=0.0.4; charset=utf-8")
        if path == "/api/v1/check":
            if published is None:
                return self._send(503, b'{"error": "not ready"}\n', "application/json")
            if unchanged(self.headers.get("If-None-Match"), published.etag):  # the live page's poll, most of the time
                return self._send(304, b"", headers={"ETag": published.etag})
            return self._send(200, published.document, "application/json", {"ETag": published.etag})
        if path == "/":
            return self._send(200, page(published.report if published else None).encode(), "text/html; charset=utf-8",
                              {"Content-Security-Policy": policy()})
        return self._send(404, f"not found: {safe(path, one_line=True)[:200]}\n".encode())

    do_HEAD = do_GET

    def _refuse(self) -> None:
        self._send(405, b"read-only: GET and HEAD only\n", headers={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse


class Server(ThreadingHTTPServer):
    """At most MAX_CONCURRENT requests at once; one more is answered 503 and closed, without a thread."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], loop: Loop):
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__(address, Handler)
        self.loop = loop
        self.slots = threading.BoundedSemaphore(MAX_CONCURRENT)

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        assert isinstance(request, socket.socket)  # a TCP server's request is the connection
        if not self.slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: object, client_address: object) -> None:  # a client gone mid-answer is no error of ours
        pass
