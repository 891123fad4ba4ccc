"""Row slurmd-not-ready: slurmd Pods placed but not Ready, or their Slurm nodes out of service."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import not_ready
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule
from sunkcheck.symptoms.fixes import arg, prose
from sunkcheck.symptoms.nodeset._shared import slurm_node_where


def slurmd_not_ready(b: Binding) -> Match | None:
    """slurmd Pods placed but not Ready (their Node's health said when it is the cause), and Slurm nodes down,
    drained or not responding. A Pod still starting (Binding.starting: created moments ago, no container failed) is
    none yet: the pods step says it, and serve and --wait judge it again when its grace ends."""
    pods = [p for p in b.not_ready if o.name(p) not in b.starting]
    evidence = [_not_ready_evidence(b, p) for p in pods]
    for name, node in sorted((b.slurm_nodes or {}).items()):
        if not node.healthy:
            evidence.append(f"Slurm node {name} ({slurm_node_where(b, name)}): {node.describe()}")
    if not evidence:
        return None
    reads = [_not_ready_fix(b, p) for p in pods[:EXAMPLES]]
    fixes = ["read the events of the Pods not Ready (of their Node, when that is not Ready):", *reads] if reads else []
    bad = [n for n, v in sorted((b.slurm_nodes or {}).items()) if not v.healthy]
    if bad:
        fixes += [f"read Slurm's reason for {prose(bad[0])}:", f"scontrol show node {arg(bad[0])}",
                  "once fixed, resume it (reasons starting sunk:verify-undrain clear after the next hourly verification):",
                  f"scontrol update NodeName={arg(bad[0])} State=RESUME"]
    return Match(tuple(evidence), "\n".join(fixes))


def _sick_node(b: Binding, pod: dict) -> dict | None:
    """The Pod's Node when that is not Ready: the cause of the Pod's unreadiness (the node lifecycle controller marks
    its Pods not Ready), a Node health matter, nothing to change or delete in the NodeSet."""
    node = b.cluster.nodes.get(o.node_name(pod) or "")
    return node if node is not None and not o.is_ready(node) else None


def _not_ready_evidence(b: Binding, pod: dict) -> str:
    # a status may say `state: null` or `waiting: null` (the shape check lets null stand for absent)
    waiting = next((reason for cs in o.status(pod).get("containerStatuses") or ()
                    if (reason := ((cs.get("state") or {}).get("waiting") or {}).get("reason"))), None)
    text = f"Pod {o.name(pod)} on Node {o.node_name(pod)} is not Ready" + (f" ({waiting})" if waiting else "")
    node = _sick_node(b, pod)
    if node is None:
        return text
    cond = o.condition(node, "Ready") or {}
    return f"{text}: its Node is {not_ready(cond.get('status'), cond.get('reason'))}, a Node health matter, not the NodeSet's"


def _not_ready_fix(b: Binding, pod: dict) -> str:
    """Read the Node when it is the cause (the Pod recovers with it, or Kubernetes evicts it), else the Pod."""
    node = _sick_node(b, pod)
    if node is not None:
        return f"kubectl describe node {arg(o.name(node))}"
    return f"kubectl describe pod -n {arg(b.namespace)} {arg(o.name(pod))}"


RULE = Rule("slurmd-not-ready", Status.WARNING, "pods",
            "slurmd Pods are placed but not Ready, or their Slurm nodes are down, drained or not responding",
            "slurmd cannot start or register, its Node is not Ready, or Slurm has taken the node out of service (see the "
            "reason). A Pod created less than 5 minutes ago none of whose containers failed is starting, not reported.",
            "Read the Pod's events (its Node's, when that is not Ready) and the Slurm reason (`scontrol show node`); resume "
            "the node once the cause is fixed.",
            slurmd_not_ready, needs=("pods",), reads=(Read.POD_HOSTS, Read.NODES_BY_IP_WHEN_SLURM))
