"""Runbook step 3: the Events on the Node Pool, the NodeSet and its Pods, matched by kind + name + namespace."""

from __future__ import annotations

SANITIZED = "CWNodePoolMetadataSanitized"


def regarding(event: dict) -> dict:
    """The object an Event is about: core/v1 `involvedObject`, events.k8s.io/v1 `regarding`."""
    return event.get("involvedObject") or event.get("regarding") or {}


def events_for(events, kind: str, name: str, namespace: str = "") -> list[dict]:
    """Events about exactly this object; never by name alone (another kind may share the name)."""
    found = []
    for e in events or ():
        obj = regarding(e)
        if obj.get("kind") == kind and obj.get("name") == name and (obj.get("namespace") or "") == namespace:
            found.append(e)
    return found


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


def summary(events: list[dict]) -> tuple[str, dict]:
    warnings = [e for e in events if is_warning(e)]
    if not warnings:
        return f"no Warning Events ({len(events)} Events in all)", {"events": len(events), "warnings": 0}
    reasons = sorted({reason(e) for e in warnings})
    return (f"{len(warnings)} Warning Event(s): {', '.join(reasons)}",
            {"events": len(events), "warnings": len(warnings)})
