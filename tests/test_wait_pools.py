"""`--wait` judged pool by pool, its textfile after a partial outage, and the Nodes not Ready it converges beside."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sunkcheck.converge import not_ready_at_end, pending, progress
from sunkcheck.model import PoolCounts, Report, Result, Status, Step, Unready
from sunkcheck.render.prometheus import render_textfile
from tests.conftest import Clock, run
from tests.test_joining import FORMS, cluster, when
from tests.test_wait_watched import starting


def pooled(*sizes: tuple[str, int, int]) -> Result:
    """A NodeSet on pools of (name, TARGET, CURRENT), its nodepool step counting their sums."""
    total = PoolCounts(sum(t for _, t, _ in sizes), sum(c for _, _, c in sizes))
    return Result("NodeSet", "slurm", "gpu", tuple(n for n, _, _ in sizes),
                  (Step("nodepool", Status.OK, "", total),), (),
                  pool_sizes=tuple((n, PoolCounts(t, c)) for n, t, c in sizes))


def test_a_pool_beyond_its_target_makes_up_for_no_other_pools_shortfall() -> None:
    short = pooled(("gpu-a", 3, 4), ("gpu-b", 3, 2))  # 6/6 summed
    assert pending(short) == ["pool CURRENT 2/3 (gpu-b)"]
    assert progress(Report((short,))) == "gpu: pool CURRENT 2/3 (gpu-b)"
    assert pending(pooled(("gpu-a", 3, 4), ("gpu-b", 3, 3))) == []
    assert pending(pooled(("gpu-a", 3, 2))) == ["pool CURRENT 2/3"]  # one pool: no need to name it


def test_without_the_pools_own_counts_their_sums_are_judged() -> None:
    result = Result("NodeSet", "slurm", "gpu", ("gpu-a",), (Step("nodepool", Status.OK, "", PoolCounts(4, 3)),), ())
    assert pending(result) == ["pool CURRENT 3/4"]


def test_a_wait_ending_while_a_source_fails_writes_sunkcheck_up_0() -> None:
    """A --wait whose Node watch was failing at its end: its other steps known, the textfile still says it is not
    up, as serve's does for a source failing."""
    result = pooled(("gpu-a", 3, 3))
    assert "sunkcheck_up 1" in render_textfile(Report((result,), ("nodes: not read",)), 0.0)
    assert "sunkcheck_up 0" in render_textfile(Report((result,), ("nodes: not read",), failing=("nodes",)), 0.0)


def test_the_nodes_not_ready_are_named_first_three_then_counted() -> None:
    clock = when(0)
    down = [Unready(f"g{i}", when(-60 * i), "False", "KubeletNotReady", down_since=when(-60 * i)) for i in range(1, 6)]
    ready = Unready("gr", when(-5), "True", "", starting=("a-start-up-taint",))
    result = Result("NodeSet", "slurm", "gpu", (), (), (), unready=(*down, ready), clock=clock)
    assert not_ready_at_end(Report((result,))) == "g1 (1m), g2 (2m), g3 (3m) and 2 more"
    assert not_ready_at_end(Report((pooled(("gpu-a", 3, 3)),))) == ""


@pytest.mark.parametrize("form", FORMS)
def test_a_wait_converging_beside_nodes_long_not_ready_names_them_in_its_last_line(
        form: str, serve: Callable[..., Any], clock: Clock) -> None:
    """Two Nodes NotReady since they registered one and two hours ago (in repair), never seen joining: the wait
    converges at once, OK, and its last line names both, Node health being no row."""
    cluster(serve, form, clock=0, created=(-3600, -7200))
    r = run("check", "--wait", "5m", "--interval", "10s", "-o", "json")
    assert (r.code, r.json()["status"], clock.now) == (0, "ok", 0), r.err
    assert re.search(r"returned at the first read: converged, every count agreeing; not Ready: g5e0a01 \(59m\), "
                     r"g5e0a02 \(1h59m\)\n", r.err), r.err


def test_a_watched_wait_ending_while_the_nodes_watch_fails_is_not_up(serve: Callable[..., Any], tmp_path: Path) -> None:
    """The Nodes' watch failing at the end, the NodeSets still read: the steps the Nodes feed are UNKNOWN, the others
    stand, and the textfile says sunkcheck_up 0 (exit 3), as serve's does for a source failing."""
    api = serve(starting())

    def nodes_fail() -> None:
        api.faults.errors["nodes"] = 10**6  # every read of the Nodes answered 500 from now on
        api.drop_watches()

    threading.Timer(1.0, nodes_fail).start()
    prom = tmp_path / "s.prom"
    r = run("check", "--wait", "4s", "--interval", "1s", "-o", "json", "--textfile", str(prom))
    document = r.json()
    assert r.code == 3 and any(e.startswith("nodes: not read at the end") for e in document["errors"]), r.err
    steps = {s["name"]: s["status"] for s in document["results"][0]["steps"]}
    # the NodeSet's step counts the pool's Nodes too: UNKNOWN, its own status columns still said
    assert steps["nodes"] == steps["nodeset"] == "unknown" and steps["nodepool"] != "unknown", steps
    assert "desired" in document["results"][0]["steps"][3]["counts"], document["results"][0]["steps"]
    assert "sunkcheck_up 0" in prom.read_text(), prom.read_text()
