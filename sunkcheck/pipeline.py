"""Snapshot -> analyze -> match -> Report: the pure core shared by live runs and replays."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding, analyze, summaries
from sunkcheck.analyze.cluster import Cluster
from sunkcheck.model import InputError, NodeVerdict, Report, Result, Status, Step, Symptom, worst
from sunkcheck.snapshot import Snapshot
from sunkcheck.symptoms import match
from sunkcheck.symptoms.nodeset import RULES
from sunkcheck.target import Target, select_nodesets

# runbook step -> the snapshot resource it reads, in runbook order
NODESET_STEPS = (
    ("nodepool", "nodepools"),
    ("nodes", "nodes"),
    ("events", "events"),
    ("nodeset", "nodesets"),
    ("pods", "pods"),
)


def diagnose(snapshot: Snapshot, target: Target) -> Report:
    if snapshot.nodesets is None:
        raise InputError("no NodeSets captured (nodesets.json is missing): nothing to check")
    cluster = Cluster.of(snapshot)
    results = tuple(check_nodeset(cluster, n, target) for n in select_nodesets(snapshot.nodesets, target))
    errors = tuple(f"{resource}.json not captured: the {step} step could not be checked"
                   for step, resource in NODESET_STEPS if resource in snapshot.missing(resource))
    return Report(results, errors)


def check_nodeset(cluster: Cluster, nodeset: dict, target: Target) -> Result:
    binding = analyze(cluster, nodeset, list(target.pools))
    missing = set(cluster.snapshot.missing(*(r for _, r in NODESET_STEPS)))
    symptoms = match(RULES, binding, missing, target.ignore)
    texts = summaries(binding)
    steps = tuple(_step(name, resource in missing, not binding.pools and name == "nodepool", texts[name], symptoms)
                  for name, resource in NODESET_STEPS)
    return Result("NodeSet", binding.namespace, binding.name, tuple(sorted(binding.pool_names)), steps,
                  tuple(symptoms), considered_nodes(binding), binding.pool_source)


def _step(name: str, missing: bool, undetermined: bool, text: tuple[str, dict], symptoms: list[Symptom]) -> Step:
    if missing:
        return Step(name, Status.UNKNOWN, "not captured")
    summary, counts = text
    if undetermined:
        return Step(name, Status.UNKNOWN, summary, counts)
    status = worst(s.severity for s in symptoms if s.step == name and not s.suppressed)
    return Step(name, status, summary, counts)


def considered_nodes(b: Binding) -> tuple[NodeVerdict, ...]:
    """The pool's Nodes, Nodes hosting the NodeSet's Pods, and any other Node it finds feasible."""
    wanted = {o.name(n) for n in b.pool_nodes} | {o.node_name(p) for p in b.pods if o.node_name(p)}
    return tuple(v for name, v in sorted(b.verdicts.items()) if name in wanted or v.feasible)
