"""What a DaemonSet's report says in words: SUNK's lock taint counted as Nodes busy with jobs, and the pools it names."""

from __future__ import annotations

from dataclasses import replace

from sunkcheck import snapshot
from sunkcheck.model import Status
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target
from tests.conftest import FIXTURES

DCGM = Target(daemonset="dcgm-exporter", namespace="monitoring")
LOCK = {"key": "sunk.coreweave.com/lock", "value": "true", "effect": "NoExecute"}


def tainted(snap: Snapshot, pool: str, taint: dict, count: int) -> Snapshot:
    """`snap` with `taint` on the first `count` Nodes of `pool`."""
    assert snap.nodes is not None
    names = [n["metadata"]["name"] for n in snap.nodes
             if n["metadata"]["labels"].get("compute.coreweave.com/node-pool") == pool][:count]
    return replace(snap, nodes=tuple(n | {"spec": n["spec"] | {"taints": [*n["spec"].get("taints", []), taint]}}
                                     if n["metadata"]["name"] in names else n for n in snap.nodes))


def test_sunks_lock_taint_alone_is_no_drift_and_the_nodes_step_counts_the_locked_nodes() -> None:
    """The GPU exporter tolerates the pool's taint but not SUNK's lock on the two Nodes running Slurm jobs: the lock
    comes and goes with the jobs, so an agent that does not tolerate it stays off them by design; no row, no failure,
    the nodes step says how many are locked now. Another taint beside the lock still fires, for that taint alone."""
    locked = tainted(snapshot.load(FIXTURES / "ds-healthy"), "slurm-gpu", LOCK, 2)
    [result] = diagnose(locked, DCGM).results
    assert (result.symptoms, result.status) == ((), Status.OK), result.symptoms
    nodes = next(s for s in result.steps if s.name == "nodes")
    assert nodes.status is Status.OK and "1 eligible after taints; 2 locked by Slurm jobs now" in nodes.summary, nodes
    maintenance = {"key": "team.example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    [both] = diagnose(tainted(locked, "slurm-gpu", maintenance, 1), DCGM).results
    [found] = both.symptoms
    assert found.id == "daemonset-untolerated-taint" and both.status is Status.WARNING
    [evidence] = found.evidence
    assert evidence.startswith("1 selected Node(s) (") and "team.example.com/maintenance=true:NoSchedule" in evidence
    assert "lock" not in evidence and "lock" not in found.fix, found
    assert "- key: team.example.com/maintenance\n  operator: Exists\n  effect: NoSchedule" in found.fix, found.fix
    assert "1 locked by Slurm jobs now" in next(s.summary for s in both.steps if s.name == "nodes")
    [other] = diagnose(snapshot.load(FIXTURES / "ds-untolerated-taint"), DCGM).results[0].symptoms
    assert "lock" not in other.fix and "lock" not in " ".join(other.evidence), other


def test_a_daemonset_every_node_refuses_names_the_pools_of_the_nodes_it_selects() -> None:
    """SUNK's lock on all 3 GPU Nodes: the exporter is eligible for none. Its report names the pool of the Nodes its
    scope selects, saying it is eligible for none, never a bare `-`; a scope that selects nothing says so."""
    [locked] = diagnose(tainted(snapshot.load(FIXTURES / "ds-healthy"), "slurm-gpu", LOCK, 3), DCGM).results
    assert locked.pools == ("slurm-gpu",), locked.pools
    assert locked.pool_source == "the pools of the Nodes its scope selects: it is eligible for none"
    [nothing] = diagnose(snapshot.load(FIXTURES / "ds-selector-matches-nothing"), DCGM).results
    assert nothing.pools == () and nothing.pool_source.startswith("not found: its scope"), nothing.pool_source
    assert "selects no Node" in nothing.pool_source
    [healthy] = diagnose(snapshot.load(FIXTURES / "ds-healthy"), DCGM).results
    assert (healthy.pools, healthy.pool_source) == (("slurm-gpu",), "the pools of the Nodes it is eligible for")
    snap = snapshot.load(FIXTURES / "ds-healthy")
    assert snap.nodes is not None
    unpooled = tuple(n | {"metadata": n["metadata"] | {"labels": {k: v for k, v in n["metadata"]["labels"].items()
                                                                   if k != "compute.coreweave.com/node-pool"}}}
                     for n in snap.nodes)
    [bare] = diagnose(replace(snap, nodes=unpooled), DCGM).results
    assert (bare.pools, bare.pool_source) == ((), "not found: none of the Nodes it is eligible for (3) is in a Node Pool")


def test_a_taint_set_by_hand_is_removed_first_and_tolerated_only_as_the_alternative() -> None:
    """A taint in no Node Pool's nodeTaints, set by hand on GPU Nodes, keeps the exporter off them: the DaemonSet's
    fix says it was set by hand and removes it first (with whoever set it), the way the NodeSet rows do, a toleration
    only as the alternative. A taint the pool sets, or one it may set (the pools not read), stays tolerated, never
    removed (CKS stamps it back)."""
    bad = {"key": "acme.io/bad-hca", "value": "true", "effect": "NoExecute"}
    [result] = diagnose(tainted(snapshot.load(FIXTURES / "ds-healthy"), "slurm-gpu", bad, 1), DCGM).results
    [found] = result.symptoms
    assert found.id == "daemonset-untolerated-taint", found
    removal, alternative = found.fix.split("\nor, if the agent must run there while the taint stays, tolerate it: ")
    assert "acme.io/bad-hca=true:NoExecute, set by hand (no Node Pool sets it in its nodeTaints): remove it (check first with " \
           "whoever set the taint" in removal, removal
    assert removal.endswith(":\nkubectl taint node ga67905 acme.io/bad-hca:NoExecute-"), removal
    assert "- key: acme.io/bad-hca\n  operator: Exists\n  effect: NoExecute" in alternative, alternative
    # the Node Pools not read: whether a pool sets the taint is unknown, so it is tolerated, never removed
    [unread] = diagnose(replace(tainted(snapshot.load(FIXTURES / "ds-healthy"), "slurm-gpu", bad, 1), nodepools=None),
                        DCGM).results[0].symptoms
    assert unread.fix.startswith("tolerate the taint in the Pod template") and "kubectl taint" not in unread.fix, unread
    [pooled] = diagnose(snapshot.load(FIXTURES / "ds-untolerated-taint"), DCGM).results[0].symptoms
    assert pooled.fix.startswith("tolerate the taint in the Pod template") and "kubectl taint" not in pooled.fix, pooled
