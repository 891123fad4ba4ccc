"""Post-scale-up `--wait`, several clusters at once, `kubectl sunkcheck`, and the deployment examples."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from sunkcheck import snapshot
from sunkcheck.collect.kube import cluster_role
from tests.conftest import FIXTURES, ROOT, TOKEN, Clock, Run, Serve, run, squatter_ends
from tests.kubeapi import FakeApi, kubeconfig

AT_ONCE = "sunkcheck: --wait returned at the first read: converged, every count agreeing\n"
"""What a wait that converged at its first read says on stderr: why it ended at once."""


def test_wait_until_converged(serve: Serve, clock: Clock) -> None:
    api = squatter_ends(serve("two-problems"))
    clock.on_sleep = lambda: api.state.load(snapshot.load(FIXTURES / "healthy-pool-name"))  # the second poll converges
    r = run("check", "--wait", "30s", "--interval", "200ms", "-o", "json")
    assert r.code == 0 and r.json()["status"] == "ok"
    assert "sunkcheck: waiting (" in r.err and "slurm-cpu-batch: pool CURRENT 4/6, FEASIBLE 3/4" in r.err
    assert "timed out" not in r.err
    assert r.err.count("sunkcheck: waiting (") == 1
    assert len([q for q in api.log if "nodesets" in q.path and "watch" not in q.query]) == 1  # then its changes


def test_wait_holds_only_the_last_polls_reads(serve: Callable[..., FakeApi], clock: Clock,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """--wait must not pile up a cluster's objects poll after poll (it polls where its role does not allow
    watching): when a poll reads, no earlier poll's objects are alive, freed by their reference counts alone (the
    executable runs without the cyclic collector), and nothing keeps the last one once the run is over."""
    import gc
    import weakref

    from sunkcheck import source

    api = squatter_ends(serve("two-problems", rbac=cluster_role()))
    clock.on_sleep = lambda: api.state.load(snapshot.load(FIXTURES / "healthy-pool-name"))
    read: list[weakref.ref[snapshot.Snapshot]] = []
    alive_at_each_read: list[int] = []
    load = source.load

    def counted(*args: Any, **kwargs: Any) -> source.Loaded:
        alive_at_each_read.append(sum(ref() is not None for ref in read))
        loaded = load(*args, **kwargs)
        read.append(weakref.ref(loaded.snapshot))
        return loaded

    monkeypatch.setattr(source, "load", counted)
    gc.disable()
    try:
        r = run("check", "--wait", "30s", "--interval", "200ms", "-o", "json")
    finally:
        gc.enable()
    assert r.code == 0 and "polling every 0.2s instead" in r.err
    # the list of every NodeSet before the watch was refused, then two polls, each listing the namespace's and
    # every namespace's
    lists = [q.path for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query]
    assert lists.count("/apis/sunk.coreweave.com/v1alpha1/namespaces/tenant-slurm/nodesets") == 2
    assert lists.count("/apis/sunk.coreweave.com/v1alpha1/nodesets") == 3
    assert alive_at_each_read == [0, 0] and [ref() for ref in read] == [None, None]


def test_wait_times_out_naming_what_never_converged(serve: Serve, clock: Clock) -> None:
    api = squatter_ends(serve("two-problems"))
    r = run("check", "--wait", "1s", "--interval", "250ms", "-o", "json")
    assert r.code == 1 and r.json()["status"] == "warning"
    assert "sunkcheck: timed out after 1s: never converged: slurm-cpu-batch: pool CURRENT 4/6, FEASIBLE 3/4" in r.err
    # one list, then its watch; a progress line at 0, 250ms, 500ms and 750ms (none at the end) off a terminal
    assert len([q for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query]) == 1
    assert r.err.count("sunkcheck: waiting (") == 4 and clock.now == 1


def test_wait_never_converging_is_not_ok_even_without_symptoms(serve: Serve, clock: Clock) -> None:
    api = serve("healthy-pool-name")
    with api.state.lock:  # a healthy binding whose Pods are not all Ready yet
        nodeset = api.state.objects["nodesets"][0]
        nodeset["status"]["numberReady"] = 6
    r = run("check", "--wait", "500ms", "--interval", "200ms", "-o", "json")
    assert "READY 6/8" in r.err and r.code == 1


def test_wait_converges_with_a_pool_node_in_repair(serve: Serve, clock: Clock) -> None:
    """CKS took one of slurm-cpu's 8 Nodes out for triage (cordoned, not production): FEASIBLE 7 is the pool's
    7 Nodes that can take a slurmd Pod, converged as the plain check is OK. Back in production and uncordoned,
    the Node holds the wait until the NodeSet counts it feasible."""
    api = serve("healthy-cordoned")
    r = run("check", "--wait", "5s", "--interval", "1s", "-o", "json")
    assert (r.code, r.json()["status"], r.err) == (0, "ok", AT_ONCE)
    snap = snapshot.load(FIXTURES / "healthy-cordoned")
    back = [n | {"metadata": n["metadata"] | {"labels": n["metadata"]["labels"] | {
        "node.coreweave.cloud/state": "production", "node.coreweave.cloud/reserved": "org-3f9a1c"}},
        "spec": {k: v for k, v in n["spec"].items() if k not in ("unschedulable", "taints")}}
        if n["metadata"]["labels"]["compute.coreweave.com/node-pool"] == "slurm-cpu" else n for n in (snap.nodes or ())]
    api.state.load(replace(snap, nodes=tuple(back)))
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert r.code == 1 and "never converged: slurm-cpu-batch: FEASIBLE 7/8" in r.err


def test_wait_converges_with_nodes_left_out_by_name(serve: Serve, clock: Clock) -> None:
    """slurm-cpu split between two NodeSets by Node name (hostname NotIn, metadata.name In): each leaves the other's
    Nodes out on purpose, so FEASIBLE 5 and 1 of the pool's 6 Nodes are converged at once, as the plain check is OK
    (the target used to count the Nodes left out, and the wait never converged on "FEASIBLE 5/6", "FEASIBLE 1/6")."""
    api = serve("healthy-hostname-split")
    r = run("check", "--wait", "5s", "--interval", "1s", "-o", "json")
    assert (r.code, r.json()["status"], r.err) == (0, "ok", AT_ONCE)
    assert len([q for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query]) == 1
    counts = {t["name"]: next(s["counts"] for s in t["steps"] if s["name"] == "nodeset") for t in r.json()["results"]}
    assert {name: (c["pool_nodes"], c["pool_nodes_left_out"], c["feasible"]) for name, c in counts.items()} == {
        "slurm-cpu-batch": (6, 1, 5), "slurm-cpu-debug": (6, 5, 1)}


def test_wait_with_nodes_left_out_by_name_still_waits_for_the_picked_ones(serve: Serve, clock: Clock) -> None:
    """The Nodes left out by name lower the target by themselves only: a NodeSet that has not yet counted one of the
    Nodes it does pick (FEASIBLE 4 of its 5) still holds the wait."""
    api = serve("healthy-hostname-split")
    with api.state.lock:
        batch = next(n for n in api.state.objects["nodesets"] if n["metadata"]["name"] == "slurm-cpu-batch")
        batch["status"] |= {"numberFeasible": 4, "desiredNumberScheduled": 4, "currentNumberScheduled": 4,
                            "numberReady": 4, "updatedNumberScheduled": 4}
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert r.code == 1 and "never converged: slurm-cpu-batch: FEASIBLE 4/5" in r.err
    assert "slurm-cpu-debug" not in r.err.split("never converged:")[1]


def _not_ready(node: dict) -> dict:
    """A Node the kubelet stopped reporting Ready for a day after it registered (so it is not still joining),
    tainted by the node lifecycle controller."""
    conditions = [c | {"status": "False", "reason": "KubeletNotReady", "lastTransitionTime": "2026-11-03T09:14:27Z"}
                  if c["type"] == "Ready" else c for c in node["status"]["conditions"]]
    taints = [*node["spec"].get("taints", []), {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    return node | {"spec": node["spec"] | {"taints": taints}, "status": node["status"] | {"conditions": conditions}}


def test_wait_converges_with_a_pool_node_not_ready(serve: Serve, clock: Clock) -> None:
    """One of slurm-cpu's 8 Nodes went NotReady (not-ready:NoExecute) and lost its slurmd Pod: FEASIBLE 7 is
    the pool's Nodes less those out of service, as pool-nodes-in-repair and the feasibility engine count them,
    so the wait converges as the plain check is OK (it used to wait out the whole timeout on "FEASIBLE 7/8")."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    sick = "gc80620"
    nodeset = (snap.nodesets or ())[0]
    counts = {"desiredNumberScheduled": 7, "numberFeasible": 7, "currentNumberScheduled": 7, "numberReady": 7,
              "updatedNumberScheduled": 7}
    snap = replace(snap, nodes=tuple(_not_ready(n) if n["metadata"]["name"] == sick else n for n in (snap.nodes or ())),
                   pods=tuple(p for p in (snap.pods or ()) if p["spec"].get("nodeName") != sick
                              or not p["metadata"]["name"].startswith("slurm-cpu-batch-")),
                   nodesets=(nodeset | {"status": nodeset["status"] | counts},))
    api = serve("healthy-pool-name")
    api.state.load(snap)
    r = run("check", "--wait", "5s", "--interval", "1s", "-o", "nagios")
    # the Node not Ready is named beside the answer (Node health, no row), its status unchanged
    said = re.escape(AT_ONCE.removesuffix("\n")) + rf"; not Ready: {sick} \(\d+h\d*m?\)\n"
    assert r.code == 0 and re.fullmatch(said, r.err), r.out + r.err
    assert r.out.startswith("SUNKCHECK OK - 1 NodeSet(s) bound as intended")
    assert clock.now == 0


