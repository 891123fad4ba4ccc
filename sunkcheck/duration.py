"""Durations as kubectl writes them: `0`, `90s`, `20m`, `1h`, `1m30s`, `500ms` (a bare number is seconds)."""

from __future__ import annotations

import re

from sunkcheck.model import InputError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse(text: str, flag: str) -> float:
    """Seconds in `text`; an InputError naming `flag` when it is not a duration."""
    text = text.strip()
    try:
        return float(text) if float(text) >= 0 else _bad(text, flag)
    except ValueError:
        pass
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        _bad(text, flag)
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _bad(text: str, flag: str):
    raise InputError(f"{flag}: {text!r} is not a duration (examples: 0, 30s, 5m, 1h, 1m30s)")


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
