"""The API server's clock, from the `Date` header of its answers: the one time `--wait` measures a Node's age by
(a kubelet writes its own Node's heartbeats by its own clock, which may run ahead by any amount)."""

from __future__ import annotations

import collections
import datetime
import email.utils
import threading
import time
from collections.abc import Mapping

from sunkcheck import objects as o

RECENT = 8
"""The answers whose Dates the clock weighs. Its two readings lean opposite ways, each the safe one for what it
judges: `now`, the earliest of them, for a Node's age (a Date far ahead of the others, a replica whose clock runs
ahead, a proxy's, a hostile one, is outvoted by any one answer of the last RECENT: a Node joining is never judged
old); `latest`, the latest of them, for the graces that hold a row back (a Date lagging the others ends a grace early,
so the row fires, never extends it). None moves either for good."""


def http_date(value: str | None) -> datetime.datetime | None:
    """An HTTP `Date` header (`Sat, 05 Dec 2026 07:17:26 GMT`) in UTC; None when absent, unreadable, or out of a
    datetime's range in UTC."""
    if not value:
        return None
    try:
        return o.utc(email.utils.parsedate_to_datetime(value))
    except (ValueError, OverflowError):
        return None


class ServerClock:
    """The API server's time as of its answers, advanced by the monotonic clock between them. A `Date` header is
    the server's clock when it answered, truncated to the second, so each answer's trails the server's clock;
    the earliest of the last RECENT answers', so advanced, trails them all: a Node is never judged older than it
    is, whatever one answer's Date says."""

    def __init__(self) -> None:
        self._recent: collections.deque[tuple[datetime.datetime, float]] = collections.deque(maxlen=RECENT)
        """Each answer's Date, and time.monotonic() when it came."""
        self._lock = threading.Lock()  # answers arrive in several threads (pages read ahead, watches)

    def saw(self, status: int, headers: Mapping[str, str]) -> None:
        """Take the `Date` header of an answer with `status`: of a 200 only, the API server's own (an error may be a
        proxy's, by its clock)."""
        when, now = http_date(headers.get("Date")), time.monotonic()
        if status != 200 or when is None:
            return
        with self._lock:
            self._recent.append((when, now))

    def now(self) -> datetime.datetime | None:
        """The API server's time now, at least (the earliest recent Date, advanced); None before an answer with a
        readable `Date`."""
        return min(self._advanced(), default=None)

    def latest(self) -> datetime.datetime | None:
        """The API server's time now by the latest recent Date, advanced: the clock a grace is judged by, which a
        Date lagging the others (a replica whose clock trails, a proxy's) cannot hold back; None before an answer
        with a readable `Date`."""
        return max(self._advanced(), default=None)

    def _advanced(self) -> list[datetime.datetime]:
        """Each recent answer's Date, advanced by the monotonic clock to now."""
        at = time.monotonic()
        with self._lock:
            recent = list(self._recent)
        return [o.later(when, at - then) for when, then in recent]
