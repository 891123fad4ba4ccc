"""What a diagnosis keeps between runs (Judged: indexes, per-Node passes, verdicts) never goes stale: after any
sequence of objects replaced as serve's cache replaces them (a changed object is a new one, the rest the same
objects), the diagnosis that keeps them equals a fresh one, and so does the read plan that keeps them."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sunkcheck import objects as o
from sunkcheck.analyze.cluster import Cluster, Judged
from sunkcheck.analyze.nodes import is_user_key
from sunkcheck.pipeline import diagnose
from sunkcheck.plan import Plan
from sunkcheck.snapshot import Snapshot, load
from sunkcheck.source import declared_reads
from sunkcheck.target import Target

ROOT = Path(__file__).resolve().parent.parent
CASES = ("healthy-pool-name", "labels-not-from-pool", "foreign-pod-resources", "pool-split", "healthy-idle-pool",
         "several-nodesets", "misscheduled", "no-feasible-node-in-repair")


def swapped(objs: tuple[dict, ...], i: int, change: Callable[[dict], object]) -> tuple[dict, ...]:
    """`objs` with the i-th replaced by a changed copy (the others the same objects)."""
    i %= len(objs)
    new = copy.deepcopy(objs[i])
    change(new)
    return (*objs[:i], new, *objs[i + 1:])


def pool_names(snap: Snapshot) -> list[str]:
    return sorted({o.name(p) for p in snap.nodepools or ()} | {p for n in snap.nodes or () if (p := o.pool_of(n))})


def step(snap: Snapshot, op: tuple[str, int, int]) -> Snapshot:
    """One change: a Node tainted, cordoned, leaving its pool, joining another, deleted; a Pod moved to another Node
    or deleted; a Node Pool's nodeLabels (a label, or those a Node carries by hand) or nodeTaints changed; a
    NodeSet's tolerations changed."""
    what, i, j = op
    nodes, pods, nodepools = snap.nodes or (), snap.pods or (), snap.nodepools or ()
    if what == "taint" and nodes:
        return replace(snap, nodes=swapped(nodes, i, lambda n: n.setdefault("spec", {}).setdefault("taints", []).append(
            {"key": f"example.com/t{j}", "effect": "NoSchedule"})))
    if what == "cordon" and nodes:
        return replace(snap, nodes=swapped(nodes, i, lambda n: n.setdefault("spec", {}).update(unschedulable=True)))
    if what == "leave" and nodes:
        return replace(snap, nodes=swapped(nodes, i, lambda n: o.meta(n).get("labels", {}).pop(o.POOL_LABEL, None)))
    if what == "join" and nodes and pool_names(snap):
        pool = pool_names(snap)[j % len(pool_names(snap))]
        return replace(snap, nodes=swapped(nodes, i, lambda n: n["metadata"].setdefault("labels", {}).update(
            {o.POOL_LABEL: pool})))
    if what == "delete-node" and nodes:
        return replace(snap, nodes=nodes[:i % len(nodes)] + nodes[i % len(nodes) + 1:])
    if what == "move-pod" and pods and nodes:
        host = o.name(nodes[j % len(nodes)])
        return replace(snap, pods=swapped(pods, i, lambda p: p.setdefault("spec", {}).update(nodeName=host)))
    if what == "delete-pod" and pods:
        return replace(snap, pods=pods[:i % len(pods)] + pods[i % len(pods) + 1:])
    if what == "nodepool-label" and nodepools:
        return replace(snap, nodepools=swapped(nodepools, i, lambda p: p.setdefault("spec", {}).setdefault(
            "nodeLabels", {}).update({f"example.com/k{j}": "v"})))
    if what == "nodepool-adopt" and nodepools:  # the labels set on one of its Nodes by hand, now the pool's own
        name = o.name(nodepools[i % len(nodepools)])
        held = [n for n in nodes if o.pool_of(n) == name]
        hand = {k: v for k, v in o.labels(held[j % len(held)]).items() if is_user_key(k)} if held else {}
        return replace(snap, nodepools=swapped(nodepools, i, lambda p: p.setdefault("spec", {}).setdefault(
            "nodeLabels", {}).update(hand)))
    if what == "nodepool-taint" and nodepools:
        return replace(snap, nodepools=swapped(nodepools, i, lambda p: p.setdefault("spec", {}).setdefault(
            "nodeTaints", []).append({"key": f"example.com/p{j}", "effect": "NoSchedule"})))
    if what == "tolerate" and snap.nodesets:
        return replace(snap, nodesets=swapped(snap.nodesets, i, lambda ns: o.pod_spec(ns).setdefault(
            "tolerations", []).append({"key": f"example.com/t{j}", "operator": "Exists"})))
    return snap


