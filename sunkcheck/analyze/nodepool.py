"""Runbook step 1: did the Node Pool reach its target, and what do its conditions say?"""

from __future__ import annotations

from dataclasses import dataclass

from sunkcheck import objects as o
from sunkcheck.model import PoolCounts, Status, Summary
from sunkcheck.text import counted

NODES_PER_RACK = 18  # NVL72 rack pools (GB200/GB300) scale by targetRacks


@dataclass(frozen=True)
class Pool:
    """A Node Pool the NodeSet is bound to: its object (None if absent), its Nodes and its Events."""

    name: str
    obj: dict | None
    nodes: tuple[dict, ...]
    events: tuple[dict, ...]

    @property
    def target(self) -> int | None:
        spec = o.spec(self.obj or {})
        if spec.get("targetNodes") is not None:
            return int(spec["targetNodes"])
        if spec.get("targetRacks") is not None:
            return int(spec["targetRacks"]) * NODES_PER_RACK
        return None

    @property
    def current(self) -> int | None:
        value = o.status(self.obj or {}).get("currentNodes")
        return None if value is None else int(value)

    @property
    def instance_type(self) -> str | None:
        return o.spec(self.obj or {}).get("instanceType") or next(
            (o.labels(n).get(o.INSTANCE_TYPE_LABEL) for n in self.nodes), None)

    @property
    def node_labels(self) -> dict:
        return o.spec(self.obj or {}).get("nodeLabels") or {}

    @property
    def node_taints(self) -> list[dict]:
        return o.spec(self.obj or {}).get("nodeTaints") or []


def blockers(pool: Pool) -> list[tuple[Status, str]]:
    """Conditions that explain a shortfall: CRITICAL when the Nodes will never arrive, else WARNING."""
    found = []
    for cond in o.status(pool.obj or {}).get("conditions") or ():
        ctype, state, reason = cond.get("type"), cond.get("status"), cond.get("reason") or ""
        text = f"condition {ctype}={state}" + (f" ({reason})" if reason else "") + (
            f": {cond['message']}" if cond.get("message") else "")
        if ctype == "Quota" and state == "False":
            found.append((Status.CRITICAL, text))
        elif ctype == "Capacity" and reason and reason != "Sufficient":
            found.append((Status.WARNING, text))
    return found


def sizes(pools: tuple[Pool, ...], nodes_read: bool = True) -> tuple[tuple[str, PoolCounts], ...]:
    """Each existing pool's TARGET and CURRENT, and its Nodes in the cluster where `nodes_read`, by name (the nodepool
    step's counts are the sums of the first two)."""
    return tuple((p.name, PoolCounts(p.target or 0, p.current or 0, len(p.nodes) if nodes_read else None))
                 for p in pools if p.obj is not None)


def uncounted(size: PoolCounts) -> int:
    """How many Nodes CURRENT counts toward TARGET that the cluster does not hold (carrying the pool's label): CURRENT
    is the Nodes booted, registered and present, yet the pool's status can run ahead of the Nodes registering after a
    scale-up, or behind a Node removed. 0 where the Nodes were not read."""
    return 0 if size.present is None else max(0, min(size.current, size.target) - size.present)


def summary(pools: tuple[Pool, ...], nodes_read: bool = True) -> Summary:
    """A pool that does not exist, is not at its target, has a blocking condition or counts Nodes the cluster does not
    hold (`uncounted`, where `nodes_read`) shows a failure."""
    if not pools:
        return Summary("no Node Pool found for this NodeSet (pass --pool)", None)
    parts, each = [], dict(sizes(pools, nodes_read))
    for p in pools:
        if p.obj is None:
            parts.append(f"{p.name}: no such Node Pool")
            continue
        relation = "=" if p.current == p.target else "≠"
        said = [text for _, text in blockers(p)]
        if uncounted(each[p.name]):
            said.append(f"{counted(each[p.name].present or 0, 'Node')} in the cluster, CURRENT counts {p.current}")
        extra = "; ".join(said)
        parts.append(f"{p.name}: CURRENT {p.current} {relation} TARGET {p.target}"
                     + (f" ({p.instance_type})" if p.instance_type else "") + (f"; {extra}" if extra else ""))
    counts = PoolCounts(sum(c.target for c in each.values()), sum(c.current for c in each.values()))
    failing = any(p.obj is None or (p.target is not None and p.current != p.target) or blockers(p) for p in pools)
    return Summary("; ".join(parts), counts, failing or any(map(uncounted, each.values())))

