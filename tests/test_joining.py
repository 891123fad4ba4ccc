"""`--wait` and Nodes that have registered but are not Ready yet: a Node still joining keeps the wait waiting (FEASIBLE
leaves it out, so the counts alone agree before the capacity asked for is there), and one it saw joining still not
Ready once JOIN old ends it not converged; one already not Ready for long, or Ready since, holds no wait back. The
rule (converge.joining) weighs times the API server wrote against each other (a Node's creation, the server's clock),
never the local clock, and both wait forms (watches, polling) judge by it."""

from __future__ import annotations

import copy
import datetime
import math
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import snapshot
from sunkcheck.analyze import nodes as nd
from sunkcheck.collect.kube import cluster_role
from sunkcheck.analyze.nodes import JOIN
from sunkcheck.converge import (Clock, ages_at, ages_in, joining, judged_again_at, overdue, pending, progress, retold_at,
                                stuck)
from sunkcheck.model import Report, Result, Status, Step, Unready
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, Clock as VirtualClock, run, wait_through

POOL = "compute.coreweave.com/node-pool"
NEW = ("g5e0a01", "g5e0a02")
"""Two Nodes slurm-cpu gains in a scale-up from 8 to 10 (healthy-pool-name's pool)."""
T0 = datetime.datetime(2026, 11, 3, 10, 0, tzinfo=datetime.UTC)
"""When they registered: a month away from the machine's clock, which must not matter (the test API server's clock
is set near it, `cluster`)."""