def test_wait_never_converged_is_not_called_bound_as_intended(serve: Serve, clock: Clock) -> None:
    """The Nagios line of a wait that timed out names what never converged, and calls no target "bound as
    intended" beside it (a WARNING saying so read as a contradiction), nor its cluster one "without symptoms" (the
    target is still waiting)."""
    api = serve("healthy-pool-name")
    with api.state.lock:  # a healthy binding whose Pods are not all Ready yet
        api.state.objects["nodesets"][0]["status"]["numberReady"] = 6
    r = run("check", "--wait", "500ms", "--interval", "200ms", "-o", "nagios")
    status = r.out.splitlines()[0]
    assert r.code == 1 and status.startswith(
        "SUNKCHECK WARNING - never converged: slurm-cpu-batch: READY 6/8 |"), status


def test_wait_converges_with_a_cordoned_node_still_running_its_pod(serve: Serve, clock: Clock) -> None:
    """A Node cordoned for a link flap keeps its slurmd Pod: READY 6 is DESIRED 5 plus that Pod, converged
    as the plain check is OK (it used to wait out the whole timeout on "READY 6/5")."""
    serve("healthy-cordoned-pod-running")
    r = run("check", "--wait", "5s", "--interval", "1s", "-o", "json")
    assert (r.code, r.json()["status"], r.err) == (0, "ok", AT_ONCE)


