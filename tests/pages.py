"""List pages as an API server writes them, for the tests of what collect.cuts empties in a page's text before it
is parsed (managedFields, a Node's image lists): the page, the cut, and what a cut page may differ in."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

COMPACT = (",", ":")  # what an API server writes
SPACED = (", ", ": ")  # what the test API server writes


def page(kind: str, items: list[dict[str, Any]], separators: tuple[str, str] = COMPACT) -> bytearray:
    """The text of a `kind` list holding `items`."""
    doc = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": items}
    return bytearray(json.dumps(doc, separators=separators).encode())


def same_but(key: str, emptiable: Callable[[Any], bool], whole: Any, cut: Any) -> bool:
    """`cut` is `whole` with some values of `key` emptied (to []), each one `emptiable` allows; the rest alike to the
    type and the order of keys."""
    if isinstance(whole, dict):
        return isinstance(cut, dict) and list(whole) == list(cut) and all(
            (k == key and cut[k] == [] and emptiable(v)) or same_but(key, emptiable, v, cut[k])
            for k, v in whole.items())
    if isinstance(whole, list):
        return isinstance(cut, list) and len(whole) == len(cut) and all(
            same_but(key, emptiable, w, c) for w, c in zip(whole, cut, strict=True))
    return bool(whole == cut) and type(whole) is type(cut)
