"""What serve watches for a target, as sources: their names, server-side selectors and slimming. Which sources a
target needs mirrors sunkcheck.collect.cluster's reads; the cache (serve.cache) holds what they send."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.collect import pods as collect_pods
from sunkcheck.collect.kube import DAEMONSETS, EVENTS, NODEPOOLS, NODES, NODESETS, PODS, unmanaged
from sunkcheck.collect.nodes import requirement, unread
from sunkcheck.serve import packed
from sunkcheck.serve.watch import Source
from sunkcheck.target import Target

OTHERS = "pods-elsewhere"
"""The source of other workloads' Pods (`pods-elsewhere/spec.nodeName=NODE`: those on one Node): indexed by
Node, as the read plan hands them out Node by Node."""


def slim_node(node: dict) -> dict:
    """A Node without its image list (a kubelet reports ~50 images, a third of a real Node's bytes; never read)."""
    node = unmanaged(node)
    status = node.get("status")
    if isinstance(status, dict) and "images" in status:
        node["status"] = {k: v for k, v in status.items() if k != "images"}
    return node


def sources(target: Target, namespace: str | None, own_pods: str) -> tuple[Source, ...]:
    """What a check of `target` reads, as watches: its workloads, Node Pools and Nodes, its own Pods (whole,
    `own_pods` the label selector naming them), every other non-terminal Pod (slimmed, as a check slims them),
    and the Events it reads. Every Node and every such Pod: serve then narrows the other Pods to the Nodes the
    read plan names (other_pod_sources) as the plan moves."""
    kind = "DaemonSet" if target.daemonset else "NodeSet"
    name = target.daemonset or target.nodeset
    by_name = f"metadata.name={name}" if name else None
    found = [node_source(),
             Source("pods", PODS, namespace, label_selector=own_pods),
             *other_pod_sources(None, target, namespace),
             Source(f"events-{kind.lower()}", EVENTS, namespace, field_selector=f"involvedObject.kind={kind}"),
             Source("events-pod-warnings", EVENTS, namespace, field_selector="involvedObject.kind=Pod,type=Warning")]
    if target.daemonset:
        return (Source("daemonsets", DAEMONSETS, namespace, field_selector=by_name), *found)
    # every NodeSet of the cluster, as a check reads them: what another one holds decides the fixes (never a pool,
    # Node or label another NodeSet relies on); the pipeline judges the target's alone
    return (Source("nodesets", NODESETS), Source("nodepools", NODEPOOLS),
            Source("events-nodepool", EVENTS, field_selector="involvedObject.kind=NodePool"), *found)


NODES_EVERY = "nodes"
"""The watch of every Node, where the read plan needs them all; `nodes/SELECTOR`: those a selector selects."""


def node_source(label_selector: str | None = None, field_selector: str | None = None, one: bool = False) -> Source:
    """The Nodes a selector selects, or (none) every Node, or (`one`) the first it selects: what a check never reads
    of them cut before they are parsed (collect.nodes.unread), and slimmed as they arrive."""
    selector = label_selector or field_selector
    name = f"{NODES_EVERY}/{'one:' if one else ''}{selector}" if selector else NODES_EVERY
    return Source(name, NODES, label_selector=label_selector, field_selector=field_selector, slim=slim_node,
                  trim=unread, one=one)


def pool_source(pool: str, one: bool = False) -> Source | None:
    """The Nodes of the pool `pool`, or its first, spelled as an affinity's selector is (`in (POOL)`): a pool both
    selected and probed is one watch; None for a name no label may hold."""
    selector = requirement(o.POOL_LABEL, "in", [pool])
    return node_source(label_selector=selector, one=one) if selector else None


def on_node_source_name(node: str) -> str:
    return f"{OTHERS}/spec.nodeName={node}"


def other_pod_sources(nodes: frozenset[str] | None, target: Target, namespace: str | None) -> tuple[Source, ...]:
    """Other workloads' Pods on the Nodes `nodes`, as check reads them: a watch per Node (its field selector, the
    one of check's list of that Node), or (`nodes` None, or above BY_NODE_MAX Nodes) one watch of every Pod
    holding a Node's resources (check's one paged list then; thousands of watches are thousands of connections),
    each Pod packed: every Pod of the cluster, where a diagnosis reads those on the plan's Nodes (serve.packed)."""
    selector = other_pod_selector(target, namespace)
    if nodes is None or len(nodes) > collect_pods.BY_NODE_MAX:
        return (Source(OTHERS, PODS, label_selector=selector, field_selector=collect_pods.NON_TERMINAL,
                       slim=packed.pack),)
    return tuple(Source(on_node_source_name(n), PODS, label_selector=selector,
                        field_selector=f"spec.nodeName={n},{collect_pods.NON_TERMINAL}", slim=collect_pods.slim)
                 for n in sorted(nodes))


def own_pod_selector(target: Target, daemonset: dict | None = None) -> str:
    """The label selector of the workload's own Pods: every NodeSet's (any may appear), or the DaemonSet's."""
    if daemonset is not None:
        from sunkcheck.collect.daemonset import selector

        return selector(daemonset)
    return f"{o.INSTANCE_LABEL} in ({target.nodeset})" if target.nodeset else o.INSTANCE_LABEL


def other_pod_selector(target: Target, namespace: str | None) -> str | None:
    """The complement of own_pod_selector, when the own Pods are watched in every namespace: they arrive whole
    from their own watch, and need not be sent again (a NodeSet's slurmd Pods, thousands after a scale-up).
    `notin` also selects a Pod without the label. None (every Pod) for a DaemonSet, whose selector has no
    complement a server takes, and within a namespace, where another tenant's Pods are still others'."""
    if target.daemonset or namespace is not None:
        return None
    return f"{o.INSTANCE_LABEL} notin ({target.nodeset})" if target.nodeset else f"!{o.INSTANCE_LABEL}"




def of_kind(name: str, kind: str) -> bool:
    """Whether the source `name` is `kind`'s: `kind` itself (every one) or `kind/SELECTOR`."""
    return name == kind or name.startswith(kind + "/")