def test_wait_never_converges_on_counts_the_status_lacks() -> None:
    """A NodeSet without a status (never reconciled) has not converged; one without FEASIBLE is judged by
    sunkcheck's own count."""
    from sunkcheck.converge import pending
    from sunkcheck.pipeline import diagnose
    from sunkcheck.target import Target

    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    nodeset = (snap.nodesets or ())[0]

    def waits_for(status: dict) -> list[str]:
        return pending(diagnose(replace(snap, nodesets=(nodeset | {"status": status},)), Target()).results[0])

    assert waits_for(nodeset["status"]) == []
    assert waits_for({}) == ["DESIRED ?/8", "READY ?/?"]
    assert waits_for({k: v for k, v in nodeset["status"].items() if k != "numberFeasible"}) == []
    assert waits_for(nodeset["status"] | {"numberFeasible": None, "desiredNumberScheduled": 6}) == ["DESIRED 6/8", "READY 8/6"]


def test_wait_waits_for_the_latest_spec_to_be_reconciled() -> None:
    """Right after `helm upgrade` the status still describes the old spec (observedGeneration below
    generation): its counts prove nothing yet, for a NodeSet as for a DaemonSet."""
    from sunkcheck.converge import pending
    from sunkcheck.pipeline import diagnose
    from sunkcheck.target import Target

    def bumped(workload: dict) -> dict:
        return workload | {"metadata": workload["metadata"] | {"generation": workload["status"]["observedGeneration"] + 1}}

    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    result = diagnose(replace(snap, nodesets=(bumped((snap.nodesets or ())[0]),)), Target()).results[0]
    assert pending(result) == ["status generation 4/5"]
    step = next(s for s in result.steps if s.name == "nodeset")
    assert step.summary.endswith("; the status is for generation 4 of 5 (the latest spec is not reconciled yet)")
    ds = snapshot.load(FIXTURES / "ds-healthy")
    target = Target(daemonset="dcgm-exporter", namespace="monitoring")
    assert pending(diagnose(replace(ds, daemonsets=(bumped((ds.daemonsets or ())[0]),)), target).results[0]) == [
        "status generation 2/3"]
    assert pending(diagnose(ds, target).results[0]) == []


