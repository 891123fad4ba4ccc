"""A live check of one NodeSet reads the other NodeSets too (what they hold changes its verdicts and fixes), and finds
its slurmd Pods by their controller as its replay does: against the test API server, through the real client."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from sunkcheck import snapshot
from sunkcheck.collect.kube import cluster_role
from tests.conftest import FIXTURES, Serve, expected, run
from tests.kubeapi import FakeApi

NODESETS = "/apis/sunk.coreweave.com/v1alpha1/nodesets"
INSTANCE = "app.kubernetes.io/instance"


def recorded_as_read(api: FakeApi, case: str, directory: Path) -> Path:
    """The whole recorded case (every NodeSet, whatever the live check read) with the Nodes whose Pods the live check
    listed: its replay is what the check should say, and holds nothing the live check could not read."""
    shutil.copytree(FIXTURES / case, directory, ignore=shutil.ignore_patterns("sinfo.*"))
    pod_nodes = api.pod_nodes()
    (directory / "meta.json").write_text(json.dumps({"nodesets": "*"} | (
        {} if pod_nodes is None else {"podNodes": pod_nodes})))
    return directory


@pytest.mark.parametrize("case", ["no-feasible-pool-typo-held", "pool-labels-missing-beside-partition",
                                  "foreign-pod-beside-other-nodesets"])
def test_one_nodeset_checked_live_sees_what_the_others_hold(serve: Serve, tmp_path: Path, case: str) -> None:
    """`--nodeset X`: the pool another NodeSet holds is never suggested nor labelled, live as in the replay of the
    whole cluster; the other NodeSets are read by one list of every namespace's, and only X is judged."""
    api = serve(case)
    args = expected(case)["args"]
    live = run("check", "-o", "json", *args)
    replay = run("check", "--snapshot", str(recorded_as_read(api, case, tmp_path / case)), "-o", "json", *args)
    assert live.code == replay.code == expected(case)["exit"], live.err
    assert live.verdict() == replay.verdict()
    assert [r["name"] for r in live.json()["results"]] == [args[args.index("--nodeset") + 1]]
    assert [r.query for r in api.log if r.path == NODESETS] == [{"limit": "500"}]


def test_the_suggested_pool_is_one_no_other_nodeset_holds_live(serve: Serve) -> None:
    """slurm-cpu-b is as near a typo's slurm-cpu-c as slurm-cpu-a, but NodeSet slurm-cpu-batch holds it: the live
    check of slurm-cpu-small alone says slurm-cpu-a, never slurm-cpu-b."""
    serve("no-feasible-pool-typo-held")
    doc = run("check", "-o", "json", "--nodeset", "slurm-cpu-small", "-n", "tenant-slurm").json()
    found = next(s for s in doc["results"][0]["symptoms"] if s["id"] == "no-feasible-nodes")
    assert any(line.endswith("did you mean slurm-cpu-a?") for line in found["evidence"])
    assert "slurm-cpu-b" not in found["fix"]


def test_a_role_that_cannot_list_every_namespace_reads_the_namespaces_nodesets(serve: Serve) -> None:
    """Listing NodeSets cluster-wide forbidden (a Role in the tenant's namespace): the namespace's are read instead,
    the check is not failed for it, and the nodeset step says what could not be checked; the taint plan says which
    NodeSets it weighed."""
    from tests.test_fixes import _with_peer

    api = serve(_with_peer(snapshot.load(FIXTURES / "foreign-pod-resources"), []))
    api.faults.forbidden_cluster_wide.add("nodesets")
    r = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm")
    doc = r.json()
    assert r.code == expected("foreign-pod-resources")["exit"] and doc["errors"] == []
    step = next(s for s in doc["results"][0]["steps"] if s["name"] == "nodeset")
    assert step["status"] != "unknown"
    assert step["summary"].endswith("; other NodeSets not read (403 Forbidden, list nodesets cluster-wide): what another "
                                    "NodeSet holds is told of the NodeSets of namespace tenant-slurm only")
    fix = next(s for s in doc["results"][0]["symptoms"] if s["id"] == "foreign-pod-resources")["fix"]
    assert "NodeSet tenant-slurm/slurm-cpu-small (it selects gf99f97)" in fix
    assert "this check read the NodeSets of namespace tenant-slurm only" in fix
    assert [(r.path, r.status) for r in api.log if r.path.endswith("/nodesets")] == [
        (NODESETS, 403), ("/apis/sunk.coreweave.com/v1alpha1/namespaces/tenant-slurm/nodesets", 200)]


def test_when_no_other_nodeset_can_be_read_the_check_still_reports(serve: Serve) -> None:
    """Every list of NodeSets forbidden, the one checked read by name: only it is weighed, and the step says so."""
    api = serve("no-feasible-pool-typo-held")
    role = cluster_role()
    for rule in role["rules"]:
        if "nodesets" in rule["resources"]:
            rule["resources"].remove("nodesets")
    role["rules"].append({"apiGroups": ["sunk.coreweave.com"], "resources": ["nodesets"], "verbs": ["get"]})
    api.rbac = role
    r = run("check", "-o", "json", "--nodeset", "slurm-cpu-small", "-n", "tenant-slurm")
    assert r.code == 2 and r.json()["errors"] == []
    step = next(s for s in r.json()["results"][0]["steps"] if s["name"] == "nodeset")
    assert step["summary"].endswith("; other NodeSets not read (403 Forbidden, list nodesets cluster-wide): what another "
                                    "NodeSet holds is told of NodeSet tenant-slurm/slurm-cpu-small only")


