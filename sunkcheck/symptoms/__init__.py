"""The troubleshooting table as data: one Rule per row, matched in order against a target's facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sunkcheck.model import Status, Symptom


EXAMPLES = 3  # Nodes or Pods named per line of evidence; the rest are counted


def some(names) -> str:
    """A few names, sorted, and how many more: evidence stays one readable line on big clusters."""
    names = sorted(names)
    return ", ".join(names[:EXAMPLES]) + (f" and {len(names) - EXAMPLES} more" if len(names) > EXAMPLES else "")


@dataclass(frozen=True)
class Match:
    """What a rule found: the objects that prove it, and the fix spelled with the cluster's own names."""

    evidence: tuple[str, ...]
    fix: str
    severity: Status | None = None
    """Overrides the rule's severity (e.g. a pool that will never reach its target)."""


@dataclass(frozen=True)
class Rule:
    """One row of the symptom table (ids are stable: never renamed or reused)."""

    id: str
    severity: Status
    step: str
    """The runbook step the row belongs to."""
    symptom: str
    """What the operator sees (the runbook's "Symptom" column)."""
    cause: str
    fix: str
    """The generic fix; a match replaces it with one naming the real objects."""
    when: Callable[..., Match | None]
    needs: tuple[str, ...] = ()
    """Snapshot resources without which the row cannot be judged."""
    explained_by: tuple[str, ...] = ()
    """Rows that, when they fire, already explain this one: no cascade of unrelated rows."""
    severity_note: str = ""


def match(rules: tuple[Rule, ...], facts, missing: set[str], ignored: frozenset[str] = frozenset()) -> list[Symptom]:
    """Every row that applies, in table order; suppressed rows are kept, marked, and explain nothing."""
    fired: list[Symptom] = []
    active: set[str] = set()
    for rule in rules:
        if missing.intersection(rule.needs) or active.intersection(rule.explained_by):
            continue
        found = rule.when(facts)
        if found is None:
            continue
        suppressed = rule.id in ignored
        fired.append(Symptom(rule.id, found.severity or rule.severity, rule.symptom, rule.cause, found.fix,
                             tuple(found.evidence), rule.step, suppressed))
        if not suppressed:
            active.add(rule.id)
    return fired
