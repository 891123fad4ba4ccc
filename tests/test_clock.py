"""`--wait`'s clock is the API server's: its answers' Date headers, else the creation times it wrote, never a time a
kubelet or a controller writes by its own clock. A time past what a datetime holds is unknown, never an internal
error (`check`, `--wait`, `serve`)."""

from __future__ import annotations

import copy
import datetime
import email.utils
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import objects as o
from sunkcheck import snapshot
from sunkcheck.analyze.nodes import JOIN, cluster_time
from sunkcheck.collect.clock import ServerClock, http_date
from sunkcheck.collect.kube import Kube
from sunkcheck.converge import Clock, joining
from sunkcheck.model import Report
from sunkcheck.pipeline import diagnose
from sunkcheck.serve.service import Service
from sunkcheck.target import Target
from tests.conftest import Clock as VirtualClock
from tests.conftest import run
from tests.test_joining import FORMS, NEW, POOL, cluster, result, scaled_up, starting, unready, when

AHEAD = ("2026-11-03T10:20:00Z", "2099-01-01T00:00:00Z", "9999-12-31T23:59:59Z")
"""Times a kubelet whose clock runs ahead writes: 20 minutes ahead (past nodes.JOIN after the Nodes registered),
decades ahead, and the last second a datetime holds."""
OUT_OF_RANGE = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")
"""RFC 3339 times a datetime reads, but cannot hold in UTC."""


def nodes_changed(snap: snapshot.Snapshot, change: Callable[[dict], None], *names: str) -> snapshot.Snapshot:
    """`snap` with `change` made to a copy of each Node named."""
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in nodes:
        if node["metadata"]["name"] in names:
            change(node)
    return replace(snap, nodes=tuple(nodes))


def serving_node(snap: snapshot.Snapshot) -> str:
    """A slurm-cpu Node that serves (not one of NEW)."""
    return next(n["metadata"]["name"] for n in snap.nodes or ()
                if n["metadata"]["labels"].get(POOL) == "slurm-cpu" and n["metadata"]["name"] not in NEW)


def ahead(when_: str) -> snapshot.Snapshot:
    """scaled_up() with every time a kubelet or the node controller writes at `when_`: a serving Node's Ready
    condition (heartbeat and transition), the joining Nodes' Ready condition (heartbeat and transition) and their
    not-ready taint's timeAdded."""
    def serving(node: dict) -> None:
        node["status"]["conditions"][0] |= {"lastHeartbeatTime": when_, "lastTransitionTime": when_}

    def joining(node: dict) -> None:
        node["status"]["conditions"][0] |= {"lastHeartbeatTime": when_, "lastTransitionTime": when_}
        node["spec"]["taints"][1]["timeAdded"] = when_

    snap = scaled_up()
    return nodes_changed(nodes_changed(snap, serving, serving_node(snap)), joining, *NEW)


# --- the wait, against the test API server --------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("when_", AHEAD)
def test_times_a_kubelet_writes_ahead_never_age_the_nodes_joining(form: str, when_: str, serve: Callable[..., Any],
                                                                   clock: VirtualClock) -> None:
    """The Nodes registered 30 s ago by the API server's clock are joining, whatever a kubelet's says it is."""
    cluster(serve, form, snap=ahead(when_))
    r = run("check", "--wait", "8s", "--interval", "2s", "-o", "json")
    assert r.code == 1 and "timed out after 8s" in r.err, r.err
    assert r.json()["never_converged"].startswith("slurm-cpu-batch: 2 Nodes joining (Nodes joining: g5e0a01 ")


@pytest.mark.parametrize("form", FORMS)
def test_the_api_servers_clock_ages_the_nodes_joining_not_the_times_the_nodes_hold(form: str, serve: Callable[..., Any],
                                                                                   clock: VirtualClock) -> None:
    """The newest time the Nodes hold is T0 + 30 s; the API server's clock reads JOIN later: the two Nodes registered at
    T0 are no longer joining (broken, by cluster-autoscaler's bound), and the wait converges at once."""
    cluster(serve, form, clock=JOIN + 30, snap=scaled_up(now=30))
    r = run("check", "--wait", "8s", "--interval", "2s", "-o", "json")
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    assert "joining" not in r.err and clock.now == 0


# --- times out of range ----------------------------------------------------------------------------------------

def out_of_range(created: str, heartbeat: str) -> snapshot.Snapshot:
    """scaled_up() with a joining Node created at `created` and a serving Node's heartbeat at `heartbeat`."""
    def serving(node: dict) -> None:
        node["status"]["conditions"][0]["lastHeartbeatTime"] = heartbeat

    def joining(node: dict) -> None:
        node["metadata"]["creationTimestamp"] = created

    snap = scaled_up()
    return nodes_changed(nodes_changed(snap, serving, serving_node(snap)), joining, NEW[0])


