"""The per-step analysers on small hand-written objects."""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from sunkcheck import objects as o
from sunkcheck import snapshot
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import analyze
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.analyze.nodeset import columns_line
from sunkcheck.analyze.nodepool import Pool, blockers
from sunkcheck.model import PodCounts, Report, Status, Symptom
from sunkcheck.objects import InvalidQuantity, internal_ip, is_reserved_key, name, node_name, quantity
from sunkcheck.pipeline import diagnose
from sunkcheck.plan import Plan
from sunkcheck.reads import Read
from sunkcheck.target import Target
from tests.conftest import FIXTURES

Obj = dict[str, Any]


def event(kind: str, name: str, namespace: str | None = None, reason: str = "R", type_: str = "Warning") -> Obj:
    obj = {"kind": kind, "name": name} | ({"namespace": namespace} if namespace else {})
    return {"metadata": {"name": "e"}, "involvedObject": obj, "reason": reason, "type": type_, "message": "m"}


def test_events_match_kind_name_and_namespace_never_name_alone() -> None:
    events = [event("NodePool", "slurm-cpu"), event("Deployment", "slurm-cpu", "tenant-slurm"),
              event("NodeSet", "slurm-cpu", "tenant-slurm"), event("NodeSet", "slurm-cpu", "other")]
    about = ev.by_object(events)
    assert about[("NodePool", "", "slurm-cpu")] == [events[0]]
    assert about[("NodeSet", "tenant-slurm", "slurm-cpu")] == [events[2]]
    assert ("NodeSet", "", "slurm-cpu") not in about


def test_normal_events_about_pods_are_left_out_as_a_live_run_never_reads_them() -> None:
    events = [event("Pod", "p", "ns", type_="Normal"), event("Pod", "p", "ns"), event("NodeSet", "n", "ns", type_="Normal")]
    about = ev.by_object(events)
    assert about[("Pod", "ns", "p")] == [events[1]] and about[("NodeSet", "ns", "n")] == [events[2]]


