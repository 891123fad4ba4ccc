"""Invariant: every usable pool Node a NodeSet cannot use is explained by a reported row.

A Node of the NodeSet's pools that is in service (production, Ready, not cordoned), that the NodeSet does not leave
out by name (`Binding.picked_out`), and that sunkcheck's own engine (`Binding.verdict`) judges infeasible, must be
accounted for by a row the report shows (not suppressed): named in its evidence, or counted in a grouped line of its
pool (`... and N more`), or its whole pool refused (FEASIBLE 0) or shut out (pool-split). A pool that half fits is
never "the binding looks right". Checked on every fixture and on random clusters made from the healthy ones by
shrinking, tainting, relabelling, cordoning or filling some of the pool's Nodes.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sunkcheck.analyze.binding import analyze
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.snapshot import load
from tests.conftest import CASES, FIXTURES, expected, run
from tests.test_noise_property import generate, read, selected_keys

POOL_LABEL = "compute.coreweave.com/node-pool"
# rows about the whole pool: FEASIBLE 0, every Node refused for the reason they name
WHOLE_POOL = {"no-feasible-nodes", "pool-labels-missing", "reserved-label-namespace"}
MORE = re.compile(r"^(\d+)/\d+ Nodes (?:in|of) ([^:(]+?)[:,( ].*\band (\d+) more\)")


def in_service(node: dict) -> bool:
    """Production, Ready and not cordoned (written here, not sunkcheck's own)."""
    ready = next((c.get("status") for c in node.get("status", {}).get("conditions") or () if c.get("type") == "Ready"),
                 None)
    return (node["metadata"].get("labels", {}).get("node.coreweave.cloud/state") == "production" and ready == "True"
            and not node.get("spec", {}).get("unschedulable"))


def unexplained(d: Path, args: list[str]) -> dict[str, list[str]]:
    """For each NodeSet the check reports on: its usable pool Nodes judged infeasible that no reported row explains."""
    report = run("check", "--snapshot", str(d), "-o", "json", *args).json()
    pools = [args[i + 1] for i, a in enumerate(args) if a == "--pool"]
    snapshot = load(d)
    cluster = Cluster.of(snapshot)
    nodesets = {(n["metadata"]["namespace"], n["metadata"]["name"]): n for n in snapshot.nodesets or ()}
    found = {}
    for result in report["results"]:
        if result["kind"] != "NodeSet":
            continue
        b = analyze(cluster, nodesets[(result["namespace"], result["name"])], pools or None)
        unusable = [n for n in b.pool_nodes if in_service(n) and not b.picked_out(n)
                    and not b.verdict(n["metadata"]["name"]).feasible]
        rows = [s for s in result["symptoms"] if not s["suppressed"]]
        lines = [line for s in rows for line in s["evidence"]]
        whole = {p for s in rows if s["id"] in WHOLE_POOL for p in result["pools"]}
        whole |= {p for s in rows if s["id"] == "pool-split" for line in s["evidence"]
                  for p in re.findall(r"^Node Pool (\S+) ", line)}
        counted: Counter = Counter()  # per pool, the Nodes a grouped line counts without naming
        for line in lines:
            if m := MORE.match(line):
                for pool in m.group(2).split(", "):
                    counted[pool] += int(m.group(3))
        missing = []
        for n in unusable:
            name, pool = n["metadata"]["name"], n["metadata"]["labels"].get(POOL_LABEL)
            if pool in whole or any(re.search(rf"\b{name}\b", line) for line in lines):
                continue
            if counted[pool] > 0:
                counted[pool] -= 1
                continue
            missing.append(name)
        if missing:
            found[f"{result['namespace']}/{result['name']}"] = missing
    return found


NODESET_CASES = [c for c in CASES if read(c, "nodesets") and not read(c, "daemonsets")]


@pytest.mark.parametrize("case", NODESET_CASES)
def test_every_usable_pool_node_the_nodeset_cannot_use_is_explained(case):
    assert unexplained(FIXTURES / case, expected(case)["args"]) == {}


def test_a_pool_that_half_fits_is_not_ok():
    """The issue's scenario: two replacement Nodes whose allocatable memory is below the slurmd Pod's request."""
    report = run("check", "--snapshot", str(FIXTURES / "pool-half-fits-memory"), "-o", "json").json()
    assert report["status"] == "warning" and [s["id"] for s in report["results"][0]["symptoms"]] == ["pool-nodes-unusable"]


HEALTHY = [c for c in NODESET_CASES if expected(c)["status"] == "ok"]
REQUESTED = ("cpu", "memory", "nvidia.com/gpu")
changes = st.lists(st.fixed_dictionaries({
    "node": st.integers(0, 99),
    "kind": st.sampled_from(("shrink", "shrink", "taint", "unlabel", "cordon", "not-ready", "triage", "foreign",
                             "claim")),
    "resource": st.sampled_from(REQUESTED), "share": st.sampled_from((0.25, 0.9, 0.999, 1.001, 1.5)),
    "effect": st.sampled_from(("NoSchedule", "NoExecute", "PreferNoSchedule")), "replaced": st.booleans()}),
    min_size=1, max_size=4)


def amount(resource: str, value: float) -> str:
    """A quantity as a Node or Pod states it: millicores, Ki of memory, whole devices."""
    if resource == "cpu":
        return f"{max(int(value * 1000), 0)}m"
    if resource == "memory":
        return f"{max(int(value / 1024), 0)}Ki"
    return str(max(int(value), 0))


def requested(template: dict) -> dict[str, float]:
    """The template's slurmd container requests, in cores, bytes and devices (every fixture writes them plainly)."""
    from sunkcheck import objects as o

    found: Counter = Counter()
    for c in template.get("containers") or ():
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            found[k] += float(o.quantity(v))
    return dict(found)


def change(d: Path, case: str, drawn: list[dict]) -> None:
    """The case's recording with some of its NodeSets' pool Nodes changed as `drawn` says."""
    docs = {stem: json.loads((d / f"{stem}.json").read_text()) for stem in ("nodes", "pods")}
    nodesets = read(case, "nodesets")
    hosts = {p["spec"].get("nodeName") for p in docs["pods"]["items"]
             if any(r.get("kind") == "NodeSet" for r in p["metadata"].get("ownerReferences") or ())}
    nodes = [n for n in docs["nodes"]["items"] if n["metadata"]["name"] in hosts]
    if not nodes:
        return
    template = nodesets[0]["spec"]["template"]["spec"]
    want = requested(template)
    keys = sorted(k for k in selected_keys(template) if k not in (POOL_LABEL, "node.coreweave.cloud/state"))
    for i, c in enumerate(drawn):
        node = nodes[c["node"] % len(nodes)]
        name, kind = node["metadata"]["name"], c["kind"]
        status, spec, labels = node["status"], node.setdefault("spec", {}), node["metadata"]["labels"]
        if kind == "shrink" and c["resource"] in want:
            status["allocatable"] = dict(status["allocatable"], **{c["resource"]: amount(c["resource"],
                                                                                       want[c["resource"]] * c["share"])})
            if c["replaced"]:  # a replacement Node: no slurmd Pod yet
                docs["pods"]["items"] = [p for p in docs["pods"]["items"] if not (
                    p["spec"].get("nodeName") == name
                    and p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "slurmd")]
        elif kind == "taint":
            spec.setdefault("taints", []).append({"key": "team.example.com/maintenance", "value": "true",
                                                  "effect": c["effect"]})
        elif kind == "unlabel" and keys:
            labels.pop(keys[c["node"] % len(keys)], None)
        elif kind == "cordon":
            generate.cordon(node, "noise")
        elif kind == "not-ready":
            generate.not_ready(node)
        elif kind == "triage":
            generate.out_of_production(node, "triage")
        elif kind in ("foreign", "claim"):
            owner = "NodeSet" if kind == "claim" else "ReplicaSet"
            held = {r: amount(r, want[r] * c["share"]) for r in REQUESTED if r in want}
            docs["pods"]["items"].append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"other-{i}", "namespace": "tenant-other" if kind == "claim" else "data-eng",
                             "uid": generate.uid("Pod", name, i),
                             "ownerReferences": [{"apiVersion": "v1", "kind": owner, "name": f"other-{owner.lower()}",
                                                  "uid": generate.uid(owner, i), "controller": True}]},
                "spec": {"nodeName": name, "containers": [{"name": "main", "resources": {"requests": held}}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    for stem, doc in docs.items():
        (d / f"{stem}.json").write_text(json.dumps(doc))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(case=st.sampled_from(HEALTHY), drawn=changes)
def test_every_unusable_node_of_a_random_cluster_is_explained(tmp_path_factory, case, drawn):
    d = tmp_path_factory.mktemp("changed")
    shutil.copytree(FIXTURES / case, d, dirs_exist_ok=True)
    change(d, case, drawn)
    assert unexplained(d, expected(case)["args"]) == {}


def shrunk(tmp_path: Path, case: str, resource: str, value: str) -> tuple[str, dict]:
    """The case with its first slurmd host advertising `value` of `resource`; that Node and the one symptom row."""
    d = tmp_path / case
    shutil.copytree(FIXTURES / case, d)
    nodes, pods = (json.loads((d / f"{stem}.json").read_text()) for stem in ("nodes", "pods"))
    host = next(p["spec"]["nodeName"] for p in pods["items"] if p["metadata"]["name"].startswith("slurm-"))
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == host)
    node["status"]["allocatable"] = dict(node["status"]["allocatable"], **{resource: value})
    (d / "nodes.json").write_text(json.dumps(nodes))
    report = run("check", "--snapshot", str(d), "-o", "json").json()
    assert [s["id"] for s in report["results"][0]["symptoms"]] == ["pool-nodes-unusable"]
    return host, report["results"][0]["symptoms"][0]


def test_a_node_with_fewer_cpus_gets_a_cpu_request_that_fits_beside_its_daemonset_pods(tmp_path):
    """A Genoa Node advertising 60 CPUs where slurmd asks 64 (munge 100m more): 60 less cilium's 100m,
    node-problem-detector's 20m and munge's 100m leaves 59.78, so 59 whole CPUs fit; the others have 190."""
    host, row = shrunk(tmp_path, "healthy-pool-name", "cpu", "60")
    text = "\n".join(row["evidence"]) + "\n" + row["fix"]
    for needle in (host, "allocatable cpu 60", "64.1", "190", "resources.requests.cpu to 59 or less", "from 64",
                   f"kubectl describe node {host}"):
        assert needle in text, needle
    assert "\nkubectl describe node " in row["fix"]  # a command on a line of its own


def test_a_node_advertising_half_its_gpus_is_named_with_both_counts(tmp_path):
    """An H100 Node whose device plugin advertises 4 of its 8 GPUs: the slurmd Pod requests 8."""
    host, row = shrunk(tmp_path, "healthy-lock-taint", "nvidia.com/gpu", "4")
    text = "\n".join(row["evidence"]) + "\n" + row["fix"]
    for needle in (host, "allocatable nvidia.com/gpu 4, below the slurmd Pod's request 8", "resources.requests."
                   "nvidia.com/gpu to 4 or less", "from 8"):
        assert needle in text, needle
