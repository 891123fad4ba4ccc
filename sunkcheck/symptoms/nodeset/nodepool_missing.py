"""Row nodepool-missing: a Node Pool the NodeSet names does not exist."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import expression_yaml
from sunkcheck.symptoms.nodeset._shared import absent_pools, no_such_pool


def nodepool_missing(b: Binding) -> Match | None:
    """A pool the NodeSet names does not exist while others serve it: a typo, or a pool deleted since."""
    absent = absent_pools(b)
    if not absent:
        return None
    evidence = [no_such_pool(b, p.name) for p in absent]
    kept = sorted(b.pool_names - {p.name for p in absent})
    fix = f"create the Node Pool, or name only existing ones in the {o.POOL_LABEL} expression" + (
        ", in its place:\n" + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": kept}) if kept else "")
    return Match(tuple(evidence), fix)


RULE = Rule("nodepool-missing", Status.WARNING, "nodepool",
            "A Node Pool the NodeSet names does not exist",
            "A typo in the pool name, or a Node Pool deleted since: the capacity it was meant to add never arrives.",
            "Create the Node Pool, or name only existing pools in the NodeSet's affinity.",
            nodepool_missing, needs=("nodepools",), explained_by=("no-feasible-nodes",), reads=(Read.POOL_NODES,))
