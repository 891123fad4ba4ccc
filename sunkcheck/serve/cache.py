"""The watched objects, by source, and the Snapshot they make: exactly what `check` would have read, so the
same pipeline diagnoses it. The sources themselves, and what each selects: serve.sources."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from sunkcheck import objects as o
from sunkcheck import snapshot as snapshots
from sunkcheck.pipeline import Judged
from sunkcheck.collect import pods as collect_pods
from sunkcheck.collect.answers import MAX_OBJECT, parsed_size
from sunkcheck.serve import packed
from sunkcheck.serve.sources import NODES_EVERY, OTHERS, node_source, of_kind, on_node_source_name, pool_source
from sunkcheck.serve.watch import Fault, Refused, Source
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target

if TYPE_CHECKING:
    from sunkcheck.plan import Plan

T = TypeVar("T")
Key = tuple[str, str]

BUDGET = 256 << 20
"""Bytes the cache may hold, estimated (cost), every source together: what serve keeps of the cluster and what
its diagnosis makes of it. Sized from deploy/serve.yaml's 512Mi: the interpreter (about 40 MiB) and the answers
being read meanwhile (a page and the one read ahead, a watch's event) take the rest. The 5,000-Node cluster of
benchmarks/serve.py is charged about 150 MiB. An object past it refuses a source (its objects dropped and the
source in error, rather than an out-of-memory kill, until a list of it fits): the least essential (_ESSENTIAL)
whose objects make the room, or else the source of that object, never a more essential one for it."""
OBJECT_COST = 6 << 10
"""Bytes charged for each object beyond its own parsed size: its place in the cache and in what is derived from it
(lists in order, merged lists), and what one diagnosis makes of it (a Node's verdict and reasons, a Pod's place in
each index). A flood of tiny Nodes of the NodeSet's pool took about 7.5 KB each once diagnosed, their own parsed
size about 1.2 KB of it."""


_ESSENTIAL = ("events-", OTHERS)
"""The sources given up first to make room, least essential first: Events (a real cluster's many, and each lost
costs the events step alone), then other workloads' Pods (the resource checks); the rest (Nodes, Node Pools,
NodeSets, own Pods) are what every verdict reads, each refused only for its own objects."""
_measuring = threading.Lock()
"""Held while an object's JSON copy is made and measured (cost): one such copy at a time, whichever watch's thread
(json holds the interpreter while it writes: nothing runs meanwhile anyway)."""


class TooLarge(ValueError):
    """An object whose JSON passes MAX_OBJECT: no API server sends one."""


def cost(obj: dict) -> int:
    """The bytes an object is charged as it arrives (slimmed): OBJECT_COST and its parsed size as
    collect.answers estimates it from its JSON (never less than what json takes; 2.5 times it for real objects); a
    packed Pod, packed.cost (its unpacked copy charged while a diagnosis reads it). TooLarge past MAX_OBJECT."""
    if size := packed.cost(obj):
        length = size - packed.COST
    else:
        with _measuring:
            text = json.dumps(obj, separators=(",", ":"))  # ASCII (ensure_ascii): its length is its bytes'
            length = len(text)
            size = OBJECT_COST + parsed_size(text.encode()) if length <= MAX_OBJECT else 0
            del text  # now: a traceback keeps its frame's locals
    if length > MAX_OBJECT:
        raise TooLarge(f"an object of {length:,} bytes of JSON, more than the {MAX_OBJECT >> 20} MiB no API server "
                       "sends (etcd stores 1.5 MiB at most)")
    return size


def _rank(name: str) -> int:
    """How essential the source `name` is to a verdict: 0 for the first given up (_ESSENTIAL), up to len(_ESSENTIAL)."""
    return next((rank for rank, prefix in enumerate(_ESSENTIAL) if name.startswith(prefix)), len(_ESSENTIAL))


@dataclass
class _Listing:
    """A list under way: each of its objects' cost as it arrives, charged before the list replaces the source."""

    sizes: dict[Key, int] = field(default_factory=dict)
    total: int = 0


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

    def __init__(self, watched: tuple[Source, ...], eager: bool = True):
        self.eager = eager
        """The read plan's (Plan.eager): every Node at once where the workloads say a read needs them."""
        self._sources = {s.name: s for s in watched}
        self._objects: dict[str, dict[Key, dict]] = {s.name: {} for s in watched}
        self._on_node: dict[str, dict[str, dict[Key, dict]]] = {}  # other workloads' Pods by source and Node
        self._versions: dict[str, int] = dict.fromkeys(self._objects, 0)
        self._sizes: dict[str, dict[Key, int]] = {s.name: {} for s in watched}  # each object's cost, by source
        self.held = 0
        """Bytes charged for the objects held (cost), every source together."""
        self._listings: dict[str, _Listing] = {}  # the lists under way, by source: charged too
        self._refused: dict[str, str] = {}  # the sources refused, and why, until a list of each fits
        self.refusing: Callable[[str], None] = lambda name: None
        """Told the name of a source refused to make room for another's objects: its watch is to end and list
        again (its own events and lists are refused as they arrive)."""
        self._synced: set[str] = set()
        self._changes: list[Change] = []
        self.made = self.taken = 0  # changes made, and handed to the loop (take): its publication holds while equal
        self._cond = threading.Condition()
        self._derived: dict[str, tuple[tuple, object]] = {}  # what: (the versions it was made from, it)
        self._orders: dict[str, tuple[frozenset[Key], list[Key]]] = {}  # what: its keys, and in list order (_ordered)
        self._judged = Judged()  # the read plan's per-Node verdicts: a change to one Node judges that one again
        self.node_watches: tuple[Source, ...] | None = None
        """The Node watches the read plan asked for at the last snapshot (None before one with the own Pods)."""
        self.pod_nodes: frozenset[str] | None = None
        """The Nodes whose other Pods the last snapshot holds (None before one): a change of another workload's
        Pod elsewhere leaves the snapshot as it was."""
        self._idle: frozenset[str] = frozenset()
        """The pools the idle-pool probe found idle at the last snapshot: their Nodes are watched whole."""
        self._unpacked = packed.Unpacked()

    @property
    def watched(self) -> tuple[Source, ...]:
        """The sources watched now."""
        with self._cond:
            return tuple(self._sources.values())

    def watch(self, source: Source) -> None:
        """Hold `source` from now on: not listed yet, so not ready until its list arrives."""
        with self._cond:
            self._sources[source.name] = source
            self._drop(source.name)
            self._refused.pop(source.name, None)
            self._versions.setdefault(source.name, 0)

    def unwatch(self, name: str) -> None:
        """Drop a source and its objects (its watch was stopped): what only it selected leaves the snapshot."""
        with self._cond:
            self._sources.pop(name, None)
            self._drop(name)
            self._refused.pop(name, None)
            self._objects.pop(name, None)
            self._sizes.pop(name, None)
            self._changed(name, None)

    def replace(self, source: Source, items: list[dict]) -> None:
        with self._cond:
            if self._sources.get(source.name) is not source:  # a watch stopped while its list was under way
                return
            listing = self._listings.pop(source.name, None) or _Listing()
            self._drop(source.name)
            self._objects[source.name] = {_key(i): i for i in items}
            self._sizes[source.name] = {k: listing.sizes.get(k) or cost(i) for k, i in self._objects[source.name].items()}
            self.held += sum(self._sizes[source.name].values())
            self._synced.add(source.name)
            self._refused.pop(source.name, None)
            if source.name.startswith(OTHERS):
                self._on_node[source.name] = {}
                for pod in items:
                    self._on_node[source.name].setdefault(o.node_name(pod) or "", {})[_key(pod)] = pod
            self._changed(source.name, None)

    def apply(self, source: Source, kind: str, obj: dict) -> None:
        """One event's change; Refused for an object past the number a list may hold (snapshot.MAX_ITEMS, read
        at each event), as that list would be, past the budget (BUDGET, read at each event), or larger than any
        API server sends (TooLarge): a watch streaming new objects without end fills no memory."""
        try:
            size, huge = 0 if kind == "DELETED" else cost(obj), ""
        except TooLarge as e:
            size, huge = 0, str(e)
        with self._cond:
            if self._sources.get(source.name) is not source:  # an event of a watch stopped (a new one may
                return  # watch the same again: the old one's last events must not reach it)
            if why := self._refused.get(source.name):  # refused for another's objects since its list
                raise Refused(why, source.name)
            if huge:
                raise self._refuse(source.name, _too_large(huge))
            key, objs, sizes = _key(obj), self._objects[source.name], self._sizes[source.name]
            if kind != "DELETED" and key not in objs and len(objs) >= snapshots.MAX_ITEMS:
                raise self._refuse(source.name, f"its watch sent more than {snapshots.MAX_ITEMS:,} "
                                   f"{source.resource.kind}s, Kubernetes' own limit for a cluster: its events are "
                                   "dropped until a list holds no more")
            self._charge(source, size - sizes.get(key, 0))
            old = objs.pop(key, None) if kind == "DELETED" else objs.get(key)
            self.held += size - sizes.pop(key, 0)
            if kind != "DELETED":
                objs[key], sizes[key] = obj, size
            if source.name.startswith(OTHERS):
                index = self._on_node.setdefault(source.name, {})
                if old is not None:  # a Pod is bound once, but its old copy may be on no Node yet
                    index.get(o.node_name(old) or "", {}).pop(key, None)
                if kind != "DELETED":
                    index.setdefault(o.node_name(obj) or "", {})[key] = obj
            self._changed(source.name, obj)

    @contextmanager
    def listing(self, source: Source) -> Iterator[Callable[[dict], dict]]:
        """`with cache.listing(source) as keep:` a list of `source` under way, each object passed through `keep`
        as it arrives (slimmed): charged at once (the list's objects are held before they replace the source's),
        Refused past the budget, so that a list of a flood stops there; given back when the list ends."""
        listing = _Listing()

        def keep(obj: dict) -> dict:
            obj = source.slim(obj)
            try:
                size = cost(obj)
            except TooLarge as e:
                with self._cond:
                    raise self._refuse(source.name, _too_large(str(e))) from None
            with self._cond:
                if self._listings.get(source.name) is not listing:  # refused for another's objects meanwhile
                    raise Refused(self._refused.get(source.name) or f"{source.name}: its list was stopped", source.name)
                self._charge(source, size)
                listing.sizes[_key(obj)], listing.total = size, listing.total + size
            return obj

        with self._cond:
            self._listings[source.name] = listing
        try:
            yield keep
        finally:
            with self._cond:
                if self._listings.get(source.name) is listing:
                    del self._listings[source.name]

    def _charge(self, source: Source, more: int) -> None:
        """Room for `more` bytes of `source`'s (held and listed, every source, within BUDGET), made by refusing
        sources (_victim): Refused when it is this one."""
        while more > 0 and (charged := self._charged()) + more > BUDGET:
            victim = self._victim(source.name, charged + more - BUDGET)
            held = f"{charged >> 20} MiB held, every source together, estimated"
            if victim == source.name:
                raise self._refuse(victim, f"its objects would take serve's cache past its {BUDGET >> 20} MiB budget "
                                           f"({held}): they are dropped until a list of it fits")
            self._refuse(victim, f"its objects were dropped for {source.name}'s, more essential, as they would take "
                                 f"serve's cache past its {BUDGET >> 20} MiB budget ({held}): it is listed again "
                                 "until a list of it fits")
            self.refusing(victim)

    def _victim(self, grown: str, over: int) -> str:
        """The source to refuse for `over` bytes more of the source `grown`: the least essential (_rank) of
        those less essential than it, the costliest first, where they hold that much together (a flood of Events
        never refuses the Nodes, and a Node Pool scaled up refuses the Events before its own Nodes); else `grown`
        itself (of sources alike, the one that grew: never another, quiet, one of the same)."""
        rank = _rank(grown)
        costs = {name: sum(self._sizes.get(name, {}).values()) + (listing.total if (listing := self._listings.get(
            name)) else 0) for name in self._sources if _rank(name) < rank}
        if sum(costs.values()) < over:
            return grown
        return min((name for name, held in costs.items() if held), key=lambda name: (_rank(name), -costs[name]))

    def _charged(self) -> int:
        return self.held + sum(listing.total for listing in self._listings.values())

    def _refuse(self, name: str, why: str) -> Refused:
        """Refuse a source, saying why (the Refused returned): its objects (and its list under way) dropped, and its
        events and lists until a list of it fits; the loop told at once (the report names the source and why)."""
        self._refused[name] = f"{name}: {why}"
        self._listings.pop(name, None)
        self._drop(name)
        self._changed(name, None)
        return Refused(self._refused[name], name)

    @property
    def refused(self) -> dict[str, Fault]:
        """The sources refused now, and why, each naming its source first: in error until a list of it fits."""
        with self._cond:
            return {name: Fault(why, name) for name, why in self._refused.items()}

    def _drop(self, name: str) -> None:
        """The source holds nothing, and is not listed (its resource then not captured), until a list fills it."""
        self.held -= sum(self._sizes.get(name, {}).values())
        self._objects[name], self._sizes[name] = {}, {}
        self._on_node.pop(name, None)
        self._synced.discard(name)

    @property
    def budget(self) -> tuple[int, int]:
        """Bytes charged now (held, and lists under way) and the budget (BUDGET)."""
        with self._cond:
            return self._charged(), BUDGET

    def _changed(self, source: str, obj: dict | None) -> None:
        self._versions[source] = self._versions.get(source, 0) + 1
        self.made += 1
        self._changes.append(Change(source, obj))
        self._cond.notify_all()

    def holds(self, source: str, namespace: str, name: str) -> bool:
        """Whether the object has arrived (or is still there)."""
        with self._cond:
            return (namespace, name) in self._objects.get(source, {})

    @property
    def ready(self) -> bool:
        """Every source has been listed completely once."""
        with self._cond:
            return self._synced >= set(self._sources)

    def take(self, timeout: float) -> list[Change]:
        """The changes since the last take, waiting up to `timeout` seconds for one."""
        with self._cond:
            if not self._changes:
                self._cond.wait(timeout)
            changes, self._changes, self.taken = self._changes, [], self.made
            return changes

    def _kept(self, what: str, sources: tuple[str, ...], make: Callable[[], T], also: object = None) -> T:
        """make(), made again only when one of `sources` changed since it was last made, or `also` (what else it
        is made of) is not equal to what it was."""
        versions = (*((s, self._versions.get(s, -1)) for s in sources), also)  # names too: the sources may change
        found = self._derived.get(what)
        if found is None or found[0] != versions:
            found = self._derived[what] = (versions, make())
        return found[1]  # type: ignore[return-value]

    def _listed(self, name: str) -> tuple[dict, ...]:
        """A source's objects in the API server's list order (namespace, name)."""
        return self._kept(f"listed {name}", (name,), lambda: self._ordered(f"listed {name}", self._objects[name]))

    def _ordered(self, what: str, objs: dict[Key, dict]) -> tuple[dict, ...]:
        """The objects in the API server's list order (namespace, name), the keys sorted again only when they changed
        (an object added or deleted, not one modified: a taint on one Node of thousands)."""
        found = self._orders.get(what)
        if found is None or found[0] != objs.keys():
            keys = sorted(objs)
            found = self._orders[what] = (frozenset(keys), keys)
        return tuple(map(objs.__getitem__, found[1]))

    @property
    def _planned(self) -> tuple[str, ...]:
        """The sources the read plan's Nodes follow from: the workloads, Node Pools, Nodes and own Pods."""
        return tuple(s for s in self._sources if not s.startswith((OTHERS, "events-")))

    def _merged_of(self, plural: str, names: tuple[str, ...]) -> tuple[dict, ...]:
        """The objects of the sources `names` (all of one resource), once each, in the server's order; the first
        source's copy wins. By the keys the sources hold: a change to one Node of thousands asks no object its key."""
        if len(names) == 1:
            return self._listed(names[0])

        def merge() -> tuple[dict, ...]:
            merged: dict[Key, dict] = {}
            for name in reversed(names):
                merged |= self._objects[name]
            return self._ordered(f"merged {plural}", merged)

        return self._kept(f"merged {plural}", names, merge)

    def on_nodes(self, names: set[str] | frozenset[str]) -> list[dict]:
        """Other workloads' Pods bound to the Nodes `names` (once each: a Node's own watch and the cluster-wide
        one may both hold them while one replaces the other), packed ones unpacked."""
        found = {k: self._unpack(source, k, p) if packed.TEXT in p else p for source, index in self._on_node.items()
                 for n in names for k, p in index.get(n, {}).items()}
        return list(found.values())

    def _unpack(self, source: str, key: Key, pod: dict) -> dict:
        """The Pod the packed `pod` holds, charged to its source until replaced or no longer read (_others)."""
        found, charge = self._unpacked.pod(key, pod)
        self._sizes[source][key] += charge
        self.held += charge
        return found

    def uncovered(self, nodes: frozenset[str]) -> set[str]:
        """Of the Nodes `nodes`, those whose other workloads' Pods no listed source holds: neither the watch of
        every such Pod nor the Node's own has been listed (yet, or it failed)."""
        if OTHERS in self._synced:
            return set()
        return {n for n in nodes if on_node_source_name(n) not in self._synced}

    def snapshot(self, target: Target, early: bool = False) -> Snapshot:
        """The Snapshot a check of `target` would have read: other workloads' Pods only on the Nodes its read plan
        names (sunkcheck.plan, as the collector asks it); a resource one of whose sources was never listed is
        "not captured" (its steps unknown), as after a check's failed read. Objects in the API server's list
        order (namespace, name). The caller serialises diagnoses: the loop is its one thread. `early`: some
        sources have not answered yet (listed or failed): the Node watches are planned once the workloads and
        Node Pools are in (node_watches), for the lists to start before the rest is in."""
        with self._cond:  # the watches wait while it reads: a snapshot is of one moment
            return self._snapshot(target, early)

    def _snapshot(self, target: Target, early: bool) -> Snapshot:
        by_resource: dict[str, list[str]] = {}
        for s in self._sources.values():
            if not s.name.startswith(OTHERS):
                by_resource.setdefault(s.resource.plural, []).append(s.name)
        merged = {plural: None if set(names) - self._synced else self._merged_of(plural, tuple(names))
                  for plural, names in by_resource.items()}
        snap = Snapshot(nodepools=merged.get("nodepools"), nodes=merged.get("nodes"), events=merged.get("events"),
                        nodesets=merged.get("nodesets"), daemonsets=merged.get("daemonsets"))
        from sunkcheck.plan import Plan
        from sunkcheck.source import declared_reads

        plan = Plan(declared_reads(target), judged=self._judged, eager=self.eager)
        workloads = list((snap.daemonsets if target.daemonset else snap.nodesets) or ())
        needed = {"daemonsets"} if target.daemonset else {"nodesets", "nodepools"}
        if not early or needed <= self._synced:  # else the plan would read every Node for want of the workloads
            own = self._listed("pods") if "pods" in self._synced else None if early else ()  # failed: none, as check
            self.node_watches = self._node_watches(plan, target, workloads, snap.nodepools, own)
        if early or "pods" not in self._synced:
            return snap
        nodes, own = list(snap.nodes or ()), self._listed("pods")
        nodepools = None if snap.nodepools is None else list(snap.nodepools)

        def pod_nodes() -> frozenset[str]:
            self._judged.turn()  # what the plans since the last one asked for is kept; the rest dropped
            return frozenset(plan.pod_nodes(workloads, nodes, list(own), nodepools, target.pools))

        on, idle = self._kept("pod nodes", self._planned, pod_nodes), self._idle
        read = on | self._probed(plan, workloads, nodes, own, nodepools, target.pools, on)
        if self._idle != idle:  # the pools found idle (or no longer) are watched whole (or not) from now on
            self.node_watches = self._node_watches(plan, target, workloads, snap.nodepools, own)
        self.pod_nodes = frozenset(read)
        if self.uncovered(self.pod_nodes):  # as a failed read in check: no Pods, rather than some of them
            return snap
        pod_sources = tuple(s for s in self._sources if s == "pods" or s.startswith(OTHERS))
        others = self._kept("others", pod_sources, lambda: self._others(frozenset(read)), frozenset(read))
        pods = self._kept("merged pods", pod_sources, lambda: _merged([own, others]) if others else own, frozenset(read))
        return replace(snap, pods=pods, pod_nodes=self.pod_nodes)  # a fix then says which Nodes' Pods were not read

    def _others(self, nodes: frozenset[str]) -> tuple[dict, ...]:
        """Other workloads' Pods on the Nodes `nodes`, and only those of the packed ones kept unpacked."""
        found = tuple(self.on_nodes(nodes))
        for key, charge in self._unpacked.keep(self._objects.get(OTHERS, {}), nodes).items():
            self._sizes[OTHERS][key] -= charge  # held: the source is there
            self.held -= charge
        return found

    def _node_watches(self, plan: Plan, target: Target, workloads: list[dict], nodepools: tuple[dict, ...] | None,
                      own: tuple[dict, ...] | None) -> tuple[Source, ...]:
        """The Node watches that hold what check's collector reads (collect.cluster's _nodes and the idle-pool
        probe, from the same read plan): the plan's label selectors, then the hosts of the own Pods outside them,
        the further pools those Nodes show the NodeSets use, and the other pools of their type (whole: which of
        their Nodes a check reads depends on their Pods); every Node where the plan needs them all. A step
        waits for the lists of the one before (where those are not in yet, the watches of later steps, and that
        of every Node, stay as they are, and the last step's, as the workloads and Node Pools alone show it, is
        listed meanwhile: a start waits for one step, not four), so that the plan never judges from Nodes half
        listed; so do the steps
        after the selectors for the own Pods (`own` None: not listed yet). Where the Nodes selected make the plan
        need every Node, their watches stay beside that of every Node: the same Nodes then give the same watches,
        rather than every Node dropping the watches whose Nodes asked for it, and those asking for it again."""
        every = node_source()
        pools = None if nodepools is None else list(nodepools)
        selectors = None if plan.every_node else plan.selectors(workloads, pools, target.pools)
        if selectors is None:
            return (every,)
        chosen = [node_source(label_selector=s) for s in selectors]
        later = tuple(s for name, s in self._sources.items() if of_kind(name, NODES_EVERY)
                      and name not in {c.name for c in chosen})

        def held() -> dict[Key, dict] | None:
            """The Nodes the sources chosen so far hold, by key; None while one of them is not listed yet."""
            if any(c.name not in self._synced for c in chosen):
                return None
            merged: dict[Key, dict] = {}
            for c in chosen:  # by the keys the sources hold: thousands of Nodes are asked nothing
                merged |= self._objects[c.name]
            return merged

        if (by_key := held()) is None or own is None:
            # the last step as the workloads and Node Pools alone show it: those pools' lists run beside the
            # selected Nodes' rather than after them (where the Nodes show more, the steps below name the rest)
            ahead = self._probe_watches(plan, target, workloads, pools, [], [])
            return tuple({c.name: c for c in (*chosen, *later, *ahead)}.values())
        if "pod-hosts" in plan.reads:
            placed = self._kept("own hosts", ("pods",), lambda: {("", n) for p in own if (n := o.node_name(p))})
            hosts = sorted(name for _, name in placed.difference(by_key))
            if len(hosts) > collect_pods.BY_NODE_MAX:  # thousands of watches: one of them all
                return (*chosen, every)
            chosen += [node_source(field_selector=f"metadata.name={h}") for h in hosts]
            if (by_key := held()) is None:
                return (*chosen, *later)
        if more := plan.more_pools(workloads, pools, target.pools, list(own), list(by_key.values())):
            chosen.append(node_source(label_selector=more))
            if (by_key := held()) is None:
                return (*chosen, *later)
        found = list(by_key.values())
        if carriers := plan.carriers(workloads, found):  # a Node carrying each, where one does, as check reads it
            chosen += [node_source(label_selector=c, one=True) for c in carriers]
            if (by_key := held()) is None:
                return (*chosen, *later)
            found = list(by_key.values())
        if not plan.settled(workloads, found, pools, target.pools, list(own)):  # check reads every Node then
            return (*chosen, every)
        chosen += self._probe_watches(plan, target, workloads, pools, found, list(own))
        return tuple({c.name: c for c in chosen}.values())

    def _probe_watches(self, plan: Plan, target: Target, workloads: list[dict], pools: list[dict] | None,
                       nodes: list[dict], own: list[dict]) -> list[Source]:
        """The watches of the other pools of the workloads' type that the idle-pool probe weighs (Plan.probes), as
        check's probe lists them: the first Node of each, and a pool it finds idle whole."""
        probed = plan.probes(workloads, nodes, own, pools, target.pools)
        return [s for name in probed for s in (pool_source(name, one=True),
                                               pool_source(name) if name in self._idle else None) if s]

    def _probed(self, plan: Plan, workloads: list[dict], nodes: list[dict], own: tuple[dict, ...],
                nodepools: list[dict] | None, pools: tuple[str, ...], on: frozenset[str]) -> set[str]:
        """The Nodes whose Pods check's idle-pool probe (Plan.idle_probe) reads beyond `on`: the first Node (_first)
        of each other pool of the type not seen in use, and every Node of a pool whose first Node runs no
        workload. Without them another tenant's Pods there go unseen and the pool looks idle."""
        names = self._kept("probes", self._planned, lambda: plan.probes(workloads, nodes, list(own), nodepools, pools))
        if not names:
            self._idle = frozenset()
            return set()
        index = plan.index(nodes)  # the pools' Nodes by name
        # the probe asks only which Pods run a workload, and where: the own ones that do, kept until they change
        hosts = self._kept("hosts at work", ("pods",), lambda: {o.node_name(p) for p in own if plan.in_use(p)})
        elsewhere = self.on_nodes(set(on))
        # the pools in use are those of the Nodes running a workload: one such Node of each tells it
        busy = hosts | {o.node_name(p) for p in elsewhere if plan.in_use(p)}
        known = [index.nodes[h] for h in {index.pool_by_node.get(h): h for h in busy if h in index.nodes}.values()]
        first, probe, idle = plan.idle_probe(
            names, known, elsewhere, lambda wanted: {n: f for n in wanted if (f := self._first(n, index.members))},
            lambda probed: None if self.uncovered(frozenset(probed)) else self.on_nodes(probed), busy)
        if probe is None:  # the probed Nodes' Pods are not listed yet: no pool is known to be idle
            return set(first.values())
        self._idle = frozenset(idle)
        return set(first.values()) | {o.name(n) for name in idle for n in index.members.get(name, ())}

    def _first(self, pool: str, members: dict[str, tuple[dict, ...]]) -> str | None:
        """The Node check's probe reads of `pool`: its first by name where every Node is watched, else its watch of one's."""
        if NODES_EVERY in self._synced:
            return next((o.name(n) for n in members.get(pool, ())), None)
        source = pool_source(pool, one=True)
        held = self._objects.get(source.name) if source else None
        return o.name(next(iter(held.values()))) if held else None


def _too_large(what: str) -> str:
    """Why a source holding an object larger than any API server sends is refused."""
    return f"it sent {what}: its objects are dropped until a list of it holds none"


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
