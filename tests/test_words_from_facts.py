"""Fix words said from the cluster's facts: what is left of a NodeSet once it leaves Nodes another NodeSet selects
now (its replicas, its FEASIBLE), and a label another NodeSet's pool never set (not "lost")."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from sunkcheck import snapshot
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target
from tests.conftest import FIXTURES, ROOT

POOL = "compute.coreweave.com/node-pool"
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


def unusable_fix(held: bool) -> str:
    """pool-relabelled-for-new-nodeset, slurm-cpu-batch requiring example.com/ib=true on pools cpu-control-plane
    (which sets it) and slurm-cpu (which never did; slurm-cpu-genoa's when `held`)."""
    snap = snapshot.load(FIXTURES / "pool-relabelled-for-new-nodeset")
    nodesets = copy.deepcopy(list(snap.nodesets or ()))
    batch = next(n for n in nodesets if n["metadata"]["name"] == "slurm-cpu-batch")
    [term] = batch["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    term["matchExpressions"][-1:] = [{"key": "example.com/ib", "operator": "In", "values": ["true"]},
                                     {"key": "compute.coreweave.com/node-pool", "operator": "In",
                                      "values": ["cpu-control-plane", "slurm-cpu"]}]
    batch["status"] |= {"numberFeasible": 2, "desiredNumberScheduled": 2}
    pools = copy.deepcopy(list(snap.nodepools or ()))
    nodes = copy.deepcopy(list(snap.nodes or ()))
    for pool in pools:
        if pool["metadata"]["name"] == "cpu-control-plane":
            pool["spec"]["nodeLabels"] = {"example.com/ib": "true"}
    for node in nodes:
        if node["metadata"]["labels"].get(POOL) == "cpu-control-plane":
            node["metadata"]["labels"]["example.com/ib"] = "true"
    kept = tuple(n for n in nodesets if held or n is batch)
    report = diagnose(replace(snap, nodesets=kept, nodepools=tuple(pools), nodes=tuple(nodes)), BATCH)
    return next(s.fix for r in report.results for s in r.symptoms if s.id == "pool-nodes-unusable")


def test_a_label_another_nodesets_pool_never_set_is_never_said_lost() -> None:
    """slurm-cpu sets no example.com/ib and is slurm-cpu-genoa's: its Nodes lost nothing, the NodeSet names a pool
    that is not its own. Held by no one, the label reads as set by hand and lost, as before."""
    said = ("Node Pool slurm-cpu sets no example.com/ib, so g10689d, g18d510, ga6963c and 1 more never carried it, and "
            "NodeSet tenant-slurm/slurm-cpu-genoa holds it: drop slurm-cpu from this NodeSet's "
            "compute.coreweave.com/node-pool values")
    fix = unusable_fix(held=True)
    assert said in fix.splitlines() and "lost" not in fix, fix
    alone = unusable_fix(held=False)
    assert "restore the labels lost on g10689d, g18d510, ga6963c and 1 more" in alone and "never carried" not in alone


def test_a_hand_label_another_nodeset_selects_its_node_by_is_never_offered_for_removal() -> None:
    """Pool cpu-a: cpua0 carries slurm.example.com/debug=true by hand; NodeSet cpu-debug requires it (its one Node),
    cpu-batch requires its absence (the other three). cpu-batch's pool-nodes-unusable names cpua0's label: removing
    it would empty cpu-debug, so its fix says whose label it is and gives no `kubectl label ... debug-`."""
    snap = snapshot.load(ROOT / "tests" / "data" / "label-carve-out")
    batch = next(r for r in diagnose(snap, Target()).results if r.name == "cpu-batch")
    fix = next(s.fix for s in batch.symptoms if s.id == "pool-nodes-unusable")
    assert "NodeSet tenant-slurm/cpu-debug selects cpua0 by: leave it" in fix, fix
    assert "kubectl label" not in fix and "debug-" not in fix, fix


def test_a_pool_patch_that_would_take_nodes_from_another_nodeset_is_never_printed() -> None:
    """The same carve-out from cpu-debug's side: only cpua0 of cpu-a carries debug=true, by hand. Setting it in the
    pool's nodeLabels would put it on the three Nodes cpu-batch selects by its absence (FEASIBLE 0 for cpu-batch,
    its Pods misscheduled): the fix names cpu-batch and prints no `kubectl patch nodepool`."""
    snap = snapshot.load(ROOT / "tests" / "data" / "label-carve-out")
    debug = next(r for r in diagnose(snap, Target()).results if r.name == "cpu-debug")
    fix = next(s.fix for s in debug.symptoms if s.id == "labels-not-from-pool")
    assert "would take its Nodes from NodeSet tenant-slurm/cpu-batch" in fix, fix
    assert "kubectl patch nodepool" not in fix, fix
