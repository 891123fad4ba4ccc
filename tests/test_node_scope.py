"""`check` reads only the Nodes it can learn from, and every Node where a rule needs the whole cluster."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import objects as o
from sunkcheck.analyze.binding import SUMMARY_READS
from sunkcheck.plan import Plan, declared
from sunkcheck.symptoms.nodeset import RULES
from sunkcheck.snapshot import Snapshot
from sunkcheck.snapshot import load as load_snapshot
from tests.conftest import FIXTURES, Serve, run
from tests.kubeapi import FakeApi

POOL = "compute.coreweave.com/node-pool in (slurm-cpu)"
PLAN = Plan(declared(RULES, SUMMARY_READS))  # what a plain check of a NodeSet reads
scope, answers = PLAN.selectors, PLAN.settled


def fixture(case: str) -> Any:  # a fixture's snapshot holds every resource: read without None checks
    return load_snapshot(FIXTURES / case)


def node_lists(api: FakeApi) -> list[str | None]:
    return sorted((r.query.get("labelSelector") or "" for r in api.log if r.path == "/api/v1/nodes"), key=str)


def terms(nodeset: dict) -> list[dict]:
    """The NodeSet's required nodeSelectorTerms, to change in place."""
    return o.pod_spec(nodeset)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]


def with_terms(nodeset: dict, *exprs: dict) -> dict:
    changed = copy.deepcopy(nodeset)
    terms(changed)[0]["matchExpressions"] += list(exprs)
    return changed


# --- which selectors ---------------------------------------------------------------------------------

def test_a_pool_name_binding_reads_its_pool_only() -> None:
    s = fixture("healthy-same-type-pools")
    # the NodeSet's own term (state + pool) selects a subset of the pool: no request of its own; the other
    # pools of its instance type are meant for no NodeSet, so nothing they hold can change a verdict
    cpu = [n for n in s.nodesets if o.name(n) == "slurm-cpu-batch"]
    assert scope(cpu, list(s.nodepools)) == [POOL]


def test_pools_annotated_for_the_nodeset_are_read_too() -> None:
    s = fixture("pool-split")
    # the NodeSet's term, less the inherited state requirement (pool discovery counts Nodes in repair too)
    assert scope(list(s.nodesets), list(s.nodepools)) == [
        "compute.coreweave.com/node-pool in (slurm-cpu-a)", "compute.coreweave.com/node-pool in (slurm-cpu-a,slurm-cpu-b)"]


def test_terms_are_written_as_supersets_of_what_they_match() -> None:
    s = fixture("healthy-pool-name")
    nodeset = with_terms(s.nodesets[0], {"key": "sunk.example.com/node", "operator": "NotIn", "values": ["b", "a"]},
                         {"key": "rack", "operator": "Gt", "values": ["3"]}, {"key": "gpu", "operator": "DoesNotExist"})
    # still a subset of the pool: Gt is left out, the rest only narrows
    assert scope([nodeset], list(s.nodepools)) == [POOL]
    second = copy.deepcopy(nodeset)
    terms(second).append({"matchExpressions": [{"key": "sunk.example.com/node", "operator": "In", "values": ["true"]},
                                       {"key": "team", "operator": "Exists"}]})
    assert scope([second], list(s.nodepools)) == [POOL, "sunk.example.com/node in (true),team"]


@pytest.mark.parametrize("change, why", [
    (lambda ns: ns["status"].pop("numberFeasible"), "FEASIBLE unreported: the scheduler line counts every Node"),
    (lambda ns: ns["status"].update(numberFeasible=0), "FEASIBLE 0: the scheduler line counts every Node"),
    (lambda ns: o.pod_spec(ns).pop("affinity"), "no required affinity: every Node may be feasible"),
    (lambda ns: terms(ns)[0]["matchExpressions"].append({"key": "bad key", "operator": "In", "values": ["x"]}),
     "a key no label could have: no selector can express the term"),
])
def test_what_cannot_be_scoped_reads_every_node(change: Callable[[dict], object], why: str) -> None:
    s = fixture("healthy-pool-name")
    nodeset = copy.deepcopy(s.nodesets[0])
    change(nodeset)
    assert scope([nodeset], list(s.nodepools)) is None, why