def at(seconds: float) -> str:
    return (T0 + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def when(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def unready(created: float | None = 0, reason: str = "KubeletNotReady", status: str = "False") -> Unready:
    return Unready("g5e0a01", None if created is None else when(created), status, reason)


def result(*nodes: Unready, clock: float | None = 30) -> Result:
    return Result("NodeSet", "tenant-slurm", "slurm-cpu-batch", ("slurm-cpu",), (), (), unready=nodes,
                  clock=None if clock is None else when(clock))


@pytest.mark.parametrize(("node", "clock", "joins"), [
    (unready(), 30, True),  # registered 30 s ago, not Ready since its first status: joining
    (unready(), JOIN - 1, True),  # registered before the wait, still within the bound: joining
    (unready(), JOIN, False),  # not Ready for as long as a Node may take to join: broken, no longer waited for
    (unready(reason="", status=""), 30, True),  # no status posted yet
    (unready(reason="NodeStatusNeverUpdated", status="Unknown"), 130, True),  # the controller's word
    # whatever its Ready condition went through (a kubelet restart, a reboot during bootstrap, a transition time written
    # by a kubelet's clock running ahead), a Node so young not serving is no converged state: joining
    (unready(status="Unknown", reason="NodeStatusUnknown"), 330, True),  # unreachable, minutes old
    (unready(created=-3600), 30, False),  # registered an hour ago and not Ready: in repair (or a crash), not a join
    (unready(created=None), 30, False),  # no creation time: nothing tells it joins
    (unready(), None, False),  # no cluster time (none read)
    (unready(status="True", reason="KubeletReady"), 30, True),  # Ready, a start-up taint still on
])
def test_joining_is_a_recent_node_not_serving_yet_whatever_its_ready_history(node: Unready, clock: float | None,
                                                                             joins: bool) -> None:
    assert joining(result(node, clock=clock)) == ([node] if joins else [])


def test_pending_counts_the_nodes_joining() -> None:
    r = result(unready(), replace(unready(), name="g5e0a02"), unready(created=-3600))
    assert pending(r) == ["2 Nodes joining"]
    assert pending(replace(r, clock=when(JOIN + 1))) == []


def test_the_deadline_names_the_nodes_joining_oldest_first_and_counts_the_rest() -> None:
    nodes = [replace(unready(created=-i), name=f"g5e0a{i:02}") for i in range(7)]
    line = progress(Report((result(*nodes),)), named=True)
    said = [f"g5e0a{i:02} registered 2026-11-03T09:59:{60 - i}Z, not Ready (Ready=False: KubeletNotReady)"
            for i in (6, 5, 4, 3, 2)]
    assert line == f"slurm-cpu-batch: 7 Nodes joining (Nodes joining: {'; '.join(said)}; and 2 more)"
    assert progress(Report((result(*nodes),))) == "slurm-cpu-batch: 7 Nodes joining"


def test_the_clock_advances_by_the_time_waited_never_by_the_local_clock() -> None:
    clock, node = Clock(), unready()
    first = clock.stamp(Report((result(node, clock=60),)), 1000.0)  # the first read: the cluster's newest time
    assert first.results[0].clock == when(60)
    # a later read whose newest time is no newer (nothing written since): the first's advanced by the seconds waited
    later = clock.stamp(Report((result(node, clock=60),)), 1000.0 + JOIN)
    assert later.results[0].clock == when(60 + JOIN) and joining(later.results[0]) == []
    # a newer time written by the cluster wins over the advance
    assert clock.stamp(Report((result(node, clock=JOIN * 3),)), 1001.0).results[0].clock == when(JOIN * 3)
    assert clock.stamp(Report((result(node, clock=None),)), 1001.0).results[0].clock is None


def test_a_node_seen_joining_still_not_ready_once_join_old_is_overdue_one_old_at_the_first_read_never() -> None:
    """The wait remembers the Nodes it saw joining while they stay out of service: one of them no longer young and
    still not Ready holds the wait from converging and stops it (converge.stuck); one not Ready already JOIN old when
    first read (in repair), one Ready in between, or a Ready one still carrying a start-up taint (a row's) never."""
    clock, young_, old = Clock(), unready(created=0), replace(unready(created=-3600), name="g5e0a02")
    first = clock.stamp(Report((result(young_, old, clock=30),)), 1000.0)
    assert [u.awaited for u in first.results[0].unready] == [True, False] and overdue(first.results[0]) == []
    aged = clock.stamp(Report((result(young_, old, clock=JOIN),)), 1001.0)
    assert [u.name for u in overdue(aged.results[0])] == ["g5e0a01"] == [u.name for u in aged.results[0].unready
                                                                          if u.awaited]
    assert pending(aged.results[0]) == ["1 Node not Ready 15m after registering"]
    assert stuck(aged) == ["slurm-cpu-batch: g5e0a01 not Ready 15m after registering, the longest a Node may take "
                           "to join"]
    # the Nodes not read (their step UNKNOWN): remembered as they were
    unread = replace(result(clock=JOIN), steps=(Step("nodes", Status.UNKNOWN, "not read"),))
    clock.stamp(Report((unread,)), 1002.0)
    assert overdue(clock.stamp(Report((result(young_, clock=JOIN),)), 1003.0).results[0]) != []
    # Ready in between: forgotten, out again later it is in repair
    clock.stamp(Report((result(clock=JOIN),)), 1004.0)
    assert overdue(clock.stamp(Report((result(young_, clock=JOIN),)), 1005.0).results[0]) == []
    tainted = replace(unready(created=0, status="True", reason="KubeletReady"), starting=("cilium",))
    fresh = Clock()
    fresh.stamp(Report((result(tainted, clock=30),)), 0.0)
    assert overdue(fresh.stamp(Report((result(tainted, clock=JOIN),)), 1.0).results[0]) == []


# --- both wait forms, against the test API server -----------------------------------------------

def scaled_up(created: tuple[float, float] = (0, 1), ready_since: float | None = None, now: float = 30) -> snapshot.Snapshot:
    """healthy-pool-name after slurm-cpu went from 8 to 10 Nodes: the two new ones registered at T0 + `created` s (each) and
    are NotReady (taints and all, as the node controller keeps them) until `ready_since`; the other Nodes' kubelets
    last posted their status at T0 + `now` s, the newest time the cluster holds. The NodeSet counts the Nodes it can
    use: FEASIBLE and READY 8, or 10 once Ready."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    old = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in old:
        for c in node["status"]["conditions"]:
            c["lastHeartbeatTime"] = at(now)
    template = next(n for n in old if n["metadata"]["labels"].get(POOL) == "slurm-cpu")
    nodes = [_node(template, name, when, ready_since) for name, when in zip(NEW, created, strict=True)]
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    for pool in pools:
        if pool["metadata"]["name"] == "slurm-cpu":
            pool["spec"]["targetNodes"], pool["status"]["currentNodes"] = 10, 10
    pods = list(snap.pods or ())
    count = 8
    if ready_since is not None:
        own = next(p for p in pods if p["spec"].get("nodeName") == template["metadata"]["name"]
                   and p["metadata"]["name"].startswith("slurm-cpu-batch-"))
        pods += [_pod(own, name) for name in NEW]
        count = 10
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    nodeset["status"] |= {k: count for k in ("desiredNumberScheduled", "numberFeasible", "currentNumberScheduled",
                                             "numberReady", "updatedNumberScheduled")}
    return replace(snap, nodes=(*old, *nodes), nodepools=tuple(pools), pods=tuple(pods),
                   nodesets=(nodeset,))


def _node(template: dict, name: str, created: float, ready_since: float | None) -> dict:
    node = copy.deepcopy(template)
    node["metadata"] |= {"name": name, "uid": f"uid-{name}", "creationTimestamp": at(created)}
    node["metadata"]["labels"] |= {"kubernetes.io/hostname": name}
    node["status"]["addresses"] = [{"type": "InternalIP", "address": f"10.177.99.{len(name)}{name[-1]}"},
                                   {"type": "Hostname", "address": name}]
    if ready_since is None:
        node["status"]["conditions"] = [
            {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "lastTransitionTime": at(created + 2),
             "lastHeartbeatTime": at(created + 2),
             "message": "container runtime network not ready: NetworkReady=false"}]
        node["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                                  {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute",
                                   "timeAdded": at(created + 3)}]
    else:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "lastTransitionTime": at(ready_since), "lastHeartbeatTime": at(ready_since)}]
    return node


def _pod(own: dict, node: str) -> dict:
    pod = copy.deepcopy(own)
    pod["metadata"] |= {"name": f"slurm-cpu-batch-{node}", "uid": f"uid-pod-{node}"}
    pod["spec"]["nodeName"] = node
    return pod


FORMS = {"watched": {}, "polling": {"rbac": cluster_role()}}
"""The wait on watches, and polling (a role without watch)."""


def cluster(serve: Callable[..., Any], form: str, clock: float = 30, snap: snapshot.Snapshot | None = None,
            **kwargs: Any) -> Any:
    """`snap` (by default scaled_up(**kwargs), its other kubelets' last heartbeat at T0 + `clock` s) served for the wait
    `form` by a test API server whose clock reads T0 + `clock` s as it starts (its answers' Date): the cluster's time,
    a month behind the machine's."""
    served = scaled_up(now=clock, **kwargs) if snap is None else snap
    return serve(served, skew=when(clock).timestamp() - time.time(), **FORMS[form])


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_timing_out_while_nodes_join_is_warning_in_its_textfile_too(form: str, serve: Callable[..., Any],
                                                                           clock: VirtualClock, tmp_path: Path) -> None:
    """The target still waiting, whose rows are all OK (a joining Node is out of service, as any NotReady one), is
    WARNING in the textfile and the JSON, as the exit code says."""
    cluster(serve, form)
    prom = tmp_path / "s.prom"
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json", "--textfile", str(prom))
    assert (r.code, r.json()["results"][0]["status"]) == (1, "warning"), r.err
    assert "slurm-cpu-batch: 2 Nodes joining" in r.json()["never_converged"]
    assert re.search(r'^sunkcheck_status\{[^}]*name="slurm-cpu-batch"\} 1$', prom.read_text(), re.M), prom.read_text()


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_keeps_waiting_while_new_nodes_join_and_ends_once_they_serve(form: str, serve: Callable[..., Any],
                                                                          clock: VirtualClock) -> None:
    api = cluster(serve, form)
    # at the second sleep the Nodes turn Ready, the NodeSet places its Pods there
    err, _ = wait_through(api, clock, scaled_up(ready_since=90))
    assert "slurm-cpu-batch: 2 Nodes joining" in err and "timed out" not in err


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_timing_out_while_nodes_join_names_them_and_since_when(form: str, serve: Callable[..., Any],
                                                                     clock: VirtualClock) -> None:
    cluster(serve, form)
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert r.code == 1 and r.json()["status"] == "warning"
    assert ("sunkcheck: timed out after 2s: never converged: slurm-cpu-batch: 2 Nodes joining (Nodes joining: "
            "g5e0a01 registered 2026-11-03T10:00:00Z, not Ready (Ready=False: KubeletNotReady); "
            "g5e0a02 registered 2026-11-03T10:00:01Z, not Ready (Ready=False: KubeletNotReady))") in r.err
    assert "g5e0a01 registered 2026-11-03T10:00:00Z" in r.json()["never_converged"]


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_stops_waiting_for_nodes_that_never_become_ready(form: str, serve: Callable[..., Any],
                                                                clock: VirtualClock) -> None:
    """One Node registered before the wait began and never Ready since: waited for until JOIN after it registered (by
    the API server's time, advanced by the seconds waited), then no longer, at that moment rather than at the next
    poll, and the scale-up has not converged: WARNING, never_converged naming it, as a wait timing out is. The
    other NotReady for an hour (in repair): never waited for, nor named."""
    cluster(serve, form, clock=0, created=(-(JOIN - 30), -3600))
    r = run("check", "--wait", "5m", "--interval", "10s", "-o", "json")
    doc = r.json()
    assert (r.code, doc["status"], doc["results"][0]["status"]) == (1, "warning", "warning"), r.err
    assert "slurm-cpu-batch: 1 Node joining" in r.err and 25 <= clock.now <= 30  # less the real seconds it ran
    assert doc["never_converged"] == (
        "slurm-cpu-batch: 1 Node not Ready 15m after registering (Nodes not Ready 15m after registering: g5e0a01 "
        f"registered {at(-(JOIN - 30))}, not Ready (Ready=False: KubeletNotReady))")
    assert r.err.endswith("reads: waiting cannot help: slurm-cpu-batch: g5e0a01 not Ready 15m after registering, "
                          "the longest a Node may take to join\n"), r.err
    assert "timed out" not in r.err and doc["results"][0]["symptoms"] == []  # Node health: no row, as a check says


def one_ready(created: tuple[float, float] = (0, 1), ready_since: float = 90, now: float = 30) -> snapshot.Snapshot:
    """`scaled_up` with g5e0a02 Ready since T0 + `ready_since` s, running its slurmd Pod (the NodeSet counting 9), and
    g5e0a01 still NotReady."""
    joined, served = scaled_up(created, now=now), scaled_up(created, ready_since=ready_since, now=now)
    ready = next(n for n in served.nodes or () if n["metadata"]["name"] == NEW[1])
    [nodeset] = copy.deepcopy(list(joined.nodesets or ()))
    nodeset["status"] |= {k: 9 for k in ("desiredNumberScheduled", "numberFeasible", "currentNumberScheduled",
                                         "numberReady", "updatedNumberScheduled")}
    return replace(joined, nodes=tuple(ready if n["metadata"]["name"] == NEW[1] else n for n in joined.nodes or ()),
                   pods=tuple(p for p in served.pods or () if p["spec"].get("nodeName") != NEW[0]),
                   nodesets=(nodeset,))


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_ends_the_moment_the_last_node_joining_is_ready(form: str, serve: Callable[..., Any],
                                                             clock: VirtualClock) -> None:
    """Two Nodes register NotReady; 5 s in, one turns Ready (and runs its slurmd Pod), the wait still waits for the
    other; 20 s in, it turns Ready too: the wait converges, OK, on that change (within the wait's pause in which it
    came), with no poll more."""
    api = cluster(serve, form)
    loaded: list[float] = []

    def turn_ready() -> None:  # at the sleep that starts at or after each moment
        for moment, state in ((5, one_ready()), (20, scaled_up(ready_since=90)))[len(loaded):]:
            if clock.now >= moment:
                api.state.load(state)
                loaded.append(clock.now)

    clock.on_sleep = turn_ready
    r = run("check", "--wait", "60s", "--interval", "5s", "-o", "json")
    assert (r.code, r.json()["status"], len(loaded)) == (0, "ok", 2), r.err
    assert "slurm-cpu-batch: 2 Nodes joining" in r.err and "slurm-cpu-batch: 1 Node joining" in r.err
    assert clock.now <= loaded[-1] + 5.5, (clock.now, loaded)
    assert r.err.endswith("converged, every count agreeing\n"), r.err


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_names_the_node_that_never_turned_ready_beside_one_that_did(form: str, serve: Callable[..., Any],
                                                                       clock: VirtualClock) -> None:
    """Two Nodes register NotReady during a scale-up; one turns Ready, the other never does: the wait ends JOIN after
    that one registered, not converged, naming it alone. Its rows and steps are what a check of that state says
    (Node health: no row), only its verdict is the wait's."""
    from tests.test_serve import checked

    api = cluster(serve, form, clock=0, created=(-(JOIN - 30), -60))
    clock.on_sleep = lambda: api.state.load(one_ready(created=(-(JOIN - 30), -60), ready_since=5, now=0))
    r = run("check", "--wait", "5m", "--interval", "10s", "-o", "json")
    doc, check = r.json(), checked(api)
    assert (r.code, doc["status"], check["status"]) == (1, "warning", "ok"), r.err
    assert doc["never_converged"].startswith("slurm-cpu-batch: 1 Node not Ready 15m after registering (Nodes not "
                                             "Ready 15m after registering: g5e0a01 registered"), doc["never_converged"]
    assert NEW[1] not in doc["never_converged"] and 25 <= clock.now <= 30
    [waited], [checked_] = doc["results"], check["results"]
    assert [(s["name"], s["status"]) for s in waited["steps"]] == [(s["name"], s["status"]) for s in checked_["steps"]]
    assert waited["symptoms"] == checked_["symptoms"] == []


@pytest.mark.parametrize("form", FORMS)
def test_a_node_long_not_ready_never_holds_a_wait_nor_changes_its_verdict(form: str, serve: Callable[..., Any],
                                                                         clock: VirtualClock) -> None:
    """A Node NotReady since it registered an hour ago (in repair), beside one joining that turns Ready: the wait
    waits for the one joining alone, and ends OK the moment it serves."""
    api = cluster(serve, form, created=(-3600, 0))
    clock.on_sleep = lambda: api.state.load(one_ready(created=(-3600, 0)))
    r = run("check", "--wait", "60s", "--interval", "5s", "-o", "json")
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    assert "slurm-cpu-batch: 1 Node joining" in r.err and "never converged" not in r.json()
    assert re.search(r"converged, every count agreeing; not Ready: g5e0a01 \(1h\)\n", r.err), r.err


HOSTILE = "Kubelet\x1b]52;c;cm0gLXJmIH4K\x07NotReady\u202eydaer"
"""A Ready condition's reason setting the terminal's clipboard (OSC 52) and reversing the text after it."""


def test_a_wait_timing_out_says_what_it_waits_for_inert_in_json_as_on_stderr(serve: Callable[..., Any],
                                                                              clock: VirtualClock) -> None:
    """JSON `never_converged` names Nodes and their Ready reasons, the cluster's text: `jq -r` prints it to a terminal,
    so it holds no escape or bidi control, and reads as the last line on stderr (and -o text) do."""
    snap = scaled_up()
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in nodes:
        if node["metadata"]["name"] in NEW:
            node["status"]["conditions"][0]["reason"] = HOSTILE
    cluster(serve, "watched", snap=replace(snap, nodes=tuple(nodes)))
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    said = r.json()["never_converged"]
    assert "g5e0a01 registered 2026-11-03T10:00:00Z, not Ready (Ready=False: KubeletNotReady?ydaer)" in said, said
    assert not set("\x1b\x07\u202e") & set(said)
    assert f"slurm-cpu-batch: {r.json()['results'][0]['never_converged']}" == said  # the target's, as inert
    assert f"never converged: {said}\n" in r.err
    text = run("check", "--wait", "2s", "--interval", "1s", "-o", "plain")
    assert f"not converged when --wait ended: {said}" in text.out


# --- a kubelet restarted during bootstrap -------------------------------------------------------

def restarted(created: tuple[float, float] = (-240, -239), since: float = 0, now: float = 30) -> snapshot.Snapshot:
    """`scaled_up` with the new Nodes registered 4 minutes before and NotReady again since T0 + `since` s: their
    kubelets restarted (a reboot during bootstrap), so their Ready condition last changed well after their first
    status, as it does for a Node that was Ready once."""
    snap = scaled_up(created, now=now)
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in nodes:
        if node["metadata"]["name"] in NEW:
            node["status"]["conditions"][0]["lastTransitionTime"] = at(since)
    return replace(snap, nodes=tuple(nodes))


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_keeps_waiting_for_young_nodes_whose_kubelet_restarted_while_they_joined(
        form: str, serve: Callable[..., Any], clock: VirtualClock) -> None:
    api = cluster(serve, form, snap=restarted())
    err, polls = wait_through(api, clock, scaled_up(ready_since=90))
    assert "slurm-cpu-batch: 2 Nodes joining" in err and polls >= 2


# --- start-up taints ----------------------------------------------------------------------------

CILIUM = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoSchedule"}
"""Cilium's start-up taint: on a Node from registration until its agent runs there, seconds after the Node is Ready."""


def starting(created: tuple[float, float] = (0, 1), ready_since: float = 20, now: float = 30,
             taint: dict = CILIUM) -> snapshot.Snapshot:
    """`scaled_up` with the new Nodes Ready since T0 + `ready_since` s and still carrying `taint`; the NodeSet does
    not count them yet (FEASIBLE 8)."""
    snap = scaled_up(created, now=now)
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for node in nodes:
        if node["metadata"]["name"] in NEW:
            node["spec"]["taints"] = [taint]
            node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "lastTransitionTime": at(ready_since), "lastHeartbeatTime": at(now)}]
    return replace(snap, nodes=tuple(nodes))


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_keeps_waiting_while_new_nodes_carry_a_startup_taint(form: str, serve: Callable[..., Any],
                                                                    clock: VirtualClock) -> None:
    """Cilium's taint is not one the NodeSet does not tolerate for good: no dead end, and never removed by hand."""
    api = cluster(serve, form, snap=starting())
    # at the second sleep the agents run: the taints go, the NodeSet places its Pods there
    err, _ = wait_through(api, clock, scaled_up(ready_since=90))
    assert "slurm-cpu-batch: 2 Nodes joining" in err and "waiting cannot help" not in err


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_timing_out_names_the_startup_taint_a_ready_node_still_carries(form: str, serve: Callable[..., Any],
                                                                              clock: VirtualClock) -> None:
    cluster(serve, form, snap=starting())
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert r.code == 1, r.err
    assert ("g5e0a01 registered 2026-11-03T10:00:00Z, Ready, carrying node.cilium.io/agent-not-ready=true:NoSchedule "
            "(start-up taint: the Cilium agent removes it once it runs on the Node)") in r.err
    assert "kubectl taint" not in r.out


def read_at(snap: snapshot.Snapshot, seconds: float = 30) -> snapshot.Snapshot:
    """`snap` as a live check reads it, the API server's clock at T0 + `seconds` s (its answers' Date)."""
    return replace(snap, server_time=when(seconds))


def nodeset_symptoms(snap: snapshot.Snapshot) -> dict[str, Any]:
    return {s.id: s for r in diagnose(snap, Target()).results for s in r.symptoms}


@pytest.mark.parametrize("taint", [CILIUM, {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true",
                                            "effect": "NoSchedule"},
                                   {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}])
def test_a_check_while_new_nodes_start_finds_nothing_to_fix(taint: dict) -> None:
    """The Nodes are starting (out of service, as a NotReady one is): no row, no fix removing the taint."""
    report = diagnose(read_at(starting(taint=taint)), Target())
    [result] = report.results
    assert result.symptoms == () and pending(result) == ["2 Nodes joining"]
    assert [u.starting for u in result.unready] == [(nd.removed_by(taint),)] * 2
    assert result.steps[1].summary.startswith("10 Nodes in slurm-cpu: 10 Ready, 10 production, 0 cordoned, 2 starting "
                                           "(a start-up taint); ")


def test_a_startup_taint_left_on_a_node_for_long_says_its_agent_is_not_running_and_never_to_remove_it() -> None:
    """Nodes registered an hour ago, Ready, still carrying Cilium's taint: its agent is not running there. Out of
    service, so no wait waits for them (nor stops at them), but the check says so, with where to look."""
    snap = read_at(starting(created=(-3600, -3599), ready_since=-3000))
    row = nodeset_symptoms(snap)["pool-nodes-unusable"]
    assert ("2/10 Nodes in slurm-cpu: node.cilium.io/agent-not-ready=true:NoSchedule (start-up taint: the Cilium agent "
            "removes it once it runs on the Node), still there 15 minutes or more after the Node registered "
            "(g5e0a01, g5e0a02)") in row.evidence
    assert row.fix == (
        "the Cilium agent has not removed its start-up taint node.cilium.io/agent-not-ready from g5e0a01, g5e0a02: it is "
        "not running there. Never remove the taint by hand (Pods would land before what it waits for works); see why in "
        "the Pods on the Node:\n"
        "kubectl get pods -A -o wide --field-selector spec.nodeName=g5e0a01\n"
        "kubectl get pods -A -o wide --field-selector spec.nodeName=g5e0a02")
    assert row.dead_end is None
    [result] = diagnose(snap, Target()).results
    assert joining(result) == [] and pending(result) == []


@pytest.mark.parametrize("added", [20, 30 + nd.SKEW])  # just put on; its writer's clock ahead, as far as believed
def test_a_startup_taint_put_back_on_an_old_node_is_left_on_only_join_after_it_went_on(added: float) -> None:
    """Nodes registered an hour ago, Ready, whose Cilium agent restarted: its taint is back, NoExecute, with its
    timeAdded. Not left on until JOIN after that time (one ahead of the API server's clock by up to SKEW is believed),
    whatever the Node's age; the target ages then, so serve judges again with no event."""
    snap = starting(created=(-3600, -3599), ready_since=-3000, taint=CILIUM | {"effect": "NoExecute",
                                                                               "timeAdded": at(added)})
    [result] = diagnose(read_at(snap), Target()).results
    assert "pool-nodes-unusable" not in {s.id for s in result.symptoms}
    assert ages_at(result) == when(added + JOIN) and [u.added for u in result.unready] == [(when(added),)] * 2
    assert "pool-nodes-unusable" not in nodeset_symptoms(read_at(snap, added + JOIN - 1))
    row = nodeset_symptoms(read_at(snap, added + JOIN))["pool-nodes-unusable"]
    assert ("2/10 Nodes in slurm-cpu: node.cilium.io/agent-not-ready=true:NoExecute (start-up taint: the Cilium agent "
            "removes it once it runs on the Node), still there 15 minutes or more after it was put on "
            "(g5e0a01, g5e0a02)") in row.evidence


FAR = (datetime.datetime(2099, 1, 1, tzinfo=datetime.UTC) - T0).total_seconds()
"""A timeAdded in 2099, from T0: a hostile writer's, or one whose clock is wrong."""


@pytest.mark.parametrize("added", [31 + nd.SKEW, 3600, FAR])
def test_a_startup_taint_dated_further_ahead_than_believed_is_aged_from_the_nodes_registration(added: float) -> None:
    """A timeAdded more than SKEW ahead of the API server's clock says nothing of when the taint went on: left on
    JOIN after the Node registered, as a taint that says not when. Judged again when the clock comes within SKEW of
    it (believed then: just put on), then JOIN after it."""
    snap = starting(created=(-3600, -3599), ready_since=-3000, taint=CILIUM | {"effect": "NoExecute",
                                                                               "timeAdded": at(added)})
    [result] = diagnose(read_at(snap), Target()).results
    [row] = [s for s in result.symptoms if s.id == "pool-nodes-unusable"]
    assert ("2/10 Nodes in slurm-cpu: node.cilium.io/agent-not-ready=true:NoExecute (start-up taint: the Cilium agent "
            "removes it once it runs on the Node), still there 15 minutes or more after the Node registered "
            "(g5e0a01, g5e0a02)") in row.evidence
    assert ages_at(result) == when(added - nd.SKEW)
    assert "pool-nodes-unusable" not in nodeset_symptoms(read_at(snap, added - nd.SKEW))
    assert "pool-nodes-unusable" in nodeset_symptoms(read_at(snap, added + JOIN))


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_and_serve_report_a_startup_taint_dated_2099_as_a_check_does(form: str, serve: Callable[..., Any],
                                                                            clock: VirtualClock) -> None:
    """A start-up taint dated 2099 on Nodes registered an hour ago: the wait ends reporting it left on, as a check
    does, and serve publishes the same verdict."""
    from tests.test_serve import checked, served, serving, verdict

    snap = starting(created=(-3600, -3599), ready_since=-3000, taint=CILIUM | {"effect": "NoExecute",
                                                                               "timeAdded": at(FAR)})
    api = cluster(serve, form, snap=snap)
    r = run("check", "--wait", "60s", "--interval", "30s", "-o", "json")
    assert [s["id"] for s in r.json()["results"][0]["symptoms"]] == ["pool-nodes-unusable"], r.err
    assert (r.code, verdict(r.json())) == (1, verdict(checked(api)))
    if form == "watched":
        with serving(api) as service:
            assert verdict(served(service)) == verdict(checked(api))


def test_startup_taints_are_the_nodes_state_never_a_hand_taint() -> None:
    node = {"metadata": {"name": "g1"}, "spec": {"taints": [CILIUM, {"key": "team", "effect": "NoSchedule"}]}}
    assert nd.startup_taints(node, []) == [CILIUM]
    assert nd.startup_taints(node, [{"key": CILIUM["key"], "operator": "Exists"}]) == []
    assert not nd.is_user_taint(CILIUM["key"]) and nd.is_user_taint("team")
    assert nd.untolerated_scoping_taints([], node) == [{"key": "team", "effect": "NoSchedule"}]
    ready = {"metadata": {"name": "g1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert nd.unready(ready, []) is None
    assert nd.unready(ready | {"spec": node["spec"]}, []) == Unready("g1", None, "True", "", (nd.removed_by(CILIUM),))


def test_a_startup_taint_the_control_plane_left_on_for_long_is_cks_to_fix() -> None:
    """The cloud controller manager runs in CKS's control plane, not on the Node: no Pod there to look at."""
    taint = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}
    snap = read_at(starting(created=(-3600, -3599), ready_since=-3000, taint=taint))
    row = nodeset_symptoms(snap)["pool-nodes-unusable"]
    assert row.fix == (
        "the cloud controller manager has not removed its start-up taint node.cloudprovider.kubernetes.io/uninitialized "
        "from g5e0a01, g5e0a02 (it does once it has initialized the Node): CKS runs it, ask CoreWeave support. Never "
        "remove the taint by hand (Pods would land before what it waits for works); compare with:\n"
        "kubectl describe node g5e0a01")


# --- time passing with no event -----------------------------------------------------------------

def test_a_target_ages_when_its_first_young_node_turns_join_old() -> None:
    """The moment a judgement changes with no event (converge.ages_at): JOIN after the earliest of the Nodes still
    young registered; nothing ages once none is young, or without the cluster's time."""
    r = result(unready(created=0), replace(unready(created=-60), name="g5e0a02"), unready(created=-3600))
    assert ages_at(r) == when(JOIN - 60) and ages_in(Report((r,))) == JOIN - 90
    at = replace(r, clock=when(JOIN - 60))  # judged again then: one Node fewer joining, the next moment later
    assert [u.name for u in joining(at)] == ["g5e0a01"] and ages_at(at) == when(JOIN)
    assert ages_at(replace(r, clock=when(JOIN))) is None and ages_at(replace(r, clock=None)) is None
    assert ages_in(Report((replace(r, clock=when(JOIN)),))) == math.inf == ages_in(Report(()))


@pytest.mark.parametrize(("ageing", "now", "aged", "wake"), [
    ({}, JOIN, set(), 1.0),  # no Node young: a change is waited for, nothing judged again
    ({"a": JOIN + 0.25, "b": JOIN + 30}, JOIN, set(), 0.25),  # woken as the first Node turns JOIN old
    ({"a": JOIN - 1, "b": JOIN + 30}, JOIN, {"a"}, 1.0),  # aged, not judged yet (the watches moving): no busy loop
    ({"a": JOIN - 1}, None, set(), 1.0),  # no Date from the API server: its time unknown, never the local clock's
])
def test_serve_wakes_when_a_node_turns_join_old_never_in_a_busy_loop(ageing: dict[str, float], now: float | None,
                                                                     aged: set[str], wake: float) -> None:
    from sunkcheck.model import Source
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.loop import Loop

    loop = Loop(Cache(()), Target(), {}, Source("live"), print, clock=lambda: None if now is None else when(now))
    loop.ageing = {("tenant-slurm", name): when(at) for name, at in ageing.items()}
    assert (loop.aged(), loop.wake()) == ({("tenant-slurm", name) for name in aged}, wake)


def test_serve_judges_again_when_a_node_turns_join_old_with_no_event(serve: Callable[..., Any]) -> None:
    """serve judges on changes, but a Node's age changes with none. Two new Nodes, Ready, still carrying Cilium's
    start-up taint, registered 14 min 52 s before the API server's clock: starting, no row. Seconds later, nothing
    changed on the server, they are 15 minutes old: the taint left on is reported and the change logged, as a fresh
    check then says; nothing is young any more, so nothing is judged again."""
    from tests.test_serve import checked, eventually, served, serving, verdict

    api = cluster(serve, "watched", clock=JOIN - 8, snap=starting(created=(0, 0), now=JOIN - 8))
    version, lines = api.state.version, list[str]()
    with serving(api, lines=lines) as service:
        assert (served(service)["status"], service.loop.aged()) == ("ok", frozenset())
        assert service.loop.ageing == {("tenant-slurm", "slurm-cpu-batch"): when(JOIN)}
        doc = eventually(lambda: (d := served(service))["status"] == "warning" and d, timeout=20)
        assert doc, f"never judged again: {served(service)['status']}"
        assert [s["id"] for s in doc["results"][0]["symptoms"]] == ["pool-nodes-unusable"], doc
        assert any("still there 15 minutes or more" in e for e in doc["results"][0]["symptoms"][0]["evidence"])
        assert [line.split(" ", 1)[1] for line in lines if "slurm-cpu-batch" in line][-1] == (
            "NodeSet tenant-slurm/slurm-cpu-batch: ok -> warning; appeared: pool-nodes-unusable")
        assert api.state.version == version  # no object changed: no event
        assert verdict(doc) == verdict(checked(api))
        diagnoses = service.loop.diagnoses
        time.sleep(1.5)
        assert (service.loop.diagnoses, service.loop.ageing) == (diagnoses, {})


def test_a_target_naming_a_node_not_ready_is_judged_again_as_its_minutes_grow() -> None:
    """The nodes step says how long a Node has not been Ready, in whole minutes: its text changes at the next whole
    minute since the Node went down (converge.retold_at), for the Nodes it names only, by the cluster's time."""
    down = replace(unready(created=-3600), down_since=when(-1210))  # 20 min 40 s at the clock (30 s): `for 20m`
    assert retold_at(result(down)) == when(50) == judged_again_at(result(down))
    young = replace(unready(created=-60), down_since=when(-58))  # `for 1m`, the next at 62 s; joining until JOIN - 60
    assert (retold_at(result(young)), judged_again_at(result(young))) == (when(62), when(62))
    assert judged_again_at(result(replace(young, down_since=None))) == when(JOIN - 60)  # no transition: only its age
    ahead = replace(down, down_since=when(45))  # a kubelet's clock ahead: no duration said until a minute past it
    assert retold_at(result(ahead)) == when(105)
    starting = replace(down, status="True", down_since=None)  # Ready, a start-up taint on: no duration said
    assert retold_at(result(starting)) is None and retold_at(result(down, clock=None)) is None
    named = [replace(down, name=f"g{i}", down_since=when(-1210 + i)) for i in range(nd.NAMED)]  # the first named
    assert retold_at(result(*named, replace(down, name="g9", down_since=when(-1215)))) == when(50)


def test_serve_says_how_long_a_node_has_not_been_ready_as_a_check_then_does(serve: Callable[..., Any]) -> None:
    """A Node NotReady for long and quiet (a dead kubelet: the node controller sets Ready=Unknown once): nothing
    changes on the server, yet the nodes step's `for 20m` must read `for 21m` once the API server's clock passes
    the minute, as a fresh check then says; the next minute is waited for then."""
    from tests.test_serve import checked, eventually, served, serving, verdict

    since = 2 + 20 * 60  # the Nodes' Ready transition (2 s after they registered) plus 20 minutes: `for 20m`
    api = cluster(serve, "watched", clock=since + 50, created=(0, 0))
    version = api.state.version
    with serving(api) as service:
        first = served(service)
        assert "g5e0a01 for 20m (Ready=False" in first["results"][0]["steps"][1]["summary"], first
        assert service.loop.ageing == {("tenant-slurm", "slurm-cpu-batch"): when(since + 60)}
        doc = eventually(lambda: "for 21m" in (d := served(service))["results"][0]["steps"][1]["summary"] and d,
                         timeout=20)
        assert doc, f"never judged again: {served(service)['results'][0]['steps'][1]['summary']}"
        assert api.state.version == version  # no object changed: no event
        assert verdict(doc) == verdict(checked(api))
        assert service.loop.ageing == {("tenant-slurm", "slurm-cpu-batch"): when(since + 120)}


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_judges_again_when_a_node_turns_join_old_not_at_its_next_poll(form: str, serve: Callable[..., Any],
                                                                           clock: VirtualClock) -> None:
    """Two Nodes NotReady since they registered 14 min 55 s before the API server's clock: joining, then, 5 s later,
    broken, waited for no more. The wait answers then, with no change, rather than at its next poll (30 s): not
    converged, naming them."""
    cluster(serve, form, clock=JOIN - 5, created=(0, 0))
    r = run("check", "--wait", "60s", "--interval", "30s", "-o", "json")
    assert (r.code, r.json()["status"]) == (1, "warning"), r.err
    assert "g5e0a01, g5e0a02 not Ready 15m after registering" in r.err
    assert "slurm-cpu-batch: 2 Nodes joining" in r.err and clock.now <= 5.5


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_reports_a_startup_taint_left_on_once_the_node_turns_join_old(form: str,
                                                                            serve: Callable[..., Any]) -> None:
    """Ready Nodes 4 s short of 15 minutes still carrying Cilium's start-up taint: the wait waits for them, then, with
    no change, ends reporting the taint left on, within seconds, not at its next poll (60 s). The real clock: the
    API server's advances with it, and so does the Nodes' age as the check reads it."""
    cluster(serve, form, clock=JOIN - 4, snap=starting(created=(0, 0), now=JOIN - 4))
    began = time.monotonic()
    r = run("check", "--wait", "60s", "--interval", "60s", "-o", "json")
    assert [s["id"] for s in r.json()["results"][0]["symptoms"]] == ["pool-nodes-unusable"], r.err
    assert "slurm-cpu-batch: 2 Nodes joining" in r.err and time.monotonic() - began < 20


def test_a_startup_taint_put_back_on_an_old_node_running_a_slurmd_pod_is_its_agent_restarting() -> None:
    """Cilium's agent restarting on a Node long in service puts its taint back, NoExecute: the NodeSet counts the slurmd
    Pod there MISSCHEDULED. The row says the taint is the agent's and lifts once it is ready; no fix tolerates it,
    removes it, drains the Slurm node or deletes the Pod."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    host = next(n for n in nodes if n["metadata"]["labels"].get(POOL) == "slurm-cpu")
    host["spec"]["taints"] = [*host["spec"].get("taints", ()), CILIUM | {"effect": "NoExecute", "timeAdded": at(20)}]
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    nodeset["status"]["numberMisscheduled"] = 1
    for time_read in (None, when(30)):  # a recording that says not when; a live read
        row = nodeset_symptoms(replace(snap, nodes=tuple(nodes), nodesets=(nodeset,), server_time=time_read))["misscheduled"]
        name = host["metadata"]["name"]
        assert (f"on Node {name} (pool slurm-cpu): untolerated node.cilium.io/agent-not-ready=true:NoExecute (start-up "
                "taint: the Cilium agent removes it once it runs on the Node): the Node is starting again (its agent "
                "restarting), not a mismatch") in row.evidence[1]
        assert row.fix.startswith(f"the Pod on Node {name}, refused for a start-up taint put back on its Node (the agent "
                                  "that removes it is restarting): change nothing in the NodeSet or on the Node, the "
                                  "taint lifts once that agent is ready again")
        for never in ("kubectl taint", "tolerations:", "scontrol", "kubectl delete", "restore what changed"):
            assert never not in row.fix


def test_the_nodes_step_names_a_node_not_ready_and_for_how_long_by_the_clusters_time() -> None:
    """A Node NotReady since it registered 45 minutes ago, alone in a healthy pool: no row (Node health, which the
    runbook's table maps to none), but the nodes step names it and how long, by the API server's time."""
    snap = scaled_up(created=(-2700, -2700))
    [result] = diagnose(read_at(snap, 0), Target()).results
    assert result.symptoms == () and result.status.value == "ok"
    assert result.steps[1].summary.endswith("; not Ready: g5e0a01 for 44m (Ready=False: KubeletNotReady), g5e0a02 "
                                            "for 44m (Ready=False: KubeletNotReady)")
    # the kubelet's clock ahead of the cluster's: no duration said; no time known: named alone
    nodes = [copy.deepcopy(n) for n in snap.nodes or ()]
    for n in nodes:
        if n["metadata"]["name"] in NEW:
            n["status"]["conditions"][0]["lastTransitionTime"] = at(600)
    for ahead in (read_at(replace(snap, nodes=tuple(nodes)), 0), replace(snap, server_time=None)):
        [result] = diagnose(ahead, Target()).results
        assert result.steps[1].summary.endswith("; not Ready: g5e0a01 (Ready=False: KubeletNotReady), g5e0a02 "
                                                "(Ready=False: KubeletNotReady)")
    # many: the first three named, the rest counted
    for n in nodes:
        n["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
    [result] = diagnose(read_at(replace(snap, nodes=tuple(nodes)), 0), Target()).results
    assert result.steps[1].summary.endswith("(Ready=Unknown: NodeStatusUnknown) and 7 more")
    assert result.steps[1].summary.count("for ") == 3


# --- a Node Pool whose status runs ahead of its Nodes ----------------------------------------------

def ahead(now: float = 30) -> snapshot.Snapshot:
    """`scaled_up` read before the two new Nodes registered: the pool's status already counts them (CURRENT 10 =
    TARGET 10), 8 Nodes carry its label."""
    snap = scaled_up(now=now)
    return replace(snap, nodes=tuple(n for n in snap.nodes or () if n["metadata"]["name"] not in NEW))


def test_a_pool_counting_nodes_the_cluster_does_not_hold_is_said_with_both_numbers() -> None:
    [result] = diagnose(read_at(ahead()), Target()).results
    assert result.steps[0].summary == ("slurm-cpu: CURRENT 10 = TARGET 10 (cd-gp-a192-genoa); 8 Nodes in the cluster, "
                                       "CURRENT counts 10")
    [row] = result.symptoms
    assert row.id == "pool-below-target" and row.evidence == (
        "Node Pool slurm-cpu: CURRENT 10 of TARGET 10 (cd-gp-a192-genoa), but 8 Nodes in the cluster carry "
        "compute.coreweave.com/node-pool=slurm-cpu",)
    assert "kubectl get nodes -l compute.coreweave.com/node-pool=slurm-cpu" in row.fix and row.dead_end is None
    assert pending(result) == ["pool slurm-cpu Nodes 8/10"]
    # Nodes not read: nothing said of them
    [unread] = diagnose(read_at(replace(ahead(), nodes=None)), Target()).results
    assert "in the cluster" not in unread.steps[0].summary and "pool-below-target" not in {s.id for s in unread.symptoms}


SLURM_CPU_UID = "5145eefa-0da5-d01f-a3a0-f862804a372d"
"""Node Pool slurm-cpu's metadata.uid in healthy-pool-name."""


def lost_label(gone: tuple[str, ...]) -> snapshot.Snapshot:
    """`scaled_up` with g5e0a02 registered but without its pool label, keeping its node-pool-uid label (both of CKS's),
    and the Nodes of `gone` not registered yet."""
    snap = scaled_up()
    nodes = [copy.deepcopy(n) for n in snap.nodes or () if n["metadata"]["name"] not in gone]
    for n in nodes:
        if n["metadata"]["name"] == "g5e0a02":
            del n["metadata"]["labels"][POOL]
            n["metadata"]["labels"]["compute.coreweave.com/node-pool-uid"] = SLURM_CPU_UID
    return replace(snap, nodes=tuple(nodes))


@pytest.mark.parametrize("gone", [(), ("g5e0a01",)])
def test_a_node_that_lost_its_pool_label_is_named_never_taken_for_one_registering(gone: tuple[str, ...]) -> None:
    """CURRENT 10 = TARGET 10 and 9 Nodes carry the pool's label; g5e0a02, read, carries its node-pool-uid label but
    no pool label: named, with CKS's support to restore the label. Where a Node is also missing (g5e0a01 not
    registered), the fix also says what else the count may be and the read that finds a Node without its label."""
    [row] = diagnose(read_at(lost_label(gone)), Target()).results[0].symptoms
    assert row.id == "pool-below-target" and row.title == "Node Pool CURRENT counts Nodes the cluster does not hold"
    assert (f"Node g5e0a02 carries compute.coreweave.com/node-pool-uid={SLURM_CPU_UID} (Node Pool slurm-cpu's) but no "
            "compute.coreweave.com/node-pool label") in row.evidence
    assert row.fix.startswith("g5e0a02 lost its pool label compute.coreweave.com/node-pool=slurm-cpu, which CKS sets")
    assert "ask CoreWeave support to restore it" in row.fix and "kubectl describe node g5e0a02\n" in row.fix
    for never in ("kubectl label", "~20 min", "below TARGET"):
        assert never not in row.fix + row.title
    assert ("kubectl get nodes -l 'compute.coreweave.com/node-pool-uid=" in row.fix) == bool(gone)


def test_a_pool_counting_nodes_a_read_by_its_label_cannot_see_says_one_may_have_lost_it() -> None:
    """A live read lists the pool's Nodes by its label: one that lost it is not read. The fix says it may be that,
    with the read-only command that lists the Nodes naming the pool's uid without its label; its words on a Node
    registering agree with the wait's bound (JOIN)."""
    [row] = diagnose(read_at(ahead()), Target()).results[0].symptoms
    assert row.title == "Node Pool CURRENT counts Nodes the cluster does not hold"
    assert f"a Node still registering (`--wait` waits {JOIN // 60:.0f} minutes for one)" in row.fix
    assert "lost its pool label compute.coreweave.com/node-pool=slurm-cpu (CKS sets it: ask CoreWeave support)" in row.fix
    assert (f"kubectl get nodes -l 'compute.coreweave.com/node-pool-uid={SLURM_CPU_UID},!compute.coreweave.com/"
            "node-pool'") in row.fix
    assert "~20 min" not in row.fix and "kubectl label" not in row.fix


def test_a_wait_waits_for_nodes_a_pool_counts_at_most_join_by_the_clusters_time() -> None:
    clock = Clock()
    [result] = diagnose(read_at(ahead()), Target()).results
    first = clock.stamp(Report((result,)), 1000.0).results[0]
    assert first.uncounted_since == when(30) and pending(first) == ["pool slurm-cpu Nodes 8/10"]
    assert pending(clock.stamp(Report((result,)), 1000.0 + JOIN - 1).results[0]) == ["pool slurm-cpu Nodes 8/10"]
    assert pending(clock.stamp(Report((result,)), 1000.0 + JOIN).results[0]) == []  # past it: the row says it
    # the Nodes there: forgotten, so a later shortfall is timed afresh
    [served] = diagnose(read_at(scaled_up(ready_since=90)), Target()).results
    assert clock.stamp(Report((served,)), 1000.0 + JOIN).results[0].uncounted_since is None
    again = clock.stamp(Report((result,)), 1001.0 + JOIN).results[0]
    assert again.uncounted_since == when(31 + JOIN) and pending(again) == ["pool slurm-cpu Nodes 8/10"]


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_keeps_waiting_while_a_pools_status_runs_ahead_of_its_nodes(form: str, serve: Callable[..., Any],
                                                                         clock: VirtualClock) -> None:
    """A scale-up whose Node Pool counts the new Nodes before they register: the counts of the NodeSet agree on the 8
    Nodes there; the wait goes on until the 10 serve."""
    api = cluster(serve, form, snap=ahead())
    polls = 0

    def register() -> None:
        nonlocal polls
        polls += 1
        if polls == 2:
            api.state.load(scaled_up(ready_since=90))

    clock.on_sleep = register
    r = run("check", "--wait", "60s", "--interval", "5s", "-o", "json")
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    assert "slurm-cpu-batch: pool slurm-cpu Nodes 8/10" in r.err and polls >= 2


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_stops_waiting_for_nodes_a_pool_counts_that_never_register(form: str, serve: Callable[..., Any],
                                                                        clock: VirtualClock) -> None:
    cluster(serve, form, snap=ahead())
    r = run("check", "--wait", "30m", "--interval", "1m", "-o", "json")
    assert (r.code, r.json()["status"]) == (1, "warning"), r.err
    assert [s["id"] for s in r.json()["results"][0]["symptoms"]] == ["pool-below-target"]
    assert "timed out" not in r.err and JOIN <= clock.now < JOIN + 180
