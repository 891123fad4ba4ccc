"""daemonset-pod-pending: daemon Pods created but Pending on their Node."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.daemonset import Scope
from sunkcheck.analyze.feasibility import resource_reasons
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule


def pending_line(s: Scope, pod: dict) -> str:
    """Why one Pending daemon Pod waits: what its Node is short of, with the other Pods there."""
    node = s.node_of(pod)
    if node is None:
        return f"Pod {o.name(pod)} is Pending and not pinned to a known Node"
    others = [p for p in s.cluster.pods_on.get(o.name(node), []) if p is not pod]
    short = resource_reasons(s.workload.requests, node, others)
    why = "; ".join(r.detail for r in short) or "no resource shortfall sunkcheck can see (check its Events)"
    return f"Pod {o.name(pod)} Pending on Node {o.name(node)}: {why}"


def pods_pending(s: Scope) -> Match | None:
    evidence = [pending_line(s, pod) for pod in s.pending]
    if not evidence:
        return None
    return Match(tuple(evidence), "free the Node or lower the agent's requests; critical agents can take "
                 "priorityClassName: system-node-critical to preempt ordinary Pods")


RULE = Rule("daemonset-pod-pending", Status.WARNING, "pods",
            "Daemon Pods are Pending",
            "The controller created the Pod, but the Node lacks the resources it requests (resources make a Pending "
            "daemon Pod, not a missing one).",
            "Free the Node or lower the requests; critical agents can use priorityClassName system-node-critical.",
            pods_pending, needs=("pods", "nodes"), reads=(Read.EVERY_NODE, Read.PODS_ON_PENDING_DAEMON_NODES))
