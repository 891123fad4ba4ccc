"""The watched objects, by source, and the Snapshot they make: exactly what `check` would have read, so the
same pipeline diagnoses it. Which sources a target needs mirrors sunkcheck.collect.cluster's reads."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from sunkcheck import objects as o
from sunkcheck.collect import pods as collect_pods
from sunkcheck.collect.kube import DAEMONSETS, EVENTS, NODEPOOLS, NODES, NODESETS, PODS, unmanaged
from sunkcheck.serve.watch import Source
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target


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
    and the Events it reads. Every Node and every such Pod is watched: which ones a check reads depends on the
    NodeSets, and a watch's selector is fixed (docs/serve.md says why)."""
    kind = "DaemonSet" if target.daemonset else "NodeSet"
    name = target.daemonset or target.nodeset
    by_name = f"metadata.name={name}" if name else None
    found = [Source("nodes", NODES, slim=slim_node),
             Source("pods", PODS, namespace, label_selector=own_pods),
             Source("pods-elsewhere", PODS, label_selector=other_pod_selector(target, namespace),
                    field_selector=collect_pods.NON_TERMINAL, slim=collect_pods.slim),
             Source(f"events-{kind.lower()}", EVENTS, namespace, field_selector=f"involvedObject.kind={kind}"),
             Source("events-pod-warnings", EVENTS, namespace, field_selector="involvedObject.kind=Pod,type=Warning")]
    if target.daemonset:
        return (Source("daemonsets", DAEMONSETS, namespace, field_selector=by_name), *found)
    return (Source("nodesets", NODESETS, namespace, field_selector=by_name), Source("nodepools", NODEPOOLS),
            Source("events-nodepool", EVENTS, field_selector="involvedObject.kind=NodePool"), *found)


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


Key = tuple[str, str]


@dataclass(frozen=True)
class Change:
    """What a sink was told: an object of a source (None: the whole source was listed again)."""

    source: str
    obj: dict | None


