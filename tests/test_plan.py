"""Rules declare what they read, the live collector reads exactly that, and live equals replay whatever the cluster."""

from __future__ import annotations

import copy
import importlib.util
import json
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sunkcheck import objects as o
from sunkcheck.analyze.binding import SUMMARY_READS
from sunkcheck.plan import Plan, declared
from sunkcheck.reads import Read
from sunkcheck.snapshot import Snapshot
from sunkcheck.snapshot import load as load_snapshot
from sunkcheck.symptoms import Rule
from sunkcheck.symptoms import daemonset as daemonset_rules
from sunkcheck.symptoms import nodeset as nodeset_rules
from tests.conftest import FIXTURES, ROOT, TOKEN, Run, run, unplaced
from tests.kubeapi import FakeApi, kubeconfig
from tests.test_fixture_consistency import fits, nodeset_status, pod_requests

_spec = importlib.util.spec_from_file_location("generate", ROOT / "fixtures" / "generate.py")
assert _spec is not None and _spec.loader is not None
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

TABLES = {"NodeSet": nodeset_rules.RULES, "DaemonSet": daemonset_rules.RULES}


def undeclared(rules: Iterable[Rule]) -> list[str]:
    """The rows that say nothing of what they read, or name a read the collector does not know."""
    return [r.id for r in rules if r.reads is None or not set(r.reads) <= set(Read)]


def planned(case: str) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """A fixture case's NodeSets, Nodes, the NodeSets' own Pods and Node Pools, as the planner takes them."""
    s = load_snapshot(FIXTURES / case)
    own = [p for p in s.pods or () if o.labels(p).get(o.INSTANCE_LABEL)]
    return list(s.nodesets or ()), list(s.nodes or ()), own, list(s.nodepools or ())


# --- the declarations -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", TABLES)
def test_every_rule_declares_what_it_reads(kind: str) -> None:
    assert undeclared(TABLES[kind]) == []
    assert set(SUMMARY_READS) <= set(Read)


def test_a_rule_without_a_declaration_or_with_an_unknown_read_is_caught() -> None:
    row = nodeset_rules.RULES[0]
    silent = Rule(row.id, row.severity, row.step, row.symptom, row.cause, row.fix, row.when)
    misspelt = cast("tuple[Read, ...]", ("the-whole-world",))  # a typo mypy would catch: the table check catches it too
    unknown = Rule(row.id, row.severity, row.step, row.symptom, row.cause, row.fix, row.when, reads=misspelt)
    assert undeclared((silent, unknown, row)) == [row.id, row.id]


def test_the_plan_reads_what_is_declared_and_nothing_more() -> None:
    nodesets, _, _, pools = planned("healthy-pool-name")
    pool = "compute.coreweave.com/node-pool in (slurm-cpu)"
    assert Plan(frozenset({Read.POOL_NODES})).selectors(nodesets, pools) == [pool]
    # the term less the inherited state requirement: the Nodes pool discovery weighs, those in repair too
    assert Plan(frozenset({Read.AFFINITY_NODES})).selectors(nodesets, pools) == [pool]
    assert Plan(frozenset({Read.POD_HOSTS})).selectors(nodesets, pools) == []
    assert Plan(frozenset({Read.EVERY_NODE})).selectors(nodesets, pools) is None
    zero = copy.deepcopy(nodesets[0])
    zero["status"]["numberFeasible"] = 0
    assert Plan(frozenset({Read.POOL_NODES})).selectors([zero], pools) == [pool]
    assert Plan(frozenset({Read.POOL_NODES, Read.EVERY_NODE_WHEN_FEASIBLE_0})).selectors([zero], pools) is None
    assert not Plan(frozenset({Read.NODES_BY_IP_WHEN_SLURM})).every_node
    assert Plan(frozenset({Read.NODES_BY_IP_WHEN_SLURM}), slurm=True).every_node
    assert Plan(declared(daemonset_rules.RULES)).every_node


