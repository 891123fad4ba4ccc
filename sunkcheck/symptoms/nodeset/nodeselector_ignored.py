"""Row nodeselector-ignored: the NodeSet's Pods run outside its pool (a nodeSelector that never reaches them)."""

from __future__ import annotations

import itertools
from collections.abc import Collection

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import describe_expression, matches_affinity
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule
from sunkcheck.symptoms.fixes import DRAINED_EVICTION, add_expressions, drain, evict_drained, prose, prose_list, unlabel_node
from sunkcheck.symptoms.nodeset._shared import intended_pools, reapplied
from sunkcheck.text import counted


def nodeselector_ignored(b: Binding) -> Match | None:
    """The NodeSet's Pods outside its pool: a nodeSelector set beside the template (it never reaches the Pods), or
    an affinity that selects other pools' Nodes too (the Pods on them are named, and the pool's Nodes counted)."""
    outside = o.spec(b.nodeset).get("nodeSelector") or {}
    intended = intended_pools(b)
    # a fact of the NodeSet and each Pod's Node: judged again for the Nodes replaced alone
    stray = list(itertools.compress(b.pods, b.cluster.each(
        ("stray", *sorted(intended)), b.hosts, lambda n: _stray(b, intended, n), (b.nodeset,)))) if intended else []
    evidence = _selector_evidence(b, outside) + _stray_evidence(b, intended, stray)
    if not evidence:
        return None
    if outside:
        wanted = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(outside.items())]
        return Match(tuple(evidence), "move the constraint from nodeSelector into the node definition's affinity: "
                     + add_expressions(wanted, b.pod_spec))
    if b.expected and (hand := _hand_picked(b, stray)):
        return _off_hand_picked_nodes(b, stray, hand, tuple(evidence))
    return Match(tuple(evidence), f"bind the NodeSet to its pool by name (the {counted(len(stray), 'slurmd Pod')} "
                 "outside it are then misscheduled: run sunkcheck again for how to drain their Slurm nodes before "
                 "deleting them): " + add_expressions(
                     [{"key": o.POOL_LABEL, "operator": "In", "values": sorted(intended)}], b.pod_spec),
                 cause=_wide_affinity_cause(b, intended))


def _stray(b: Binding, intended: Collection[str | None], node: dict | None) -> bool:
    """Whether a slurmd Pod on `node` runs outside the `intended` pools, on a Node its affinity selects."""
    if not node:
        return False
    return o.pool_of(node) not in intended and matches_affinity(b.pod_spec, node)


def _selector_evidence(b: Binding, outside: dict) -> list[str]:
    """A nodeSelector outside the template, when the template's affinity matches Nodes without its labels."""
    loose = [o.name(n) for n in b.cluster.nodes.values() if matches_affinity(b.pod_spec, n)
             and not all(o.labels(n).get(k) == v for k, v in outside.items())] if outside else []
    if not loose:
        return []
    pairs = ", ".join(f"{k}={v}" for k, v in sorted(outside.items()))
    return [f"spec.nodeSelector {pairs} sits outside spec.template.spec and never reaches the slurmd Pods: the "
            f"template's affinity matches {len(loose)} Node(s) without those labels, "
            f"{len(b.feasible_nodes.intersection(loose))} of them feasible"]


def _stray_evidence(b: Binding, intended: set[str], stray: list[dict]) -> list[str]:
    """CURRENT above the intended pools' Nodes, and the Pods outside them (a few named, the rest counted)."""
    current, pool_nodes = b.counts.current, sum(len(b.cluster.pool(name).nodes) for name in intended)
    evidence = [f"CURRENT {current} > {counted(pool_nodes, 'Node')} in {', '.join(sorted(intended))}"] \
        if stray and current is not None and current > pool_nodes else []
    evidence += [f"Pod {o.name(p)} on Node {o.node_name(p)} (pool {b.cluster.pool_of(o.node_name(p)) or 'none'})"
                 for p in stray[:EXAMPLES]]
    if len(stray) > EXAMPLES:
        evidence.append(f"and {counted(len(stray) - EXAMPLES, 'more Pod')} outside the pool")
    return evidence


def _hand_picked(b: Binding, pods: list[dict]) -> dict[str, list[str]]:
    """The label keys set by hand (not by their pool's nodeLabels) that alone make the NodeSet select the Nodes of
    `pods`, by key, with their Nodes; empty unless every one of them is such a Node (their pool's own labels would
    not select them)."""
    found: dict[str, list[str]] = {}
    for name in sorted({o.node_name(p) or "" for p in pods}):
        node, pool = b.cluster.nodes[name], b.cluster.pool(b.cluster.pool_of(name) or "")
        if pool.obj is None or nd.selects(b.selection, reapplied(pool, node), name):
            return {}
        for e in nd.positive(b.terms):
            if nd.is_user_key(key := e["key"]) and key in o.labels(node) and pool.node_labels.get(key) != o.labels(node)[key]:
                found.setdefault(key, []).append(name)
    return found


def _off_hand_picked_nodes(b: Binding, pods: list[dict], hand: dict[str, list[str]], evidence: tuple) -> Match:
    """slurmd Pods on Nodes of a pool not meant for the NodeSet, which labels set there by hand pull it onto: never
    the other pool's nodeLabels (that would label all its Nodes); drain the Slurm nodes, take the labels off those
    Nodes, then evict the Pods."""
    nodes = sorted({n for names in hand.values() for n in names})
    pools = sorted({b.cluster.pool_of(n) or "" for n in nodes})
    keys = ", ".join(sorted(hand))
    cause = (f"{prose(keys)} was set by hand on {'Nodes' if len(nodes) > 1 else 'Node'} {prose_list(nodes)} of "
             f"{prose_list(pools)}, not meant for the NodeSet (it is meant for {prose_list(sorted(b.expected))}): "
             "the affinity selects them, so slurmd Pods run there.")
    reason = f"sunkcheck: Node of a pool not meant for NodeSet {b.name}"
    fix = (f"leave {prose_list(pools)}'s nodeLabels alone (set there, the label reaches every Node of it). "
           "Drain the Slurm nodes of those Pods first, on a login node: removing a slurmd Pod kills the Slurm jobs on "
           "it:\n" + drain(pods, reason) + "\nthen remove the label from those Nodes:\n"
           + "\n".join(unlabel_node(names, [k]) for k, names in sorted(hand.items()))
           + "\nonce no job runs on them (the wait above), evict the Pods (the NodeSet creates its Pods only on the Nodes it "
           + f"selects; {DRAINED_EVICTION}):\n" + evict_drained(pods))
    return Match(evidence, fix, cause=cause)


def _wide_affinity_cause(b: Binding, intended: set[str]) -> str:
    """No nodeSelector outside the template: the affinity itself selects by labels other pools' Nodes carry."""
    pools = ", ".join(sorted(intended))
    wanted = " and ".join(describe_expression(e) for e in nd.positive(b.terms_without_selector))
    if not wanted:
        return f"The node definition requires no label: any Node may take its Pods, nothing keeps them to {pools}."
    return (f"The node definition's required affinity selects {wanted}, which other pools' Nodes carry too: nothing in "
            f"it keeps the Pods to {pools}.")


RULE = Rule("nodeselector-ignored", Status.CRITICAL, "pods",
            "The NodeSet uses more Nodes than the target Node Pool contains",
            "The node definition sets the constraint with nodeSelector, which doesn't reach the Pod template.",
            "Move the constraint into an affinity block with requiredDuringSchedulingIgnoredDuringExecution.",
            nodeselector_ignored, reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.POD_HOSTS))