def test_the_rbac_role_grants_the_list_of_every_nodeset(serve: Serve) -> None:
    """`sunkcheck rbac`'s ClusterRole lets a check of one NodeSet list every namespace's: nothing is refused."""
    api = serve("two-tenants-share-pool", rbac=cluster_role())
    r = run("check", "-o", "json", "--nodeset", "slurm-cpu-batch", "-n", "tenant-a")
    assert r.json()["errors"] == [] and not [q for q in api.log if q.status == 403]
    assert (NODESETS, 200) in [(q.path, q.status) for q in api.log]
    assert "not read" not in next(s for s in r.json()["results"][0]["steps"] if s["name"] == "nodeset")["summary"]


def relabelled(case: str, nodeset: str, label: str | None) -> snapshot.Snapshot:
    """`case` with the first slurmd Pod of `nodeset` carrying `app.kubernetes.io/instance=label` (None: no such
    label), still its by the controller ownerReference, as SUNK may create it."""
    recorded = snapshot.load(FIXTURES / case)
    first = next(p for p in recorded.pods or () if p["metadata"].get("labels", {}).get(INSTANCE) == nodeset)
    labels = {k: v for k, v in first["metadata"]["labels"].items() if k != INSTANCE} | ({INSTANCE: label} if label else {})
    moved = first | {"metadata": first["metadata"] | {"labels": labels}}
    return dataclasses.replace(recorded, pods=tuple(moved if p is first else p for p in recorded.pods or ()))


@pytest.mark.parametrize("label", [None, "slurm"])
def test_slurmd_pods_without_the_instance_label_are_found_live(serve: Serve, tmp_path: Path, label: str | None) -> None:
    """A slurmd Pod without `app.kubernetes.io/instance=<NodeSet>` (none, or the Helm release's) is the NodeSet's by
    its controller: the live check finds it, as the replay does, by one more list of the namespace's Pods, made
    because the status counts more Pods than the label selects; and says it lacks the label."""
    served = relabelled("healthy-pool-name", "slurm-cpu-batch", label)
    api = serve(served)
    args = ("--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm")
    live = run("check", "-o", "json", *args)
    snapshot.save(tmp_path / "rec", served, {"podNodes": api.pod_nodes(), "nodesets": "*"})
    assert live.verdict() == run("check", "--snapshot", str(tmp_path / "rec"), "-o", "json", *args).verdict()
    pods = next(s for s in live.json()["results"][0]["steps"] if s["name"] == "pods")
    assert pods["counts"]["pods"] == 8 and "1 without app.kubernetes.io/instance=<NodeSet>" in pods["summary"]
    assert live.code == 0, live.out
    lists = [r.query.get("labelSelector") for r in api.log if r.path == "/api/v1/namespaces/tenant-slurm/pods"]
    assert lists == ["app.kubernetes.io/instance in (slurm-cpu-batch)", "app.kubernetes.io/instance notin (slurm-cpu-batch)"]


def test_no_more_pods_are_read_when_the_label_finds_every_one_the_status_counts(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    assert run("check", "--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm").code == 0
    assert [r.query.get("labelSelector") for r in api.log if r.path.endswith("/pods")] == [
        "app.kubernetes.io/instance in (slurm-cpu-batch)"]


def test_a_named_context_binds_every_kubectl_command_of_the_fixes_to_it(serve: Serve) -> None:
    """`--context test`: pasted in a shell whose current context is another cluster's, a printed fix must act on the
    cluster checked (or fail), never on that other one; without --context the fixes are as a replay prints them."""
    serve("two-problems")
    named = run("check", "--context", "test", "-o", "json")
    plain = run("check", "-o", "json")
    assert named.code == plain.code == expected("two-problems")["exit"], named.err
    steps = [st for r in named.json()["results"] for s in r["symptoms"] for st in s["fix_steps"]]
    kubectl = [st["text"] for st in steps if st["text"].startswith("kubectl ")]
    assert kubectl and all(st["kind"] == "command" and st["text"].startswith("kubectl --context test ")
                           for st in steps if st["text"].startswith("kubectl ")), kubectl
    unnamed = [s["fix"] for r in plain.json()["results"] for s in r["symptoms"]]
    assert [f.replace("kubectl ", "kubectl --context test ") for f in unnamed] == \
        [s["fix"] for r in named.json()["results"] for s in r["symptoms"]]


def test_an_eviction_asked_for_first_is_bound_to_the_context_too(serve: Serve) -> None:
    """A drained slurmd Pod's eviction opens with its question (`printf ... && read ... || {...} &&`): the kubectl after it is
    bound to the context as well, or it would evict from the shell's current cluster."""
    serve("misscheduled")
    named = run("check", "--context", "test", "-o", "json")
    [fix] = [s["fix"] for r in named.json()["results"] for s in r["symptoms"] if s["id"] == "misscheduled"]
    evictions = [line for line in fix.split("\n") if "/eviction " in line]
    assert len(evictions) == 2 and all(line.startswith("printf ") and '; false; } && kubectl --context test create --raw '
                                       in line for line in evictions), evictions
    assert " kubectl create" not in fix
