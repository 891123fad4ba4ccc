"""Runbook step 2, live: the Nodes, all of them or those a label selector written from a NodeSet selects."""

from __future__ import annotations

from sunkcheck.collect.kube import NODES, Kube
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE


def fetch(kube: Kube, selector: str | None = None) -> list[dict]:
    return kube.list(NODES, label_selector=selector)


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
