"""Row replicas-cap: `replicas` holds DESIRED below FEASIBLE."""

from __future__ import annotations

from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodeset import replicas
from sunkcheck.model import DeadEnd, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some


def replicas_cap(b: Binding) -> Match | None:
    """DESIRED below FEASIBLE because `replicas` is set; replicas above FEASIBLE is no cap (the effective size is
    FEASIBLE then)."""
    cap = replicas(b.nodeset)
    want = b.counts.desired if b.counts.desired is not None else cap
    if cap is None or want is None or want >= b.feasible:
        return None
    idle = [n for n in b.feasible_nodes if b.cluster.pool_of(n) in b.pool_names and not b.verdict(n).placed]
    evidence = [f"spec.replicas {cap}: DESIRED {want} < FEASIBLE {b.feasible}"]
    if idle:
        evidence.append(f"{len(idle)} feasible Node(s) run no slurmd Pod: {some(idle)}")
    fix = (f"omit replicas from the node definition behind NodeSet {b.name} so DESIRED tracks FEASIBLE, "
           f"or raise it to at least {b.feasible}; an intentional cap can be suppressed with --ignore replicas-cap")
    return Match(tuple(evidence), fix, dead_end=DeadEnd(
        f"replicas {cap} caps DESIRED below FEASIBLE {b.feasible} (replicas-cap): no further Node gets a slurmd Pod "
        "however long it waits"))


RULE = Rule("replicas-cap", Status.WARNING, "nodeset",
            "DESIRED is lower than FEASIBLE after a Node Pool scale-up",
            "`replicas` caps the NodeSet below the Node Pool size.",
            "Omit `replicas`, or raise it.",
            replicas_cap, reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.PODS_ON_USABLE_NODES))