def test_the_plan_lists_pods_only_on_the_nodes_a_declared_read_weighs() -> None:
    args = (*planned("pool-split"), ())
    shut_out = {o.name(n) for n in args[1] if o.pool_of(n) == "slurm-cpu-b"}
    assert Plan(frozenset({Read.PODS_ON_SHUT_OUT_NODES})).pod_nodes(*args) == shut_out
    assert Plan(frozenset({Read.PODS_ON_USABLE_NODES})).pod_nodes(*args) == set()  # every usable Node has its Pod
    assert Plan(frozenset({Read.POOL_NODES, Read.AFFINITY_NODES})).pod_nodes(*args) == set()
    # the reserved taint moved to the operator's domain reaches every Node of its pool: their daemon Pods are read
    moved = (*planned("reserved-taint-namespace"), ())
    assert Plan(frozenset({Read.PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES})).pod_nodes(*moved) == \
        {o.name(n) for n in moved[1] if o.pool_of(n) == "slurm-cpu"}
    assert Plan(frozenset({Read.PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES})).pod_nodes(*args) == set()


def test_a_rule_that_declares_a_wider_read_makes_the_live_check_read_it(serve: Callable[..., FakeApi],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector plans from the declarations alone: declaring every Node is all it takes to get them."""
    api = serve("healthy-pool-name")
    assert run("check", "-o", "json").code == 0
    lists = [r.query.get("labelSelector") or "" for r in api.log if r.path == "/api/v1/nodes"]
    assert lists == ["compute.coreweave.com/node-pool in (slurm-cpu)"]
    wider = tuple(replace(r, reads=(*(r.reads or ()), Read.EVERY_NODE)) if r.id == "misscheduled" else r
                  for r in nodeset_rules.RULES)
    monkeypatch.setattr(nodeset_rules, "RULES", wider)
    api.log.clear()
    assert run("check", "-o", "json").code == 0
    assert [r.query.get("labelSelector") or "" for r in api.log if r.path == "/api/v1/nodes"] == [""]


def test_the_pools_of_its_type_are_weighed_only_when_no_pool_is_meant_for_the_nodeset() -> None:
    """With --pool (or the annotation) other pools are nobody's business: no idle-pool note, nothing read for it."""
    args = planned("healthy-idle-pool")
    assert Plan(frozenset({Read.SAME_TYPE_POOLS})).probes(*args, ()) == ["slurm-gpu-2"]
    assert Plan(frozenset({Read.SAME_TYPE_POOLS})).probes(*args, ("slurm-gpu",)) == []
    assert Plan(frozenset()).probes(*args, ()) == []


# --- live equals replay on random clusters ---------------------------------------------------------

TYPES = (generate.GENOA, generate.MILAN, generate.H100)
RESERVED = "sunk.coreweave.com/node"
TEAM = {"example.com/team": "web"}  # another tenant's hand label: a NotIn keeps its Nodes out
POOL_NAMES = ("slurm-cpu", "slurm-cpu-b", "k8s-cpu", "gpu-spare")
NODESETS = ("slurm-cpu-batch", "slurm-cpu-debug")


def admit(c: Any, pod: dict) -> None:
    """Keep a Pod just made on its Node only if the kubelet would admit it: it fits beside the Pods there."""
    here = [p for p in c.pods if o.node_name(p) == o.node_name(pod) and p is not pod]
    if not fits(pod_requests(pod["spec"]), next(n for n in c.nodes if o.name(n) == o.node_name(pod)), here):
        c.pods.remove(pod)


def binding(draw: st.DrawFn, kind: str, pools: list[str], types: list[str]) -> list[dict]:
    """A required term's expressions: pool names (one maybe absent), a dedicated or reserved label, a pool's
    instance type less another tenant's hand-labelled Nodes, or none."""
    if kind == "pool":
        return generate.by_pool_name(*draw(st.lists(st.sampled_from([*pools, "slurm-cpu-spare"]), min_size=1, max_size=2,
                                                    unique=True)))
    return {"dedicated": generate.DEDICATED_EXPR, "reserved": [{"key": RESERVED, "operator": "Exists"}],
            "type-but-team": [{"key": "node.coreweave.cloud/type", "operator": "In", "values": [draw(st.sampled_from(types))]},
                              {"key": "example.com/team", "operator": "NotIn", "values": ["web"]}]}.get(kind, [])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict, tuple[str, ...]]:
    """A CKS cluster built from the fixture builders, and the --pool flags to check it with: pools of a few
    types (often the same), dedicated or reserved labels, taints, annotations, cordons, Nodes out of
    production, hand labels (on Nodes in repair too), NodeSets bound by pool name, label, instance type less a
    NotIn or nothing, sometimes with a second term ORed (a pool's name or a label), squatting Pods where the
    kubelet would admit them, and the statuses the controllers would report."""
    c = generate.Cluster(control_plane=draw(st.sampled_from(TYPES)))
    names = draw(st.lists(st.sampled_from(POOL_NAMES), min_size=2, max_size=3, unique=True))
    types = [draw(st.sampled_from(TYPES)) for _ in names]
    for name, instance_type in zip(names, types, strict=True):
        labels = draw(st.sampled_from([None, generate.DEDICATED_LABELS, {RESERVED: "true"}]))
        meant = draw(st.sampled_from([None, NODESETS[0], f"{generate.NS}/{NODESETS[1]}", ", ".join(NODESETS)]))
        c.pool(name, instance_type, draw(st.integers(1, 3)), labels=labels, meant_for=meant,
               taints=generate.DEDICATED_TAINTS if draw(st.booleans()) else None,
               node_labels_on_nodes={} if labels and RESERVED in labels else None,  # CKS drops a reserved key
               extra_node_labels=draw(st.sampled_from([None, TEAM])))  # another tenant's pool, labelled by hand
    for node in c.nodes:
        change = draw(st.sampled_from(["none"] * 4 + ["cordon", "repair", "hand-label", "hand-label-in-repair", "team"]))
        if change == "cordon":
            generate.cordon(node, "repair")
        if change in ("repair", "hand-label-in-repair"):
            generate.out_of_production(node, "repair")
        if change in ("hand-label", "hand-label-in-repair"):
            node["metadata"]["labels"] |= generate.DEDICATED_LABELS
        if change == "team":
            node["metadata"]["labels"] |= TEAM
    pools = tuple(draw(st.lists(st.sampled_from(POOL_NAMES), max_size=2, unique=True)))
    for name in draw(st.lists(st.sampled_from(NODESETS), min_size=1, max_size=2, unique=True)):
        kind = draw(st.sampled_from(["pool", "pool", "dedicated", "reserved", "type-but-team", "type-but-team", "none",
                                     "outside"]))
        nodeset = c.nodeset(name, binding(draw, kind, names, types), (0,) * 8,
                            tolerations=generate.DEDICATED_TOLERATION if draw(st.booleans()) else (),
                            requests={"cpu": draw(st.sampled_from(["64", "160"])), "memory": "256Gi"},
                            replicas=draw(st.sampled_from([None, 1, 2])),
                            node_selector=generate.DEDICATED_LABELS if kind == "outside" else None)
        # often a pool's name ORed with a label another pool sets in its nodeLabels or a Node carries by hand
        if kind != "outside" and (other := draw(st.sampled_from([None, None, "pool", "dedicated", "dedicated", "reserved",
                                                                 "type-but-team"]))):
            terms(nodeset).append({"matchExpressions": [generate.STATE_EXPR, *binding(draw, other, names, types)]})  # ORed
        for node in draw(st.lists(st.sampled_from(c.nodes), max_size=4, unique_by=o.name)):
            if not any(o.node_name(p) == o.name(node) and o.labels(p).get(o.INSTANCE_LABEL) == name for p in c.pods):
                admit(c, c.slurmd(nodeset, node))
    for node in draw(st.lists(st.sampled_from(c.nodes), max_size=3, unique_by=o.name)):
        admit(c, c.pod("data-eng", f"etl-{o.name(node)}", node, {"cpu": draw(st.sampled_from(["48", "150"])), "memory": "64Gi"}))
    for nodeset in c.nodesets:  # what the controller reports for the objects, as the fixtures' statuses are checked
        nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    return c.files(), pools


