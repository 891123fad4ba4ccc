"""`-v N`, kubectl-style: at 6 one stderr line per API request, above that its headers (never
credentials); on a terminal, a transient progress line saying what is being read and how much of it."""

from __future__ import annotations

import sys
import threading
import urllib.parse
from contextlib import contextmanager

from sunkcheck.text import counted, safe, without_userinfo

REQUESTS = 6  # kubectl's level for one line per request
HEADERS = 7  # and for request/response headers
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "impersonate-user",
                            "impersonate-group", "x-remote-user"})
RESOURCES = ("nodepools", "nodesets", "daemonsets", "nodes", "events", "pods", "version")


def _headers(direction: str, headers) -> list[str]:
    """One line a header; the server's are its text, so escapes and controls go as everywhere else."""
    return [f"sunkcheck: {direction} {safe(name, one_line=True)}: "
            f"{'<redacted>' if name.lower() in SECRET_HEADERS else safe(value, one_line=True)}"
            for name, value in dict(headers or {}).items()]


def _reading(url: str) -> str:
    """The resource a request reads, from its path: `/api/v1/namespaces/x/pods` -> pods."""
    parts = urllib.parse.urlsplit(url).path.split("/")
    return next((p for p in reversed(parts) if p in RESOURCES), parts[-1] or "the API")


class Trace:
    """The per-request hook (collect.kube.on_request): log lines at -v 6+, the live line on a terminal."""

    def __init__(self, level: int, status=None):
        self.level, self.status = level, status
        self.requests = self.bytes = self.objects = 0
        self.lock = threading.Lock()

    def __call__(self, method: str, url: str, code: int, seconds: float, size: int, sent, received) -> None:
        url = without_userinfo(url)  # a kubeconfig server may carry `user:password@`
        with self.lock:
            self.requests += 1
            self.bytes += size
            if self.level >= REQUESTS:
                lines = [f"sunkcheck: {method} {url} {code} {seconds * 1000:.0f}ms {size} bytes"]
                if self.level >= HEADERS:
                    lines += _headers("request", sent) + _headers("response", received)
                sys.stderr.write("\n".join(lines) + "\n")
            self._show(_reading(url))

    def items(self, resource: str, count: int) -> None:
        """A page of a list arrived (collect.kube.on_items)."""
        with self.lock:
            self.objects += count
            self._show(resource)

    def _show(self, resource: str) -> None:
        if self.status is not None:
            self.status.update(f"reading {resource}: {counted(self.objects, 'object')}, {counted(self.requests, 'request')}, "
                               f"{self.bytes / 1e6:.1f} MB so far")


@contextmanager
def tracing(level: int, progress: bool):
    """Install the hook for one command; `progress` shows the live line (a terminal, nothing else on it)."""
    from sunkcheck.collect import kube

    status = None
    if progress and level < REQUESTS and sys.stderr.isatty():
        from rich.console import Console

        status = Console(stderr=True, highlight=False, markup=False).status("connecting...")
        status.start()
    trace = Trace(level, status) if (status or level >= REQUESTS) else None
    kube.on_request, kube.on_items = trace, trace and trace.items
    try:
        yield
    finally:
        kube.on_request = kube.on_items = None
        if status is not None:
            status.stop()