def test_each_event_is_read_once_however_many_pods_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events are indexed once: a failing NodeSet's thousands of Pods each with a FailedScheduling
    Event must not make the events step quadratic."""
    snap = snapshot.load(FIXTURES / "slurmd-not-ready")
    pods = [p for p in snap.pods or () if p["metadata"].get("namespace") == "tenant-slurm"]
    events = tuple(event("Pod", p["metadata"]["name"], "tenant-slurm", "FailedScheduling") for p in pods) * 20
    reads: list[Obj] = []
    read = ev.regarding

    def counted(e: Obj) -> Obj:
        reads.append(e)
        return read(e)

    monkeypatch.setattr(ev, "regarding", counted)
    report = diagnose(replace(snap, events=events), Target())
    assert "FailedScheduling" in next(s.summary for s in report.results[0].steps if s.name == "events")
    assert len(pods) > 1 and len(reads) == len(events)


def test_events_k8s_io_shape_is_read_too() -> None:
    e = {"metadata": {"name": "e"}, "regarding": {"kind": "NodePool", "name": "p"}, "reason": ev.SANITIZED,
         "note": "dropped", "type": "Warning"}
    assert ev.by_object([e]) == {("NodePool", "", "p"): [e]} and ev.message(e) == "dropped"


def pod(name: str, instance: str, owner_kind: str | None = None, owner_name: str | None = None,
        namespace: str = "ns") -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/instance": instance}}
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": owner_name}]
    return {"metadata": meta, "spec": {}}


def test_slurmd_pods_are_confirmed_by_owner_reference() -> None:
    nodeset = {"metadata": {"name": "cpu", "namespace": "ns"}}
    pods = [pod("a", "cpu", "NodeSet", "cpu"), pod("b", "cpu", "ReplicaSet", "cpu-7f"), pod("c", "cpu"),
            pod("d", "gpu", "NodeSet", "gpu"), pod("e", "cpu", "NodeSet", "cpu", namespace="other")]
    assert [p["metadata"]["name"] for p in pd.slurmd_pods(pods, nodeset)] == ["a", "c"]


def pool(conditions: list[Obj]) -> Pool:
    return Pool("p", {"spec": {"targetNodes": 4}, "status": {"currentNodes": 1, "conditions": conditions}}, (), ())


def test_pool_blockers() -> None:
    assert blockers(pool([{"type": "Quota", "status": "False", "reason": "NotSet"}]))[0][0] is Status.CRITICAL
    assert blockers(pool([{"type": "Capacity", "status": "False", "reason": "QueuedAwaitingCapacity"}]))[0][0] \
        is Status.WARNING
    assert blockers(pool([{"type": "Quota", "status": "True"}, {"type": "Capacity", "reason": "Sufficient"}])) == []


def test_rack_pools_count_nodes_per_rack() -> None:
    assert Pool("gb", {"spec": {"targetRacks": 2}}, (), ()).target == 36


def test_binding_terms_skip_state_requirements_and_terms_that_match_nothing_and_positive_ones_need_a_label() -> None:
    """A term with an expression without a key matches no Node (the feasibility engine's answer): it brings no
    requirement, not its other expressions."""
    spec: Obj = {"nodeSelector": {"a": "1"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node.coreweave.cloud/state", "operator": "In", "values": ["production"]},
            {"key": "b", "operator": "Exists"}, {"key": "c", "operator": "NotIn", "values": ["x"]},
            {"operator": "In", "values": ["y"]}]}, {"matchExpressions": [{"key": "b", "operator": "Exists"}]}]}}}}
    terms = nd.binding_terms(spec, {"d": "2"})
    assert [[e["key"] for e in t] for t in terms] == [["a", "d", "b"]]
    assert [e["key"] for e in nd.positive(terms)] == ["a", "d", "b"]
    keyed = copy.deepcopy(spec)
    del keyed["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][-1]
    assert [[e["key"] for e in t] for t in nd.binding_terms(keyed, {"d": "2"})] == [["a", "d", "b", "c"], ["a", "d", "b"]]


def first_nodeset(snap: snapshot.Snapshot) -> Obj:
    """The snapshot's first NodeSet (each fixture read here holds one)."""
    assert snap.nodesets
    return snap.nodesets[0]


def or_term(snap: snapshot.Snapshot, *exprs: Obj) -> snapshot.Snapshot:
    """The snapshot with one more required term ORed to its NodeSet's."""
    nodeset = copy.deepcopy(first_nodeset(snap))
    nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"].append({"matchExpressions": list(exprs)})
    return replace(snap, nodesets=(nodeset,))


POOL_TERM = {"key": "compute.coreweave.com/node-pool", "operator": "In", "values": ["slurm-cpu"]}


def test_a_hand_label_is_not_relied_on_when_another_term_matches_the_node_without_it() -> None:
    """sunk.example.com/node was set by hand, but a second term names the pool: a replaced Node is still bound."""
    snap = snapshot.load(FIXTURES / "labels-not-from-pool")
    assert ids(diagnose(snap, Target())) == ["labels-not-from-pool"]
    assert ids(diagnose(or_term(snap, POOL_TERM), Target())) == []


def test_a_reserved_key_no_node_carries_is_not_relied_on_when_another_term_matches() -> None:
    """Bound by pool name, or by a reserved key CKS would drop: the first term binds it, and the Nodes read settle
    the plan without every Node."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    reserved = {"key": "sunk.coreweave.com/node", "operator": "Exists"}
    either = or_term(snap, reserved)
    assert ids(diagnose(either, Target())) == []
    pool_nodes = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    assert Plan(frozenset({Read.RESERVED_KEY_CARRIERS})).settled(list(either.nodesets or ()), pool_nodes)


def test_a_split_names_what_shuts_the_pool_out_of_the_nearest_term_only() -> None:
    """slurm-cpu-b is shut out by the pool name of the first term, and by a label of the second: pool-split names
    one term's requirement and adds slurm-cpu-b's Nodes through it."""
    snap = or_term(snapshot.load(FIXTURES / "pool-split"), {"key": "sunk.example.com/extra", "operator": "Exists"})
    split = next(s for s in diagnose(snap, Target()).results[0].symptoms if s.id == "pool-split")
    assert split.evidence[0].startswith("Node Pool slurm-cpu-b (cd-gp-a192-genoa) is meant for slurm-cpu-batch, but "
                                        "compute.coreweave.com/node-pool In [slurm-cpu-a] shuts it out: 4/4")
    assert "in place of compute.coreweave.com/node-pool In [slurm-cpu-a] (keep its other expressions):" in split.fix


def test_reserved_keys() -> None:
    assert is_reserved_key("sunk.coreweave.com/node") and is_reserved_key("coreweave.cloud/x")
    assert not is_reserved_key("sunk.example.com/node") and not is_reserved_key("notcoreweave.com/x")
    assert not is_reserved_key("plainkey")


def test_quantities() -> None:
    assert quantity("100m") == quantity("0.1") and quantity("1Gi") == 2**30 and quantity("1e3") == 1000
    assert quantity("1.5k") == 1500 and quantity(4) == 4 and quantity(" 2 ") == 2


@pytest.mark.parametrize("text, value", [
    ("1E", 10**18), ("1E3", 1000), ("1e-3", Fraction(1, 1000)), (".5", Fraction(1, 2)), ("5.", 5), ("+1k", 1000),
    ("-1", -1), ("1.5Gi", 3 * 2**29), ("250m", Fraction(1, 4)), ("1n", Fraction(1, 10**9)), ("3u", Fraction(3, 10**6)),
    ("7Ei", 7 * 2**60), ("0e999999999", 0), (1.5, Fraction(3, 2)), ("0.0000000001", Fraction(1, 10**9)),  # up to 1n,
    ("1e-999999999", Fraction(1, 10**9)),  # as the API server rounds a non-zero value up to 1n
])
def test_quantities_follow_the_api_servers_grammar_exactly(text: str | float, value: int | Fraction) -> None:
    assert quantity(text) == value


@pytest.mark.parametrize("text", ["64gb", "bogus", "5Xi", "1ki", "1KI", "1 Gi", "1.2.3", "1e", "e3", "Ki", "", ".", "1Ki5",
                                  "NaN", "Infinity", "1_000", "0x10", "1e1.5", "--1", True, "1" * 200])
def test_an_invalid_quantity_is_refused_never_zero(text: object) -> None:
    with pytest.raises(InvalidQuantity):
        quantity(text)


def test_a_huge_exponent_is_out_of_range_at_once() -> None:
    """Kubernetes compares resources as int64: a quantity beyond it cannot be compared (and 10**999999999,
    computed exactly, would never finish)."""
    start = time.monotonic()
    for text in ("1e999999999", "1e19", "9223372036854775808", "16Ei", "-1e999999999"):
        with pytest.raises(InvalidQuantity, match="out of range"):
            quantity(text)
    assert time.monotonic() - start < 1
    assert quantity("9223372036854775807") == 2**63 - 1


def test_a_slurm_node_is_its_pods_node_else_the_node_whose_ip_ends_in_its_name() -> None:
    snap = snapshot.load(FIXTURES / "slurm-count-mismatch")
    b = analyze(Cluster.of(snap), first_nodeset(snap))
    pod = b.pods[0]
    assert b.kube_nodes_of(name(pod)) == (node_name(pod),)
    node = sorted(snap.nodes or (), key=name)[-1]
    ip = internal_ip(node)
    assert ip is not None
    third, fourth = ip.split(".")[2:]
    assert b.kube_nodes_of(f"replaced-{int(third):03d}-{int(fourth):03d}") == (name(node),)
    assert b.kube_nodes_of("replaced-250-251") == () and b.kube_nodes_of("no-octets") == ()


def missing_pods(snap: snapshot.Snapshot) -> Symptom | None:
    """The slurmd-pods-missing finding of a one-NodeSet snapshot, or None."""
    return next((s for s in diagnose(snap, Target()).results[0].symptoms if s.id == "slurmd-pods-missing"), None)


def with_status(snap: snapshot.Snapshot, **fields: int | None) -> snapshot.Snapshot:
    nodeset = first_nodeset(snap)
    status = {k: v for k, v in nodeset["status"].items() if k not in fields} | {k: v for k, v in fields.items() if v is not None}
    return replace(snap, nodesets=(nodeset | {"status": status},))


def test_missing_slurmd_pods_are_counted_from_the_pods_when_the_status_lags() -> None:
    """CURRENT can be stale (the operator down): fewer slurmd Pods on Nodes than DESIRED fires too, and a
    Pod that has ended (Failed) holds no Node."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")  # DESIRED = CURRENT = 8, eight Pods
    assert missing_pods(snap) is None
    slurmd = [p for p in snap.pods or ()
              if p["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == "slurm-cpu-batch"]
    failed = slurmd[0] | {"status": {"phase": "Failed"}}
    fewer = replace(snap, pods=tuple(failed if p is slurmd[0] else p for p in snap.pods or () if p is not slurmd[1]))
    found = missing_pods(fewer)
    assert found is not None and found.severity is Status.WARNING
    assert found.evidence[0] == "DESIRED 8, CURRENT 8, but slurmd Pods run on 6 Node(s)"  # CURRENT is not short
    assert found.evidence[-1].startswith("2 feasible Node(s) run no slurmd Pod: ")


def unlabel(snap: snapshot.Snapshot, *, owner: bool) -> snapshot.Snapshot:
    """The snapshot with the slurmd Pods' app.kubernetes.io/instance label gone (and their ownerReferences too)."""
    def bare(p: Obj) -> Obj:
        labels = {k: v for k, v in p["metadata"]["labels"].items() if k != "app.kubernetes.io/instance"}
        meta = p["metadata"] | {"labels": labels}
        return p | {"metadata": meta if owner else {k: v for k, v in meta.items() if k != "ownerReferences"}}
    return replace(snap, pods=tuple(bare(p) if name(p).startswith("slurm-cpu-batch-") else p for p in snap.pods or ()))


def test_the_nodesets_pods_without_the_instance_label_are_its_own_by_their_controller_reference() -> None:
    """slurmd Pods the NodeSet controls but without app.kubernetes.io/instance hold their Nodes as its own: no Pods
    missing, no foreign workload blamed; the pods step says they lack the label."""
    snap = unlabel(snapshot.load(FIXTURES / "healthy-pool-name"), owner=True)
    report = diagnose(snap, Target())
    assert ids(report) == []
    pods = next(s for s in report.results[0].steps if s.name == "pods").summary
    assert pods.startswith("8 slurmd Pods: 8 on ") and "8 without app.kubernetes.io/instance=<NodeSet>" in pods


def test_pods_missing_says_which_count_falls_short() -> None:
    """Pods no label nor reference ties to the NodeSet are not its own: CURRENT still counts 8, so the evidence
    says it is the Pods read that fall short, not CURRENT."""
    found = missing_pods(unlabel(snapshot.load(FIXTURES / "healthy-pool-name"), owner=False))
    assert found is not None and found.evidence[0] == "DESIRED 8, CURRENT 8, but slurmd Pods run on 0 Node(s)"
    assert "CURRENT is below" not in found.title


def test_without_the_pods_the_status_alone_decides_and_without_either_nothing_is_claimed() -> None:
    snap = replace(snapshot.load(FIXTURES / "slurmd-pods-missing"), pods=None)
    found = missing_pods(snap)
    assert found is not None and found.evidence[0] == "DESIRED 4, CURRENT 1" and "FailedCreate" in found.evidence[1]
    assert missing_pods(with_status(snap, currentNumberScheduled=None)) is None
    assert missing_pods(with_status(snapshot.load(FIXTURES / "slurmd-pods-missing"), desiredNumberScheduled=0)) is None


def test_pool_split_when_the_template_binds_by_nodeselector() -> None:
    """A pool named in the template's nodeSelector, with no required affinity: the what-if drops it there
    (it used to fail on the missing affinity)."""
    snap = snapshot.load(FIXTURES / "pool-split")
    nodeset = first_nodeset(snap)
    template = {k: v for k, v in nodeset["spec"]["template"]["spec"].items() if k != "affinity"}
    template["nodeSelector"] = {"compute.coreweave.com/node-pool": "slurm-cpu-a"}
    spec = nodeset["spec"] | {"template": nodeset["spec"]["template"] | {"spec": template}}
    report = diagnose(replace(snap, nodesets=(nodeset | {"spec": spec},)), Target())
    split = next(s for s in report.results[0].symptoms if s.id == "pool-split")
    assert split.evidence[-1] == "FEASIBLE 6; with slurm-cpu-b it would be 10"


def test_a_nodeset_never_reconciled_is_judged_by_sunkchecks_own_count() -> None:
    """No status at all and no Pods: the operator never reconciled the NodeSet. DESIRED is what the
    controller would want, sunkcheck's FEASIBLE within replicas; a prediction (no uid) is not judged."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")  # 8 feasible Nodes
    no_pods = tuple(p for p in snap.pods or ()
                    if p["metadata"].get("labels", {}).get("app.kubernetes.io/instance") != "slurm-cpu-batch")
    nodeset = {k: v for k, v in first_nodeset(snap).items() if k != "status"}
    found = missing_pods(replace(snap, nodesets=(nodeset,), pods=no_pods))
    assert found is not None
    assert found.evidence[0] == ("the NodeSet reports no DESIRED (has the SUNK operator reconciled it?); sunkcheck finds "
                                 "8 Node(s) it should run on, and slurmd Pods run on 0")
    capped = nodeset | {"spec": nodeset["spec"] | {"replicas": 3}}
    found = missing_pods(replace(snap, nodesets=(capped,), pods=no_pods))
    assert found is not None and "finds 3 Node(s)" in found.evidence[0]
    assert missing_pods(replace(snap, nodesets=(nodeset,))) is None  # its Pods run: only the status is missing
    predicted = nodeset | {"metadata": {k: v for k, v in nodeset["metadata"].items() if k != "uid"}}
    assert missing_pods(replace(snap, nodesets=(predicted,), pods=no_pods)) is None  # --values: not deployed yet


def test_missing_daemon_pods_are_counted_from_the_pods_when_the_status_lags() -> None:
    """A Pending daemon Pod exists (daemonset-pod-pending's); a Node with no Pod at all is missing one."""
    snap = snapshot.load(FIXTURES / "ds-pod-pending")  # DESIRED = CURRENT = 3, one Pod Pending
    target = Target(daemonset="dcgm-exporter", namespace="monitoring")

    def missing(s: snapshot.Snapshot) -> Symptom | None:
        return next((x for x in diagnose(s, target).results[0].symptoms if x.id == "daemonset-pods-missing"), None)

    assert missing(snap) is None
    daemon = [p for p in snap.pods or () if p["metadata"]["name"].startswith("dcgm-exporter-")]
    fewer = replace(snap, pods=tuple(p for p in snap.pods or () if p is not daemon[-1]))
    found = missing(fewer)
    assert found is not None and found.evidence[0] == "DESIRED 3, CURRENT 3: daemon Pods exist for 2 Node(s)"
    assert missing(replace(snap, pods=None)) is None  # the status alone says nothing is missing


def test_unusable_pool_nodes_are_drift_and_claims_not_node_health() -> None:
    """Beyond the fixture's drift: a Node another NodeSet holds is reported; a cordoned Node (with its
    taint) and a Node not Ready are Node health, routine on a big pool, and are not."""
    snap = snapshot.load(FIXTURES / "pool-nodes-unusable")
    pool = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    cordoned, sick, held = (n["metadata"]["name"] for n in pool[2:5])
    cordon_taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    nodes = []
    for n in snap.nodes or ():
        if n["metadata"]["name"] == cordoned:  # as `kubectl cordon` leaves it: the flag and its taint
            n = n | {"spec": n["spec"] | {"unschedulable": True, "taints": n["spec"]["taints"] + [cordon_taint]}}
        if n["metadata"]["name"] == sick:
            n = n | {"status": n["status"] | {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}}
        nodes.append(n)
    pods = []
    for p in snap.pods or ():
        if p["spec"].get("nodeName") == held and p["metadata"].get("labels", {}).get("app.kubernetes.io/instance"):
            ref = p["metadata"]["ownerReferences"][0] | {"name": "slurm-cpu-other"}
            p = p | {"metadata": p["metadata"] | {"name": "slurm-cpu-other-0", "ownerReferences": [ref],
                                                  "labels": {"app.kubernetes.io/instance": "slurm-cpu-other"}}}
        pods.append(p)
    report = diagnose(replace(snap, nodes=tuple(nodes), pods=tuple(pods)), Target())
    found = next(s for s in report.results[0].symptoms if s.id == "pool-nodes-unusable")
    # the cordoned and the NotReady Node are no drift, but the count names them (FEASIBLE is the status, unchanged here)
    assert found.evidence[0] == ("3 of 6 pool Nodes cannot take a slurmd Pod (FEASIBLE 4; 2 more in repair or not "
                                 f"Ready, not drift: {', '.join(sorted((cordoned, sick)))})")
    text = "\n".join(found.evidence[1:]) + found.fix
    assert f"already claimed by NodeSet tenant-slurm/slurm-cpu-other (a Node belongs to one NodeSet) ({held})" in text
    assert "give each NodeSet its own Node Pool" in found.fix
    assert cordoned not in text and sick not in text
    assert "1 cordoned" in next(s.summary for s in report.results[0].steps if s.name == "nodes")


def test_no_feasible_nodes_never_advises_tolerating_kubernetes_own_taints() -> None:
    """Every pool Node cordoned (maintenance): the fix is to uncordon, not to tolerate the cordon's taint."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    nodes = tuple(n | {"spec": n["spec"] | {"unschedulable": True, "taints": [cordon]}}
                  if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu" else n for n in snap.nodes or ())
    nodeset = first_nodeset(snap)
    stalled = nodeset | {"status": nodeset["status"] | {"numberFeasible": 0}}
    report = diagnose(replace(snap, nodes=nodes, nodesets=(stalled,)), Target())
    assert [s.id for s in report.results[0].symptoms] == ["pool-nodes-in-repair"]  # no mismatch: Node health alone
    found = report.results[0].symptoms[0]
    assert "cordon" in found.fix and "node.kubernetes.io/unschedulable" not in found.fix + "".join(found.evidence)
    assert "operator:" not in found.fix  # no toleration to paste
    assert next(s for s in report.results[0].steps if s.name == "nodes").status is Status.WARNING


def test_no_feasible_nodes_names_the_cause_its_evidence_shows() -> None:
    """The cause is the one the Nodes' reasons show, never a pool "healthy" beside Nodes in repair: resources for a
    request above allocatable, the taint for a missing toleration, the labels for a wrong value."""
    def found(case: str) -> Symptom:
        report = diagnose(snapshot.load(FIXTURES / case), Target())
        return next(s for s in report.results[0].symptoms if s.id == "no-feasible-nodes")

    resources = found("no-feasible-requests-too-large")
    assert resources.cause.startswith("The slurmd Pod's requests exceed the Nodes' allocatable")
    assert "affinity" not in resources.cause and "taint" not in resources.cause and "healthy" not in resources.title
    taint = found("no-feasible-nodes").cause
    assert "tolerate" in taint and "taint" in taint and not any(w in taint for w in ("affinity", "requests", "repair"))
    assert found("label-value-case").cause.startswith("The NodeSet's affinity doesn't match the Nodes' labels")
    assert "taint" not in found("label-value-case").cause


def test_an_invalid_quantity_makes_the_report_unknown_naming_the_object_and_field() -> None:
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    node = next(n for n in snap.nodes or () if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == "slurm-cpu")
    bad = node | {"status": node["status"] | {"allocatable": node["status"]["allocatable"] | {"memory": "64gb"}}}
    report = diagnose(replace(snap, nodes=tuple(bad if n is node else n for n in snap.nodes or ())), Target())
    assert report.status is Status.UNKNOWN
    assert (f"NodeSet tenant-slurm/slurm-cpu-batch: Node {name(bad)}: allocatable memory is '64gb', not a valid "
            "quantity: cannot tell whether the request fits") in report.errors
    verdict = next(v for v in report.results[0].nodes if v.name == name(bad))
    assert not verdict.feasible and verdict.reasons[0].check == "resources"


def test_every_hand_tainted_pool_node_is_in_the_removal_misscheduled_refers_to() -> None:
    """Four pool Nodes tainted by hand (more than a line of evidence names): pool-nodes-unusable's one removal names
    every one of them, so misscheduled, which refers to that fix for the Nodes it finds drifted, leaves none out."""
    snap = snapshot.load(FIXTURES / "pool-nodes-unusable")
    pool = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    hand = {"key": "team.example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    tainted = sorted(name(n) for n in (pool[0], *pool[2:5]))
    nodes = tuple(n | {"spec": n["spec"] | {"taints": [*n["spec"]["taints"], hand]}} if name(n) in tainted[1:] else n
                  for n in snap.nodes or ())
    found = next(s for s in diagnose(replace(snap, nodes=nodes), Target()).results[0].symptoms
                 if s.id == "pool-nodes-unusable")
    assert f"\nkubectl taint node {' '.join(tainted)} team.example.com/maintenance:NoSchedule-" in found.fix, found.fix


def test_a_node_in_repair_is_node_health_unless_it_also_drifted() -> None:
    """CKS moving a pool Node to triage fails only the inherited state expression: not drift. A Node in
    triage that also lost the pool's label has drifted all the same."""
    snap = snapshot.load(FIXTURES / "pool-nodes-unusable")
    pool = [n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu"]
    lost, repair = pool[1]["metadata"]["name"], pool[4]["metadata"]["name"]
    triage = {"node.coreweave.cloud/state": "triage", "node.coreweave.cloud/reserved": "triage"}
    nodes = tuple(n | {"metadata": n["metadata"] | {"labels": n["metadata"]["labels"] | triage}}
                  if n["metadata"]["name"] in (lost, repair) else n for n in snap.nodes or ())
    report = diagnose(replace(snap, nodes=nodes), Target())
    found = next(s for s in report.results[0].symptoms if s.id == "pool-nodes-unusable")
    text = "\n".join(found.evidence[1:]) + found.fix
    assert f"sunk.example.com/node Exists: label absent ({lost})" in text and repair not in text
    assert found.evidence[0].endswith(f"; 1 more in repair or not Ready, not drift: {repair})")


# --- misscheduled: drain and delete only Pods outside the pool ----------------------------------------

def misscheduled_fix(snap: snapshot.Snapshot) -> str:
    report = diagnose(snap, Target())
    return next(s.fix for s in report.results[0].symptoms if s.id == "misscheduled")


def test_misscheduled_pods_on_their_own_pool_get_what_changed_back_first() -> None:
    """The pool gained a taint the NodeSet does not tolerate while its Pods ran: tolerating it makes them scheduled
    again, the likely branch for Nodes of its own pool, said first; draining them is only for Nodes meant to leave."""
    fix = misscheduled_fix(snapshot.load(FIXTURES / "taint-added-while-running"))
    assert fix.startswith("if Nodes ") and "(of its own pool, they most likely are)" in fix.splitlines()[0]
    assert fix.index("- key: sunk.example.com/node") < fix.index("if they are meant to leave it") < fix.index("scontrol")


def test_a_count_only_a_cordon_explains_names_the_pod_the_node_and_the_cordon() -> None:
    """The status counts MISSCHEDULED 1 where sunkcheck finds no Pod the NodeSet refuses and none in repair: the one
    slurmd Pod on a Node cordoned in production (a link flap) is the only one the count can mean. The evidence names
    it, its Node and the cordon with its reason; the fix changes nothing for it and follows the cordon. A count beyond
    it still lists the Pods, to find the rest."""
    snap = snapshot.load(FIXTURES / "healthy-cordoned-pod-running")
    node = next(name(n) for n in snap.nodes or () if n["spec"].get("unschedulable"))
    pod = next(name(p) for p in snap.pods or () if node_name(p) == node and name(p).startswith("slurm-cpu-batch"))

    def row(count: int) -> Symptom:
        ns = first_nodeset(snap)
        counted = ns | {"status": ns["status"] | {"numberMisscheduled": count}}
        return next(s for s in diagnose(replace(snap, nodesets=(counted,)), Target()).results[0].symptoms
                    if s.id == "misscheduled")

    found = row(1)
    assert found.evidence[0] == "MISSCHEDULED 1" and len(found.evidence) == 2, found.evidence
    assert found.evidence[1].startswith(f"Pod {pod} on Node {node}, ")
    assert "cordoned" in found.evidence[1] and "infiniband link flap on ib0" in found.evidence[1]
    assert "node.coreweave.cloud/state is production" in found.evidence[1]
    assert f"\nkubectl describe node {node}" in found.fix and "kubectl get pods" not in found.fix
    assert "kubectl delete" not in found.fix and "scontrol" not in found.fix
    more = row(2)
    assert "kubectl get pods" in more.fix and f"kubectl describe node {node}" in more.fix


def test_misscheduled_restores_each_change_on_its_own_nodes() -> None:
    """The affinity moved to genoa (two Pods left on milan) and one genoa Node gained a taint by hand: the restore
    branch puts milan back in the affinity and takes the hand taint off that Node alone; the leave branch drains
    every Slurm node before deleting any Pod."""
    snap = snapshot.load(FIXTURES / "misscheduled")
    genoa = next(n for n in snap.nodes or () if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu-genoa")
    tainted = genoa | {"spec": genoa["spec"] | {"taints": [{"key": "team.example.com/maintenance", "effect": "NoSchedule"}]}}
    pod = next(name(p) for p in snap.pods or () if node_name(p) == name(genoa) and name(p).startswith("slurm-cpu-batch"))
    report = diagnose(replace(snap, nodes=tuple(tainted if n is genoa else n for n in snap.nodes or ())), Target())
    rows = {s.id: s for s in report.results[0].symptoms}
    keep, _, leave = rows["misscheduled"].fix.partition("\nif they are meant to leave it")
    assert "  values: [slurm-cpu-genoa, slurm-cpu-milan]" in keep
    # the genoa Node's hand taint is pool-nodes-unusable's drift: its fix removes it, this one refers to it
    removal = f"\nkubectl taint node {name(genoa)} team.example.com/maintenance:NoSchedule-"
    assert removal in rows["pool-nodes-unusable"].fix and "kubectl taint" not in keep
    assert f"what changed on {name(genoa)} is the drift pool-nodes-unusable reports: its fix restores it" in keep
    assert "check first with whoever set the taint" in rows["pool-nodes-unusable"].fix
    assert "scontrol" not in keep and "/eviction" not in keep
    alone = diagnose(replace(snap, nodes=tuple(tainted if n is genoa else n for n in snap.nodes or ())),
                     Target(ignore=frozenset({"pool-nodes-unusable"})))
    own = next(s.fix for s in alone.results[0].symptoms if s.id == "misscheduled")  # that row ignored: its own removal
    assert removal in own.partition("\nif they are meant to leave it")[0] and "check first with whoever set the taint" in own
    assert f"nodename=slurm-cpu-batch-012-005,slurm-cpu-batch-012-006,{pod} state=drain" in leave
    assert leave.index("state=drain") < leave.index("squeue -h -w") < leave.index("/eviction")


def test_a_label_lost_on_nodes_running_slurmd_is_put_back_by_one_fix_and_referred_to_by_the_other() -> None:
    """Two Nodes of slurm-cpu lost sunk.example.com/tier (removed, not changed) while their slurmd Pods ran. The pool
    sets tier=a: pool-nodes-unusable's fix puts the pool's value back on both, and misscheduled refers to it. A label
    no pool read sets has no command there: misscheduled then keeps its own restore, never a reference to a fix
    without one."""
    snap = snapshot.load(FIXTURES / "misscheduled-label-changed")
    lost = sorted(name(n) for n in snap.nodes or () if n["metadata"]["labels"].get("sunk.example.com/tier") == "b")
    assert lost == ["g10689d", "g18d510"]

    def without(n: Obj) -> Obj:
        labels = {k: v for k, v in n["metadata"]["labels"].items() if k != "sunk.example.com/tier"}
        return n | {"metadata": n["metadata"] | {"labels": labels}} if name(n) in lost else n

    nodes = tuple(without(n) for n in snap.nodes or ())
    rows = {s.id: s for s in diagnose(replace(snap, nodes=nodes), Target()).results[0].symptoms}
    assert "\nkubectl label --overwrite node g10689d g18d510 sunk.example.com/tier=a" in rows["pool-nodes-unusable"].fix
    keep = rows["misscheduled"].fix.partition("\nif they are meant to leave it")[0]
    assert "is the drift pool-nodes-unusable reports" in keep and "kubectl label" not in keep

    pools = tuple(p | {"spec": {k: v for k, v in p["spec"].items() if k != "nodeLabels"}} for p in snap.nodepools or ())
    rows = {s.id: s for s in diagnose(replace(snap, nodes=nodes, nodepools=pools), Target()).results[0].symptoms}
    keep = rows["misscheduled"].fix.partition("\nif they are meant to leave it")[0]
    assert "pool-nodes-unusable" not in keep and "g10689d" in keep, keep


def test_a_cordon_makes_no_pod_misscheduled_and_an_untolerated_taint_beside_it_does() -> None:
    """A cordoned Node keeps its slurmd Pod (a cordon evicts nothing): not misscheduled, the pods step agreeing
    with MISSCHEDULED 0. Tainted by hand as well, the Pod is misscheduled for that taint, not the cordon's."""
    snap = snapshot.load(FIXTURES / "healthy-cordoned-pod-running")
    flap = next(n for n in snap.nodes or () if n["spec"].get("unschedulable"))
    pod = next(name(p) for p in snap.pods or () if node_name(p) == name(flap) and name(p).startswith("slurm-cpu-batch"))
    assert pods_counts(diagnose(snap, Target())).misscheduled == 0
    maintenance = {"key": "team.example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    tainted = flap | {"spec": flap["spec"] | {"taints": [*flap["spec"]["taints"], maintenance]}}
    nodesets = tuple(ns | {"status": ns["status"] | {"currentNumberScheduled": 5, "numberReady": 5, "updatedNumberScheduled": 5,
                                                      "numberMisscheduled": 1}} for ns in snap.nodesets or ())
    nodes = tuple(tainted if n is flap else n for n in snap.nodes or ())
    report = diagnose(replace(snap, nodes=nodes, nodesets=nodesets), Target())
    found = next(s for s in report.results[0].symptoms if s.id == "misscheduled")
    assert found.evidence == ("MISSCHEDULED 1", f"Pod {pod} on Node {name(flap)} (pool slurm-cpu): untolerated taint "
                              "team.example.com/maintenance=true:NoSchedule")
    assert pods_counts(report).misscheduled == 1


def test_a_not_ready_node_makes_no_pod_misscheduled_even_without_a_reported_count() -> None:
    """Kubernetes' not-ready taint is the Node's health: its slurmd Pod is not misscheduled, so no row tells the operator
    to tolerate the taint, or to drain and delete the Pod, even when the status reports no MISSCHEDULED to go by."""
    snap = snapshot.load(FIXTURES / "slurmd-on-not-ready-node")
    nodesets = tuple(ns | {"status": {k: v for k, v in ns["status"].items() if k != "numberMisscheduled"}}
                     for ns in snap.nodesets or ())
    report = diagnose(replace(snap, nodesets=nodesets), Target())
    assert ids(report) == ["slurmd-not-ready"]
    assert pods_counts(report).misscheduled == 0


def pods_counts(report: Report) -> PodCounts:
    """The first target's pods step counts."""
    counts = next(s.counts for s in report.results[0].steps if s.name == "pods")
    assert isinstance(counts, PodCounts)
    return counts


# --- pool-split: an expectation to be short of -------------------------------------------------------

def ids(report: Report) -> list[str]:
    return sorted(s.id for s in report.results[0].symptoms)


def annotated(snap: snapshot.Snapshot, pool: str, value: str) -> snapshot.Snapshot:
    """The snapshot with Node Pool `pool` annotated sunkcheck.io/nodesets: `value`."""
    pools = tuple(p | {"metadata": p["metadata"] | {"annotations": {"sunkcheck.io/nodesets": value}}}
                  if name(p) == pool else p for p in snap.nodepools or ())
    return replace(snap, nodepools=pools)


def test_the_nodesets_annotation_names_a_nodeset_by_name_or_namespace_and_name() -> None:
    from sunkcheck.objects import meant_for

    nodeset = {"metadata": {"name": "slurm-cpu-batch", "namespace": "tenant-slurm"}}
    for value in ("slurm-cpu-batch", "tenant-slurm/slurm-cpu-batch", "slurm-gpu, tenant-slurm/slurm-cpu-batch "):
        assert meant_for({"metadata": {"annotations": {"sunkcheck.io/nodesets": value}}}, nodeset), value
    for other in ("other/slurm-cpu-batch", "slurm-cpu", "", None):
        assert not meant_for({"metadata": {"annotations": {"sunkcheck.io/nodesets": other}}}, nodeset), other
    assert not meant_for({"metadata": {}}, nodeset)


def test_pool_split_fix_lists_exactly_the_expected_pools() -> None:
    """k8s-cpu and the control plane share nothing but the instance type: never suggested."""
    report = diagnose(snapshot.load(FIXTURES / "pool-split"), Target())
    split = next(s for s in report.results[0].symptoms if s.id == "pool-split")
    assert "values: [slurm-cpu-a, slurm-cpu-b]\n" in split.fix + "\n"
    assert not any(p in split.fix + "".join(split.evidence) for p in ("k8s-cpu", "cpu-control-plane"))


def test_a_split_fix_keeps_the_pool_the_nodeset_runs_on_whoever_names_the_other() -> None:
    """Only slurm-cpu-b is meant for it (annotated, or --pool): slurm-cpu-a, which the NodeSet names and runs its 4
    Pods on, is meant for it too. A values list without it would leave those Pods misscheduled."""
    snap = snapshot.load(FIXTURES / "pool-split-bound-pool-kept")
    for target in (Target(), Target(pools=("slurm-cpu-b",))):
        split = next(s for s in diagnose(snap, target).results[0].symptoms if s.id == "pool-split")
        assert split.fix.endswith("values: [slurm-cpu-a, slurm-cpu-b]"), target
        assert split.evidence[-1] == "FEASIBLE 4; with slurm-cpu-b it would be 6"


def test_the_pool_flag_is_the_expectation_over_the_annotations() -> None:
    snap = snapshot.load(FIXTURES / "pool-split")
    assert ids(diagnose(snap, Target(pools=("slurm-cpu-a",)))) == []
    assert ids(diagnose(snap, Target(pools=("slurm-cpu-a", "slurm-cpu-b")))) == ["pool-split"]


def test_a_pool_shut_out_by_a_label_only_the_bound_pool_carries_is_a_split() -> None:
    """Bound by a dedicated label: k8s-cpu, meant for the NodeSet too, lacks it (and the taint)."""
    report = diagnose(snapshot.load(FIXTURES / "healthy-dedicated"), Target(pools=("slurm-cpu", "k8s-cpu")))
    assert ids(report) == ["pool-split"]
    split = report.results[0].symptoms[0]
    assert split.evidence[0].startswith("Node Pool k8s-cpu (cd-gp-a192-genoa) is meant for slurm-cpu-batch, but "
                                        "sunk.example.com/node Exists shuts it out: 3/3 of its Nodes would be feasible")
    assert split.evidence[1] == "FEASIBLE 8; with k8s-cpu it would be 11"
    assert "values: [k8s-cpu, slurm-cpu]" in split.fix


def test_an_expected_pool_whose_nodes_lost_the_pools_own_label_drifted() -> None:
    """k8s-cpu's nodeLabels carry the label the NodeSet selects, its Nodes do not: drift, not a split."""
    snap = snapshot.load(FIXTURES / "healthy-dedicated")
    pools = tuple(p | {"spec": p["spec"] | {"nodeLabels": {"sunk.example.com/node": "true"}}} if name(p) == "k8s-cpu" else p
                  for p in snap.nodepools or ())
    report = diagnose(replace(snap, nodepools=pools), Target(pools=("slurm-cpu", "k8s-cpu")))
    assert "pool-split" not in ids(report) and "pool-nodes-unusable" in ids(report)


def test_no_split_while_the_nodeset_has_no_feasible_node() -> None:
    """Nothing bound at all is no-feasible-nodes' to report: a split needs capacity on one side."""
    snap = annotated(snapshot.load(FIXTURES / "no-feasible-nodes"), "cpu-control-plane", "slurm-cpu-batch")
    assert "pool-split" not in ids(diagnose(snap, Target())) and "no-feasible-nodes" in ids(diagnose(snap, Target()))


def test_pods_summary_counts_each_pool_on_its_own() -> None:
    pods = [{"metadata": {"name": f"p{i}"}, "spec": {"nodeName": node}, "status": {"phase": "Running"}}
            for i, node in enumerate(["a1", "a2", "a3", "a4", "s1"])]
    pools = {"a1": "hpc-a", "a2": "hpc-a", "a3": "hpc-a", "a4": "hpc-a", "s1": "svc"}
    text = pd.summary(pods, {"hpc-a", "hpc-b"}, pools, 0).text
    assert text.startswith("5 slurmd Pods: 4 on hpc-a, 0 on hpc-b, 1 elsewhere, 0 Pending")


def test_step_summaries_agree_in_number() -> None:
    """An on-call reads `1 slurmd Pod`, `1 Node`, `1 daemon Pod`, never `1 slurmd Pods`; 0 takes the plural."""
    one = [{"metadata": {"name": "p0"}, "spec": {"nodeName": "a1"}, "status": {"phase": "Running"}}]
    assert pd.summary(one, {"hpc-a"}, {"a1": "hpc-a"}, 0).text.startswith("1 slurmd Pod: 1 on hpc-a, 0 elsewhere")
    assert pd.summary([], {"hpc-a"}, {}, 0).text.startswith("0 slurmd Pods: 0 on hpc-a")
    node = {"metadata": {"name": "a1", "labels": {}}, "status": {}}
    service = nd.in_service({})
    assert nd.summary((Pool("hpc-a", None, (node,), ()),), [], [], service).text.startswith("1 Node in hpc-a: 0 Ready")
    assert nd.summary((Pool("hpc-a", None, (), ()),), [], [], service).text.startswith("0 Nodes in hpc-a: 0 Ready")
    ds = diagnose(snapshot.load(FIXTURES / "ds-node-name-set"), Target(daemonset="dcgm-exporter", namespace="monitoring"))
    assert next(s.summary for s in ds.results[0].steps if s.name == "pods").startswith("1 daemon Pod: 1 bound")


def test_events_summary_says_event_for_one() -> None:
    normal = {"type": "Normal", "reason": "Scheduled", "involvedObject": {"kind": "Pod", "name": "p"}}
    warning = normal | {"type": "Warning", "reason": "FailedCreate"}
    assert ev.summary([normal]).text == "no Warning Events (1 Event in all)"
    assert ev.summary([normal, normal]).text == "no Warning Events (2 Events in all)"
    assert ev.summary([warning]).text == "1 Warning Event: FailedCreate"
    assert ev.summary([warning, warning]).text == "2 Warning Events: FailedCreate"


def test_a_nodeset_reference_without_a_name_claims_no_node() -> None:
    """An ownerReference of kind NodeSet with no name (a hand-edited object) names no NodeSet: never one called
    "None" holding the Node."""
    from sunkcheck.analyze.pods import nodeset_owner

    pod: Obj = {"metadata": {"name": "p", "namespace": "tenant-a", "ownerReferences": [{"kind": "NodeSet"}]}}
    assert nodeset_owner(pod) is None
    pod["metadata"]["ownerReferences"].append({"kind": "NodeSet", "name": "slurm-cpu-batch"})
    assert nodeset_owner(pod) == "tenant-a/slurm-cpu-batch"


def test_a_status_column_the_nodeset_lacks_is_said_once() -> None:
    """`?` stands for a field the status does not carry: the row says so once, and only when a `?` is printed."""
    counts: dict[str, int | None] = {k: 2 for _, k in o.NODESET_COLUMNS}
    assert "?" not in columns_line(counts)
    line = columns_line(counts | {"numberDrain": None, "numberUnavailable": None})
    assert "DRAIN ? " in line and "UNAVAILABLE ? " in line and line.count("the status lacks the field") == 1