def terms(nodeset: dict) -> list[dict]:
    return o.pod_spec(nodeset)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def served(files: dict) -> Snapshot:
    """The snapshot the test API server serves for the cluster `files`."""
    tables: dict[str, Any] = {k: tuple(v["items"]) for k, v in files.items()}
    return Snapshot(**tables)


def live_and_replay(files: dict, flags: list[str], cert: tuple[str, str],
                    monkeypatch: pytest.MonkeyPatch) -> tuple[Run, Run, list]:
    """`check` of the cluster `files` live through the test API server, then replayed from the same files."""
    with tempfile.TemporaryDirectory() as tmp:
        for stem, doc in files.items():
            (Path(tmp) / f"{stem}.json").write_text(json.dumps(doc))
        with FakeApi(served(files), cert=cert, token=TOKEN) as api:
            monkeypatch.setenv("KUBECONFIG", str(kubeconfig(Path(tmp) / "kubeconfig", api.url, token=TOKEN, ca=cert[0])))
            live = run("check", "-o", "json", "-A", *flags)
        if api.pod_nodes() is not None:  # the Nodes whose Pods the live check listed, as its meta.json says
            (Path(tmp) / "meta.json").write_text(json.dumps({"podNodes": api.pod_nodes()}))
        return live, run("check", "--snapshot", tmp, "-o", "json", *flags), api.log


