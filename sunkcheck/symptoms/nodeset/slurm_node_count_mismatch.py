"""Row slurm-node-count-mismatch: Slurm's nodes and the NodeSet's READY Pods disagree."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import arg, prose
from sunkcheck.symptoms.nodeset._shared import slurm_node_where


def slurm_node_count_mismatch(b: Binding) -> Match | None:
    """Slurm's nodes (of the partition, else named like the Pods) against the NodeSet's READY Pods: by count, and by
    name both ways. A gap of exactly the not-Ready slurmd Pods is slurmd-not-ready's to report."""
    nodes = b.slurm_nodes
    ready = b.counts.ready
    if nodes is None or ready is None:
        return None
    pod_names = {o.name(p) for p in b.pods if o.node_name(p)}
    no_pod, no_slurm = sorted(set(nodes) - pod_names), sorted(pod_names - set(nodes))
    registered_not_ready = sum(o.name(p) in nodes for p in b.not_ready)
    # equal counts can still hide a stale node and an unregistered Pod
    if not no_pod and not no_slurm and len(nodes) in (ready, ready + registered_not_ready):
        return None
    where = f"in partition {b.partition}" if b.partition else f"named like the Pods of {b.name}"
    evidence = [f"Slurm shows {len(nodes)} node(s) {where}; the NodeSet has READY {ready}", *_empty_partition(b)]
    if no_pod:
        evidence.append(f"Slurm nodes with no slurmd Pod: {some(f'{n} ({slurm_node_where(b, n)})' for n in no_pod)}")
    if no_slurm:
        evidence.append(f"slurmd Pods Slurm does not list: {some(no_slurm)}")
    return Match(tuple(evidence), "\n".join(_reads(b, no_pod, no_slurm)))


def _empty_partition(b: Binding) -> list[str]:
    """A partition named that lists no node: perhaps none of that name, with those Slurm has."""
    if not b.partition or b.slurm_nodes:
        return []
    seen = sorted({p for n in (b.all_slurm_nodes or {}).values() for p in n.partitions})
    return [f"partition {b.partition} lists no nodes: does it exist? (partitions seen: {', '.join(seen) or 'none'})"]


def _reads(b: Binding, no_pod: list[str], no_slurm: list[str]) -> list[str]:
    """Where to look: the partition's name, the log of a slurmd Slurm does not list, Slurm's view of a node with
    no slurmd Pod."""
    fixes = ["check the partition name (--partition) and which NodeSets feed it"]
    if no_slurm:
        fixes += [f"read the log of slurmd in {prose(no_slurm[0])}, which Slurm does not list:",
                  f"kubectl logs -n {arg(b.namespace)} {arg(no_slurm[0])} -c slurmd"]
    if no_pod:
        fixes += [f"read Slurm's view of {prose(no_pod[0])}, which has no slurmd Pod:", f"scontrol show node {arg(no_pod[0])}"]
    return fixes


RULE = Rule("slurm-node-count-mismatch", Status.WARNING, "sinfo",
            "Slurm's nodes for the partition do not match the NodeSet's READY Pods (count or names)",
            "Slurm lists nodes the NodeSet doesn't run (stale, or another NodeSet's), or slurmd Pods never registered.",
            "Compare `sinfo` with the NodeSet's Pods; read slurmd's log for Pods Slurm doesn't list.",
            slurm_node_count_mismatch, needs=("sinfo",), reads=(Read.POD_HOSTS, Read.NODES_BY_IP_WHEN_SLURM))
