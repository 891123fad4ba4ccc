"""The troubleshooting table as data: one Rule per row (NodeSet and DaemonSet tables alike), matched against a
target's facts; which rows are reported does not depend on the rows' order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sunkcheck.model import DeadEnd, Status, Symptom
from sunkcheck.reads import Read

EXAMPLES = 3  # Nodes or Pods named per line of evidence; the rest are counted

Facts = TypeVar("Facts")
"""What a table's rows are matched against: a NodeSet's Binding, a DaemonSet's facts."""


def some(names: Iterable[str]) -> str:
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
    cause: str = ""
    """Overrides the rule's likely cause with the one the evidence shows (the rule's names every possible one)."""
    symptom: str = ""
    """Overrides the rule's symptom with what the evidence counts (the rule's is the runbook's, for any count)."""
    dead_end: DeadEnd | None = None
    """What the evidence shows that cannot clear by itself (Quota False, a taint no one tolerates): --wait stops."""
    awaits: str = ""
    """What the evidence shows may clear by itself (a Job's Pod ending), named on --wait's progress line."""
    fix_beside: tuple[tuple[str, str], ...] = ()
    """(row id, fix) pairs: the fix printed instead when that row is reported too, one that refers to that row's fix
    for what both would restore: two rows never hand over the same commands twice."""


@dataclass(frozen=True)
class Rule(Generic[Facts]):
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
    when: Callable[[Facts], Match | None]
    """The row's condition over its table's facts: evidence and a fix, or None."""
    needs: tuple[str, ...] = ()
    """Snapshot resources without which the row cannot be judged."""
    explained_by: tuple[str, ...] = ()
    """Rows that, when they fire, already explain this one: no cascade of unrelated rows."""
    severity_note: str = ""
    reads: tuple[Read, ...] | None = None
    """What the row looks at beyond the workload and its Pods (sunkcheck.reads): a live
    check reads exactly that. None (undeclared) fails a test, so a row that looks wider cannot go unread."""


def match(rules: tuple[Rule[Facts], ...], facts: Facts, missing: set[str],
          ignored: frozenset[str] = frozenset()) -> list[Symptom]:
    """Every row that applies, in table order; the order decides nothing else. A row is left out when a row its
    `explained_by` names is reported and not ignored. A row left out explains nothing in turn: when A explains B
    explains C and all three fire, A and C are reported (unless C names A too). Ignored rows are kept, marked,
    and explain nothing. A row whose fix refers to another's (`fix_beside`) does so only when that one is reported and
    not ignored."""
    found = {r.id: m for r in rules if not missing.intersection(r.needs) and (m := r.when(facts)) is not None}
    explainers = {r.id: r.explained_by for r in rules}
    reported: dict[str, bool] = {}

    def is_reported(rule_id: str) -> bool:  # explained_by is acyclic (tests/test_registry.py), so this ends
        if rule_id not in reported:
            reported[rule_id] = rule_id in found and not any(
                e not in ignored and is_reported(e) for e in explainers[rule_id])
        return reported[rule_id]

    def fix(m: Match) -> str:
        return next((text for other, text in m.fix_beside if other not in ignored and is_reported(other)), m.fix)

    return [Symptom(r.id, found[r.id].severity or r.severity, found[r.id].symptom or r.symptom,
                    found[r.id].cause or r.cause, fix(found[r.id]),
                    tuple(found[r.id].evidence), r.step, r.id in ignored, found[r.id].dead_end,
                    awaits=found[r.id].awaits)
            for r in rules if is_reported(r.id)]
