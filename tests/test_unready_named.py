"""What READY still waits for, named: `--wait`'s progress and last lines name a slurmd Pod failing (its reason and
restarts) and count those starting or being created, as they name the Nodes joining; `explain` says a feasible Node
with no slurmd Pod is waiting for it to be created, or has none."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sunkcheck import snapshot
from sunkcheck.converge import waiting
from sunkcheck.pipeline import diagnose, explain
from sunkcheck.render.explain import groups
from sunkcheck.target import Target
from tests.conftest import FIXTURES, RECORDED, Clock, judged, run

READ = RECORDED
"""When slurmd-starting and slurmd-pods-being-created were recorded: their Pods, their Nodes, seconds old."""
LATER = READ + datetime.timedelta(minutes=10)


def waits(name: str, at: datetime.datetime | None = None) -> str:
    snap = snapshot.load(FIXTURES / name)
    return waiting(judged(snap, at) if at else diagnose(snap, Target()).results[0])


def test_the_wait_names_a_crash_looping_slurmd_pod_beside_ready() -> None:
    assert waits("slurmd-not-ready") == ("READY 3/4 (slurmd Pods: slurm-cpu-batch-012-008 CrashLoopBackOff "
                                         "(14 restarts)), Slurm nodes 4/3")


def test_a_live_wait_says_the_crash_looping_pod_in_its_progress_and_last_lines(serve: Callable[..., Any],
                                                                               clock: Clock) -> None:
    serve("slurmd-not-ready")
    r = run("check", "--wait", "2s", "--interval", "1s", "-o", "json")
    said = "READY 3/4 (slurmd Pods: slurm-cpu-batch-012-008 CrashLoopBackOff (14 restarts))"
    assert said in r.json()["never_converged"], r.out
    progress = [line for line in r.err.splitlines() if line.startswith("sunkcheck: waiting (")]
    assert progress and all(said in line for line in progress), r.err
    assert said in r.err.splitlines()[-1], r.err


def test_the_wait_counts_the_slurmd_pods_starting_or_being_created() -> None:
    assert waits("slurmd-starting", READ) == "READY 4/8 (slurmd Pods: 4 starting)"
    assert waits("slurmd-pods-being-created", READ) == "READY 4/8 (slurmd Pods: 4 being created)"


def rows(name: str, at: datetime.datetime) -> dict[str, tuple[str, str]]:
    """Each Node of the NodeSet's pools explain lists: placed, and its reasons."""
    e = explain(replace(snapshot.load(FIXTURES / name), server_time=at, grace_time=at), Target())
    return {row[0]: (row[2], row[3]) for g in groups(e) for row in g.rows}


def test_explain_says_a_feasible_node_waits_for_its_slurmd_pod_or_has_none() -> None:
    young, old = rows("slurmd-pods-being-created", READ), rows("slurmd-pods-being-created", LATER)
    assert young["g118188"] == ("no", "being created") and young["g10689d"] == ("yes", "-"), young
    assert old["g118188"] == ("no", "no slurmd Pod") and old["g10689d"] == ("yes", "-"), old
