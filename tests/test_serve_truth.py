"""What serve says is true when it says it: the idle-pool note from the Pods check reads (every Node watched
too), transitions closed across UNKNOWN, a verdict's time that moves on while a quiet cluster stays as judged,
and a target that does not exist said at once."""

from __future__ import annotations

import copy
import datetime
import json
import re
import time
from dataclasses import replace
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.serve import watch as serve_watch
from sunkcheck.serve.loop import Verdict, log_line, logged, transitions
from sunkcheck.target import Target
from tests.conftest import FIXTURES, run, wait_for
from tests.test_serve import (POOL_LABEL, Serve, checked, eventually, follows, get, metric, open_page, served,
                              serving, tainted, verdict)

TIER = "team.example.com/tier"
BUSY = "healthy-busy-same-type-pool"  # slurm-cpu-batch on slurm-cpu; k8s-cpu, same type, runs a web frontend


def bound_by_tier(idle: bool) -> snapshot.Snapshot:
    """BUSY with the NodeSet bound by a label its pool sets rather than the pool's name: the read plan needs every
    Node (serve watches them all, no watch of one per pool is made). `idle`: k8s-cpu's frontend gone."""
    snap = snapshot.load(FIXTURES / BUSY)
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for n in nodes:
        if n["metadata"]["labels"].get(POOL_LABEL) == "slurm-cpu":
            n["metadata"]["labels"][TIER] = "batch"
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    for p in pools:
        if p["metadata"]["name"] == "slurm-cpu":
            p["spec"]["nodeLabels"] = {TIER: "batch"}
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    term = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    term["matchExpressions"] = [e if e["key"] != POOL_LABEL else {"key": TIER, "operator": "In", "values": ["batch"]}
                                for e in term["matchExpressions"]]
    pods = tuple(p for p in snap.pods or () if not (idle and p["metadata"]["namespace"] == "web"))
    return replace(snap, nodepools=tuple(pools), nodes=tuple(nodes), nodesets=(nodeset,), pods=pods)


def notes(doc: dict) -> list[str]:
    return [n["id"] for r in doc["results"] for n in r.get("notes", ())]


def test_with_every_node_watched_serve_and_wait_read_the_pods_checks_idle_pool_probe_reads(serve: Serve) -> None:
    """The probe's first Node of the same-type pool is taken from the watch of every Node (no watch of one is made
    then): its Pods are watched, a workload there makes the pool someone's, as in check; an idle pool is noted by
    all three alike."""
    for idle in (False, True):
        api = serve(bound_by_tier(idle))
        want = checked(api)
        assert notes(want) == (["idle-pool"] if idle else [])
        with serving(api) as service:
            assert "nodes" in {r.source.name for r in service.reflectors}  # every Node, as check reads them
            got, _ = follows(service, api)
        assert got == verdict(want)
        waited = run("check", "-A", "--wait", "5s", "-o", "json")
        assert notes(waited.json()) == notes(want), waited.err


def test_no_pool_is_called_idle_from_pods_not_read() -> None:
    """A pool whose Nodes' Pods were not all read (a failed list, a probe not made yet) may run anyone's workload:
    no idle-pool note claims "only node agents run there"."""
    snap = snapshot.load(FIXTURES / "healthy-idle-pool")
    assert notes_of(snap) == ["idle-pool"]
    every = {n["metadata"]["name"] for n in snap.nodes or ()}
    spare = sorted(n["metadata"]["name"] for n in snap.nodes or () if n["metadata"]["labels"].get(POOL_LABEL) == "slurm-gpu-2")
    assert notes_of(replace(snap, pod_nodes=frozenset(every))) == ["idle-pool"]  # every Pod read: idle
    assert notes_of(replace(snap, pod_nodes=frozenset(every - {spare[0]}))) == []


def notes_of(snap: snapshot.Snapshot) -> list[str]:
    return [n.id for r in diagnose(snap, Target()).results for n in r.notes]


KEY = ("NodeSet", "tenant-slurm", "slurm-cpu-batch")


