"""Durations as kubectl writes them: `0`, `90s`, `20m`, `1h`, `1m30s`, `500ms` (a bare number is seconds)."""

from __future__ import annotations

import re
from typing import NoReturn

from sunkcheck.model import InputError

# ASCII digits only, as Go's time.ParseDuration: float() and \d also take `1_0` and other scripts' digits (`٣`)
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_BARE = re.compile(_NUMBER)
_PART = re.compile(rf"({_NUMBER})(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
REQUEST_TIMEOUT = 60.0  # the default bound on one API request, its pages and retries included (--request-timeout)
HANDSHAKE_TIMEOUT = 10.0  # seconds to connect and complete TLS, whatever the request timeout: kubectl's
MAX = 7 * 24 * 3600.0  # a week: anything longer is a typo, and sleeps and socket timeouts overflow on `inf`


def parse(text: str, flag: str) -> float:
    """Seconds in `text`, from 0 to MAX; an InputError naming `flag` when it is not such a duration."""
    text = text.strip()
    if _BARE.fullmatch(text):
        seconds = float(text)
    else:
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            _bad(text, flag)
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if not 0 <= seconds <= MAX:  # also false for nan; 1e400 is inf
        _bad(text, flag)
    return seconds


def _bad(text: str, flag: str) -> NoReturn:
    raise InputError(f"{flag}: {text!r} is not a duration from 0 to 7 days (examples: 0, 30s, 5m, 1h, 1m30s)")


def shown(seconds: float) -> str:
    """`seconds` as kubectl writes a duration: 500ms, 45s, 20m, 1h30m."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    whole, parts = round(seconds), []
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts)
