"""One definition of each predicate: pool selection, a Node out of service and the Node behind a Slurm node are
judged as the feasibility engine judges them, and an ambiguous answer is reported as such, never guessed."""

from __future__ import annotations

import copy
from dataclasses import replace

from sunkcheck import snapshot
from sunkcheck.analyze.binding import analyze
from sunkcheck.analyze.discovery import discover_pools
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.model import NodeSetCounts
from sunkcheck.objects import name
from sunkcheck.pipeline import diagnose
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target
from tests.conftest import FIXTURES


def nodes_of(snap: Snapshot) -> tuple[dict, ...]:
    assert snap.nodes is not None
    return snap.nodes


def nodeset_of(snap: Snapshot) -> dict:
    assert snap.nodesets is not None
    return snap.nodesets[0]


def at_ip(node: dict, node_name: str, ip: str) -> dict:
    """A copy of the Node named `node_name` at InternalIP `ip`."""
    return node | {"metadata": node["metadata"] | {"name": node_name},
                   "status": node["status"] | {"addresses": [{"type": "InternalIP", "address": ip}]}}


def test_two_nodes_sharing_an_ip_tail_leave_the_slurm_node_ambiguous_never_guessed() -> None:
    """Slurm node slurm-cpu-batch-013-077 has no slurmd Pod; Nodes of two subnets end in .13.77: either may be it,
    and the evidence names both instead of the first by name."""
    snap = snapshot.load(FIXTURES / "slurm-count-mismatch")
    pool_node = next(n for n in nodes_of(snap) if name(n) == "g18d510")
    twins = (at_ip(pool_node, "ga-twin", "10.178.13.77"), at_ip(pool_node, "gb-twin", "10.179.13.77"))
    snap = replace(snap, nodes=nodes_of(snap) + twins)
    b = analyze(Cluster.of(snap), nodeset_of(snap))
    assert b.kube_nodes_of("slurm-cpu-batch-013-077") == ("ga-twin", "gb-twin")
    found = next(s for s in diagnose(snap, Target()).results[0].symptoms if s.id == "slurm-node-count-mismatch")
    assert ("Slurm nodes with no slurmd Pod: slurm-cpu-batch-013-077 (ambiguous: its IP tail matches Nodes ga-twin "
            "(pool slurm-cpu), gb-twin (pool slurm-cpu))") in found.evidence


def nodeset_counts(snap: Snapshot) -> NodeSetCounts:
    counts = next(s.counts for s in diagnose(snap, Target()).results[0].steps if s.name == "nodeset")
    assert isinstance(counts, NodeSetCounts)
    return counts


def test_a_cordon_the_template_tolerates_takes_no_node_out_of_service() -> None:
    """The engine judges a cordoned Node feasible when the template tolerates node.kubernetes.io/unschedulable: the
    nodeset step counts it in service, as the FEASIBLE count does, not in repair."""
    snap = snapshot.load(FIXTURES / "healthy-same-type-pools")
    plain = replace(snap, nodes=tuple(n | {"spec": n["spec"] | {"unschedulable": True}} if name(n) == "g18d510" else n
                                      for n in nodes_of(snap)))
    nodeset = copy.deepcopy(nodeset_of(snap))
    nodeset["spec"]["template"]["spec"]["tolerations"].append(
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
    tolerant = replace(plain, nodesets=(nodeset,))
    assert (nodeset_counts(plain).pool_nodes_in_repair, nodeset_counts(plain).feasible_computed) == (1, 7)
    assert (nodeset_counts(tolerant).pool_nodes_in_repair, nodeset_counts(tolerant).feasible_computed) == (0, 8)


def required(nodeset: dict) -> list[dict]:
    """The NodeSet's required nodeSelectorTerms, to amend in place."""
    terms: list[dict] = nodeset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return terms


def test_an_empty_required_term_selects_no_pool() -> None:
    """Kubernetes ORs the terms and an empty one matches nothing: slurm-cpu-b, meant for the NodeSet, is not selected
    by it (pool selection reads the terms as the feasibility engine does, not as labels alone), and the split is
    reported as without it."""
    snap = snapshot.load(FIXTURES / "pool-split")
    nodeset = copy.deepcopy(nodeset_of(snap))
    required(nodeset).append({})
    assert analyze(Cluster.of(snap), nodeset).selected_pools == {"slurm-cpu-a"}
    amended = replace(snap, nodesets=(nodeset,))
    assert [s.id for s in diagnose(amended, Target()).results[0].symptoms] == ["pool-split"]


def test_pool_discovery_judges_match_fields_as_the_engine_does() -> None:
    """A term that also picks Nodes by name reaches only the pools of the Nodes it picks, not every pool whose labels
    meet its expressions."""
    snap = snapshot.load(FIXTURES / "healthy-or-terms-two-pools")
    nodeset = copy.deepcopy(nodeset_of(snap))
    assert discover_pools(Cluster.of(snap), nodeset)[0] == ["burst-cpu", "slurm-cpu"]
    required(nodeset)[1]["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": ["g18d510"]}]
    assert discover_pools(Cluster.of(snap), nodeset)[0] == ["slurm-cpu"]