def test_a_pool_whose_probed_node_runs_a_workload_gets_no_idle_note_live_as_in_replay(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu-control-plane, of the NodeSet's instance type, runs an ETL Pod on gd79351, the Node the live check probes
    (found by the property test below): the probe's Pods show the pool in use, so no idle-pool note, live as in the
    replay, which holds every Pod. The live check used to drop the probe's Pods once they showed the pool in use, and
    then judged the pool's Nodes, read already, from no Pod at all."""
    case = json.loads((ROOT / "tests" / "data" / "probe-pool-in-use.json").read_text())
    live, replay, log = live_and_replay(case["files"], [f"--pool={p}" for p in case["pools"]], cert, monkeypatch)
    assert any(r.path == "/api/v1/pods" and "spec.nodeName=gd79351" in r.query.get("fieldSelector", "") for r in log)
    assert [n for r in live.json()["results"] for n in r["notes"]] == []
    assert live.verdict() == replay.verdict()


def test_a_replay_knows_the_nodes_whose_pods_the_live_check_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An ETL Pod squats on g10689d of slurm-cpu; the live check reads the Pods of g10689d and of the Nodes its
    idle-pool probe looks at, and says it read slurm-cpu's g10689d only. Its meta.json's podNodes names every Node
    whose Pods it holds, so the replay says the same (found by the property test below)."""
    case = json.loads((ROOT / "tests" / "data" / "live-read-some-pods.json").read_text())
    live, replay, _log = live_and_replay(case["files"], [f"--pool={p}" for p in case["pools"]], cert, monkeypatch)
    fix = next(s["fix"] for r in live.json()["results"] for s in r["symptoms"] if s["id"] == "foreign-pod-resources")
    assert "this check read the Pods of g10689d only, of the 2 Nodes of slurm-cpu" in fix
    assert live.verdict() == replay.verdict()


def test_a_workload_beside_the_nodesets_pod_makes_an_uneven_pool_anothers_live_as_in_replay(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Only gae05ed of cpu-control-plane carries the label the NodeSet's nodeSelector sets by hand; an ETL Pod runs
    on gd79351 beside the NodeSet's slurmd Pod. labels-not-from-pool then never offers the pool's nodeLabels, live as
    in the replay: the live check reads the Pods of every Node of such a pool, its own Pods' Nodes too (it used to
    skip gd79351 and offer the patch; found by the property test below)."""
    case = json.loads((ROOT / "tests" / "data" / "shared-pool-beside-slurmd.json").read_text())
    live, replay, log = live_and_replay(case["files"], [f"--pool={p}" for p in case["pools"]], cert, monkeypatch)
    assert any(r.path == "/api/v1/pods" and "spec.nodeName=gd79351" in r.query.get("fieldSelector", "") for r in log)
    fix = next(s["fix"] for r in live.json()["results"] for s in r["symptoms"] if s["id"] == "labels-not-from-pool")
    assert "other workloads run on it: never set it in its nodeLabels" in fix and "kubectl patch" not in fix
    assert live.verdict() == replay.verdict()


def test_the_pods_of_every_pool_a_nodeset_reaches_by_chance_are_read_when_the_other_pods_may_make_it_its_own(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """slurm-cpu-debug, bound by instance type alone (less another team's Nodes), no pool meant for it, runs no Pod
    and reaches all four pools of its type by chance. Judged from the NodeSets' own Pods, slurm-cpu-b alone takes its
    Pod, so the others looked another team's; once read, an ETL Pod fills slurm-cpu-b's g59a118 too, none takes its
    Pod, and every pool is its own, k8s-cpu's cordoned g70515a with it. The live check then judged g70515a's room
    from slurm-cpu-batch's Pod alone (free 125.9), where the replay counts its kube-system Pods (free 125.78): the
    live check now reads the Pods of every pool the other Pods may make the NodeSet's (found by the property test
    below)."""
    case = json.loads((ROOT / "tests" / "data" / "pools-found-once-pods-read.json").read_text())
    live, replay, log = live_and_replay(case["files"], [f"--pool={p}" for p in case["pools"]], cert, monkeypatch)
    assert any(r.path == "/api/v1/pods" and "spec.nodeName=g70515a" in r.query.get("fieldSelector", "") for r in log)
    debug = next(r for r in live.json()["results"] if r["name"] == "slurm-cpu-debug")
    assert debug["pools"] == ["cpu-control-plane", "k8s-cpu", "slurm-cpu", "slurm-cpu-b"]
    room = next(x["detail"] for n in debug["nodes"] if n["name"] == "g70515a" for x in n["reasons"]
                if x["check"] == "resources")
    assert "free 125.78 of 190 allocatable" in room and "kube-system/cilium-70515 100m" in room
    assert live.verdict() == replay.verdict()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=clusters())
def test_live_equals_replay_on_random_clusters(case: tuple[dict, tuple[str, ...]], cert: tuple[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    files, pools = case
    live, replay, log = live_and_replay(files, [f"--pool={p}" for p in pools], cert, monkeypatch)
    assert (live.code, unplaced(live.err)) == (replay.code, replay.err)
    assert live.verdict() == replay.verdict()
    assert {r.method for r in log} == {"GET"}


def test_a_pool_found_from_a_hand_labelled_node_has_its_other_nodes_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound by a label and meant for slurm-cpu, the NodeSet also uses k8s-cpu, where one Node carries the label
    by hand: the pool's other Node is counted and listed live as in the replay (found by the property test)."""
    c = generate.Cluster()
    c.pool("slurm-cpu", generate.GENOA, 2, labels=generate.DEDICATED_LABELS, meant_for="slurm-cpu-batch")
    _, k8s = c.pool("k8s-cpu", generate.GENOA, 2)
    k8s[0]["metadata"]["labels"] |= generate.DEDICATED_LABELS
    nodeset = c.nodeset("slurm-cpu-batch", generate.DEDICATED_EXPR, (0,) * 8)
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    live, replay, log = live_and_replay(c.files(), [], cert, monkeypatch)
    assert live.verdict() == replay.verdict()
    assert "compute.coreweave.com/node-pool in (k8s-cpu)" in [r.query.get("labelSelector") for r in log]
    assert {n["name"] for n in live.json()["results"][0]["nodes"]} >= {o.name(n) for n in k8s}


def test_the_pools_an_ored_label_term_selects_beside_a_named_pool_are_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One term names slurm-cpu, the other, ORed, takes the label Node Pool burst-cpu sets and one k8s-cpu Node carries
    by hand: both pools are the NodeSet's, and their every Node is read live as in the replay (the
    named term once hid the other, and burst-cpu's slurmd Pods were taken for strays)."""
    c = generate.Cluster()
    _, cpu = c.pool("slurm-cpu", generate.GENOA, 2)
    _, burst = c.pool("burst-cpu", generate.GENOA, 2, labels=generate.DEDICATED_LABELS)
    _, k8s = c.pool("k8s-cpu", generate.GENOA, 2)
    k8s[0]["metadata"]["labels"] |= generate.DEDICATED_LABELS
    nodeset = c.nodeset("slurm-cpu-batch", generate.by_pool_name("slurm-cpu"), (0,) * 8)
    terms(nodeset).append({"matchExpressions": [generate.STATE_EXPR, *generate.DEDICATED_EXPR]})
    for node in cpu + burst + k8s[:1]:
        c.slurmd(nodeset, node)
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    live, replay, _ = live_and_replay(c.files(), [], cert, monkeypatch)
    assert live.verdict() == replay.verdict()
    result = live.json()["results"][0]
    assert result["pools"] == ["burst-cpu", "k8s-cpu", "slurm-cpu"]
    assert {n["name"] for n in result["nodes"]} >= {o.name(n) for n in k8s}
    assert [s["id"] for s in result["symptoms"]] == ["labels-not-from-pool"]


def test_a_pool_a_notin_keeps_out_is_not_the_nodesets_live_saved_or_replayed(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Bound by instance type less the Nodes another tenant labelled by hand, and meant for slurm-cpu: k8s-cpu, of the
    same type, is a pool the NodeSet never selected, not one whose Nodes drifted. OK live, live with --save and
    replayed (the replay once took k8s-cpu for its pool, and the live check never read its Nodes)."""
    c = generate.Cluster()
    _, mine = c.pool("slurm-cpu", generate.GENOA, 2, meant_for="slurm-cpu-batch")
    c.pool("k8s-cpu", generate.GENOA, 2, extra_node_labels=TEAM)
    nodeset = c.nodeset("slurm-cpu-batch", [{"key": "node.coreweave.cloud/type", "operator": "In", "values": [generate.GENOA]},
                                            {"key": "example.com/team", "operator": "NotIn", "values": ["web"]}], (0,) * 8)
    for node in mine:
        c.slurmd(nodeset, node)
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    files = c.files()
    live, replay, _ = live_and_replay(files, [], cert, monkeypatch)
    with FakeApi(served(files), cert=cert, token=TOKEN) as api:
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "kubeconfig", api.url, token=TOKEN, ca=cert[0])))
        saved = run("check", "-o", "json", "-A", "--save", str(tmp_path / "saved"))
    resaved = run("check", "--snapshot", str(tmp_path / "saved"), "-o", "json")
    assert [r.code for r in (live, saved, replay, resaved)] == [0] * 4
    assert live.verdict() == saved.verdict() == replay.verdict() == resaved.verdict()
    assert [(r["pools"], r["symptoms"]) for r in live.json()["results"]] == [(["slurm-cpu"], [])]


def test_a_pool_found_from_a_hand_labelled_node_in_repair_has_its_nodes_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The Node carrying the label by hand is out of production: pool discovery still counts it (a pool in repair
    is still the pool), so the live check reads it, and the rest of k8s-cpu, as the replay weighs them."""
    c = generate.Cluster()
    c.pool("slurm-cpu", generate.GENOA, 2, labels=generate.DEDICATED_LABELS, meant_for="slurm-cpu-batch")
    _, k8s = c.pool("k8s-cpu", generate.GENOA, 2)
    k8s[0]["metadata"]["labels"] |= generate.DEDICATED_LABELS
    generate.out_of_production(k8s[0], "repair")
    nodeset = c.nodeset("slurm-cpu-batch", generate.DEDICATED_EXPR, (0,) * 8)
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    live, replay, _ = live_and_replay(c.files(), [], cert, monkeypatch)
    assert live.verdict() == replay.verdict()
    assert live.json()["results"][0]["pools"] == ["k8s-cpu", "slurm-cpu"]


def test_the_pods_on_a_pool_node_in_repair_are_read_since_its_every_reason_is_listed(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A Node out of production with a job filling it: the result lists it as failing the affinity and short of CPU,
    live as in the replay."""
    c = generate.Cluster()
    _, (used, repair) = c.pool("slurm-cpu", generate.GENOA, 2)
    generate.out_of_production(repair, "repair")
    c.pod("data-eng", "etl-7f9c2-k4x8p", repair, {"cpu": "150", "memory": "64Gi"})
    nodeset = c.nodeset("slurm-cpu-batch", generate.by_pool_name("slurm-cpu"), (0,) * 8)
    c.slurmd(nodeset, used)
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    live, replay, _log = live_and_replay(c.files(), [], cert, monkeypatch)
    assert live.verdict() == replay.verdict()
    listed = {n["name"]: n for n in live.json()["results"][0]["nodes"]}
    assert {r["check"] for r in listed[o.name(repair)]["reasons"]} == {"state", "affinity", "resources"}


def test_a_nodeset_without_a_pool_and_feasible_zero_has_the_pods_of_every_node_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """slurm-cpu-debug names no pool and tolerates no taint: no-feasible-nodes weighs every Node, so the Pods
    holding a Node's resources are named live as in the replay."""
    c = generate.Cluster()
    for node in c.nodes:
        generate.out_of_production(node, "repair")
    _, (node,) = c.pool("slurm-cpu", generate.MILAN, 1, taints=generate.DEDICATED_TAINTS)
    batch = c.nodeset("slurm-cpu-batch", generate.by_pool_name("slurm-cpu"), (0,) * 8,
                      tolerations=generate.DEDICATED_TOLERATION)
    c.slurmd(batch, node)
    c.nodeset("slurm-cpu-debug", [], (0,) * 8)
    for nodeset in c.nodesets:
        nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods)
    live, replay, _ = live_and_replay(c.files(), [], cert, monkeypatch)
    assert live.verdict() == replay.verdict()
    debug = next(r for r in live.json()["results"] if r["name"] == "slurm-cpu-debug")
    evidence = [e for s in debug["symptoms"] if s["id"] == "no-feasible-nodes" for e in s["evidence"]]
    assert any("Insufficient cpu" in e and "kube-system/cilium" in e for e in evidence), evidence


def scaled_up(observed: int = 4, hand_label: bool = False) -> dict:
    """Right after a scale-up: slurm-cpu's 4 Nodes usable, no slurmd Pod yet, a small ETL Pod beside the room the
    slurmd Pod needs, and the NodeSet's status counting all 4 feasible (for generation 4, its latest spec when
    `observed` is 4). `hand_label`: the NodeSet selects one Node of k8s-gpu too, by a label set on it by hand."""
    c = generate.Cluster()
    _, cpu = c.pool("slurm-cpu", generate.GENOA, 4)
    _, k8s = c.pool("k8s-gpu", generate.H100, 2)  # of another instance type: no idle-pool probe
    exprs = generate.by_pool_name("slurm-cpu")
    nodeset = c.nodeset("slurm-cpu-batch", exprs, (0,) * 8)
    if hand_label:
        k8s[0]["metadata"]["labels"] |= generate.DEDICATED_LABELS
        terms(nodeset).append({"matchExpressions": [generate.STATE_EXPR, *generate.DEDICATED_EXPR]})
        c.pod("data-eng", "etl-k8s", k8s[0], {"cpu": "8", "memory": "16Gi"},
              owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "etl", "uid": "x"}})
    c.pod("data-eng", "etl-0", cpu[0], {"cpu": "8", "memory": "16Gi"},
          owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "etl", "uid": "x"}})
    nodeset["status"] |= nodeset_status(nodeset, c.nodes, c.pods) | {"observedGeneration": observed}
    return c.files()


