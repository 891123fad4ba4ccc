"""Row nodeset-status-stale: the NodeSet's status describes an older spec."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodeset import columns_line, lagging
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import arg
from sunkcheck.text import counted


def nodeset_status_stale(b: Binding) -> Match | None:
    """The status describes an older generation of the spec: its counts say nothing of the latest one, so the
    rows judging them take sunkcheck's own (b.counts reports none); this row says why."""
    _, lag = lagging(b.nodeset)
    if not lag:
        return None
    generation, observed = lag["generation"], lag["observed_generation"]
    evidence = [f"metadata.generation {generation}, status.observedGeneration {observed}: the status "
                f"({columns_line(o.status_counts(b.nodeset))}) describes generation {observed} of {generation}, "
                "not the latest spec"]
    if b.cluster.snapshot.nodes is not None:
        in_pools = sum(o.name(n) in b.feasible_nodes for n in b.pool_nodes)
        evidence.append(f"for the latest spec sunkcheck finds {counted(b.computed_feasible, 'feasible Node')}"
                        + (f" ({in_pools} of the {len(b.pool_nodes)} Nodes of {', '.join(sorted(b.pool_names))})"
                           if b.pools else ""))
    return Match(tuple(evidence), "wait for the SUNK operator to reconcile the latest spec (--wait waits for the status "
                 "to catch up); if it stays behind, the operator is not reconciling the NodeSet: check that the SUNK "
                 "operator's Pod is running and read its log, and the NodeSet's Events:\n"
                 f"kubectl describe nodeset -n {arg(b.namespace)} {arg(b.name)}")


RULE = Rule("nodeset-status-stale", Status.WARNING, "nodeset",
            "The NodeSet's status describes an older spec (observedGeneration below metadata.generation)",
            "The SUNK operator has not reconciled the latest change yet (right after `helm upgrade`), or is not running: "
            "DESIRED, FEASIBLE, CURRENT, READY and MISSCHEDULED describe the old spec, so no row judges them; the rows "
            "judging the spec against the Nodes still apply.",
            "Wait for the operator to reconcile (`--wait`); if the status stays behind, read the NodeSet's Events and "
            "check the SUNK operator.",
            nodeset_status_stale, reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.PODS_ON_USABLE_NODES))
