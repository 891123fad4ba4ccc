"""Property: noise a NodeSet (or DaemonSet) cannot see leaves a healthy cluster OK, with no row.

Any healthy fixture, plus random Node Pools whose Nodes the workload's required affinity and nodeSelector
do not select (random labels, taints of every effect, cordons, repair states, NotReady) and random Pods on
them (any size, any phase, other NodeSets' included), must keep status OK, exit 0 and no symptom.
"""

from __future__ import annotations

import importlib.util
import json
import shutil

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import CASES, FIXTURES, expected, run
from tests.test_fixture_consistency import affinity_holds, tolerated

HEALTHY = [c for c in CASES if expected(c)["status"] == "ok"]
_spec = importlib.util.spec_from_file_location("generate", FIXTURES / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

LABEL_KEYS = ("sunk.example.com/node", "sunk.example.com/gpu", "team.example.com/owner", "workload.example.com/tier")
VALUES = ("true", "h100", "slurm", "spare", "1")
TAINT_KEYS = (*LABEL_KEYS, "sunk.coreweave.com/lock", "nvidia.com/gpu", "team.example.com/maintenance",
              "DeletionCandidateOfClusterAutoscaler")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
OWNERS = ("ReplicaSet", "Job", "StatefulSet", "NodeSet")


def taints():
    return st.lists(st.builds(lambda k, v, e: {"key": k, "value": v, "effect": e},
                              st.sampled_from(TAINT_KEYS), st.sampled_from(VALUES), st.sampled_from(EFFECTS)),
                    max_size=2, unique_by=lambda t: (t["key"], t["effect"]))


pods = st.lists(st.fixed_dictionaries({
    "cpu": st.integers(0, 200), "memory": st.sampled_from(("0", "16Gi", "512Gi", "4Ti")),
    "gpus": st.sampled_from((0, 4, 8)), "phase": st.sampled_from(("Running", "Succeeded", "Failed")),
    "owner": st.sampled_from(OWNERS)}), max_size=2)
nodes = st.lists(st.fixed_dictionaries({
    "taints": taints(), "cordoned": st.booleans(), "state": st.sampled_from(("production", "triage", "zap")),
    "not_ready": st.booleans(), "pods": pods}), min_size=1, max_size=3)
pools = st.lists(st.fixed_dictionaries({
    "type": st.integers(0, 10),  # an index into the instance types the noise may use
    "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=2),
    "taints": taints(), "nodes": nodes}), min_size=1, max_size=3)


def read(case: str, stem: str) -> list[dict]:
    path = FIXTURES / case / f"{stem}.json"
    return json.loads(path.read_text())["items"] if path.exists() else []


def selected_keys(template: dict) -> set[str]:
    """The label keys the template's required affinity and nodeSelector read."""
    required = ((template.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    return set(template.get("nodeSelector") or {}) | {
        e["key"] for t in required.get("nodeSelectorTerms") or [] for e in t.get("matchExpressions") or []}


def add_noise(case: str, drawn: list[dict]) -> generate.Cluster:
    """The random pools, their Nodes and Pods, made as the generator makes them (names apart from the case's),
    of instance types whose plain Nodes the workloads do not select, the types their Pods run on included:
    a pool of the same instance type used by other workloads is no symptom."""
    workloads = read(case, "nodesets") + read(case, "daemonsets")
    templates = [w["spec"]["template"]["spec"] for w in workloads]
    probe = generate.Cluster()
    allowed = [t for t in sorted(generate.ALLOCATABLE)
               if not any(affinity_holds(spec, probe.node("probe", t)) for spec in templates)]
    assume(allowed)  # a workload that selects every Node leaves no noise unrelated to it
    keys = set().union(*map(selected_keys, templates))
    c = generate.Cluster()
    c.nodepools.clear(), c.nodes.clear(), c.pods.clear()
    c.ip = 5000
    for i, p in enumerate(drawn):
        labels = {k: v for k, v in p["labels"].items() if k not in keys}
        _, made = c.pool(f"noise-{i}", allowed[p["type"] % len(allowed)], len(p["nodes"]), labels=labels or None,
                         taints=p["taints"] or None)
        for node, spec in zip(made, p["nodes"], strict=True):
            node["spec"]["taints"] = node["spec"].get("taints", []) + spec["taints"]
            if spec["cordoned"]:
                generate.cordon(node, "noise")
            if spec["state"] != "production":
                generate.out_of_production(node, spec["state"])
            if spec["not_ready"]:
                generate.not_ready(node)
            assert not any(affinity_holds(t, node) for t in templates), "noise must be unrelated to the workloads"
            for j, pod in enumerate(spec["pods"]):
                requests = {"cpu": str(pod["cpu"]), "memory": pod["memory"]} | (
                    {"nvidia.com/gpu": str(pod["gpus"])} if pod["gpus"] else {})
                kind, owner = pod["owner"], f"other-{pod['owner'].lower()}"
                ns = generate.NS if kind == "NodeSet" else "noise"
                made_pod = c.pod(ns, f"noise-{node['metadata']['name']}-{j}", node, requests, phase=pod["phase"],
                                 ready=pod["phase"] == "Running", labels={"app.kubernetes.io/instance": owner},
                                 owner={"apiVersion": "v1", "kind": kind, "metadata": {"name": owner, "uid": generate.uid(kind)}})
                if pod["phase"] == "Failed":
                    c.event("Pod", made_pod["metadata"]["name"], "Evicted", "The node was low on resource: memory.",
                            namespace=ns)
    return c


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(case=st.sampled_from(HEALTHY), drawn=pools)
def test_unrelated_noise_keeps_a_healthy_cluster_ok(tmp_path_factory, case, drawn):
    assert_ok_with(tmp_path_factory.mktemp("noisy"), case, add_noise(case, drawn))


def assert_ok_with(d, case: str, noise: generate.Cluster) -> None:
    """The case's recording with the noise's objects added checks OK: exit 0, no row, no error."""
    shutil.copytree(FIXTURES / case, d, dirs_exist_ok=True)
    for stem, extra in (("nodepools", noise.nodepools), ("nodes", noise.nodes), ("pods", noise.pods),
                        ("events", noise.events)):
        doc = json.loads((d / f"{stem}.json").read_text())
        doc["items"] += extra
        (d / f"{stem}.json").write_text(json.dumps(doc))
    result = run("check", "--snapshot", str(d), "-o", "json", *expected(case)["args"])
    report = result.json()
    fired = {f"{r['namespace']}/{r['name']}": [s["id"] for s in r["symptoms"]] for r in report["results"]}
    assert all(not ids for ids in fired.values()), fired
    assert (report["status"], result.code, report["errors"]) == ("ok", 0, [])


NODESET_CASES = [c for c in HEALTHY if read(c, "nodesets") and not read(c, "daemonsets")]
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
kept_off = st.fixed_dictionaries({
    "nodes": st.integers(1, 3), "short": st.integers(0, 2), "effect": st.sampled_from(("NoSchedule", "NoExecute")),
    "gpus": st.sampled_from((0, 4, 8)), "host": st.integers(0, 100)})


def add_kept_off_pool(case: str, drawn: dict) -> generate.Cluster:
    """Another team's pool of the instance type a NodeSet's Pods run on, keeping others off with its own nodeTaint
    (its Pods tolerate it), perhaps queued for capacity: the NodeSet may reach it by the shared instance-type label,
    and it is still not the NodeSet's pool."""
    taint = {"key": "team.example.com/owner", "value": "inference", "effect": drawn["effect"]}
    assume(not any(tolerated(t, taint) for ns in read(case, "nodesets")
                   for t in ns["spec"]["template"]["spec"].get("tolerations") or []))
    c, made = other_team_pool(case, drawn, 6000, taints=[taint])
    for i, node in enumerate(made):
        pod = c.pod("inference", f"server-{i}", node, {"cpu": "8", "memory": "64Gi"}
                    | ({"nvidia.com/gpu": str(drawn["gpus"])} if drawn["gpus"] else {}))
        pod["spec"]["tolerations"] = [{"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}]
    return c


@FEW
@given(case=st.sampled_from(NODESET_CASES), drawn=kept_off)
def test_another_teams_tainted_pool_of_the_same_type_keeps_a_healthy_cluster_ok(tmp_path_factory, case, drawn):
    assert_ok_with(tmp_path_factory.mktemp("kept-off"), case, add_kept_off_pool(case, drawn))


busy = st.fixed_dictionaries({"nodes": st.integers(1, 3), "short": st.integers(0, 2), "host": st.integers(0, 100)})


def add_busy_pool(case: str, drawn: dict) -> generate.Cluster:
    """Another team's untainted pool of the instance type a NodeSet's Pods run on, its own Pods holding every CPU
    of its Nodes, perhaps queued for capacity: the NodeSet may reach it by the shared instance-type label, runs no
    Pod there and can place none, and nothing says it is its pool."""
    c, made = other_team_pool(case, drawn, 7000)
    for i, node in enumerate(made):
        c.pod("inference", f"server-{i}", node, {"cpu": node["status"]["allocatable"]["cpu"], "memory": "64Gi"})
    return c


def other_team_pool(case: str, drawn: dict, ip: int, **pool) -> tuple[generate.Cluster, list[dict]]:
    """Pool other-team (`pool`: more of its settings) of an instance type the case's Pods run on, with `drawn`'s
    Nodes and `short` more it waits for capacity for, its Nodes named apart from the case's (from `ip` on)."""
    hosts = {p["spec"].get("nodeName") for p in read(case, "pods")}
    types = sorted({n["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n in read(case, "nodes")
                    if n["metadata"]["name"] in hosts})
    assume(types)
    c = generate.Cluster()
    c.nodepools.clear(), c.nodes.clear(), c.pods.clear()
    c.ip = ip
    _, made = c.pool("other-team", types[drawn["host"] % len(types)], drawn["nodes"] + drawn["short"],
                     current=drawn["nodes"], conditions=generate.AWAITING_CAPACITY if drawn["short"] else None, **pool)
    return c, made


@FEW
@given(case=st.sampled_from(NODESET_CASES), drawn=busy)
def test_another_teams_busy_pool_of_the_same_type_keeps_a_healthy_cluster_ok(tmp_path_factory, case, drawn):
    assert_ok_with(tmp_path_factory.mktemp("busy"), case, add_busy_pool(case, drawn))
