"""Whether an object is one a watch's label and field selectors select: the server filters a watch, and serve
checks that it did (an object outside is dropped, not cached). Only the syntax sunkcheck writes is read; a
requirement in any other (which the server accepted) is taken as met: never an object refused for a selector
this module cannot read."""

from __future__ import annotations

import re

_LABEL = re.compile(r"\s*(?:(?P<absent>!)\s*(?P<key0>[\w./-]+)|(?P<key>[\w./-]+)\s*"
                    r"(?:(?P<op>==|=|!=)\s*(?P<value>[\w.-]*)|\s(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*")
_FIELD = re.compile(r"\s*(?P<path>[\w.]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\\]*?)\s*")


def outside(obj: dict, label_selector: str | None, field_selector: str | None) -> str:
    """The first requirement of the selectors that `obj` fails, as written; empty when it meets them all."""
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    labels = labels if isinstance(labels, dict) else {}
    for part in _parts(label_selector):
        if (m := _LABEL.fullmatch(part)) and not _label_met(m, labels):
            return part.strip()
    for part in _parts(field_selector):
        if (m := _FIELD.fullmatch(part)) and not _field_met(m, obj):
            return part.strip()
    return ""


def _parts(selector: str | None) -> list[str]:
    """The requirements of a selector: split at the commas outside parentheses (`key in (a,b)` is one)."""
    return re.findall(r"(?:[^,(]|\([^)]*\))+", selector or "")


def _label_met(m: re.Match[str], labels: dict) -> bool:
    if m["absent"]:
        return m["key0"] not in labels
    value = labels.get(m["key"])
    if m["set"]:
        return (value in {v.strip() for v in m["values"].split(",")}) == (m["set"] == "in")
    if m["op"] == "!=":
        return value != m["value"]
    return value == m["value"] if m["op"] else m["key"] in labels


def _field_met(m: re.Match[str], obj: dict) -> bool:
    value: object = obj
    for step in m["path"].split("."):
        value = value.get(step) if isinstance(value, dict) else None
    if value is not None and not isinstance(value, str):
        return True  # a number or a boolean: how the server spells it is not this module's to guess
    return ((value or "") == m["value"]) == (m["op"] != "!=")
