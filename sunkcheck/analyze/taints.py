"""kube-scheduler's TaintToleration filter: which taints a Pod's tolerations cover."""

from __future__ import annotations

from typing import NamedTuple

from sunkcheck import objects as o
from sunkcheck.analyze.nodeview import NodeView, not_ready
from sunkcheck.model import Check, Reason

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
KUBERNETES_TAINTS = "node.kubernetes.io/"
"""The prefix of the taints Kubernetes keeps for a Node's condition (not-ready, unreachable, pressure, cordon)."""


class Startup(NamedTuple):
    """Who removes a start-up taint, and when."""

    who: str
    when: str
    on_node: bool
    """Whether it runs on the Node itself (a DaemonSet's Pod there), not in the control plane."""


STARTUP_TAINTS = {
    "node.kubernetes.io/not-ready": Startup("the node controller", "once the kubelet posts Ready", False),
    "node.kubernetes.io/unreachable": Startup("the node controller", "once the kubelet posts its status again", False),
    "node.kubernetes.io/network-unavailable": Startup("the network plugin", "once the Node's network is set up", True),
    "node.cloudprovider.kubernetes.io/uninitialized": Startup("the cloud controller manager",
                                                              "once it has initialized the Node", False),
    "node.cilium.io/agent-not-ready": Startup("the Cilium agent", "once it runs on the Node", True),
}
"""The taints a Node carries while it starts, by key: the Node's state, never a taint to remove by hand (removed early,
Pods land on a Node without its network) nor to tolerate."""


def tolerates(toleration: dict, taint: dict) -> bool:
    """k8s.io/api/core/v1 Toleration.ToleratesTaint: effect, key, then operator."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(tolerations: list[dict], node_taints: list[dict]) -> list[dict]:
    """The NoSchedule/NoExecute taints no toleration covers, in the Node's order (PreferNoSchedule never blocks)."""
    return [t for t in node_taints
            if t.get("effect") in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations)]


def is_cordon(taint: dict) -> bool:
    """Whether `taint` is the one Kubernetes keeps with a cordon (spec.unschedulable)."""
    return (taint.get("key"), taint.get("effect")) == (UNSCHEDULABLE_TAINT["key"], UNSCHEDULABLE_TAINT["effect"])


def taint_reason(taint: dict, kind: str) -> Reason:
    # the scheduler refuses a cordoned Node by this taint too, but it is the cordon: lifted, never tolerated
    detail = f"the cordon's taint {o.format_taint(taint)}" if is_cordon(taint) else f"untolerated taint {o.format_taint(taint)}"
    if kind == "DaemonSet":  # NodeShouldRunDaemonPod: only NoExecute removes a running daemon Pod
        detail += (": a running daemon Pod is evicted" if taint.get("effect") == "NoExecute"
                   else ": no new daemon Pod; a running one stays (counted MISSCHEDULED)")
    return Reason("taint", detail, f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}")


def taint_checks(tolerations: list[dict], node: NodeView, kind: str) -> list[Check]:
    """Every taint of the Node: tolerated, never blocking (PreferNoSchedule), or a reason."""
    checks = []
    for taint in node.taints:
        by = next((t for t in tolerations if tolerates(t, taint)), None)
        blocks = taint.get("effect") in BLOCKING_EFFECTS
        found = ((f"tolerated by {_describe_toleration(by)}" if by else "not tolerated") if blocks
                 else f"{taint.get('effect')}: never blocks")
        ok = bool(by) or not blocks
        wanted, found = (None if ok else state_words(taint, node)) or ("tolerated", found)
        checks.append(Check("taint", o.format_taint(taint), wanted, found, ok,
                            () if ok else (taint_reason(taint, kind),)))
    return checks


def state_words(taint: dict, node: NodeView) -> tuple[str, str] | None:
    """What an untolerated taint of the Node's state wants and finds: it goes away with its cause (a cordon lifted, the
    Node Ready, its network up), so it is never a taint to tolerate; None for any other taint."""
    key = str(taint.get("key", ""))
    if is_cordon(taint):
        return "not cordoned (lifted, never tolerated)", "cordoned: out of service"
    status, reason = node.ready
    ready = "Node Ready" if status == "True" else f"Node {not_ready(status, reason)}"
    if by := STARTUP_TAINTS.get(key):
        return f"removed by {by.who} {by.when} (never tolerated)", f"present: {ready}"
    if key.startswith(KUBERNETES_TAINTS):
        return "removed by Kubernetes with its cause (never tolerated)", f"present: {ready}"
    return None


def _describe_toleration(t: dict) -> str:
    text = f"{t.get('key') or '*'} {t.get('operator') or 'Equal'}"
    return text + (f" {t['value']}" if t.get("value") else "") + (f" ({t['effect']})" if t.get("effect") else "")