def other_pod_reads(log: list) -> list[str]:
    """The lists of other workloads' Pods (by Node, or of every Pod) a live check made."""
    return [r.query["fieldSelector"] for r in log if r.path == "/api/v1/pods" and "labelSelector" not in r.query
            and "status.phase" in r.query.get("fieldSelector", "")]


def test_right_after_a_scale_up_a_current_status_counting_every_usable_node_spares_the_pod_reads(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The status is current and FEASIBLE 4 is every Node the template can be placed on: no other Pod holds one, so
    the live check lists none of their Pods, and its verdict is the replay's, which holds every Pod."""
    live, replay, log = live_and_replay(scaled_up(), [], cert, monkeypatch)
    assert other_pod_reads(log) == []
    assert live.verdict() == replay.verdict()
    assert [s["id"] for r in live.json()["results"] for s in r["symptoms"]] == ["slurmd-pods-missing"]


def test_a_status_for_an_older_spec_says_nothing_of_the_pods_so_they_are_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    live, replay, log = live_and_replay(scaled_up(observed=3), [], cert, monkeypatch)
    assert len(other_pod_reads(log)) == 4  # the 4 usable Nodes without a slurmd Pod, one list each
    assert live.verdict() == replay.verdict()


def test_a_pool_whose_nodes_carry_the_binding_label_unalike_has_its_pods_read(
        cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """k8s-gpu's one hand-labelled Node is usable and counted feasible, but whether another workload runs on that
    pool decides labels-not-from-pool's fix (never the pool's nodeLabels, which would spread the NodeSet over it):
    its Pods are read, the ETL Pod found, and the fix is the replay's."""
    files = scaled_up(hand_label=True)
    live, replay, log = live_and_replay(files, [], cert, monkeypatch)
    k8s = sorted(o.name(n) for n in files["nodes"]["items"] if o.pool_of(n) == "k8s-gpu")
    assert sorted(other_pod_reads(log)) == [f"spec.nodeName={n},status.phase!=Succeeded,status.phase!=Failed" for n in k8s]
    assert live.verdict() == replay.verdict()
    fix = next(s["fix"] for r in live.json()["results"] for s in r["symptoms"] if s["id"] == "labels-not-from-pool")
    assert "other workloads run on it" in fix


def test_pods_with_one_nodes_list_missing_are_not_captured() -> None:
    """A failed per-Node Pod list would leave that Node looking free, live and in a saved snapshot's replay:
    the Pods count as not captured (their steps unknown), never as complete."""
    from sunkcheck.collect.cluster import _merge

    own, here = [{"metadata": {"name": "a", "namespace": "n"}}], [{"metadata": {"name": "b", "namespace": "n"}}]
    merged = _merge(own, [here, own])
    assert merged is not None and [p["metadata"]["name"] for p in merged] == ["a", "b"]
    assert _merge(own, [here, None]) is None


def test_a_read_spelt_as_a_string_or_misspelt_is_a_type_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reads are typed: mypy refuses a plain string where a Read belongs and a Read that does not exist, long
    before the live-equals-replay property would find what went unread."""
    from mypy import api

    probe = tmp_path / "probe.py"
    probe.write_text("from sunkcheck.model import Status\nfrom sunkcheck.reads import Read\n"
                     "from sunkcheck.symptoms import Rule\n\n"
                     "Rule('x', Status.OK, 'nodes', '', '', '', lambda facts: None, reads=(Read.POOL_NODES,))\n"
                     "Rule('x', Status.OK, 'nodes', '', '', '', lambda facts: None, reads=('pool-nodes',))\n"
                     "print(Read.POOL_NODEZ)\n")
    monkeypatch.chdir(ROOT)  # mypy finds the package from the working directory first: this checkout's
    out, _, code = api.run(["--config-file", "pyproject.toml", "--follow-imports=silent",
                            "--cache-dir", str(tmp_path / "cache"), str(probe)])
    flagged = sorted((line.split(":")[1], line.rsplit("[", 1)[-1]) for line in out.splitlines() if ": error:" in line)
    assert (code, flagged) == (1, [("6", "arg-type]"), ("7", "attr-defined]")]), out
