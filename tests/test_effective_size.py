"""DESIRED is `spec.replicas` when set, and nothing is missing while CURRENT and READY equal the effective size, the
lower of DESIRED and FEASIBLE (as the runbook counts it): `replicas: 1000` on an 8-Node pool, or a pool scaled down below
a fixed `replicas`, is OK everywhere a cron job or a monitor reads it — no row, the Nagios line, the textfile, --wait."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from sunkcheck.converge import pending
from sunkcheck.model import NodeSetCounts, Result, Status, Step
from tests.conftest import FIXTURES, Clock, run
from tests.kubeapi import FakeApi
from tests.test_unattended import AT_ONCE

# replicas 1000 on 8 Nodes, on an 18-Node rack; replicas 8 on a pool scaled down to 6 Nodes: every Pod Ready
ABOVE_FEASIBLE = ["healthy-replicas-1000", "healthy-racks", "healthy-pool-scaled-below-replicas"]


@pytest.mark.parametrize("case", ABOVE_FEASIBLE)
def test_nagios_says_ok(case: str) -> None:
    r = run("check", "--snapshot", str(FIXTURES / case), "-o", "nagios")
    assert r.code == 0, r.out
    assert r.out.startswith("SUNKCHECK OK - 1 NodeSet(s) bound as intended |"), r.out


@pytest.mark.parametrize("case", ABOVE_FEASIBLE)
def test_textfile_status_is_ok(case: str, tmp_path: Path) -> None:
    path = tmp_path / "sunkcheck.prom"
    assert run("check", "--snapshot", str(FIXTURES / case), "--textfile", str(path), "-o", "json").code == 0
    text = path.read_text()
    assert re.findall(r"^sunkcheck_status\{.*\} (\d)$", text, re.M) == ["0"], text
    assert "sunkcheck_symptom{" not in text


@pytest.mark.parametrize("case", ABOVE_FEASIBLE)
def test_wait_converges_at_the_first_poll(case: str, serve: Callable[..., FakeApi], clock: Clock) -> None:
    api = serve(case)
    r = run("check", "--wait", "5s", "--interval", "1s", "-o", "json")
    assert (r.code, r.json()["status"], r.err) == (0, "ok", AT_ONCE)
    assert len([q for q in api.log if q.path.endswith("/nodesets") and "watch" not in q.query]) == 1 and clock.now == 0


def _pending(desired: int, feasible: int, ready: int, replicas: int | None, pool_nodes: int = 8,
             in_repair: int = 0) -> list[str]:
    counts = NodeSetCounts(desired, feasible, ready, ready, ready, 0, 0, 0, pool_nodes, in_repair, 0, feasible,
                           replicas=replicas)
    return pending(Result("NodeSet", "tenant-slurm", "slurm-cpu-batch", ("slurm-cpu",),
                          (Step("nodeset", Status.OK, "", counts),), ()))


def test_the_effective_size_is_what_converges() -> None:
    assert _pending(1000, 8, 8, 1000) == []
    assert _pending(1000, 8, 7, 1000) == ["READY 7/8"]  # one Pod of the effective size still starting
    assert _pending(8, 6, 6, 8, pool_nodes=6) == []  # the pool shrank below replicas
    assert _pending(4, 8, 4, 4) == []  # a cap below FEASIBLE: replicas-cap's to say, not --wait's
    assert _pending(4, 8, 4, None) == ["DESIRED 4/8"]  # without replicas, DESIRED follows FEASIBLE
    assert _pending(1000, 7, 8, 1000, in_repair=1) == []  # a Node cordoned for repair keeps its Pod
    assert _pending(1000, 7, 9, 1000, in_repair=1) == ["READY 9/7"]


def test_nagios_perfdata_leaves_replicas_unbounded() -> None:
    """DESIRED 1000 is no count of the 8-Node pool: a maximum of 8 beside it would be a value above its own bound."""
    first = run("check", "--snapshot", str(FIXTURES / "healthy-replicas-1000"), "-o", "nagios").out.splitlines()[0]
    assert "'slurm-cpu-batch desired'=1000;;;0; " in first and "'slurm-cpu-batch ready'=8;;;0;8" in first


def test_nagios_perfdata_bounds_replicas_within_the_pool() -> None:
    """replicas 4 on the 8-Node pool: DESIRED 4 carries the pool's bound, as the other counts do."""
    first = run("check", "--snapshot", str(FIXTURES / "replicas-cap"), "-o", "nagios").out.splitlines()[0]
    assert "'slurm-cpu-batch desired'=4;;;0;8 " in first and "'slurm-cpu-batch feasible'=8;;;0;8" in first


def test_a_pod_short_of_the_effective_size_is_still_missing(tmp_path: Path) -> None:
    """replicas 1000 bounds nothing: the 8-Node pool with 7 slurmd Pods misses one."""
    import json
    import shutil

    case = tmp_path / "short"
    shutil.copytree(FIXTURES / "healthy-replicas-1000", case)
    pods = json.loads((case / "pods.json").read_text())
    gone = next(p for p in pods["items"] if p["metadata"]["name"].startswith("slurm-cpu-batch-"))
    pods["items"].remove(gone)
    (case / "pods.json").write_text(json.dumps(pods))
    nodesets = json.loads((case / "nodesets.json").read_text())
    nodesets["items"][0]["status"] |= {"currentNumberScheduled": 7, "numberReady": 7, "updatedNumberScheduled": 7,
                                       "numberUnavailable": 1}
    (case / "nodesets.json").write_text(json.dumps(nodesets))
    doc = run("check", "--snapshot", str(case), "-o", "json").json()
    [row] = doc["results"][0]["symptoms"]
    assert row["id"] == "slurmd-pods-missing" and "DESIRED 1000, FEASIBLE 8, CURRENT 7" in row["evidence"][0]
    assert f"1 feasible Node(s) run no slurmd Pod: {gone['spec']['nodeName']}" in row["evidence"]
