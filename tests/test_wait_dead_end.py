"""`--wait` stops at once, with the diagnosis and one line saying why, where waiting cannot help:
Nodes the Quota condition says never arrive, FEASIBLE 0 from labels or taints no Node sheds by itself, pool Nodes
refused for good beside used ones (the new Nodes of a pool whose taint the NodeSet does not tolerate), a label CKS
drops; it keeps waiting for what clears by itself. `--interval` must be above 0 and at most `--wait`."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, Clock, run
from tests.kubeapi import FakeApi, kubeconfig
from tests.test_unattended import AT_ONCE

# case -> (exit code, needles of the one line: the target and what the scenario says waiting cannot change)
DEAD_ENDS = {
    "pool-quota-zero": (2, ["slurm-gpu-h100:", "Quota", "slurm-gpu"]),  # slurm-gpu has no quota
    "no-feasible-nodes": (2, ["slurm-cpu-batch:", "taint"]),  # the pool's NoSchedule taint, not tolerated
    "no-feasible-hand-taint": (2, ["slurm-cpu-batch:", "taint"]),  # every slurm-cpu Node tainted by hand
    "label-key-typo": (2, ["slurm-cpu-batch:", "labels"]),  # sunk.example.com/nodes: no Node carries it
    "reserved-label-namespace": (2, ["slurm-cpu-batch:", "sunk.coreweave.com/node", "CKS"]),  # dropped by CKS
    "pool-labels-missing": (2, ["slurm-cpu-batch:", "nodeLabels"]),  # slurm-cpu never labels its Nodes
    # slurm-cpu-highmem's nodeTaints, not tolerated: its 2 Nodes never take a Pod, though slurm-cpu's 6 do
    "pool-nodes-unusable-pool-taint": (1, ["slurm-cpu-batch:", "2 pool Nodes", "ge03be0", "g8ce106", "taint"]),
    # a hand label the NodeSet requires absent: the pool does not stamp it away
    "label-refused-on-node": (1, ["slurm-cpu-batch:", "1 pool Node", "labels"]),
    # a ReplicaSet keeps its Pod on g18d510, holding what the slurmd Pod requests: it never leaves by itself
    "foreign-pod-resources": (1, ["slurm-cpu-batch:", "1 pool Node", "g18d510", "data-eng/spark-exec-7d9f4-x2k8q",
                                  "do not leave by themselves"]),
}


def polls(api: FakeApi) -> int:
    """The lists of NodeSets: one per poll, one for a wait on watches."""
    return len([q for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query])


@pytest.mark.parametrize("case", DEAD_ENDS)
def test_wait_stops_at_a_dead_end_at_once(case: str, serve: Callable[..., FakeApi], clock: Clock) -> None:
    code, needles = DEAD_ENDS[case]
    api = serve(case)
    r = run("check", "--wait", "20m", "--interval", "10s", "-o", "json")
    assert (polls(api), clock.now) == (1, 0)
    [line] = r.err.splitlines()
    assert line.startswith("sunkcheck: --wait stopped at the first read: waiting cannot help: "), line
    assert all(n in line for n in needles), line
    doc = r.json()
    assert r.code == code and doc["results"][0]["symptoms"] and doc["never_converged"]  # the diagnosis, not converged


@pytest.mark.parametrize("case", ["healthy-pool-name", "labels-not-from-pool"])
def test_a_wait_converged_at_the_first_read_says_so(case: str, serve: Callable[..., FakeApi], clock: Clock) -> None:
    """Whatever the rows find (labels set by hand, not by the pool: WARNING), a wait that returns at once
    says why in one line."""
    serve(case)
    r = run("check", "--wait", "30s")
    assert r.err == AT_ONCE, r.err


def test_wait_keeps_waiting_for_a_pool_queued_for_capacity(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """Capacity clears by itself (CURRENT 5 of 8, Capacity condition not Sufficient): the wait runs its course."""
    api = serve("pool-below-target")
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert polls(api) == 1 and "timed out after 2s: never converged: slurm-gpu-h100: pool CURRENT 5/8" in r.err
    assert "waiting cannot help" not in r.err


def test_wait_keeps_waiting_for_a_label_the_pool_sets_but_no_node_carries_yet(serve: Callable[..., FakeApi],
                                                                               clock: Clock) -> None:
    """slurm-cpu's spec.nodeLabels now sets the label its Nodes lack: CKS stamps it on them in time."""
    api = serve("pool-labels-missing")
    with api.state.lock:
        pool = next(p for p in api.state.objects["nodepools"] if p["metadata"]["name"] == "slurm-cpu")
        pool["spec"]["nodeLabels"] = (pool["spec"].get("nodeLabels") or {}) | {"sunk.example.com/node": "cpu"}
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert polls(api) == 1 and "timed out after 2s" in r.err and "waiting cannot help" not in r.err