def test_an_outage_between_a_row_firing_and_clearing_logs_it_cleared_once_known_again() -> None:
    """warning [replicas-cap] -> unknown (rows partly judged: their ids are no news) -> ok: the log closes what it
    opened, as a log pipeline pairing appeared with cleared needs."""
    told: dict = {}
    lines = []
    for status, ids in [("ok", set()), ("warning", {"replicas-cap"}), ("unknown", {"pool-below-target"}),
                        ("unknown", set()), ("ok", set()), ("unknown", set()), ("warning", {"pool-split"})]:
        now = logged({KEY: Verdict(status, frozenset(ids))}, told)
        lines += [log_line(r, "text") for r in transitions(told, now, "T")]
        told = now
    assert lines == ["T NodeSet tenant-slurm/slurm-cpu-batch: absent -> ok",
                     "T NodeSet tenant-slurm/slurm-cpu-batch: ok -> warning; appeared: replicas-cap",
                     "T NodeSet tenant-slurm/slurm-cpu-batch: warning -> unknown",
                     "T NodeSet tenant-slurm/slurm-cpu-batch: unknown -> ok; cleared: replicas-cap",
                     "T NodeSet tenant-slurm/slurm-cpu-batch: ok -> unknown",
                     "T NodeSet tenant-slurm/slurm-cpu-batch: unknown -> warning; appeared: pool-split"]
    # a target gone while unknown closes what its last known verdict fired
    gone = transitions(logged({KEY: Verdict("unknown", frozenset())}, {KEY: Verdict("warning", frozenset({"replicas-cap"}))}),
                       {}, "T")
    assert [(r["old"], r["new"], r["cleared"]) for r in gone] == [("unknown", "absent", ["replicas-cap"])]


@pytest.fixture
def stale_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source failing for a second is failing for long (60 s in a real serve)."""
    monkeypatch.setattr(serve_watch, "STALE_AFTER", 1.0)


@pytest.mark.usefixtures("stale_soon")
def test_a_row_cleared_during_an_outage_is_logged_cleared_once_serve_hears_again(serve: Serve) -> None:
    api = serve("healthy-pool-name")
    lines: list[str] = []
    with serving(api, lines=lines) as service:
        node = next(n for n in api.state.objects["nodes"] if n["metadata"]["labels"].get(POOL_LABEL) == "slurm-cpu")
        api.state.put("nodes", tainted(node, "example.com/repair"))
        assert eventually(lambda: any("ok -> warning; appeared: pool-nodes-unusable" in line for line in lines))
        api.stop()
        api.drop_watches()
        assert eventually(lambda: any("warning -> unknown" in line for line in lines), 20), lines
        api.state.put("nodes", node)  # the taint removed while serve cannot hear it
        api.start()
        assert eventually(lambda: served(service)["status"] == "ok" and not served(service)["errors"], 30)
    told = [line.split(": ", 1)[1] for line in lines if " NodeSet " in line]
    assert told == ["absent -> ok", "ok -> warning; appeared: pool-nodes-unusable", "warning -> unknown",
                    "unknown -> ok; cleared: pool-nodes-unusable"], lines


def stamp(service: Any) -> float:
    return metric(service, "last_run_timestamp_seconds") or 0.0


def utc(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


def test_on_a_quiet_cluster_the_verdicts_time_moves_on_without_a_diagnosis_and_stops_with_the_api_server(
        serve: Serve) -> None:
    """Nothing changes: every watch hears bookmarks, so the verdict is known true later and later (the textfile's
    staleness alert keeps quiet), while nothing is diagnosed again and the page's poll still gets 304. The API
    server gone: the time stops where the watches last heard from it."""
    api = serve("healthy-pool-name")
    with serving(api) as service:
        made, first = metric(service, "diagnoses_total"), stamp(service)
        doc = served(service)
        etag = get_etag(service.url)
        assert eventually(lambda: stamp(service) >= first + 2.0, timeout=8)
        assert metric(service, "diagnoses_total") == made  # no diagnosis: the watches' bookmarks alone
        later = served(service)
        assert utc(later["checked_at"]) >= utc(doc["checked_at"]) + 2 and verdict(later) == verdict(doc)
        status, headers = conditional(service.url, etag)
        assert status == 304 and utc(headers["Sunkcheck-Checked-At"]) >= utc(doc["checked_at"]) + 2
        api.stop()
        time.sleep(1.0)  # the watches' last bookmark, then nothing
        stopped = stamp(service)
        time.sleep(1.5)
        assert stamp(service) == stopped and stopped <= time.time() - 1.4
        api.start()


def test_the_page_shows_the_verdicts_time_moving_on_a_quiet_cluster_without_a_reload(serve: Serve, browser: Any) -> None:
    api = serve("healthy-pool-name")
    with serving(api) as service:
        open_page(browser, service)
        shown = browser.find_element(By.CSS_SELECTOR, ".checked-at").text
        browser.execute_script("window.sunkcheckMarker = 'still here'")
        wait_for(browser, lambda d: utc(d.find_element(By.CSS_SELECTOR, ".checked-at").text) >= utc(shown) + 2,
                 timeout=10)
        assert browser.execute_script("return window.sunkcheckMarker") == "still here"


def get_etag(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url + "/api/v1/check", timeout=5) as resp:
        return str(resp.headers["ETag"])


def status(url: str) -> Any:
    """The headers of the document's answer."""
    import urllib.request

    with urllib.request.urlopen(url + "/api/v1/check", timeout=5) as resp:
        return resp.headers


