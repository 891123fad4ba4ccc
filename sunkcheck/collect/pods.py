"""Runbook step 5, live: the workload's own Pods, and the Pods on Nodes where the resource check matters."""

from sunkcheck import objects as o
from sunkcheck.collect import cuts
from sunkcheck.collect import kube as api
from sunkcheck.collect.kube import PODS, Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"  # what the scheduler counts on a Node
BY_NODE_MAX = 50
"""Up to this many Nodes, their Pods are listed Node by Node, however large the cluster."""


def by_label(kube: Kube, namespace: str | None, selector: str) -> list[dict]:
    return kube.list(PODS, namespace, label_selector=selector, trim=cuts.managed_fields)


def on_node(kube: Kube, node: str) -> list[dict]:
    return kube.list(PODS, field_selector=f"spec.nodeName={node},{NON_TERMINAL}", trim=cuts.managed_fields)


def cheaper_everywhere(kube: Kube, nodes: int) -> bool:
    """Whether one paged list of every Pod takes fewer requests than a list for each of `nodes` Nodes:
    after a scale-up, thousands of usable Nodes have no slurmd Pod yet. The server counts the Pods in
    answer to a one-item list (remainingItemCount); when it does not say, or says something other than a
    count (a string, a float, a negative number), Node by Node it is: the count only picks the cheaper of two
    ways to read the same Pods."""
    if nodes <= BY_NODE_MAX:
        return False
    try:
        first = kube.get(PODS.path(), {"limit": 1})
    except api.CallError:  # the lists by Node will say why, if it matters
        return False
    meta, items = first.get("metadata"), first.get("items") or []
    remaining = meta.get("remainingItemCount") if isinstance(meta, dict) else None
    if type(remaining) is not int or remaining < 0 or not isinstance(items, list):  # bool is an int: not a count
        return False
    return -(-(len(items) + remaining) // api.PAGE) < nodes  # whole numbers: a float overflows past 1e308


def everywhere(kube: Kube, on: set[str] | None = None) -> list[dict]:
    """Every non-terminal Pod in the cluster (on the Nodes `on`, when given), slimmed as each page arrives:
    for `explain`, whose per-Node reasons count every Pod that holds a Node's resources, and for a check
    with too many Nodes to ask one by one."""
    return kube.list(PODS, field_selector=NON_TERMINAL, trim=cuts.managed_fields,
                     keep=slim if on is None else lambda pod: slim(pod) if o.node_name(pod) in on else None)


# nodeSelector: what put a daemon Pod there; tolerations: whether a squatter ignores the pool's taint
SPEC_KEPT = ("nodeName", "nodeSelector", "overhead", "resources", "affinity", "tolerations")
CONTAINER_KEPT = ("name", "resources", "restartPolicy")  # restartPolicy Always: a sidecar init container


def slim(pod: dict) -> dict:
    """A Pod cut down to what is read of other workloads' Pods: who owns it, where it runs, what it requests."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    kept = {k: spec[k] for k in SPEC_KEPT if k in spec}
    for k in ("containers", "initContainers"):
        if k in spec:
            kept[k] = [{f: c[f] for f in CONTAINER_KEPT if f in c} for c in spec[k] or ()]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "ownerReferences", "uid") if k in meta},
            "spec": kept,
            "status": {k: v for k, v in (pod.get("status") or {}).items() if k == "phase"}}
