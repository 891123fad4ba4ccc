"""Nodes the NodeSet asks for a label value they no longer carry, which another NodeSet selects now (the pool
relabelled for that one): asking for their value would put both NodeSets on the same Nodes, so no fix does."""

from __future__ import annotations

from collections.abc import Sequence

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodeset import replicas
from sunkcheck.symptoms.fixes import DRAINED_EVICTION, drain, evict_drained, label_nodepool, prose_list
from sunkcheck.symptoms.nodeset._shared import values_carried
from sunkcheck.text import counted


def nodesets(names: list[str]) -> str:
    """`NodeSet a` or `NodeSets a, b`, quoted where a shell would act on them."""
    return f"NodeSet{'s' if len(names) > 1 else ''} {prose_list(names)}"


def moved_value_fix(b: Binding, expr: dict, nodes: Sequence[dict], takers: list[str], beside: str = "") -> str:
    """The Nodes carry another NodeSet's value where `expr` asks for its own: no snippet asks for theirs. Either the
    move is meant (this NodeSet leaves those Nodes: its Slurm nodes drained, its Pods evicted, it scaled down) or the
    pool's label goes back, which takes the Nodes from `takers`. `beside`: the reported row whose fix spells both, so
    this one names it rather than repeating its commands."""
    key, who = expr["key"], nodesets(takers)
    carried = prose_list(f"{key}={v}" for v in sorted(values_carried(key, nodes)))
    text = (f"the Nodes carry {carried}, which {who} {'select' if len(takers) > 1 else 'selects'}: asking for it here "
            "would put both NodeSets on the same Nodes, so no snippet does")
    if beside:
        return (f"{text}; {beside}'s fix says what to do if the move is intended (this NodeSet's Slurm nodes drained "
                "and its Pods evicted) and if not (the pool's label put back, which takes the Nodes from "
                f"{who})")
    names = {o.name(n) for n in nodes}
    restores = pool_restores(b, expr, nodes)
    back = (f"restore the pool's label, which takes the Nodes from {who}:\n" + "\n".join(restores) if restores else
            f"decide with the owners of {who} which NodeSet the Nodes are for")
    return (f"{text}\n{leave_moved(b, [p for p in b.pods if o.node_name(p) in names and not o.is_terminal(p)])}\n"
            f"if not, {back}")


def leave_moved(b: Binding, pods: list[dict]) -> str:
    """The move meant: this NodeSet's slurmd `pods` on the moved Nodes go, their Slurm nodes drained first (removing a
    slurmd Pod kills its jobs); it selects none of those Nodes now, so it creates none there, and what is left of it
    is said from its facts (`_what_is_left`)."""
    left = _what_is_left(b)
    if not pods:
        return f"if the move is intended, this NodeSet runs no slurmd Pod there: {left}"
    return ("if the move is intended, drain this NodeSet's Slurm nodes there (named like the Pods) first, on a login "
            "node: removing a slurmd Pod kills the Slurm jobs on it:\n"
            + drain(pods, f"sunkcheck: Node no longer matches NodeSet {b.name}") + "\n"
            "once it lists none, evict the Pods (this NodeSet selects none of those Nodes now, so it creates none "
            f"there; {DRAINED_EVICTION}):\n{evict_drained(pods)}\nthen {left}")


def _what_is_left(b: Binding) -> str:
    """The NodeSet once it leaves the moved Nodes. Without `replicas` it keeps one slurmd Pod per Node it selects, so
    there is nothing to scale (a `kubectl scale` would set a replicas that later caps it); with `replicas` above
    FEASIBLE, lower it; selecting no Node at all, it is retired or its binding is wrong."""
    cap = replicas(b.nodeset)
    if b.feasible == 0:
        return "remove it from the values if it is retired (it selects no other Node now)"
    if cap is None:
        return (f"nothing is left to scale: the NodeSet sets no replicas, so it keeps a slurmd Pod on each of the "
                f"{counted(b.feasible, 'Node')} it selects (FEASIBLE {b.feasible}) and none on the moved ones")
    if cap > b.feasible:
        return (f"lower replicas in the node definition behind NodeSet {b.name} from {cap} to FEASIBLE {b.feasible}, "
                "the Nodes it selects now")
    return f"nothing is left to scale: replicas {cap} is within the {counted(b.feasible, 'Node')} it selects (FEASIBLE)"


def pool_restores(b: Binding, expr: dict, nodes: Sequence[dict]) -> list[str]:
    """The patches putting back, in the pools of `nodes` whose nodeLabels set `expr`'s key to another value, the
    one value `expr` asks for (CKS relabels the pool's Nodes); none when `expr` asks for more than one, or not
    with In."""
    wanted = [str(v) for v in expr.get("values") or ()]
    if expr.get("operator") != "In" or len(wanted) != 1:
        return []
    pools = sorted({pool for n in nodes if (pool := o.pool_of(n))})
    return [label_nodepool(p.name, {expr["key"]: wanted[0]}) for p in map(b.cluster.pool, pools)
            if p.obj is not None and p.node_labels.get(expr["key"]) not in (None, wanted[0])]
