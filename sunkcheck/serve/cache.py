"""The watched objects, by source, and the Snapshot they make: exactly what `check` would have read, so the
same pipeline diagnoses it. Which sources a target needs mirrors sunkcheck.collect.cluster's reads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from sunkcheck import objects as o
from sunkcheck.collect import pods as collect_pods
from sunkcheck.collect.kube import DAEMONSETS, EVENTS, NODEPOOLS, NODES, NODESETS, PODS, unmanaged
from sunkcheck.serve.watch import Source
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target

T = TypeVar("T")


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
OTHERS = "pods-elsewhere"
"""The source of other workloads' Pods: indexed by Node, as the read plan hands them out Node by Node."""


@dataclass(frozen=True)
class Change:
    """What a sink was told: an object of a source (None: the whole source was listed again)."""

    source: str
    obj: dict | None


class Cache:
    """Objects by source and (namespace, name); thread-safe. Each change is queued for the loop (take()).

    A diagnosis follows a change within milliseconds only if the snapshot is not rebuilt whole: every source
    counts its changes (`_versions`), and what the snapshot derives from some sources (sorted lists, merged
    lists, the read plan's Nodes) is kept until one of those sources changes."""

    def __init__(self, watched: tuple[Source, ...]):
        self.watched = watched
        self._objects: dict[str, dict[Key, dict]] = {s.name: {} for s in watched}
        self._on_node: dict[str, dict[Key, dict]] = {}  # other workloads' Pods by the Node they are bound to
        self._versions: dict[str, int] = dict.fromkeys(self._objects, 0)
        self._synced: set[str] = set()
        self._changes: list[Change] = []
        self._cond = threading.Condition()
        self._derived: dict[str, tuple[tuple, object]] = {}  # what: (the versions it was made from, it)
        self.pod_nodes: frozenset[str] | None = None
        """The Nodes whose other Pods the last snapshot holds (None before one): a change of another workload's
        Pod elsewhere leaves the snapshot as it was."""

    def replace(self, source: Source, items: list[dict]) -> None:
        with self._cond:
            self._objects[source.name] = {_key(i): i for i in items}
            self._synced.add(source.name)
            if source.name == OTHERS:
                self._on_node = {}
                for pod in items:
                    self._on_node.setdefault(o.node_name(pod) or "", {})[_key(pod)] = pod
            self._changed(source.name, None)

    def apply(self, source: Source, kind: str, obj: dict) -> None:
        with self._cond:
            key, objs = _key(obj), self._objects[source.name]
            old = objs.pop(key, None) if kind == "DELETED" else objs.get(key)
            if kind != "DELETED":
                objs[key] = obj
            if source.name == OTHERS:
                if old is not None:  # a Pod is bound once, but its old copy may be on no Node yet
                    self._on_node.get(o.node_name(old) or "", {}).pop(key, None)
                if kind != "DELETED":
                    self._on_node.setdefault(o.node_name(obj) or "", {})[key] = obj
            self._changed(source.name, obj)

    def _changed(self, source: str, obj: dict | None) -> None:
        self._versions[source] += 1
        self._changes.append(Change(source, obj))
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

    def _kept(self, what: str, sources: tuple[str, ...], make: Callable[[], T]) -> T:
        """make(), made again only when one of `sources` changed since it was last made."""
        versions = tuple(self._versions.get(s, -1) for s in sources)
        found = self._derived.get(what)
        if found is None or found[0] != versions:
            found = self._derived[what] = (versions, make())
        return found[1]  # type: ignore[return-value]

    def _listed(self, name: str) -> tuple[dict, ...]:
        """A source's objects in the API server's list order (namespace, name)."""
        objs = self._objects[name]
        return self._kept(f"listed {name}", (name,), lambda: tuple(objs[k] for k in sorted(objs)))

    @property
    def _planned(self) -> tuple[str, ...]:
        """The sources the read plan's Nodes follow from: the workloads, Node Pools, Nodes and own Pods."""
        return tuple(s.name for s in self.watched if s.name != OTHERS and not s.name.startswith("events-"))

    def on_nodes(self, names: set[str]) -> list[dict]:
        """Other workloads' Pods bound to the Nodes `names`."""
        return [p for n in names for p in self._on_node.get(n, {}).values()]

    def snapshot(self, target: Target) -> Snapshot:
        """The Snapshot a check of `target` would have read: other workloads' Pods only on the Nodes its read plan
        names (sunkcheck.plan, as the collector asks it); a resource one of whose sources was never listed is
        "not captured" (its steps unknown), as after a check's failed read. Objects in the API server's list
        order (namespace, name). The caller serialises diagnoses: the loop is its one thread."""
        with self._cond:  # the watches wait while it reads: a snapshot is of one moment
            return self._snapshot(target)

    def _snapshot(self, target: Target) -> Snapshot:
        by_resource: dict[str, list[str]] = {}
        for s in self.watched:
            if s.name != OTHERS:
                by_resource.setdefault(s.resource.plural, []).append(s.name)
        merged = {plural: None if set(names) - self._synced else
                  self._kept(f"merged {plural}", tuple(names), lambda names=names: _merged([self._listed(n) for n in names]))
                  for plural, names in by_resource.items()}
        snap = Snapshot(nodepools=merged.get("nodepools"), nodes=merged.get("nodes"), events=merged.get("events"),
                        nodesets=merged.get("nodesets"), daemonsets=merged.get("daemonsets"))
        if not {"pods", OTHERS} <= self._synced:
            return snap
        from sunkcheck.plan import Plan
        from sunkcheck.source import declared_reads

        plan = Plan(declared_reads(target))
        workloads = list((snap.daemonsets if target.daemonset else snap.nodesets) or ())
        nodes, own = list(snap.nodes or ()), self._listed("pods")
        nodepools = None if snap.nodepools is None else list(snap.nodepools)
        on = self._kept("pod nodes", self._planned,
                        lambda: frozenset(plan.pod_nodes(workloads, nodes, list(own), nodepools, target.pools)))
        read = on | self._probed(plan, workloads, nodes, own, nodepools, target.pools, on)
        self.pod_nodes = frozenset(read)
        others = self.on_nodes(read)
        pods = _merged([own, tuple(others)]) if others else own
        return replace(snap, pods=pods, pod_nodes=self.pod_nodes)  # a fix then says which Nodes' Pods were not read

    def _probed(self, plan, workloads: list[dict], nodes: list[dict], own: tuple[dict, ...],
                nodepools: list[dict] | None, pools: tuple[str, ...], on: frozenset[str]) -> set[str]:
        """The Nodes whose Pods check's idle-pool probe (Plan.idle_probe) reads beyond `on`: the first Node, in the
        server's order, of each other pool of the type not seen in use, and every Node of a pool whose first Node
        runs no workload. Without them another tenant's Pods there go unseen and the pool looks idle."""
        names = self._kept("probes", self._planned, lambda: plan.probes(workloads, nodes, list(own), nodepools, pools))
        if not names:
            return set()
        by_pool = self._kept("by pool", ("nodes",), lambda: _by_pool(nodes))
        first, _, idle = plan.idle_probe(names, nodes, [*own, *self.on_nodes(set(on))],
                                         lambda wanted: {n: by_pool[n][0] for n in wanted if by_pool.get(n)},
                                         self.on_nodes)
        return set(first.values()) | {n for name in idle for n in by_pool[name]}


def _by_pool(nodes: list[dict]) -> dict[str | None, list[str]]:
    """Node names by pool, in the server's order (by name)."""
    found: dict[str | None, list[str]] = {}
    for n in sorted(nodes, key=o.name):
        found.setdefault(o.pool_of(n), []).append(o.name(n))
    return found


def _merged(lists: list[tuple[dict, ...]]) -> tuple[dict, ...]:
    """The objects of several sources once each, in list order; the first source's copy wins (a workload's own
    Pod whole, not slimmed)."""
    if len(lists) == 1:
        return lists[0]
    merged: dict[Key, dict] = {}
    for objs in reversed(lists):
        merged |= {_key(obj): obj for obj in objs}
    return tuple(merged[k] for k in sorted(merged))


def _key(obj: dict) -> Key:
    return o.namespace(obj), o.name(obj)