def test_a_time_out_of_range_is_unknown_and_advancing_a_clock_stops_at_the_end_of_time() -> None:
    for value in OUT_OF_RANGE:
        assert o.timestamp(value) is None
    assert o.timestamp("9999-12-31T23:59:59Z") == o.END_OF_TIME.replace(microsecond=0)
    assert o.timestamp("2026-11-03T11:00:00+01:00") == when(0)
    assert o.later(when(0), 30) == when(30) and o.later(o.END_OF_TIME, 1) == o.END_OF_TIME
    assert o.later(when(0), 1e300) == o.END_OF_TIME  # past what a timedelta holds
    stamps = Clock()
    end = Report((replace(result(unready()), clock=o.END_OF_TIME),))
    assert stamps.stamp(end, 0.0) == end and stamps.stamp(end, JOIN).results[0].clock == o.END_OF_TIME


def test_a_check_judges_a_cluster_holding_times_out_of_range(tmp_path: Path) -> None:
    """Before: `objects.timestamp` let the OverflowError through, and one such Node made every check an internal
    error. Now the time is unknown (a Node without a creation time is not joining) and the check is the check of the
    same cluster without it."""
    snapshot.save(tmp_path / "plain", scaled_up(), {})
    want = run("check", "--snapshot", str(tmp_path / "plain"), "-o", "json")
    for created, heartbeat in (OUT_OF_RANGE, OUT_OF_RANGE[::-1]):
        snapshot.save(tmp_path / created, out_of_range(created, heartbeat), {})
        got = run("check", "--snapshot", str(tmp_path / created), "-o", "json")
        assert (got.code, got.json()["results"], got.err) == (want.code, want.json()["results"], ""), got.err


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_serve_judges_a_cluster_holding_times_out_of_range(serve: Callable[..., Any]) -> None:
    """Before: the OverflowError killed serve's diagnosis thread (/healthz 500, never ready)."""
    api = serve(out_of_range(*OUT_OF_RANGE))
    want = run("check", "-A", "-o", "json").json()
    with Service(Kube(str(api.kubeconfig)), Target(), True, log=lambda line: None, debounce=0.02) as service:
        end = time.monotonic() + 20
        while get(service.url + "/readyz")[0] != 200 and time.monotonic() < end:
            time.sleep(0.05)
        assert get(service.url + "/healthz") == (200, b"ok\n")
        doc = json.loads(get(service.url + "/api/v1/check")[1])
        assert (doc["results"], doc["status"]) == (want["results"], want["status"]) and doc["results"]


# --- the API server's clock -----------------------------------------------------------------------------------

def test_an_http_date_is_read_in_utc_or_unknown() -> None:
    assert http_date("Tue, 03 Nov 2026 10:00:00 GMT") == when(0)
    assert http_date("Tue, 03 Nov 2026 11:00:00 +0100") == when(0)
    assert http_date("Fri, 31 Dec 9999 23:59:59 GMT") == o.END_OF_TIME.replace(microsecond=0)
    for value in (None, "", "yesterday", "Fri, 31 Dec 9999 23:59:59 -0100", "Tue, 03 Nov 2026 10:00:60 GMT"):
        assert http_date(value) is None


def test_the_server_clock_takes_the_earliest_recent_date_of_an_answer_and_advances_by_the_monotonic_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from sunkcheck.collect import clock as server_clock

    now = [100.0]
    monkeypatch.setattr(server_clock.time, "monotonic", lambda: now[0])
    kept = ServerClock()
    assert kept.now() is None
    kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:00:30 GMT"})
    now[0] += 5
    assert kept.now() == when(35)
    kept.saw(502, {"Date": "Tue, 03 Nov 2026 10:30:00 GMT"})  # a proxy's error page, by its own clock
    kept.saw(200, {"Date": "no date"})
    kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:00:35 GMT"})
    assert kept.now() == when(35)
    now[0] += 2
    assert kept.now() == when(37)
    kept.saw(200, {"Date": "Fri, 31 Dec 9999 23:59:59 GMT"})  # one answer far ahead of the others: outvoted
    now[0] += 2
    assert kept.now() == when(39)


