"""Runbook step 3: the Events on the Node Pool, the NodeSet and its Pods, matched by kind + name + namespace."""

from __future__ import annotations

from collections.abc import Iterable

from sunkcheck.model import EventCounts, Summary
from sunkcheck.text import counted

SANITIZED = "CWNodePoolMetadataSanitized"


def regarding(event: dict) -> dict:
    """The object an Event is about: core/v1 `involvedObject`, events.k8s.io/v1 `regarding`."""
    return event.get("involvedObject") or event.get("regarding") or {}


def by_object(events: Iterable[dict] | None) -> dict[tuple[str, str, str], list[dict]]:
    """Events by exactly the object they are about, (kind, namespace, name); never by name alone (another
    kind may share the name). One pass: a failing NodeSet has thousands of Pods and of Events. About a Pod,
    only Warnings: a live run lists no other (a cluster has thousands of Normal ones), and a replay counts alike."""
    found: dict[tuple[str, str, str], list[dict]] = {}  # a missing kind or name is ""
    for e in events or ():
        obj = regarding(e)
        if obj.get("kind") == "Pod" and not is_warning(e):
            continue
        found.setdefault((obj.get("kind") or "", obj.get("namespace") or "", obj.get("name") or ""), []).append(e)
    return found


def about(index: dict[tuple[str, str, str], list[dict]], kind: str, name: str, namespace: str = "") -> list[dict]:
    """The Events `by_object` filed under exactly this object (a new list: callers extend it)."""
    return list(index.get((kind, namespace, name), ()))


def reason(event: dict) -> str:
    return event.get("reason") or ""


def message(event: dict) -> str:
    return event.get("message") or event.get("note") or ""


def is_warning(event: dict) -> bool:
    return event.get("type") == "Warning"


def describe(event: dict) -> str:
    obj = regarding(event)
    count = event.get("count") or (event.get("series") or {}).get("count")
    times = f" (x{count})" if count and int(count) > 1 else ""
    return f"Event {reason(event)} on {obj.get('kind')} {obj.get('name')}{times}: {message(event)}"


def summary(events: list[dict]) -> Summary:
    """A Warning Event shows a failure (FailedCreate, FailedScheduling, a sanitized label)."""
    warnings = [e for e in events if is_warning(e)]
    if not warnings:
        return Summary(f"no Warning Events ({counted(len(events), 'Event')} in all)", EventCounts(len(events), 0))
    reasons = sorted({reason(e) for e in warnings})
    return Summary(f"{counted(len(warnings), 'Warning Event')}: {', '.join(reasons)}",
                   EventCounts(len(events), len(warnings)), True)