class Cache:
    """Objects by source and (namespace, name); thread-safe. Each change is queued for the loop (take())."""

    def __init__(self, watched: tuple[Source, ...]):
        self.watched = watched
        self._objects: dict[str, dict[Key, dict]] = {s.name: {} for s in watched}
        self._synced: set[str] = set()
        self._changes: list[Change] = []
        self._cond = threading.Condition()
        self._listed: dict[str, tuple[dict, ...]] = {}  # a source's objects in list order, until it changes
        self.pod_nodes: frozenset[str] | None = None
        """The Nodes whose other Pods the last snapshot holds (None before one): a change of another workload's
        Pod elsewhere leaves the snapshot as it was."""

    def replace(self, source: Source, items: list[dict]) -> None:
        with self._cond:
            self._objects[source.name] = {_key(i): i for i in items}
            self._listed.pop(source.name, None)
            self._synced.add(source.name)
            self._changes.append(Change(source.name, None))
            self._cond.notify_all()

    def apply(self, source: Source, kind: str, obj: dict) -> None:
        with self._cond:
            if kind == "DELETED":
                self._objects[source.name].pop(_key(obj), None)
            else:
                self._objects[source.name][_key(obj)] = obj
            self._listed.pop(source.name, None)
            self._changes.append(Change(source.name, obj))
            self._cond.notify_all()

    def holds(self, source: str, namespace: str, name: str) -> bool:
        """Whether the object has arrived (or is still there)."""
        with self._cond:
            return (namespace, name) in self._objects[source]

    @property
    def ready(self) -> bool:
        """Every source has been listed completely once."""
        with self._cond:
            return len(self._synced) == len(self.watched)

    def take(self, timeout: float) -> list[Change]:
        """The changes since the last take, waiting up to `timeout` seconds for one."""
        with self._cond:
            if not self._changes:
                self._cond.wait(timeout)
            changes, self._changes = self._changes, []
            return changes

    def snapshot(self, target: Target) -> Snapshot:
        """The Snapshot a check of `target` would have read: other workloads' Pods only on the Nodes its read plan
        names (sunkcheck.plan, as the collector asks it); a resource one of whose sources was never listed is
        "not captured" (its steps unknown), as after a check's failed read. Objects in the API server's list
        order (namespace, name)."""
        with self._cond:
            for name in self._synced - set(self._listed):  # sorted again only when changed: a Node's taint
                objs = self._objects[name]  # does not re-sort 50,000 Pods
                self._listed[name] = tuple(objs[k] for k in sorted(objs))
            found = {name: self._listed.get(name) for name in self._objects}
        by_resource: dict[str, list[tuple[dict, ...] | None]] = {}
        for s in self.watched:
            by_resource.setdefault(s.resource.plural, []).append(found[s.name])
        merged = {plural: None if None in lists else _merged(lists) for plural, lists in by_resource.items()}
        snap = Snapshot(nodepools=merged.get("nodepools"), nodes=merged.get("nodes"), events=merged.get("events"),
                        nodesets=merged.get("nodesets"), daemonsets=merged.get("daemonsets"))
        own, others = found.get("pods"), found.get("pods-elsewhere")
        if own is None or others is None:
            return snap
        from sunkcheck.plan import Plan
        from sunkcheck.source import declared_reads

        plan = Plan(declared_reads(target))
        workloads, nodes = list((snap.daemonsets if target.daemonset else snap.nodesets) or ()), list(snap.nodes or ())
        nodepools = None if snap.nodepools is None else list(snap.nodepools)
        on = plan.pod_nodes(workloads, nodes, list(own), nodepools, target.pools)
        read = on | probed(plan, workloads, nodes, own, others, nodepools, target.pools, on)
        self.pod_nodes = frozenset(read)
        return replace(snap, pods=_merged([own, tuple(p for p in others if o.node_name(p) in read)]),
                       pod_nodes=frozenset(read))  # a fix then says which Nodes' Pods were not read, as check's does


def probed(plan, workloads: list[dict], nodes: list[dict], own: tuple[dict, ...], others: tuple[dict, ...],
           nodepools: list[dict] | None, pools: tuple[str, ...], on: set[str]) -> set[str]:
    """The Nodes whose Pods check's idle-pool probe reads beyond `on` (collect.cluster's idle_pools): the first
    Node, in the server's order, of each other pool of the type not seen in use, and every Node of a pool whose
    first Node runs no workload. Without them another tenant's Pods there go unseen and the pool looks idle."""
    names = plan.probes(workloads, nodes, list(own), nodepools, pools)
    if not names:
        return set()
    used = {o.node_name(p) for p in [*own, *(p for p in others if o.node_name(p) in on)] if plan.in_use(p)}
    by_pool: dict[str | None, list[str]] = {}
    for n in sorted(nodes, key=o.name):
        by_pool.setdefault(o.pool_of(n), []).append(o.name(n))
    in_use = {o.pool_of(n) for n in nodes if o.name(n) in used}
    first = {name: by_pool[name][0] for name in names if name not in in_use and by_pool.get(name)}
    used |= {o.node_name(p) for p in others if o.node_name(p) in first.values() and plan.in_use(p)}
    return set(first.values()) | {n for name, node in first.items() if node not in used for n in by_pool[name]}


def _merged(lists: list[tuple[dict, ...] | None]) -> tuple[dict, ...]:
    """The objects of several sources once each, in list order; the first source's copy wins (a workload's own
    Pod whole, not slimmed)."""
    if len(lists) == 1:
        return lists[0] or ()
    merged: dict[Key, dict] = {}
    for objs in reversed(lists):
        merged |= {_key(obj): obj for obj in objs or ()}
    return tuple(merged[k] for k in sorted(merged))


def _key(obj: dict) -> Key:
    return o.namespace(obj), o.name(obj)
