"""What check, `check --wait` and serve publish when part of the cluster could not be read, through the real client
against the test API server: a count made of a source that failed is left out, never a measured 0 under `ok`; a
target whose last state is not reported keeps no gauge of it; and the time a report was last complete and current
never moves forward during an outage."""

from __future__ import annotations

import datetime
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.collect import kube as kube_module
from sunkcheck.serve import watch as serve_watch
from tests.conftest import run
from tests.kubeapi import FakeApi
from tests.test_serve import eventually, get, metric, served, serving

Serve = Callable[..., Any]
NODE_COUNTS = {"nodeset": {"pool_nodes", "pool_nodes_in_repair", "pool_nodes_left_out", "feasible_computed"},
               "pods": {"in_pools", "elsewhere"}}
"""The counts each step makes of the Nodes (sunkcheck's FEASIBLE, the pool a slurmd Pod runs in)."""
NODE_GAUGES = ("sunkcheck_pool_nodes", "sunkcheck_feasible_computed")
POOL_GAUGES = ("sunkcheck_nodepool_target_nodes", "sunkcheck_nodepool_current_nodes")


def nodes_fail(api: Any) -> float:
    """Every read of the Nodes answered 500 from now on; when they started failing."""
    api.faults.errors["nodes"] = 10**6
    api.drop_watches()
    return time.time()


def stamp(text: str) -> float:
    """sunkcheck_last_run_timestamp_seconds in an exposition."""
    found = re.search(r"^sunkcheck_last_run_timestamp_seconds (\S+)$", text, re.M)
    assert found, text
    return float(found[1])


def failing_nodesets(doc: dict) -> bool:
    return any(e.startswith("nodesets: ") for e in doc["errors"])


def checked_at(doc: dict) -> float:
    return datetime.datetime.fromisoformat(doc["checked_at"]).timestamp()


def steps(result: dict) -> dict[str, dict]:
    return {s["name"]: s for s in result["steps"]}


def assert_nodes_unread(result: dict, relisting: bool = False) -> None:
    """The steps that count Nodes are UNKNOWN, saying so, without those counts; what the NodeSet says still stands
    (and, unless the other sources are `relisting` still, what the Pods and Events say)."""
    by_name = steps(result)
    for name, counts in NODE_COUNTS.items():
        assert by_name[name]["status"] == "unknown", by_name[name]
        assert not counts & by_name[name]["counts"].keys(), by_name[name]
    assert "pool Nodes not read" in by_name["nodeset"]["summary"], by_name["nodeset"]
    assert {"desired", "current", "ready"} <= by_name["nodeset"]["counts"].keys(), by_name["nodeset"]
    assert "elsewhere" not in by_name["pods"]["summary"], by_name["pods"]
    if not relisting:
        assert "Nodes not read" in by_name["pods"]["summary"] and by_name["pods"]["counts"]["pods"] > 0, by_name
        assert by_name["events"]["status"] != "unknown", by_name