def test_a_date_far_ahead_never_moves_the_server_clock_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the latest Date won, so one answer in 9999 (a replica whose clock runs ahead, a proxy's) set the clock
    to the end of time for the rest of a wait or of serve, and every Node joining looked broken. Now an answer of the
    last RECENT outvotes it; a clock that really moved on (every recent answer says so) is followed."""
    from sunkcheck.collect import clock as server_clock

    now = [100.0]
    monkeypatch.setattr(server_clock.time, "monotonic", lambda: now[0])
    kept = ServerClock()

    def honest() -> dict[str, str]:  # the API server's clock: T0 at monotonic 100
        return {"Date": email.utils.format_datetime(when(now[0] - 100), usegmt=True)}

    for ahead in ("Fri, 31 Dec 9999 23:59:59 GMT", "Tue, 03 Nov 2026 10:20:00 GMT"):  # decades, or JOIN, ahead
        kept.saw(200, honest())
        for _ in range(server_clock.RECENT - 1):  # a replica ahead answers all but one of the recent answers
            kept.saw(200, {"Date": ahead})
            now[0] += 1
            assert kept.now() == when(now[0] - 100)
    for _ in range(server_clock.RECENT):  # every recent answer says the clock moved on: followed
        kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:30:00 GMT"})
    assert kept.now() == when(30 * 60)


def test_without_a_date_the_clock_is_the_newest_creation_time_never_a_kubelets() -> None:
    """A live read whose answers had no Date falls back to the newest creation time; a recording is judged at its
    meta.json time, or at none: a fixture's newest object is not "now"."""
    snap = ahead(AHEAD[0])
    pods = [copy.deepcopy(p) for p in snap.pods or ()]
    pods[0]["metadata"]["creationTimestamp"] = "2026-11-03T10:01:40Z"
    snap = replace(snap, pods=tuple(pods))
    assert snap.newest_creation() == when(100)
    assert cluster_time(snap) is None
    at = datetime.datetime(2026, 11, 3, 10, 20, tzinfo=datetime.UTC)
    assert cluster_time(replace(snap, server_time=at)) == at
    assert snapshot.Snapshot().newest_creation() is None


def test_a_kubelet_clock_ahead_never_makes_a_startup_taint_look_left_for_long() -> None:
    """Nodes registered 30 s ago, Ready, still carrying Cilium's taint: starting, no row, whatever a serving Node's
    kubelet writes, on the API server's clock or (no Date) the newest creation time a live read falls back to
    (before: a heartbeat in 2099 aged them past JOIN, and the check told that Cilium was not running)."""
    snap = starting()
    dated = nodes_changed(snap, lambda n: n["status"]["conditions"][0].update(lastHeartbeatTime=AHEAD[0]),
                          serving_node(snap))
    for read in (replace(dated, server_time=dated.newest_creation()), replace(dated, server_time=when(30))):
        [checked] = diagnose(read, Target()).results
        assert "pool-nodes-unusable" not in {s.id for s in checked.symptoms} and len(joining(checked)) == 2


def test_serve_ages_the_nodes_by_the_api_servers_clock_as_check_does(serve: Callable[..., Any]) -> None:
    """Two Nodes registered an hour before the API server's clock, Ready, still carrying Cilium's start-up taint: a
    check reports it (pool-nodes-unusable, its agent not running there); serve, judging the same watches, says the
    same (before: serve had no clock, so it never said a start-up taint was left on for long)."""
    api = cluster(serve, "watched", snap=starting(created=(-3600, -3599), ready_since=-3000))
    want = run("check", "-A", "-o", "json").json()
    assert "pool-nodes-unusable" in {s["id"] for r in want["results"] for s in r["symptoms"]}, want
    with Service(Kube(str(api.kubeconfig)), Target(), True, log=lambda line: None, debounce=0.02) as service:
        end = time.monotonic() + 20
        while get(service.url + "/readyz")[0] != 200 and time.monotonic() < end:
            time.sleep(0.05)
        doc = json.loads(get(service.url + "/api/v1/check")[1])
        assert (doc["results"], doc["status"]) == (want["results"], want["status"])


def test_the_graces_clock_takes_the_latest_recent_date_a_lagging_one_never_holds_it_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The earliest recent Date ages the Nodes (one far ahead is outvoted); the latest judges the graces (one
    lagging, a replica whose clock trails, is outvoted), so each doubt leans the safe way for what it judges."""
    from sunkcheck.collect import clock as server_clock

    now = [100.0]
    monkeypatch.setattr(server_clock.time, "monotonic", lambda: now[0])
    kept = ServerClock()
    assert kept.latest() is None
    kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:06:30 GMT"})
    kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:00:30 GMT"})  # six minutes behind
    kept.saw(502, {"Date": "Tue, 03 Nov 2026 10:30:00 GMT"})  # a proxy's error page, by its own clock
    now[0] += 5
    assert (kept.now(), kept.latest()) == (when(35), when(6 * 60 + 35))
    for _ in range(server_clock.RECENT):
        kept.saw(200, {"Date": "Tue, 03 Nov 2026 10:06:40 GMT"})
    assert kept.now() == kept.latest() == when(6 * 60 + 40)
