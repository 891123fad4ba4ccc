"""Untrusted text stays text: strip terminal escapes and control characters from cluster strings, and parse
JSON from outside without an error of an unexpected kind. Counts read as English: `1 Node`, `0 Nodes`."""

from __future__ import annotations

import re

# CSI / OSC / other ESC sequences, then any remaining C0/C1 control except newline and tab
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
# ... and the bidirectional overrides and marks, which can make a terminal show text in another order
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text: object, *, one_line: bool = False) -> str:
    """`text` (str() of it) with escape sequences removed and control characters shown as `?`."""
    cleaned = _CONTROLS.sub("?", _ESCAPES.sub("", str(text)))
    return " ".join(cleaned.split()) if one_line else cleaned


def json_doc(data: str | bytes):
    """`json.loads` of untrusted data: a document nested too deeply for the parser is a ValueError like any
    other malformed one (as an integer past Python's digit limit is already), never a RecursionError."""
    import json

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as e:
        if type(e) is ValueError:  # an integer past the digit limit: the advice after ';' is for programmers
            raise ValueError(str(e).partition(";")[0]) from None
        raise


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 Node`, `0 Nodes`, `2,000 Nodes`: a count with its noun in agreement (`plural` where adding s is wrong)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
