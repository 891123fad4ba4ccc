"""The API server's clock, from the `Date` header of its answers: the one time `--wait` measures a Node's age by
(a kubelet writes its own Node's heartbeats by its own clock, which may run ahead by any amount)."""

from __future__ import annotations

import datetime
import email.utils
import threading
import time
from collections.abc import Mapping

from sunkcheck import objects as o


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
    the server's clock when it answered, truncated to the second, so this trails the server's clock, never leads
    it: a Node is never judged older than it is."""

    def __init__(self) -> None:
        self._offset: tuple[datetime.datetime, float] | None = None  # a Date, and time.monotonic() when it came
        self._lock = threading.Lock()  # answers arrive in several threads (pages read ahead, watches)

    def saw(self, status: int, headers: Mapping[str, str]) -> None:
        """Take the `Date` header of an answer with `status`: of a 200 only, the API server's own (an error may be a
        proxy's, by its clock). The one that puts the server's clock latest wins, so the time told never goes back."""
        when, now = http_date(headers.get("Date")), time.monotonic()
        if status != 200 or when is None:
            return
        with self._lock:
            if self._offset is None or o.later(self._offset[0], now - self._offset[1]) < when:
                self._offset = when, now

    def now(self) -> datetime.datetime | None:
        """The API server's time now, at least; None before an answer with a readable `Date`."""
        with self._lock:
            found = self._offset
        return None if found is None else o.later(found[0], time.monotonic() - found[1])
