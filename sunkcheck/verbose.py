"""`-v N`, kubectl-style, on the records of sunkcheck.collect.httplog: at 6 one stderr line per API request, at 7
and above its headers too (never credentials); on a terminal below 6, a transient progress line saying what is
being read and how much of it. The handlers live only while a command reads the cluster."""

from __future__ import annotations

import logging
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from sunkcheck.collect import httplog
from sunkcheck.text import counted

REQUESTS = 6  # kubectl's level for one line per request
HEADERS = 7  # and for request/response headers
RESOURCES = ("nodepools", "nodesets", "daemonsets", "nodes", "events", "pods", "version")


def _reading(url: str) -> str:
    """The resource a request reads, from its path: `/api/v1/namespaces/x/pods` -> pods."""
    parts = urllib.parse.urlsplit(url).path.split("/")
    return next((p for p in reversed(parts) if p in RESOURCES), parts[-1] or "the API")


class _Lines(logging.Handler):
    """Each line of a record on stderr (the one at the time: a test or a caller may redirect it), after
    `sunkcheck: `. A record is written at once, so two requests' lines never interleave."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write("".join(f"sunkcheck: {line}\n" for line in record.getMessage().splitlines()))


class Line(Protocol):
    def update(self, text: str) -> None: ...


class Progress(logging.Handler):
    """The live line: what is being read, the objects, requests and bytes so far."""

    def __init__(self, line: Line) -> None:
        super().__init__()
        self.line = line
        self.requests = self.bytes = self.objects = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == httplog.PAGES.name:
            self.objects += getattr(record, "count", 0)
            reading = getattr(record, "resource", "")
        elif record.name == httplog.REQUESTS.name:  # not its headers' record
            self.requests += 1
            self.bytes += getattr(record, "bytes", 0)
            reading = _reading(getattr(record, "url", ""))
        else:
            return
        self.line.update(f"reading {reading}: {counted(self.objects, 'object')}, "
                         f"{counted(self.requests, 'request')}, {self.bytes / 1e6:.1f} MB so far")


@contextmanager
def tracing(level: int, progress: bool) -> Iterator[None]:
    """The handlers for one command; `progress` shows the live line (a terminal, nothing else on it)."""
    status = None
    if progress and level < REQUESTS and sys.stderr.isatty():
        from rich.console import Console

        status = Console(stderr=True, highlight=False, markup=False).status("connecting...")
        status.start()
    handlers: list[logging.Handler] = [Progress(status)] if status is not None else []
    if level >= REQUESTS:
        handlers.append(_Lines())
        handlers[-1].addFilter(lambda record: record.name != httplog.PAGES.name)
    levels = {logger: logger.level for logger in (httplog.REQUESTS, httplog.HEADERS, httplog.PAGES)}
    if handlers:
        httplog.REQUESTS.setLevel(logging.DEBUG)
        httplog.HEADERS.setLevel(logging.DEBUG if level >= HEADERS else logging.INFO)
        httplog.PAGES.setLevel(logging.DEBUG if status is not None else logging.INFO)
    for handler in handlers:
        httplog.REQUESTS.addHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            httplog.REQUESTS.removeHandler(handler)
        for logger, was in levels.items():
            logger.setLevel(was)
        if status is not None:
            status.stop()
