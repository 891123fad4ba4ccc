"""A feasible Node the NodeSet's current status does not count (FEASIBLE below sunkcheck's own count), idle past the
grace for creating its slurmd Pod, is slurmd-pods-missing's, though the status agrees with itself; never inside the
grace, nor when the status describes an older spec (nodeset-status-stale's), nor where spec.replicas leaves the Node
out; check, --wait and serve judge alike, and serve judges again when the grace ends."""

from __future__ import annotations

import copy
import datetime
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sunkcheck import snapshot
from sunkcheck.analyze.pods import CREATE_GRACE
from sunkcheck.converge import judged_again_at
from sunkcheck.model import Result, Status
from tests.conftest import FIXTURES, RECORDED, judged, run

READ = RECORDED
"""When both cases were recorded (their meta.json)."""
YET_ENDS = datetime.datetime(2026, 11, 29, 9, 12, 20, tzinfo=datetime.UTC) + datetime.timedelta(seconds=CREATE_GRACE)
"""The end of the grace of slurmd-pods-not-counted-yet's new Node, Ready 20 s before the read."""
IDLE = "g307b8b"


def load(case: str) -> snapshot.Snapshot:
    return snapshot.load(FIXTURES / case)



def ids(result: Result) -> list[str]:
    return [s.id for s in result.symptoms]


def with_nodeset(snap: snapshot.Snapshot, change: Callable[[dict], None]) -> snapshot.Snapshot:
    nodeset = copy.deepcopy((snap.nodesets or ())[0])
    change(nodeset)
    return replace(snap, nodesets=(nodeset,))


def test_a_node_the_status_does_not_count_idle_past_the_grace_is_missing_its_pod() -> None:
    result = judged(load("slurmd-pods-missing-not-counted"))
    assert (ids(result), result.status) == (["slurmd-pods-missing"], Status.WARNING)
    [row] = result.symptoms
    assert row.evidence[:2] == (
        "FEASIBLE 6 (DESIRED 6, CURRENT 6), but sunkcheck finds 7 feasible Nodes: the status does not count 1 of them",
        f"{IDLE} has been Ready for more than 2m and runs no slurmd Pod")
    assert row.fix.endswith("kubectl describe nodeset -n tenant-slurm slurm-cpu-batch\n"
                            "sunkcheck explain -n tenant-slurm --nodeset slurm-cpu-batch")


def test_inside_the_grace_no_row_and_judged_again_when_it_ends() -> None:
    snap = load("slurmd-pods-not-counted-yet")
    result = judged(snap)
    assert (ids(result), result.starting_until) == ([], (YET_ENDS,))
    assert judged_again_at(result) == YET_ENDS  # serve and --wait judge again then, with no event
    assert ids(judged(snap, YET_ENDS - datetime.timedelta(seconds=1))) == []
    assert ids(judged(snap, YET_ENDS)) == ["slurmd-pods-missing"]


def test_a_status_for_an_older_spec_is_nodeset_status_stales() -> None:
    def older(nodeset: dict) -> None:
        nodeset["metadata"]["generation"] = nodeset["status"]["observedGeneration"] + 1

    assert ids(judged(with_nodeset(load("slurmd-pods-missing-not-counted"), older))) == ["nodeset-status-stale"]


def test_replicas_leaving_the_node_out_or_no_ready_time_is_no_finding() -> None:
    def capped(nodeset: dict) -> None:
        nodeset["spec"]["replicas"] = 6

    snap = load("slurmd-pods-missing-not-counted")
    assert ids(judged(with_nodeset(snap, capped))) == []
    # its Ready transition time unknown, the Node is never judged idle past the grace
    undated = replace(snap, server_time=None, grace_time=None, nodes=tuple(_undated(n) for n in snap.nodes or ()))
    assert ids(judged(undated, None)) == []


def _undated(node: dict) -> dict:
    node = copy.deepcopy(node)
    for cond in node["status"]["conditions"]:
        cond.pop("lastTransitionTime", None)
        cond.pop("lastHeartbeatTime", None)
    node["metadata"].pop("creationTimestamp", None)
    return node


def test_check_wait_and_serve_agree(serve: Callable[..., Any]) -> None:
    from tests.test_serve import checked, served, serving, verdict

    api = serve("slurmd-pods-missing-not-counted", skew=READ.timestamp() - time.time())
    doc = run("check", "-o", "json").json()
    assert [s["id"] for s in doc["results"][0]["symptoms"]] == ["slurmd-pods-missing"], doc
    waited = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert (waited.code, [s["id"] for s in waited.json()["results"][0]["symptoms"]]) == (1, ["slurmd-pods-missing"])
    with serving(api) as service:
        assert verdict(served(service)) == verdict(checked(api)) == verdict(doc)
