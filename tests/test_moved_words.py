"""What the misscheduled fix says is left of a NodeSet once it leaves Nodes another NodeSet selects now: from the
NodeSet's own facts (its replicas, its FEASIBLE), never a scale-down of a NodeSet without replicas."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES

BATCH = Target(nodeset="slurm-cpu-batch", namespace="tenant-slurm")


def misscheduled_fix(replicas: int | None, feasible: int) -> str:
    """pool-relabelled-for-new-nodeset, slurm-cpu-batch with `replicas` (None: unset) and its status counting
    `feasible` Nodes it still selects beside the four that moved to slurm-cpu-genoa."""
    snap = snapshot.load(FIXTURES / "pool-relabelled-for-new-nodeset")
    nodesets = copy.deepcopy(list(snap.nodesets or ()))
    batch = next(n for n in nodesets if n["metadata"]["name"] == "slurm-cpu-batch")
    if replicas is not None:
        batch["spec"]["replicas"] = replicas
    batch["status"] |= {"numberFeasible": feasible, "desiredNumberScheduled": feasible if replicas is None else replicas}
    report = diagnose(replace(snap, nodesets=tuple(nodesets)), BATCH)
    return next(s.fix for r in report.results for s in r.symptoms if s.id == "misscheduled")


@pytest.mark.parametrize(("replicas", "feasible", "said"), [
    (None, 2, "then nothing is left to scale: the NodeSet sets no replicas, so it keeps a slurmd Pod on each of the "
              "2 Nodes it selects (FEASIBLE 2) and none on the moved ones"),
    (6, 2, "then lower replicas in the node definition behind NodeSet slurm-cpu-batch from 6 to FEASIBLE 2, the Nodes "
           "it selects now"),
    (2, 2, "then nothing is left to scale: replicas 2 is within the 2 Nodes it selects (FEASIBLE)"),
    (None, 0, "then remove it from the values if it is retired (it selects no other Node now)")])
def test_what_is_left_after_the_move_is_said_from_the_nodesets_facts(replicas: int | None, feasible: int,
                                                                      said: str) -> None:
    """Without replicas the NodeSet runs one slurmd Pod per Node it selects: nothing to scale (a `kubectl scale` would
    set a replicas that caps it later); with replicas above FEASIBLE, lower it; selecting nothing, it may be retired."""
    fix = misscheduled_fix(replicas, feasible)
    assert said in fix.splitlines(), fix
    assert "scale this NodeSet down" not in fix