def test_unreadable_pools_read_every_node_and_a_pool_without_an_instance_type_does_not() -> None:
    s = fixture("healthy-pool-name")
    pools = [p for p in copy.deepcopy(list(s.nodepools)) if o.name(p) == "slurm-cpu"]
    del o.spec(pools[0])["instanceType"]
    assert scope(list(s.nodesets), pools) == [POOL]  # only pool-split read the type, and it no longer does
    assert scope(list(s.nodesets), None) is None
    assert scope([], list(s.nodepools)) is None


def test_pools_given_with_the_pool_flag_are_read_too() -> None:
    s = fixture("healthy-pool-name")
    assert scope(list(s.nodesets), list(s.nodepools), ("inference-h100",)) == [
        "compute.coreweave.com/node-pool in (inference-h100,slurm-cpu)", POOL]


def test_several_nodesets_read_the_union_and_one_unscopable_nodeset_reads_every_node() -> None:
    s = fixture("healthy-pool-name")
    gpu = copy.deepcopy(s.nodesets[0])
    gpu["metadata"]["name"] = "slurm-gpu"
    terms(gpu)[0]["matchExpressions"] = [{"key": o.POOL_LABEL, "operator": "In", "values": ["inference-h100"]}]
    assert scope([s.nodesets[0], gpu], list(s.nodepools)) == ["compute.coreweave.com/node-pool in (inference-h100)", POOL]
    unscoped = copy.deepcopy(gpu)
    unscoped["status"]["numberFeasible"] = 0
    assert scope([s.nodesets[0], unscoped], list(s.nodepools)) is None


def test_reserved_keys_are_settled_only_by_nodes_that_carry_them() -> None:
    s = fixture("healthy-pool-name")
    pool_nodes = [n for n in s.nodes if o.pool_of(n) == "slurm-cpu"]
    assert answers(list(s.nodesets), pool_nodes)  # they carry the pool-name label
    reserved = with_terms(s.nodesets[0], {"key": "sunk.coreweave.com/node", "operator": "In", "values": ["true"]})
    assert not answers([reserved], pool_nodes)


# --- live: the requests ------------------------------------------------------------------------------

