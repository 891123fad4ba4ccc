"""Untrusted text stays text: strip terminal escapes and control characters from cluster strings."""

from __future__ import annotations

import re

# CSI / OSC / other ESC sequences, then any remaining C0/C1 control except newline and tab
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object, *, one_line: bool = False) -> str:
    """`text` (str() of it) with escape sequences removed and control characters shown as `?`."""
    cleaned = _CONTROLS.sub("?", _ESCAPES.sub("", str(text)))
    return " ".join(cleaned.split()) if one_line else cleaned