def test_a_check_whose_nodes_fail_counts_nothing_of_them(serve: Serve, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes answered 500: UNKNOWN, and no step reads `ok ... pool Nodes 0, feasible by sunkcheck 0` nor `0 on the
    pool, 6 elsewhere`; the textfile has the NodeSet's own columns, none of the gauges made of the Nodes, and says
    sunkcheck_up 0."""
    monkeypatch.setattr(kube_module, "MAX_RETRY_AFTER", 0.01)
    api = serve("healthy-pool-name")
    nodes_fail(api)
    prom = tmp_path / "s.prom"
    r = run("check", "-o", "json", "--textfile", str(prom))
    doc = r.json()
    assert r.code == 3 and doc["status"] == "unknown" and doc["results"], r.out
    for result in doc["results"]:
        assert_nodes_unread(result)
    text = prom.read_text()
    assert "sunkcheck_desired{" in text and not any(g in text for g in NODE_GAUGES), text
    assert "sunkcheck_up 0" in text, text  # it could not run its checks of the Nodes, as serve says for a source failing
    plain = run("check")
    assert " 0 on " not in plain.out and "pool Nodes not read" in plain.out, plain.out


def test_a_daemonset_check_whose_nodes_fail_counts_no_eligible_node(serve: Serve, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_module, "MAX_RETRY_AFTER", 0.01)
    api = serve("ds-healthy")
    nodes_fail(api)
    prom = tmp_path / "s.prom"
    r = run("check", "--daemonset", "dcgm-exporter", "-n", "monitoring", "-o", "json", "--textfile", str(prom))
    doc = r.json()
    assert r.code == 3 and doc["results"], r.out
    daemonset = steps(doc["results"][0])["daemonset"]
    assert daemonset["status"] == "unknown" and "eligible_computed" not in daemonset["counts"], daemonset
    assert "desired" in daemonset["counts"] and "Nodes not read" in daemonset["summary"], daemonset
    text = prom.read_text()
    assert "sunkcheck_desired{" in text and "sunkcheck_feasible{" not in text, text


def test_serve_with_its_nodes_failing_publishes_no_node_count_and_keeps_its_time(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Nodes' watch failing for long: the targets UNKNOWN, no pool_nodes or feasible_computed 0 on /metrics or
    in the document, and the time it was last complete and current stays where the Nodes were last heard of."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        assert metric(service, "pool_nodes") is not None
        failed = nodes_fail(api)
        doc = eventually(lambda: (d := served(service))["status"] == "unknown" and d, 20)
        assert doc, served(service)
        time.sleep(1.5)  # more diagnoses may come: none moves the time on
        doc = served(service)
        for result in doc["results"]:
            assert_nodes_unread(result)
        text = get(service.url + "/metrics")[1].decode()
        assert "sunkcheck_desired{" in text and not any(g in text for g in NODE_GAUGES), text
        assert metric(service, "up") == 0
        assert checked_at(doc) <= failed and stamp(text) <= failed, (doc["checked_at"], stamp(text), failed)


def test_serve_in_an_outage_keeps_no_gauge_of_the_last_state_nor_moves_its_time_through_recovery(
        serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API server gone for long: every target UNKNOWN with no gauge of its last state (its Node Pools' sizes
    included) and the time stays where the watches last heard; back with its NodeSets before its Nodes (a restart
    relisting), still no Node count, and the time stays until every source is current again."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)
    api = serve("healthy-pool-name")
    with serving(api) as service:
        before = get(service.url + "/metrics")[1].decode()
        assert all(g in before for g in (*POOL_GAUGES, *NODE_GAUGES)), before
        api.stop()
        stopped = time.time()  # gone: nothing heard after
        doc = eventually(lambda: failing_nodesets(d := served(service)) and d, 20)
        assert doc and all(r["status"] == "unknown" for r in doc["results"]), served(service)
        text = get(service.url + "/metrics")[1].decode()
        gauges = [line for line in text.splitlines() if line.startswith(
            ("sunkcheck_desired", "sunkcheck_current", "sunkcheck_ready", "sunkcheck_feasible", "sunkcheck_pool_nodes",
             "sunkcheck_nodepool_", "sunkcheck_misscheduled", "sunkcheck_symptom"))]
        assert not gauges and "sunkcheck_status{" in text and metric(service, "up") == 0, text
        assert checked_at(doc) <= stopped and stamp(text) <= stopped, (doc["checked_at"], stamp(text), stopped)

        api.faults.errors["nodes"] = 10**6  # back, but its Nodes not yet
        api.start()
        doc = eventually(lambda: not failing_nodesets(d := served(service)) and d, 30)
        assert doc and doc["results"], served(service)
        text = get(service.url + "/metrics")[1].decode()
        for result in doc["results"]:
            assert_nodes_unread(result, relisting=True)
        assert not any(g in text for g in NODE_GAUGES) and "sunkcheck_desired{" in text, text
        assert checked_at(doc) <= stopped and stamp(text) <= stopped, (doc["checked_at"], stamp(text), stopped)

        api.faults.errors.pop("nodes")
        assert eventually(lambda: served(service)["status"] == "ok", 30), served(service)
        assert checked_at(served(service)) > stopped and metric(service, "up") == 1


def stopped_mid_wait(api: FakeApi) -> list[float]:
    """Its Node Pools below their targets (a wait never converges), the API server stopped 1.5 s from now: the list
    the time it stopped is put in."""
    for pool in api.state.objects["nodepools"]:
        pool["spec"]["targetNodes"] = pool["status"]["currentNodes"] + 1
    stopped: list[float] = []

    def stop() -> None:
        api.stop()
        stopped.append(time.time())

    threading.Timer(1.5, stop).start()
    return stopped


def test_a_wait_timed_out_in_an_outage_keeps_no_gauge_of_the_last_state_nor_stamps_its_end(
        serve: Serve, tmp_path: Path) -> None:
    """The API server gone during a --wait that times out: its textfile says sunkcheck_up 0, each target UNKNOWN,
    no Node Pool size read before, and the time the state was last current, not the deadline."""
    stopped = stopped_mid_wait(serve("healthy-pool-name"))
    prom = tmp_path / "s.prom"
    r = run("check", "--wait", "4s", "--interval", "1s", "-o", "json", "--textfile", str(prom))
    text = prom.read_text()
    assert r.code == 3 and stopped, r.err
    assert "sunkcheck_up 0" in text and "sunkcheck_status{" in text and not any(g in text for g in POOL_GAUGES), text
    assert stamp(text) <= stopped[0], (stamp(text), stopped)
    assert "checked_at" not in r.json()


def test_a_role_reading_one_namespaces_nodesets_is_still_up(serve: Serve, tmp_path: Path) -> None:
    """NodeSets read in one namespace only (a Role): read in part, as asked, no source failing: sunkcheck_up 1."""
    from sunkcheck import snapshot
    from tests.conftest import FIXTURES
    from tests.test_fixes import _with_peer

    api = serve(_with_peer(snapshot.load(FIXTURES / "foreign-pod-resources"), []))
    api.faults.forbidden_cluster_wide.add("nodesets")
    prom = tmp_path / "s.prom"
    r = run("check", "--nodeset", "slurm-cpu-batch", "-n", "tenant-slurm", "--textfile", str(prom))
    assert r.code != 3 and "sunkcheck_up 1" in prom.read_text().splitlines(), (r.out, prom.read_text())


def test_a_polling_wait_ending_in_an_outage_stamps_its_textfile_with_its_last_read(
        serve: Serve, tmp_path: Path, no_backoff: None) -> None:
    """A --wait that polls (each read saved): its last polls cannot reach the API server; the textfile says
    sunkcheck_up 0, with no Node Pool size of the last read, stamped when that read was made, not at the end."""
    stopped = stopped_mid_wait(serve("healthy-pool-name"))
    prom = tmp_path / "s.prom"
    r = run("check", "--wait", "4s", "--interval", "1s", "--save", str(tmp_path / "saved"), "--textfile", str(prom))
    text = prom.read_text()
    assert r.code == 3 and stopped and "every step unknown" in r.err, r.err
    assert "sunkcheck_up 0" in text and "sunkcheck_status{" in text and not any(g in text for g in POOL_GAUGES), text
    assert stamp(text) <= stopped[0], (stamp(text), stopped)