def conditional(url: str, etag: str) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + "/api/v1/check", headers={"If-None-Match": etag})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, resp.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers


def test_a_nodeset_named_that_does_not_exist_is_logged_at_once_and_ready_says_serve_answers(serve: Serve) -> None:
    """`--nodeset` naming no NodeSet: one line at the start naming it (what exists instead), sunkcheck_up 0; /readyz
    stays 200, as it says whether serve's answer is current, not what it says. The NodeSet created: it is judged;
    deleted: its end is logged with the same line."""
    api = serve("healthy-pool-name")
    lines: list[str] = []
    target = Target(nodeset="slurm-cpu-batchh", namespace="tenant-slurm")
    with serving(api, target, all_namespaces=False, lines=lines) as service:
        assert eventually(lambda: lines)
        assert len(lines) == 1 and "NodeSet slurm-cpu-batchh not found in namespace tenant-slurm" in lines[0], lines
        assert "slurm-cpu-batch" in lines[0]  # what exists instead
        assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 0
        # nothing checked: no checked_at, as check's document of errors alone (the schema: absent when unknown)
        doc, said = served(service), run("check", "--nodeset", target.nodeset or "", "-n", "tenant-slurm", "-o", "json",
                                         "--kubeconfig", str(api.kubeconfig))
        assert "checked_at" not in json.loads(said.out) and "checked_at" not in doc, (said, doc)
        assert status(service.url)["Sunkcheck-Checked-At"] is None
        nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
        nodeset["metadata"]["name"] = "slurm-cpu-batchh"
        api.state.put("nodesets", nodeset)
        assert eventually(lambda: any("absent -> " in line for line in lines))
        api.state.delete("nodesets", "tenant-slurm", "slurm-cpu-batchh")
        assert eventually(lambda: len([line for line in lines if "not found" in line]) == 2), lines
        assert any(" -> absent" in line for line in lines)
        assert get(service.url + "/readyz")[0] == 200 and metric(service, "up") == 0


def test_a_nodeset_named_that_does_not_exist_lists_those_there_as_check_does(serve: Serve) -> None:
    """The NodeSets there, in serve's line as in check's, nearest first, those as near alphabetically (difflib put
    the last name first)."""
    api = serve("healthy-pool-name")
    for name in ("slurm-cpu-c", "slurm-cpu-a"):
        nodeset = copy.deepcopy(api.state.objects["nodesets"][0])
        nodeset["metadata"]["name"] = name
        api.state.put("nodesets", nodeset)
    said = run("check", "--nodeset", "slurm-cpu-b", "-n", "tenant-slurm", "--kubeconfig", str(api.kubeconfig))
    listed = re.search(r"\(NodeSets there: [^)]*\)", said.err)
    assert said.code != 0 and listed and listed[0] == "(NodeSets there: slurm-cpu-a, slurm-cpu-c, slurm-cpu-batch)", said
    lines: list[str] = []
    target = Target(nodeset="slurm-cpu-b", namespace="tenant-slurm")
    with serving(api, target, all_namespaces=False, lines=lines):
        assert eventually(lambda: lines)
        assert listed[0] in lines[0], (listed[0], lines)