def test_a_healthy_check_lists_only_the_pool(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    live = run("check", "-o", "json")
    assert live.code == 0
    assert node_lists(api) == [POOL]
    assert len(live.json()["results"][0]["nodes"]) == 8


def pod_lists_by_node(api: FakeApi) -> list[str]:
    return sorted(r.query["fieldSelector"].split(",")[0].removeprefix("spec.nodeName=")
                  for r in api.log if r.path == "/api/v1/pods" and "spec.nodeName=" in r.query.get("fieldSelector", ""))


def test_same_type_pools_in_use_cost_one_pod_list_each_without_an_expectation(serve: Serve) -> None:
    """Without --pool or the annotation, the other Node Pools of slurm-cpu's type are weighed for the idle-pool note:
    the Pods on one Node of each show it in use (Slurm's controller on cpu-control-plane, a web Pod on k8s-cpu), so
    neither's Nodes are listed, nor any other Node's Pods, and there is no note."""
    api = serve("healthy-same-type-pools")
    doc = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch").json()
    assert doc["status"] == "ok" and doc["results"][0]["notes"] == []
    probes = ["compute.coreweave.com/node-pool=cpu-control-plane", "compute.coreweave.com/node-pool=k8s-cpu"]
    assert node_lists(api) == sorted([POOL, *probes])
    assert all(r.query.get("limit") == "1" for r in api.log if r.query.get("labelSelector") in probes)  # one Node each
    pool_of = {o.name(n): o.pool_of(n) or "" for n in fixture("healthy-same-type-pools").nodes}
    assert sorted(pool_of[n] for n in pod_lists_by_node(api)) == ["cpu-control-plane", "k8s-cpu"]


def test_an_idle_same_type_pool_has_its_nodes_and_their_pods_read(serve: Serve) -> None:
    """slurm-gpu-2's Node runs only node agents: its Nodes are listed and their Pods read, to count the idle ones."""
    api = serve("healthy-idle-pool")
    doc = run("check", "-o", "json").json()
    assert [n["id"] for n in doc["results"][0]["notes"]] == ["idle-pool"]
    pool = "compute.coreweave.com/node-pool"
    assert node_lists(api) == [f"{pool} in (slurm-gpu)", f"{pool} in (slurm-gpu-2)",
                               f"{pool}=slurm-gpu-2"]
    assert pod_lists_by_node(api) == sorted(o.name(n) for n in fixture("healthy-idle-pool").nodes
                                            if o.pool_of(n) == "slurm-gpu-2")


def test_an_expected_pool_the_nodeset_shuts_out_has_its_pods_read(serve: Serve) -> None:
    """pool-split judges slurm-cpu-b's Nodes as the NodeSet would use them: their Pods matter."""
    api = serve("pool-split")
    assert run("check", "-o", "json").code == 1
    listed = sorted(r.query["fieldSelector"].split(",")[0].removeprefix("spec.nodeName=")
                    for r in api.log if r.path == "/api/v1/pods")
    assert listed == sorted(o.name(n) for n in fixture("pool-split").nodes if o.pool_of(n) == "slurm-cpu-b")


def test_feasible_zero_lists_every_node(serve: Serve) -> None:
    api = serve("no-feasible-nodes")
    doc = run("check", "-o", "json").json()
    assert node_lists(api) == [""]
    assert any(e.startswith("sunkcheck, as kube-scheduler would put it: 0/") and "nodes are available" in e
               for s in doc["results"][0]["symptoms"] for e in s["evidence"])


def from_zero(feasible: int | None = 0) -> Snapshot:
    """healthy-pool-name at the start of a scale-up from zero: its pool without Nodes (CURRENT 0), no slurmd Pod, the
    NodeSet's FEASIBLE `feasible`."""
    s = fixture("healthy-pool-name")
    pools = [copy.deepcopy(p) for p in s.nodepools]
    next(p for p in pools if o.name(p) == "slurm-cpu")["status"]["currentNodes"] = 0
    [nodeset] = copy.deepcopy(list(s.nodesets))
    nodeset["status"] |= {"numberFeasible": feasible, "desiredNumberScheduled": 0, "currentNumberScheduled": 0,
                          "numberReady": 0, "updatedNumberScheduled": 0, "numberUnavailable": 0}
    return dataclasses.replace(s, nodepools=tuple(pools), nodesets=(nodeset,),
                               nodes=tuple(n for n in s.nodes if o.pool_of(n) != "slurm-cpu"),
                               pods=tuple(p for p in s.pods if o.INSTANCE_LABEL not in o.labels(p)))


@pytest.mark.parametrize("feasible", [0, None])
def test_a_scale_up_from_zero_lists_the_pool_and_one_carrier_of_its_label_not_every_node(
        serve: Serve, tmp_path: Path, feasible: int | None) -> None:
    """FEASIBLE 0 weighs every Node only when the pool has Nodes to judge, and "a reserved key no Node carries" (the
    pool-name label, on none of the pool's Nodes while it has none) is settled by one Node carrying it: what a
    scale-up from zero reads is its pool's (empty) list and one Node, and its diagnosis is that of every Node."""
    api = serve(from_zero(feasible))
    live = run("check", "-o", "json")
    assert node_lists(api) == [o.POOL_LABEL, POOL]
    carrier = [r for r in api.log if r.path == "/api/v1/nodes" and r.query.get("labelSelector") == o.POOL_LABEL]
    assert [r.query.get("limit") for r in carrier] == ["1"]
    run("snapshot", str(tmp_path / "snap"))  # the same objects, every Node: the same diagnosis
    assert run("check", "--snapshot", str(tmp_path / "snap"), "-o", "json").verdict() == live.verdict()
    assert "pool-below-target" in {x["id"] for x in live.json()["results"][0]["symptoms"]}


def test_feasible_zero_beside_pool_nodes_still_lists_every_node(serve: Serve) -> None:
    """The scale-up's first Nodes, FEASIBLE not yet counting them: no-feasible-nodes judges them against every Node."""
    s = from_zero()
    joined = tuple(n for n in fixture("healthy-pool-name").nodes if o.pool_of(n) == "slurm-cpu")[:2]
    api = serve(dataclasses.replace(s, nodes=(*(s.nodes or ()), *joined)))
    run("check", "-o", "json")
    assert "" in node_lists(api)


def test_a_pod_outside_the_selected_nodes_brings_its_node(serve: Serve) -> None:
    api = serve("misscheduled")
    run("check", "-o", "json")
    pool = "compute.coreweave.com/node-pool in (slurm-cpu-genoa)"
    assert pool in node_lists(api)
    fetched = [r.path.rsplit("/", 1)[1] for r in api.log if r.path.startswith("/api/v1/nodes/")]
    hosts = {o.node_name(p) for p in fixture("misscheduled").pods if o.labels(p).get(o.INSTANCE_LABEL)}
    assert fetched and set(fetched) <= hosts
    assert all(o.pool_of(n) != "slurm-cpu-genoa" for n in fixture("misscheduled").nodes if o.name(n) in fetched)


def test_a_reserved_key_no_selected_node_carries_reads_every_node(serve: Serve, tmp_path: Path) -> None:
    api = serve("healthy-pool-name")
    s = fixture("healthy-pool-name")
    reserved = with_terms(s.nodesets[0], {"key": "sunk.coreweave.com/node", "operator": "In", "values": ["true"]})
    api.state.load(dataclasses.replace(s, nodesets=(reserved,)))
    live = run("check", "-o", "json")
    # the selection, one Node carrying the key (a one-item list: none does), then the whole cluster
    assert node_lists(api) == ["", POOL, "sunk.coreweave.com/node"]
    ids = [x["id"] for x in live.json()["results"][0]["symptoms"]]
    assert "reserved-label-namespace" in ids
    run("snapshot", str(tmp_path / "snap"))  # the same objects, every Node: the same diagnosis
    assert run("check", "--snapshot", str(tmp_path / "snap"), "-o", "json").verdict() == live.verdict()


def test_the_benchmarks_realistic_cluster_is_ok_in_as_many_requests_at_twice_the_size(serve: Serve) -> None:
    """Same-type control-plane, general and spare pools, a Pod filling a spare Node: no row, and no request
    more when every pool doubles (the pool's Nodes and slurmd Pods fit one page either way). Each of the three
    same-type pools, in use, costs two small requests for the idle-pool note: one of its Nodes, that Node's Pods."""
    from benchmarks.large_cluster import build

    requests = []
    for nodes in (250, 500):
        api = serve(build(nodes, nodes * 4))
        live = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch")
        assert (live.code, live.json()["results"][0]["symptoms"]) == (0, [])
        requests.append(sorted(r.path for r in api.log))
    assert requests[0] == requests[1] and len(requests[0]) < 12 + 2 * 3


@pytest.mark.parametrize("effect, key, row", [
    ("NoSchedule", "example.com/maintenance", False),  # maintenance: the NodeSet does not tolerate it
    ("PreferNoSchedule", "example.com/dedicated", True),  # moved into the pool, but it keeps no daemon Pod off
])
def test_a_hand_taint_that_keeps_no_daemon_pod_off_costs_no_pod_read(serve: Serve, effect: str, key: str, row: bool) -> None:
    """One slurm-cpu Node tainted by hand on the benchmark's realistic cluster. labels-not-from-pool moves only a
    taint the NodeSet tolerates into the pool, and only a NoSchedule or NoExecute one keeps a daemon Pod off the
    pool's other Nodes: their Pods can change no row, so the check costs the requests of the untainted cluster
    (it listed every Pod, or each of the pool's Nodes' Pods without remainingItemCount)."""
    from benchmarks.large_cluster import build

    base: Any = build(250, 1000)  # holds every resource
    nodeset = copy.deepcopy(base.nodesets[0])
    o.pod_spec(nodeset)["tolerations"].append({"key": "example.com/dedicated", "operator": "Exists"})
    base = dataclasses.replace(base, nodesets=(nodeset,))
    nodes = [copy.deepcopy(n) for n in base.nodes]
    tainted = next(n for n in nodes if o.pool_of(n) == "slurm-cpu")
    tainted["spec"].setdefault("taints", []).append({"key": key, "value": "true", "effect": effect})
    requests = []
    for served in (base, dataclasses.replace(base, nodes=tuple(nodes))):
        api = serve(served)
        live = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch")
        assert ("labels-not-from-pool" in [s["id"] for s in live.json()["results"][0]["symptoms"]]) is (
            row and served is not base), live.err
        requests.append(sorted((r.path, r.query.get("fieldSelector") or "") for r in api.log))
    assert requests[0] == requests[1]