def test_a_stale_status_is_no_verdict_on_the_latest_spec_but_the_spec_is_still_judged() -> None:
    """FEASIBLE 0 from the generation before `helm upgrade` added the toleration is no critical no-feasible-nodes:
    nodeset-status-stale says the operator has not caught up. Without the toleration (the latest spec really fits
    no Node) no-feasible-nodes still fires, from sunkcheck's own count; once reconciled, the stale row goes."""
    from sunkcheck.pipeline import diagnose
    from sunkcheck.target import Target

    snap = snapshot.load(FIXTURES / "nodeset-status-stale")
    nodeset = (snap.nodesets or ())[0]

    def ids(ns: dict) -> list[str]:
        return sorted(s.id for s in diagnose(replace(snap, nodesets=(ns,)), Target()).results[0].symptoms)

    assert ids(nodeset) == ["nodeset-status-stale"]
    spec = nodeset["spec"]["template"]["spec"]
    untolerant = nodeset | {"spec": nodeset["spec"] | {"template": nodeset["spec"]["template"] | {
        "spec": spec | {"tolerations": spec["tolerations"][:1]}}}}
    assert ids(untolerant) == ["no-feasible-nodes", "nodeset-status-stale"]
    reconciled = untolerant | {"status": untolerant["status"] | {"observedGeneration": 5}}
    assert ids(reconciled) == ["no-feasible-nodes"]


def test_wait_converged_at_once(serve: Serve) -> None:
    serve("healthy-dedicated")
    r = run("check", "--wait", "10s", "-o", "json")
    assert r.code == 0 and r.err == AT_ONCE


def test_wait_needs_a_live_cluster() -> None:
    r = run("check", "--snapshot", str(FIXTURES / "two-problems"), "--wait", "1m")
    assert r.code == 3 and "--wait polls a live cluster" in r.err


def test_wait_rides_out_an_unreachable_api(tmp_path: Path, clock: Clock) -> None:
    config = kubeconfig(tmp_path / "dead", "https://127.0.0.1:9", token=TOKEN)
    r = run("check", "--kubeconfig", str(config), "--wait", "600ms", "--interval", "200ms", "-o", "json")
    assert r.code == 3 and "timed out after 600ms" in r.err and "cannot reach the API server" in r.json()["errors"][0]


def two_clusters(tmp_path: Path, cert: tuple[str, str], *cases: str) -> tuple[Path, list[FakeApi]]:
    apis = [FakeApi(snapshot.load(FIXTURES / c), cert=cert, token=TOKEN).__enter__() for c in cases]
    docs = [json.loads(kubeconfig(tmp_path / f"kc{i}", a.url, token=TOKEN, ca=cert[0], context=f"cluster-{i}").read_text())
            for i, a in enumerate(apis)]
    merged = {"apiVersion": "v1", "kind": "Config", "current-context": "cluster-0",
              "clusters": [c for d in docs for c in d["clusters"]], "users": [u for d in docs for u in d["users"]],
              "contexts": [c for d in docs for c in d["contexts"]]}
    (tmp_path / "merged").write_text(json.dumps(merged))
    return tmp_path / "merged", apis


def one_unreachable(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
                    *formats: str) -> tuple[Run, ...]:
    """`check --all-contexts -o FORMAT`, for each of `formats`, over three contexts: cluster-0 serves replicas-cap,
    cluster-1 healthy-pool-name, and cluster-2's API server has gone away."""
    config, apis = two_clusters(tmp_path, cert, "replicas-cap", "healthy-pool-name", "healthy-pool-name")
    apis[2].__exit__(None, None, None)  # cluster-2 goes away
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        return tuple(run("check", "--all-contexts", "-o", f) for f in formats)
    finally:
        for api in apis[:2]:
            api.__exit__(None, None, None)


