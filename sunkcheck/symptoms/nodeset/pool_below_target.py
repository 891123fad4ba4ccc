"""Row pool-below-target: a Node Pool whose CURRENT is below its TARGET, and whether it ever arrives."""

from __future__ import annotations

from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import blockers
from sunkcheck.model import POOL_CURRENT, DeadEnd, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import nodepool_command, prose


def pool_below_target(b: Binding) -> Match | None:
    """Pools short of their TARGET: provisioning, waiting for capacity, or never arriving without quota (a
    dead end for --wait)."""
    short = [p for p in b.pools if p.obj is not None and p.target is not None and (p.current or 0) < p.target]
    if not short:
        return None
    evidence, fixes, severity, never = [], [], Status.WARNING, []
    for p in short:
        evidence.append(f"Node Pool {p.name}: CURRENT {p.current or 0} of TARGET {p.target}"
                        + (f" ({p.instance_type})" if p.instance_type else ""))
        found = blockers(p)
        evidence += [f"Node Pool {p.name}: {text}" for _, text in found]
        if any(level is Status.CRITICAL for level, _ in found):
            severity = Status.CRITICAL
            never.append(p.name)
            fixes.append(f"request {prose(p.instance_type or 'instance type')} quota for Node Pool {p.name}: "
                         "its Nodes will never arrive without it. Its conditions:")
        elif found:
            fixes.append(f"Node Pool {p.name} waits for capacity: it clears by itself. Follow it:")
        else:
            fixes.append(f"Node Pool {p.name} may still be provisioning (a new Node takes ~20 min). Follow it:")
        fixes.append(nodepool_command("describe", p.name))
    stuck = DeadEnd(f"the Quota condition of Node Pool {', '.join(never)} is False: its Nodes never arrive without "
                    "more quota", (POOL_CURRENT,)) if never else None
    return Match(tuple(evidence), "\n".join(fixes), severity, dead_end=stuck)


RULE = Rule("pool-below-target", Status.WARNING, "nodepool",
            "Node Pool CURRENT is below TARGET",
            "The Node Pool has not delivered its Nodes: a Node Pool problem (quota, capacity, provisioning), "
            "not a matching problem.",
            "Check `kubectl describe nodepool <pool>`: wait for queued capacity, request quota if the Quota condition is False.",
            pool_below_target, needs=("nodepools",), severity_note="critical when quota says the Nodes will never arrive",
            reads=(Read.POOL_NODES,))
