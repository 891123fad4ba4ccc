"""`--wait` after a pool scale-down: the Nodes and their slurmd Pods are gone before the NodeSet's status catches up
(FEASIBLE, DESIRED, CURRENT still count them). The counts then agree with each other, not with the cluster: the wait
keeps waiting while CURRENT counts more Pods than exist, in both wait forms, and slurmd-pods-missing says the
status is catching up, without ceasing to fire where Pods are really missing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sunkcheck import snapshot
from sunkcheck.model import Symptom
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, Clock, run, wait_through
from tests.test_joining import FORMS

REMOVED = ("g307b8b", "gc80620")
"""Two of slurm-cpu's 8 Nodes (healthy-pool-name) that a scale-down to 6 removes."""
STATUS = ("desiredNumberScheduled", "numberFeasible", "currentNumberScheduled", "numberReady", "updatedNumberScheduled")


def scaled_down(status: int = 8, nodes_gone: bool = True) -> snapshot.Snapshot:
    """healthy-pool-name after slurm-cpu went from 8 Nodes to 6: REMOVED's slurmd Pods are gone, and with
    `nodes_gone` their Nodes too (else only the Pods were deleted); the NodeSet's status counts `status` (8: not
    caught up yet)."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    pods = tuple(p for p in snap.pods or () if not (p["spec"].get("nodeName") in REMOVED
                                                    and p["metadata"]["name"].startswith("slurm-cpu-batch-")))
    if not nodes_gone:
        return replace(snap, pods=pods)
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    for pool in pools:
        if pool["metadata"]["name"] == "slurm-cpu":
            pool["spec"]["targetNodes"], pool["status"]["currentNodes"] = 6, 6
    [nodeset] = copy.deepcopy(list(snap.nodesets or ()))
    nodeset["status"] |= dict.fromkeys(STATUS, status)
    return replace(snap, nodes=tuple(n for n in snap.nodes or () if n["metadata"]["name"] not in REMOVED),
                   nodepools=tuple(pools), pods=pods, nodesets=(nodeset,))


def pods_missing(snap: snapshot.Snapshot) -> Symptom | None:
    return next((s for r in diagnose(snap, Target()).results for s in r.symptoms if s.id == "slurmd-pods-missing"),
                None)


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_keeps_waiting_until_the_status_stops_counting_the_removed_nodes(form: str, serve: Callable[..., Any],
                                                                               clock: Clock) -> None:
    api = serve(scaled_down(), **FORMS[form])
    # at the second sleep the controller counts the Nodes that remain
    err, _ = wait_through(api, clock, scaled_down(status=6))
    assert "slurm-cpu-batch: CURRENT 8/6" in err and "timed out" not in err


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_timing_out_on_a_status_that_never_catches_up_says_which_count(form: str, serve: Callable[..., Any],
                                                                             clock: Clock) -> None:
    serve(scaled_down(), **FORMS[form])
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    assert r.code == 1 and r.json()["status"] == "warning"
    assert "sunkcheck: timed out after 2s: never converged: slurm-cpu-batch: CURRENT 8/6" in r.err, r.err


def replacing(target: int = 7) -> snapshot.Snapshot:
    """healthy-pool-name with slurm-cpu's TARGET lowered to `target` while its 8 Nodes are still there (CURRENT 8): a
    scale-down, or a Node replaced, under way. A check finds it OK."""
    snap = snapshot.load(FIXTURES / "healthy-pool-name")
    pools = [copy.deepcopy(p) for p in snap.nodepools or ()]
    for pool in pools:
        if pool["metadata"]["name"] == "slurm-cpu":
            pool["spec"]["targetNodes"] = target
    return replace(snap, nodepools=tuple(pools))


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_on_a_pool_holding_more_nodes_than_its_target_converges_at_once(
        form: str, serve: Callable[..., Any], clock: Clock, tmp_path: Path) -> None:
    """CURRENT above TARGET is the capacity asked for delivered; the textfile's status agrees with the exit code."""
    serve(replacing(), **FORMS[form])
    prom = tmp_path / "s.prom"
    r = run("check", "--wait", "60s", "--interval", "5s", "-o", "json", "--textfile", str(prom))
    assert (r.code, r.json()["status"]) == (0, "ok"), r.err
    assert "timed out" not in r.err and "pool CURRENT" not in r.err, r.err
    assert "sunkcheck_up 1" in prom.read_text() and "slurm-cpu-batch\"} 0" in prom.read_text()


def test_a_check_while_the_status_catches_up_says_so() -> None:
    symptom = pods_missing(scaled_down())
    assert symptom is not None
    assert ("CURRENT 8 counts more slurmd Pods than the 6 that exist: the status has not caught up with Pods removed "
            "(with their Nodes by a scale-down, or deleted)") in symptom.evidence
    assert symptom.fix.startswith("a status catching up with Pods removed (a scale-down) clears by itself")


def test_pods_missing_on_nodes_that_remain_are_still_missing() -> None:
    """Pods deleted while their Nodes remain: the row fires as ever (the status catching up is said beside it)."""
    symptom = pods_missing(scaled_down(nodes_gone=False))
    assert symptom is not None
    assert "DESIRED 8, CURRENT 8, but slurmd Pods run on 6 Node(s)" in symptom.evidence
    assert pods_missing(scaled_down(status=6)) is None  # caught up: nothing is missing