def plan_reads(plan: Plan, snap: Snapshot) -> tuple[set[str], list[str]]:
    """What the read plan asks for of this state: the Nodes whose Pods it reads, and the pools it probes."""
    nodesets, nodes, own = list(snap.nodesets or ()), list(snap.nodes or ()), list(snap.pods or ())
    nodepools = None if snap.nodepools is None else list(snap.nodepools)
    return plan.pod_nodes(nodesets, nodes, own, nodepools, ()), plan.probes(nodesets, nodes, own, nodepools, ())


OPS = st.lists(st.tuples(st.sampled_from(["taint", "cordon", "leave", "join", "delete-node", "move-pod", "delete-pod",
                                          "nodepool-label", "nodepool-adopt", "nodepool-taint",
                                          "tolerate"]),
                         st.integers(0, 40), st.integers(0, 9)), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(case="labels-not-from-pool", ops=[("leave", 0, 0), ("join", 0, 0)])
@example(case="labels-not-from-pool", ops=[("nodepool-adopt", 1, 0)])
@example(case="foreign-pod-resources", ops=[("move-pod", 0, 1), ("move-pod", 0, 0)])
@example(case="healthy-pool-name", ops=[("nodepool-taint", 0, 0), ("tolerate", 0, 0)])
@example(case="healthy-idle-pool", ops=[("delete-node", 0, 0), ("taint", 1, 0)])
@given(case=st.sampled_from(CASES), ops=OPS)
def test_kept_facts_never_outlive_the_objects_they_were_made_of(case: str, ops: list) -> None:
    snap = load(ROOT / "fixtures" / case)
    judged, kept_plan = Judged(), Judged()
    reads = declared_reads(Target())
    for op in [("none", 0, 0), *ops]:
        snap = step(snap, op)
        assert diagnose(snap, Target(), judged=judged) == diagnose(snap, Target()), op
        judged.turn()
        assert plan_reads(Plan(reads, judged=kept_plan), snap) == plan_reads(Plan(reads), snap), op
        kept_plan.turn()


def test_a_node_replaced_is_reindexed_alone_and_one_that_moves_pool_anew() -> None:
    snap = load(ROOT / "fixtures" / "healthy-pool-name")
    judged = Judged()
    first = Cluster.of(snap, judged)
    nodes = snap.nodes or ()
    tainted = step(snap, ("taint", 0, 0))
    second = Cluster.of(tainted, judged)
    changed = (tainted.nodes or ())[0]
    assert second.nodes[o.name(changed)] is changed and first.nodes[o.name(changed)] is nodes[0]
    assert any(n is changed for n in second.pools[o.pool_of(changed) or ""].nodes)
    assert all(second.nodes[o.name(n)] is n for n in nodes[1:])
    moved = step(tainted, ("leave", 0, 0))
    third = Cluster.of(moved, judged)
    fresh = Cluster.of(moved)
    assert third.nodes == fresh.nodes and third.pools == fresh.pools and third.pool_by_node == fresh.pool_by_node
    assert o.name(changed) not in third.pool_by_node


def test_each_judges_again_only_the_objects_replaced_at_their_place() -> None:
    judged, asked = Judged(), []

    def fact(obj: dict) -> str:
        asked.append(o.name(obj))
        return o.name(obj).upper()

    nodes = tuple({"metadata": {"name": f"n{i}"}} for i in range(5))
    template: dict = {"spec": {}}
    assert judged.each(("name",), (template,), nodes, fact) == ("N0", "N1", "N2", "N3", "N4") and len(asked) == 5
    judged.turn()
    replaced = swapped(nodes, 2, lambda n: n["metadata"].update(name="m2"))
    asked.clear()
    assert judged.each(("name",), (template,), replaced, fact) == ("N0", "N1", "M2", "N3", "N4") and asked == ["m2"]
    asked.clear()
    assert judged.each(("name",), ({"spec": {}},), replaced, fact) and len(asked) == 5  # what else it reads: another
    asked.clear()
    assert judged.each(("name",), (template,), replaced[1:], fact) == ("N1", "M2", "N3", "N4") and len(asked) == 4
    judged.turn()
    judged.turn()  # a diagnosis that did not ask: dropped
    asked.clear()
    assert judged.each(("name",), (template,), replaced[1:], fact) and len(asked) == 4


def test_a_taint_on_one_pool_node_judges_that_nodes_facts_alone_and_no_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck.analyze import nodes as nd
    from sunkcheck.analyze import pods as pd

    asked: list[str] = []
    placement, health = pd.placement, nd._health

    def placed(pod: dict) -> pd.Placement:
        asked.append("pod")
        return placement(pod)

    def healthy(node: dict) -> tuple[bool, bool, bool]:
        asked.append(o.name(node))
        return health(node)

    monkeypatch.setattr(pd, "placement", placed)
    monkeypatch.setattr(nd, "_health", healthy)
    snap = load(ROOT / "fixtures" / "healthy-pool-name")
    judged = Judged()
    pools = diagnose(snap, Target(), judged=judged).results[0].pools
    judged.turn()
    assert "pod" in asked and len(asked) > 2
    pool = [i for i, n in enumerate(snap.nodes or ()) if o.pool_of(n) in pools]
    tainted = step(snap, ("taint", pool[1], 0))
    fresh = diagnose(tainted, Target())
    asked.clear()
    assert diagnose(tainted, Target(), judged=judged) == fresh
    assert set(asked) == {o.name((snap.nodes or ())[pool[1]])}  # its health alone; the Pods' placements kept


def test_nodesets_of_one_template_share_one_verdict_per_node_and_each_is_still_a_fresh_checks() -> None:
    """A hundred NodeSets copied from one template, all on one pool, kept a hundred verdicts per Node: serve
    outgrew its memory limit. NodeSets whose templates are equal share them; one whose template differs does not."""
    snap = load(ROOT / "fixtures" / "healthy-annotated")
    assert snap.nodesets
    model = snap.nodesets[0]
    copies = []
    for name, tolerated in (("copy-a", False), ("copy-b", False), ("other", True)):
        nodeset = copy.deepcopy(model)
        nodeset["metadata"] |= {"name": name, "uid": f"uid-{name}"}
        if tolerated:  # a template of its own: its verdicts are its own
            spec = nodeset["spec"]["template"]["spec"]
            spec["tolerations"] = [*spec.get("tolerations", []), {"operator": "Exists"}]
        copies.append(nodeset)
    many = replace(snap, nodesets=(*snap.nodesets, *copies))
    report = diagnose(many, Target(), judged=Judged(), every_nodeset=True)
    by_name = {r.name: r for r in report.results}
    first, second, other = by_name["copy-a"].nodes, by_name["copy-b"].nodes, by_name["other"].nodes
    assert first and all(a is b for a, b in zip(first, second, strict=True))
    assert not any(a is b for a, b in zip(first, other, strict=True))
    assert report == diagnose(many, Target(), every_nodeset=True)  # as a fresh check
