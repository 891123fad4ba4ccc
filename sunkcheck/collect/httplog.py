"""What each API request did, as records of the standard `logging` module: kubectl's -v levels as loggers, so
that a program using sunkcheck routes them as it routes any log (the command line prints them with `-v N`).

- `sunkcheck.http` (kubectl's -v 6): one record a request, "GET URL STATUS MSms BYTES bytes", with the fields
  as attributes too (method, url, status, seconds, bytes);
- `sunkcheck.http.headers` (-v 7 and above): the request's and the response's headers, one line each,
  credentials redacted;
- `sunkcheck.http.pages`: the objects each page of a list brought (resource, count), for a progress line.

All at DEBUG. The server's text in them (headers, a URL's host) is made inert as everywhere else: no escapes,
no control characters, no password of a URL's userinfo."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from sunkcheck.text import safe, without_userinfo

REQUESTS = logging.getLogger("sunkcheck.http")
HEADERS = logging.getLogger("sunkcheck.http.headers")
PAGES = logging.getLogger("sunkcheck.http.pages")
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "impersonate-user",
                            "impersonate-group", "x-remote-user"})


def request(method: str, url: str, status: int, seconds: float, size: int, sent: Mapping[str, str],
            received: Mapping[str, str]) -> None:
    """A request's records, each built only when a logger would keep it."""
    if REQUESTS.isEnabledFor(logging.DEBUG):
        url = without_userinfo(url)  # a kubeconfig server may carry `user:password@`
        REQUESTS.debug("%s %s %s %.0fms %s bytes", method, url, status, seconds * 1000, size,
                       extra={"method": method, "url": url, "status": status, "seconds": seconds, "bytes": size})
    if HEADERS.isEnabledFor(logging.DEBUG):
        HEADERS.debug("%s", "\n".join(_headers("request", sent) + _headers("response", received)))


def page(resource: str, count: int) -> None:
    """A page of a list arrived, with `count` objects of `resource` (a plural: nodes, pods)."""
    if PAGES.isEnabledFor(logging.DEBUG):
        PAGES.debug("%s: %s objects", resource, count, extra={"resource": resource, "count": count})


def _headers(direction: str, headers: Mapping[str, str] | None) -> list[str]:
    """One line a header; the server's are its text, so escapes and controls go as everywhere else."""
    return [f"{direction} {safe(name, one_line=True)}: "
            f"{'<redacted>' if name.lower() in SECRET_HEADERS else safe(value, one_line=True)}"
            for name, value in dict(headers or {}).items()]
