"""Runbook step 2, live: the Nodes, all of them or those a label selector written from a NodeSet selects."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator

from sunkcheck.collect import cuts
from sunkcheck.collect.kube import NODES, Kube
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE

_IMAGES = re.compile(rb'"images" ?: ?\[')
_PLAIN = bytes(range(0x20, 0x7F)).translate(None, b'"\\[]{},:')
"""The bytes of an image's name (its colons aside), of its size and of the two keys, and the space of spaced JSON:
deleted from a kubelet's image list, what remains is its structure, `{"":[":",":"],"":}` for each image."""
_IMAGE = rb'\{"":\[":*"(?:,":*")*\](?:,"":)?\}'  # names, then sizeBytes (left out when 0)
_IMAGE_LIST = re.compile(rb"\[" + _IMAGE + rb"(?:," + _IMAGE + rb")*\]")
_LAST_IMAGE = re.compile(rb"\}\]")  # bytearray.find of two bytes is several times slower than re's search
_MAX_LIST = 1 << 20  # bytes: a kubelet reporting thousands of images writes far less; a longer list is parsed


def fetch(kube: Kube, selector: str | None = None, whole: bool = False) -> list[dict]:
    """The Nodes `selector` selects (every Node without one); `whole` keeps their image lists (a snapshot saves them;
    managedFields, dropped from every object, are cut either way)."""
    return kube.list(NODES, label_selector=selector, trim=cuts.managed_fields if whole else unread)


def unread(page: bytearray) -> Iterator[cuts.Span]:
    """The lists a check never reads of a page of Nodes: managedFields, and the image lists."""
    return heapq.merge(cuts.managed_fields(page), image_lists(page))


def image_lists(page: bytearray) -> Iterator[cuts.Span]:
    """Where each plain image list opens and closes (its `[` and `]`), in order; each byte is looked at once. The
    kubelet reports up to 50 images, two thirds of a real Node's JSON and of the time to parse it; nothing reads them,
    and `sunkcheck snapshot` saves them. Only a list of plain objects of strings and numbers is cut: one whose names
    hold an escape, a bracket, a brace or a comma, or a key that only ends in "images", is parsed as it is, and
    anything malformed around a list is refused as before."""
    at = 0
    while (i := page.find(b'"images"', at)) >= 0:
        at = i + 1
        key = _IMAGES.match(page, i)
        if not key or page[i - 1:i] == b"\\" or page[key.end():key.end() + 1] == b"]":  # a key's end; empty already
            continue
        opened = key.end() - 1
        last = _LAST_IMAGE.search(page, opened)  # its end, if it is a list of plain objects
        if not last:
            return
        closed = last.end() - 1
        at = closed  # a list that is not plain is left as it is
        if closed - opened <= _MAX_LIST and _IMAGE_LIST.fullmatch(page[opened:closed + 1].translate(None, _PLAIN)):
            yield opened, closed


def first_name(kube: Kube, selector: str) -> str | None:
    """The name of one Node the selector selects (a one-item list), None when it selects none."""
    items = kube.get(NODES.path(), {"labelSelector": selector, "limit": 1}).get("items")
    name = ((items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}).get("metadata")
            or {}).get("name")
    return name if isinstance(name, str) else None


def term_selector(requirements: list[dict]) -> tuple[str | None, ...] | None:
    """Node label requirements as label-selector requirements matching at least the Nodes they match; None when
    they would select every Node."""
    found = []
    for e in requirements:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op in ("In", "NotIn") and values:
            found.append(requirement(key, op.lower(), values))
        elif op in ("Exists", "DoesNotExist") and not values:
            found.append(requirement(key, "" if op == "Exists" else "!", []))
        # Gt, Lt and invalid requirements are left out: the selector then reads a superset
    return tuple(found) or None


def requirement(key: object, op: str, values: list) -> str | None:
    """`key in (a,b)`, `key=a`, `key`, `!key`; None when the key or a value is not label syntax (no object
    could carry it, and the server would reject the selector: spliced in, `a,b!=c` would be two requirements)."""
    if not (isinstance(key, str) and LABEL_KEY.fits(key) and all(isinstance(v, str) and LABEL_VALUE.fits(v) for v in values)):
        return None
    if op in ("", "!"):
        return op + key
    return f"{key}={values[0]}" if op == "=" else f"{key} {op} ({','.join(sorted(set(values)))})"