def test_wait_keeps_waiting_for_a_capped_nodeset_whose_pods_start(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """replicas 4 caps the NodeSet (the converged state, said when the wait returns), but a Pod of the 4 still
    starting clears by itself."""
    api = serve("replicas-cap")
    with api.state.lock:
        api.state.objects["nodesets"][0]["status"]["numberReady"] = 3
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert polls(api) == 1 and "never converged: slurm-cpu-batch: READY 3/4" in r.err
    assert "waiting cannot help" not in r.err


def test_wait_keeps_waiting_for_a_jobs_pod_and_names_it(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """A Job's Pod holding the pool Node may end by itself: no dead end, but the progress and the last line name it
    and its Node."""
    api = serve("foreign-pod-resources")
    with api.state.lock:
        pod = next(p for p in api.state.objects["pods"] if p["metadata"]["name"].startswith("spark-exec-"))
        pod["metadata"]["ownerReferences"][0] |= {"apiVersion": "batch/v1", "kind": "Job", "name": "spark-exec"}
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert polls(api) == 1 and "waiting cannot help" not in r.err, r.err
    named = "FEASIBLE 5/6 (waiting for data-eng/spark-exec-7d9f4-x2k8q on g18d510 to end)"
    assert f"never converged: slurm-cpu-batch: {named}" in r.err and r.json()["never_converged"].endswith(named)


@pytest.mark.parametrize("interval", ["0", "0s", "10m", "5001ms"])
def test_interval_must_be_above_zero_and_within_the_wait(interval: str, serve: Callable[..., FakeApi], clock: Clock) -> None:
    api = serve("healthy-pool-name")
    r = run("check", "--wait", "5s", "--interval", interval)
    assert (r.code, r.out, polls(api)) == (3, "", 0)
    assert r.err == (f"sunkcheck: error: --interval {interval}: the time between polls must be above 0 and at most "
                     "--wait (5s)\n")


def test_interval_equal_to_the_wait_is_fine(serve: Callable[..., FakeApi], clock: Clock) -> None:
    api = serve("healthy-pool-name")
    assert run("check", "--wait", "5s", "--interval", "5s", "-o", "json").code == 0 and polls(api) == 1


def test_wait_keeps_waiting_when_the_node_pools_cannot_be_read(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """Without the Node Pools (the API server fails to list them, 500), the label a pool might set is unknown:
    FEASIBLE 0 for a label no Node carries is no dead end then."""
    api = serve("pool-labels-missing")
    api.faults.errors, api.faults.retry_after = {"nodepools": 10**6}, "0"
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert polls(api) == 1 and "waiting cannot help" not in r.err, r.err
    assert "no-feasible-nodes" in {s["id"] for s in r.json()["results"][0]["symptoms"]}


def served_kubeconfig() -> Path:
    """The kubeconfig the `serve` fixture wrote for its API server (it points $KUBECONFIG there)."""
    return Path(os.environ["KUBECONFIG"])


def kubeconfig_refused(api: FakeApi, tmp_path: Path) -> list[str]:
    doc = json.loads(served_kubeconfig().read_text())
    doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True  # beside its certificate-authority
    (tmp_path / "kc-refused").write_text(json.dumps(doc))
    return ["--kubeconfig", str(tmp_path / "kc-refused")]


def wrong_token(api: FakeApi, tmp_path: Path) -> list[str]:
    ca = json.loads(served_kubeconfig().read_text())["clusters"][0]["cluster"]["certificate-authority"]
    return ["--kubeconfig", str(kubeconfig(tmp_path / "kc-401", api.url, token="not-the-token", ca=ca))]


# what waiting cannot fix -> (how, the needle of the one line)
LASTING = {
    "kubeconfig refused": (kubeconfig_refused, "specifying a root certificates file with the insecure flag"),
    "401": (wrong_token, "rejected the credentials (401 Unauthorized)"),
    "no such NodeSet": (lambda api, _: ["--nodeset", "nosuch"], "NodeSet nosuch not found in namespace tenant-slurm"),
    "403 on Nodes": (lambda api, _: api.faults.forbidden.add("nodes") or [], "nodes: forbidden: "),
    "no NodeSet API": (lambda api, _: api.faults.missing_groups.add("sunk.coreweave.com") or [],
                       "this cluster has no NodeSet API"),
}


@pytest.mark.parametrize("case", LASTING)
def test_wait_stops_at_the_first_poll_at_an_error_waiting_cannot_fix(case: str, serve: Callable[..., FakeApi], clock: Clock,
                                                                     tmp_path: Path) -> None:
    """Each was polled for the whole wait."""
    how, needle = LASTING[case]
    api = serve("healthy-pool-name")
    r = run("check", *how(api, tmp_path), "--wait", "20m", "--interval", "10s")
    assert r.code == 3 and clock.now == 0  # never slept: one poll
    [line] = r.err.splitlines()
    assert line.startswith("sunkcheck: --wait stopped at the first read: waiting cannot help: ") and needle in line, line


@pytest.mark.parametrize("fault", ["errors", "throttle"])
def test_wait_keeps_polling_through_errors_that_pass(fault: str, serve: Callable[..., FakeApi], clock: Clock) -> None:
    """5xx and 429 on the NodeSets, after their retries: the API server may come back."""
    api = serve("healthy-pool-name")
    getattr(api.faults, fault)["nodesets"] = 10**6
    api.faults.retry_after = "0"
    r = run("check", "--wait", "2s", "--interval", "1s")
    # the whole wait, the list sent again and again (a watch's list retries with backoff, a poll's four times each)
    assert r.code == 3 and clock.now == 2 and polls(api) >= 2 * 4
    assert "waiting cannot help" not in r.err and "timed out after 2s" in r.err


def test_the_headline_counts_the_checks_that_could_not_run_once(serve: Callable[..., FakeApi], clock: Clock) -> None:
    api = serve("healthy-pool-name")
    api.faults.errors["nodesets"], api.faults.retry_after = 10**6, "0"
    r = run("check", "--wait", "1s", "--interval", "1s")
    assert r.out.splitlines()[0] == ("sunkcheck UNKNOWN: 0 targets checked, no symptoms; not converged when --wait ended: "
                                     "1 check could not run")


def test_a_daemonset_selecting_no_node_says_why_waiting_cannot_help(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """DESIRED 0 agrees with itself (every count converged), yet no Node ever matches the scope: the same line as a
    NodeSet's dead end, naming the DaemonSet and the label it keys on."""
    serve("ds-selector-matches-nothing")
    r = run("check", "--daemonset", "dcgm-exporter", "-n", "monitoring", "--wait", "10s", "-o", "json")
    assert (clock.now, r.code) == (0, 2) and r.json()["never_converged"]
    [line] = r.err.splitlines()
    assert line.startswith("sunkcheck: --wait stopped at the first read: waiting cannot help: dcgm-exporter: "), line
    assert "node.coreweave.cloud/class" in line


def test_a_typo_pool_name_is_the_dead_end_it_names(serve: Callable[..., FakeApi], clock: Clock) -> None:
    """The only pool named does not exist: no Node refuses anything, so the line names the pool, never an empty list
    of refusals."""
    serve("no-feasible-pool-typo")
    r = run("check", "--wait", "20m", "--interval", "10s", "-o", "json")
    [line] = r.err.splitlines()
    assert line.endswith("waiting cannot help: slurm-cpu-batch: no Node Pool named slurm-cpus exists and the NodeSet "
                         "names no other: no Node joins it until someone creates it"), line
    assert (r.code, clock.now) == (2, 0)


def test_an_empty_pool_named_beside_a_typo_is_no_dead_end() -> None:
    """A NodeSet naming an existing Node Pool with no Node yet beside one that does not exist: the existing one may
    still fill, so no-feasible-nodes builds no dead end from the Nodes it does not have (all of none refused)."""
    snap = snapshot.load(FIXTURES / "no-feasible-pool-typo")
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    [term] = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    [pools] = [e for e in term["matchExpressions"] if e["key"] == "compute.coreweave.com/node-pool"]
    pools["values"] = ["slurm-cpus", "slurm-fresh"]
    fresh = copy.deepcopy(next(p for p in snap.nodepools or () if p["metadata"]["name"] == "slurm-cpu"))
    fresh["metadata"]["name"] = "slurm-fresh"
    fresh["spec"]["targetNodes"], fresh["status"]["currentNodes"] = 2, 0
    report = diagnose(replace(snap, nodesets=(nodeset,), nodepools=(*(snap.nodepools or ()), fresh)), Target())
    [found] = [s for r in report.results for s in r.symptoms if s.id == "no-feasible-nodes"]
    assert found.dead_end is None, found.dead_end
