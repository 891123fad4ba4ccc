"""Runbook step 4: the NodeSet's status columns, read against the pool's Nodes."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.pods import creating_text
from sunkcheck.model import NodeSetColumns, NodeSetCounts, Summary

def columns_line(counts: dict[str, int | None], columns: tuple[tuple[str, str], ...] = o.NODESET_COLUMNS) -> str:
    """`DESIRED 8 FEASIBLE 8 ...` as kubectl prints the row ("?" where the status lacks a field, said once)."""
    line = " ".join(f"{col} {shown(counts[key])}" for (col, _), key in zip(columns, counts, strict=True))
    return line + (" (?: the status lacks the field)" if None in counts.values() else "")


def shown(count: int | None) -> str:
    """A count as the reports print it: "?" when the status does not report it."""
    return "?" if count is None else str(count)


def falls_short(size: int | None, *counts: int | None) -> bool:
    """Whether a known size above 0 (a NodeSet's effective size, a DaemonSet's DESIRED) exceeds any of the known
    counts (the status's, or sunkcheck's own)."""
    known = [n for n in counts if n is not None]
    return size is not None and size > 0 and bool(known) and min(known) < size


def replicas(nodeset: dict) -> int | None:
    value = o.spec(nodeset).get("replicas")
    return None if value is None else int(value)


def desired(replicas: int | None, feasible: int | None) -> int | None:
    """DESIRED as the SUNK controller sets it: `spec.replicas` when set (1000 on an 8-Node pool is 1000), else
    FEASIBLE."""
    return feasible if replicas is None else replicas


def effective(desired: int | None, feasible: int | None) -> int | None:
    """The slurmd Pods a converged NodeSet runs: DESIRED, never more than its feasible Nodes (the runbook: "the
    effective size is whichever of the two is lower"); unknown while DESIRED is."""
    return desired if desired is None or feasible is None else min(desired, feasible)


def lagging(workload: dict) -> tuple[str, dict]:
    """Words and counts for a status that describes an older spec (observedGeneration below generation:
    the controller has not reconciled the latest change, say right after `helm upgrade`); else nothing."""
    generation, observed = o.meta(workload).get("generation"), o.status(workload).get("observedGeneration")
    if not isinstance(generation, int) or not isinstance(observed, int) or observed >= generation:
        return "", {}
    return (f"; the status is for generation {observed} of {generation} (the latest spec is not reconciled yet)",
            {"generation": generation, "observed_generation": observed})


def reconciled_counts(nodeset: dict) -> NodeSetColumns:
    """The status's count columns when they describe the latest spec; none reported while the status is for an
    older generation (right after `helm upgrade`): the rows then judge sunkcheck's own counts, never the old ones."""
    counts = o.status_counts(nodeset)
    return NodeSetColumns(**({key: None for key in counts} if lagging(nodeset)[1] else counts))


def summary(nodeset: dict, pool_nodes: int, in_repair: int, left_out: int, computed_feasible: int,
            being_created: int = 0, nodes_read: bool = True) -> Summary:
    """FEASIBLE 0 or other than the pool's Nodes (less those the NodeSet leaves out by name), a count short of the
    effective size (DESIRED, at most FEASIBLE) by more than the Pods `being_created` (on Nodes Ready moments ago,
    Binding.being_created) or MISSCHEDULED Pods show a failure. Without the Nodes (`nodes_read` False) the status
    columns stand alone: sunkcheck's own counts are not known, never 0, and show no failure."""
    c = o.status_counts(nodeset)
    if nodes_read:
        text = f"{columns_line(c)}; pool Nodes {pool_nodes}"
        if left_out:
            text += f" ({left_out} left out by name)"
        text += f", feasible by sunkcheck {computed_feasible}"
    else:
        text = f"{columns_line(c)}; pool Nodes not read"
    if replicas(nodeset) is not None:
        text += f", spec.replicas {replicas(nodeset)}"
    text += creating_text(being_created)
    lag_text, lag = lagging(nodeset)
    feasible = computed_feasible if c["feasible"] is None else c["feasible"]
    size = effective(c["desired"], feasible)
    failing = nodes_read and (not feasible or feasible != pool_nodes - left_out or bool(c["misscheduled"])
                              or falls_short(None if size is None else size - being_created, c["current"], c["ready"]))
    own = (pool_nodes, in_repair, left_out, computed_feasible) if nodes_read else (None, None, None, None)
    return Summary(text + lag_text, NodeSetCounts(**c, **dict(zip(OWN_COUNTS, own, strict=True)),
                                                  replicas=replicas(nodeset), **lag),
                   failing)


OWN_COUNTS = ("pool_nodes", "pool_nodes_in_repair", "pool_nodes_left_out", "feasible_computed")
"""sunkcheck's own counts of the NodeSet's pool, each made of the Nodes."""
