"""Typos: what exists, the names nearest to the one given first."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

LISTED = 10  # names an error lists for a typo; the rest are counted


def nearest_first(word: str, choices: Iterable[str]) -> list[str]:
    """Every choice once: the close ones by similarity (as close: alphabetically, where difflib puts the last name
    first), then the rest alphabetically."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(word, choices, n=max(len(choices), 1), cutoff=0.6)
    close.sort(key=lambda c: (-difflib.SequenceMatcher(None, c, word).ratio(), c))
    return close + [c for c in choices if c not in close]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`: did you mean X?` for the closest choices, or nothing."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=3, cutoff=0.6)
    return f": did you mean {' or '.join(close)}?" if close else ""


def listed(names: list[str], most: int = LISTED) -> str:
    """The first `most` names and how many more: the line stays one line on a cluster of thousands."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