def test_several_contexts_in_one_report(tmp_path: Path, cert: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    config, apis = two_clusters(tmp_path, cert, "healthy-pool-name", "no-feasible-nodes")
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        r = run("check", "--context", "cluster-0", "--context", "cluster-1", "-o", "json")
        every = run("check", "--all-contexts", "-o", "json")
        plain = run("check", "--all-contexts", "-o", "plain")
    finally:
        for api in apis:
            api.__exit__(None, None, None)
    doc = r.json()
    assert r.code == 2 and doc["status"] == "critical"
    assert [(x["context"], x["status"]) for x in doc["results"]] == [("cluster-0", "ok"), ("cluster-1", "critical")]
    assert every.verdict() == r.verdict()
    assert "cluster-1" in plain.out


def test_one_unreachable_context_does_not_hide_the_others(tmp_path: Path, cert: tuple[str, str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    config, apis = two_clusters(tmp_path, cert, "replicas-cap", "healthy-pool-name")
    apis[1].__exit__(None, None, None)  # cluster-1 goes away
    monkeypatch.setenv("KUBECONFIG", str(config))
    try:
        r = run("check", "--all-contexts", "-o", "json")
    finally:
        apis[0].__exit__(None, None, None)
    doc = r.json()
    assert [x["context"] for x in doc["results"]] == ["cluster-0"]
    assert doc["errors"][0].startswith("context cluster-1: cannot reach the API server")
    assert r.code == 3


def test_kubectl_plugin_through_real_kubectl(serve: Serve, tmp_path: Path) -> None:
    api = serve("replicas-cap")
    plugin = shutil.which("kubectl-sunkcheck")
    assert plugin, "pip install -e . installs the kubectl-sunkcheck console script"
    # kubectl takes no flags before a plugin's name: a private HOME keeps its discovery cache out of the way
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig), HOME=str(tmp_path),
               PATH=f"{Path(plugin).parent}:{os.environ['PATH']}")
    p = subprocess.run(["kubectl", "sunkcheck", "check", "-o", "json"],
                       env=env, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 1, p.stderr
    assert [s["id"] for s in json.loads(p.stdout)["results"][0]["symptoms"]] == ["replicas-cap"]
    listed = subprocess.run(["kubectl", "plugin", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert "kubectl-sunkcheck" in listed.stdout


def test_deploy_rbac_is_what_sunkcheck_rbac_prints() -> None:
    assert (ROOT / "deploy" / "rbac.yaml").read_text() == run("rbac").out
    role, binding = yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text())
    assert role["rules"] == cluster_role()["rules"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "sunkcheck", "namespace": "monitoring"}]


def test_deploy_cronjob_runs_a_read_only_check_as_that_service_account(serve: Serve) -> None:
    account, cronjob = yaml.safe_load_all((ROOT / "deploy" / "cronjob.yaml").read_text())
    assert account["kind"] == "ServiceAccount" and account["metadata"] == {"name": "sunkcheck", "namespace": "monitoring"}
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "sunkcheck"
    api = serve("several-nodesets")
    r = run(*pod["containers"][0]["args"])  # exactly the CronJob's args
    expected = json.loads((FIXTURES / "several-nodesets" / "expected.json").read_text())
    assert (r.code, r.json()["status"]) == (expected["exit"], expected["status"]), r.err
    assert {(x["namespace"], x["name"]) for x in r.json()["results"]} == {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in api.state.objects["nodesets"]}  # -A: every NodeSet
    assert {q.method for q in api.log} == {"GET"}


def test_cron_example_uses_real_flags() -> None:
    line = next(x for x in (ROOT / "deploy" / "sunkcheck.cron").read_text().splitlines() if x and not x.startswith("#"))
    command = line.split("sunkcheck ", 1)[1].split(" >>")[0].split()
    help_text = run("check", "--help").out
    assert all(flag in help_text for flag in command if flag.startswith("-"))


def test_wait_shows_live_progress_on_a_terminal(serve: Serve) -> None:
    """On a TTY, --wait keeps one updating status line (rich) instead of a line per poll. The wait is long
    and interrupted once the line shows, so a slow first poll cannot make the test miss it (when --wait
    times out is tested with an injected clock)."""
    import pty
    import select
    import signal
    import sys

    api = squatter_ends(serve("two-problems"))
    controller, terminal = pty.openpty()
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig), COLUMNS="160", TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "sunkcheck", "check", "--wait", "5m", "--interval", "300ms"],
                            stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True)
    os.close(terminal)
    chunks: list[bytes] = []
    interrupted = False
    while select.select([controller], [], [], 60)[0]:  # 60 s without output: a hang, the asserts say so
        try:
            data = os.read(controller, 65536)
        except OSError:  # the terminal closes when the process exits
            break
        if not data:
            break
        chunks.append(data)
        if not interrupted and b"pool CURRENT 4/6" in b"".join(chunks):
            proc.send_signal(signal.SIGINT)
            interrupted = True
    proc.wait(timeout=60)
    os.close(controller)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert interrupted and proc.returncode == 3, screen[-400:]
    assert "waiting (" in screen and "pool CURRENT 4/6" in screen
    assert "sunkcheck: waiting (" not in screen  # the per-poll lines are for pipes
    assert "\x1b[" in screen  # a live, redrawn status line
    assert "sunkcheck: interrupted" in screen
    assert screen.rfind("\x1b[?25h") > screen.rfind("\x1b[?25l") >= 0  # the status line's hidden cursor is shown again
