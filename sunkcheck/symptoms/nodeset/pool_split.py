"""Row pool-split: a pool meant for the NodeSet that its affinity shuts out."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import describe_expression
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import expression_yaml, prose


def pool_split(b: Binding) -> Match | None:
    """An expected pool the NodeSet's affinity shuts out while it runs on others: FEASIBLE is short by exactly
    the Nodes that pool would add. With no FEASIBLE Node at all, it is no split (no-feasible-nodes)."""
    split = [(pool, shut, usable) for pool, shut, usable in b.excluded if usable]
    if not split or not b.feasible_nodes:
        return None
    evidence = [f"Node Pool {pool.name} ({pool.instance_type or 'instance type unknown'}) is meant for {b.name}, but "
                f"{', '.join(describe_expression(e) for e in shut)} shuts it out: {len(usable)}/{len(pool.nodes)} of its "
                f"Nodes would be feasible ({some(usable)})" for pool, shut, usable in split]
    gained = sum(len(usable) for _, _, usable in split)
    evidence.append(f"FEASIBLE {b.feasible}; with {', '.join(p.name for p, _, _ in split)} it would be {b.feasible + gained}")
    shut_out = sorted({prose(describe_expression(e)) for _, shut, _ in split for e in shut})
    # the pools it selects now stay: its running Pods would be misscheduled without them
    kept = sorted(b.selected_pools - b.expected)
    fix = (f"add {', '.join(sorted(b.expected - b.selected_pools))} to the pools {b.name} selects"
           + (f" now, keeping {', '.join(kept)} (dropped, its Nodes would leave the NodeSet)" if kept else "")
           + f", by name, in place of {', '.join(shut_out)} (keep its other expressions):\n"
           + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.expected | b.selected_pools)}))
    return Match(tuple(evidence), fix)


RULE = Rule("pool-split", Status.WARNING, "nodeset",
            "FEASIBLE is short by exactly the Node count of another Node Pool",
            "The NodeSet's affinity shuts out a Node Pool meant for it (named with --pool, or annotated "
            "sunkcheck.io/nodesets): its capacity spans several pools, but the NodeSet selects only some.",
            "Add the pools it shuts out to `values` with `operator: In`, keeping the pools it selects now, or match a "
            "label they all share.",
            pool_split, needs=("nodes",),
            reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.PODS_ON_USABLE_NODES, Read.PODS_ON_SHUT_OUT_NODES))
