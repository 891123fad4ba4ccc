"""Runbook step 4: the NodeSet's status columns, read against the pool's Nodes."""

from __future__ import annotations

from sunkcheck import objects as o

# kubectl column -> NodeSet status field, in `kubectl get nodeset` order
COLUMNS = (
    ("DESIRED", "desiredNumberScheduled"),
    ("FEASIBLE", "numberFeasible"),
    ("CURRENT", "currentNumberScheduled"),
    ("READY", "numberReady"),
    ("UP-TO-DATE", "updatedNumberScheduled"),
    ("DRAIN", "numberDrain"),
    ("MISSCHEDULED", "numberMisscheduled"),
    ("UNAVAILABLE", "numberUnavailable"),
)


def counts(nodeset: dict) -> dict[str, int | None]:
    """The status columns as JSON-friendly keys (`up_to_date`); None where the field is absent."""
    st = o.status(nodeset)
    return {column.lower().replace("-", "_"): (None if st.get(field) is None else int(st[field]))
            for column, field in COLUMNS}


def replicas(nodeset: dict) -> int | None:
    value = o.spec(nodeset).get("replicas")
    return None if value is None else int(value)


def summary(nodeset: dict, pool_nodes: int, computed_feasible: int) -> tuple[str, dict]:
    c = counts(nodeset)
    shown = " ".join(f"{col} {'?' if c[key] is None else c[key]}"
                     for (col, _), key in zip(COLUMNS, c))
    text = f"{shown}; pool Nodes {pool_nodes}, feasible by sunkcheck {computed_feasible}"
    if replicas(nodeset) is not None:
        text += f", spec.replicas {replicas(nodeset)}"
    return text, {k: v for k, v in c.items() if v is not None} | {
        "pool_nodes": pool_nodes, "feasible_computed": computed_feasible} | (
        {"replicas": replicas(nodeset)} if replicas(nodeset) is not None else {})
