"""Indexes over one snapshot, built once per run and shared by every target."""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.feasibility import Workload
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import NodeVerdict
from sunkcheck.snapshot import Snapshot

T = TypeVar("T")
V = TypeVar("V")
X = TypeVar("X")
LATEST = 4
"""Answers Judged.last remembers per kind of fact: a diagnosis indexes a few different sets of Nodes (the plan's
steps, the pipeline's), each nearly the one of the last diagnosis."""


class Judged:
    """Per-Node verdicts carried from one diagnosis to the next (serve, where a change touches one Node of
    thousands). A verdict is a function of the template, the Node and the Pods beside it; serve's cache replaces
    an object whole when it changes and never edits one, so the same objects (by identity, each held here so
    that its id is not reused) give the same verdict. What a diagnosis did not ask for is dropped after it."""

    def __init__(self) -> None:
        self._now: dict[tuple, tuple[tuple, NodeVerdict]] = {}
        self._before: dict[tuple, tuple[tuple, NodeVerdict]] = {}
        self._workloads: dict[int, tuple[Workload, int, tuple]] = {}  # each held, so that its id is not reused
        self._tokens: dict[tuple, tuple[dict, int]] = {}
        self._counter = itertools.count()
        self._facts: dict[tuple, tuple[tuple, Any]] = {}
        self._facts_before: dict[tuple, tuple[tuple, Any]] = {}
        self._passes: dict[tuple, tuple[tuple, dict[str, dict], dict[str, list[dict]], dict[str, Any]]] = {}
        self._passes_before: dict[tuple, tuple[tuple, dict[str, dict], dict[str, list[dict]], dict[str, Any]]] = {}
        self._last: dict[str, list[tuple[tuple, Any]]] = {}  # by the first part of `how`: the latest made (LATEST)
        self._each: dict[tuple, tuple[tuple, tuple, tuple]] = {}
        self._each_before: dict[tuple, tuple[tuple, tuple, tuple]] = {}

    def verdict(self, workload: Workload, node: dict, others: list[dict], how: tuple,
                judge: Callable[[], NodeVerdict]) -> NodeVerdict:
        """judge()'s verdict, or the one it gave for the same objects judged the same way (`how`) before."""
        try:
            key = (self._template(workload), id(node), *map(id, others), how)
        except TypeError:  # a request that cannot be a key: judged afresh
            return judge()
        found = self._now.get(key) or self._before.get(key)
        if found is None:
            found = ((workload.pod_spec, node, *others), judge())
        self._now[key] = found
        return found[1]

    def kept(self, how: tuple, objects: Sequence[object], make: Callable[[], T]) -> T:
        """make()'s answer, or the one it gave before for the same `objects` (by identity, in order; each held, so
        that its id is not reused) asked the same way (`how`): a fact of those objects alone."""
        held = tuple(objects)
        key = (how, *map(id, held))
        found = self._facts.get(key) or self._facts_before.get(key)
        if found is None:
            found = (held, make())
            self._last[how[0]] = [found, *self._last.get(how[0], ())][:LATEST]
        self._facts[key] = found
        return found[1]

    def last(self, what: str) -> list[tuple[tuple, Any]]:
        """The objects and answers `kept` made last for a `how` starting with `what`, the latest first: what an
        index of nearly the same objects starts from."""
        return self._last.get(what, [])

    def per_node(self, how: tuple, holds: Sequence[object], nodes: dict[str, dict], pods_on: dict[str, list[dict]],
                 judge: Callable[[dict], V]) -> dict[str, V]:
        """judge(node) for each of `nodes` (by name), judged again only for a Node replaced, or whose Pods
        (`pods_on`) are not the same objects, since the last pass asked the same way (`how`) about the same
        objects `holds` (what else `judge` reads: its workload). A pass over 5,000 Nodes then judges the one that
        changed."""
        key = (how, *map(id, holds))
        found = self._passes.get(key) or self._passes_before.get(key)
        if found is None:
            answers = {name: judge(node) for name, node in nodes.items()}
        elif found[2] is pods_on and tuple(found[1]) == tuple(nodes):
            # the Pods the same index, the Nodes the same names in the same order: those replaced found in C
            answers = dict(found[3])
            for name, node in itertools.compress(nodes.items(), map(operator.is_not, found[1].values(), nodes.values())):
                answers[name] = judge(node)
        else:
            _, old_nodes, old_pods, old = found
            answers = {name: old[name] if old_nodes.get(name) is node and name in old
                       and _same(old_pods.get(name), pods_on.get(name)) else judge(node) for name, node in nodes.items()}
        self._passes[key] = (tuple(holds), nodes, pods_on, answers)
        return answers

    def each(self, how: tuple, holds: Sequence[object], items: Sequence[X], fact: Callable[[X], V]) -> tuple[V, ...]:
        """fact(item) for each of `items`, in order, judged again only for an item that is not the same object at the
        same place as in the last pass asked the same way (`how`) about the same objects `holds` (what else `fact`
        reads). A fact of one object alone: a pass over 2,000 Pods, or 2,000 Nodes of which one changed, judges none
        or that one, the identities compared in C."""
        key = (how, *map(id, holds))
        found = self._each.get(key) or self._each_before.get(key)
        items = tuple(items)
        if found is None or len(found[1]) != len(items):
            answers = tuple(map(fact, items))
        elif not any(changed := tuple(map(operator.is_not, found[1], items))):
            answers = found[2]
        else:
            fresh = list(found[2])
            for i in itertools.compress(range(len(items)), changed):
                fresh[i] = fact(items[i])
            answers = tuple(fresh)
        self._each[key] = (tuple(holds), items, answers)  # the objects held, so that their ids are not reused
        return answers

    def _template(self, workload: Workload) -> int:
        """A number for what of `workload` a verdict depends on (hashed once per Workload and diagnosis, not
        once per Node), the same for equal templates from one diagnosis to the next, and for NodeSets whose
        templates are equal: a hundred NodeSets of one template on one pool share one verdict per Node."""
        found = self._workloads.get(id(workload))
        if found is None:
            spec = json.dumps(workload.pod_spec, sort_keys=True, separators=(",", ":"), default=repr)
            key = (spec, workload.checks, workload.kind, tuple(sorted(workload.requests.items())))
            token = self._tokens.get(key, (None, next(self._counter)))[1]
            self._tokens[key] = (workload.pod_spec, token)  # the template held, so that its id is not reused
            found = self._workloads[id(workload)] = (workload, token, key)
        return found[1]

    def turn(self) -> None:
        """A diagnosis is done: keep what it used, for the next one."""
        used = {key for _, _, key in self._workloads.values()}
        self._tokens = {key: found for key, found in self._tokens.items() if key in used}
        self._before, self._now, self._workloads = self._now, {}, {}
        self._facts_before, self._facts = self._facts, {}
        self._passes_before, self._passes = self._passes, {}
        self._each_before, self._each = self._each, {}


@dataclass(frozen=True)
class Cluster:
    snapshot: Snapshot
    nodes: dict[str, dict]
    """Nodes by name."""
    pods_on: dict[str, list[dict]]
    """Non-terminal Pods by the Node they are bound to (what holds a Node's resources)."""
    nodepools: dict[str, dict]
    """NodePool objects by name."""
    pools: dict[str, Pool]
    """Every pool the snapshot knows of (from NodePool objects and from Node labels), with its Nodes."""
    events: dict[tuple[str, str, str], list[dict]]
    """Events by the object they are about: (kind, namespace, name)."""
    judged: Judged | None = field(default=None, compare=False)
    """Verdicts kept from an earlier diagnosis of the same objects (serve); None: every Node judged afresh."""
    pool_by_node: dict[str, str] = field(default_factory=dict, compare=False)
    """The pool of each Node that has one, by Node name."""

    @classmethod
    def of(cls, snapshot: Snapshot, judged: Judged | None = None) -> Cluster:
        """The indexes of `snapshot`; with `judged`, each kept from the last diagnosis that had the same objects (a
        plan and the pipeline index the same Nodes several times per change)."""
        def keep(how: str, objects: Sequence[object], make: Callable[[], T]) -> T:
            return make() if judged is None else judged.kept((how,), objects, make)

        pods, events = snapshot.pods or (), snapshot.events or ()
        pods_on = keep("pods on", pods, lambda: _pods_on(pods))
        by_object = keep("events", events, lambda: ev.by_object(events))
        nodes, nodepools = snapshot.nodes or (), snapshot.nodepools or ()
        if judged is None:
            index = NodeIndex.of(nodes, nodepools)
        else:  # one Node changed since the last diagnosis: that one re-indexed, not thousands
            last = judged.last("nodes")
            index = judged.kept(("nodes",), (*nodes, None, *nodepools), lambda: NodeIndex.of(nodes, nodepools, last))
        pools = {name: Pool(name, index.nodepools.get(name), held, tuple(ev.about(by_object, "NodePool", name)))
                 for name, held in index.members.items()}
        return cls(snapshot, index.nodes, pods_on, index.nodepools, pools, by_object, judged, index.pool_by_node)

    def kept(self, how: tuple, objects: Sequence[object], make: Callable[[], T]) -> T:
        """make(), or its answer kept from the last diagnosis for the same `objects` (Judged.kept); made afresh
        without `judged`."""
        return make() if self.judged is None else self.judged.kept(how, objects, make)

    def per_node(self, how: tuple, holds: Sequence[object], judge: Callable[[dict], V],
                 nodes: Iterable[dict] | None = None) -> dict[str, V]:
        """judge(node) for every Node (or those of `nodes`), by name; with `judged`, only for the Nodes that changed
        since the last diagnosis (Judged.per_node: `holds` the objects besides the Node and its Pods that `judge`
        reads)."""
        if nodes is None:
            named = self.nodes
        else:
            held = tuple(nodes)
            named = dict(zip(self.each(("name",), held, o.name), held, strict=True))
        if self.judged is None:
            return {name: judge(node) for name, node in named.items()}
        return self.judged.per_node(how, holds, named, self.pods_on, judge)

    def each(self, how: tuple, items: Sequence[X], fact: Callable[[X], V], holds: Sequence[object] = ()) -> tuple[V, ...]:
        """fact(item) for each of `items`, in order; with `judged`, only for the items that changed since the last
        diagnosis (Judged.each: `holds` the objects besides the item that `fact` reads)."""
        return tuple(map(fact, items)) if self.judged is None else self.judged.each(how, holds, items, fact)

    def slurmd_pods(self, nodeset: dict) -> list[dict]:
        """The NodeSet's Pods (pods.slurmd_pods), kept per NodeSet and Pods between diagnoses: a plan's steps and
        the pipeline ask several times."""
        pods = self.snapshot.pods or ()
        return self.kept(("slurmd pods",), (nodeset, None, *pods), lambda: pd.slurmd_pods(pods, nodeset))

    def pool(self, name: str) -> Pool:
        """The pool by name; one the snapshot does not know has no object, Nodes or Events."""
        return self.pools.get(name) or Pool(name, None, (), ())

    @cached_property
    def nodes_by_ip_tail(self) -> dict[tuple[int, int], tuple[str, ...]]:
        """Node names by the last two octets of their InternalIP, every Node that has them (by name): Nodes of two
        subnets may share them, and which one a Slurm node named after them is, nobody can tell."""
        found: dict[tuple[int, int], tuple[str, ...]] = {}
        for name, node in self.nodes.items():
            octets = (o.internal_ip(node) or "").split(".")
            if len(octets) == 4 and all(x.isdigit() for x in octets[2:]):
                tail = (int(octets[2]), int(octets[3]))
                found[tail] = (*found.get(tail, ()), name)
        return found

    def events_about(self, kind: str, name: str, namespace: str = "") -> list[dict]:
        return ev.about(self.events, kind, name, namespace)

    @property
    def pool_names(self) -> list[str]:
        return list(self.pools)

    def pool_of(self, node_name: str | None) -> str | None:
        node = self.nodes.get(node_name or "")
        return o.pool_of(node) if node else None


def _pods_on(pods: Sequence[dict]) -> dict[str, list[dict]]:
    """Non-terminal Pods by the Node they are bound to."""
    found: dict[str, list[dict]] = {}
    for pod in pods:
        if (node_name := o.node_name(pod)) and not o.is_terminal(pod):
            found.setdefault(node_name, []).append(pod)
    return found


def _same(before: list[dict] | None, now: list[dict] | None) -> bool:
    """Whether two lists of a Node's Pods hold the same objects (none and an empty list alike)."""
    return before is now or (not before and not now) or (
        before is not None and now is not None and len(before) == len(now) and all(
            a is b for a, b in zip(before, now, strict=True)))


@dataclass(frozen=True)
class NodeIndex:
    """Nodes by name (sorted by name), NodePool objects by name, and each pool's Nodes (from the objects and the
    Node labels), sorted by pool name."""

    nodes: dict[str, dict]
    nodepools: dict[str, dict]
    members: dict[str, tuple[dict, ...]]
    pool_by_node: dict[str, str]
    """The pool of each Node that has one, by Node name."""

    @classmethod
    def of(cls, nodes: Sequence[dict], nodepools: Sequence[dict], last: Sequence[tuple[tuple, Any]] = ()) -> NodeIndex:
        """The index of `nodes` and `nodepools`; from one of `last` (the objects an index was made of, and it) when
        only a few Nodes were replaced, each by one of the same name and pool (a taint, a condition, a cordon)."""
        for held, index in last:
            if (updated := cls._updated(nodes, nodepools, held, index)) is not None:
                return updated
        by_name = {o.name(p): p for p in nodepools}
        members: dict[str, list[dict]] = {name: [] for name in by_name}
        ordered = sorted(nodes, key=o.name)
        for node in ordered:
            if pool := o.pool_of(node):
                members.setdefault(pool, []).append(node)
        return cls({o.name(n): n for n in ordered}, by_name, {name: tuple(held) for name, held in sorted(members.items())},
                   {name: pool for pool, held in members.items() for name in map(o.name, held)})

    @classmethod
    def _updated(cls, nodes: Sequence[dict], nodepools: Sequence[dict], held: tuple, index: NodeIndex,
                 most: int = 16) -> NodeIndex | None:
        """`index` (made of the objects `held`: the Nodes, None, the NodePools) with the Nodes that differ by
        identity swapped in; None when the NodePools or the number of Nodes differ, more than `most` Nodes do, or one
        of them changed its name or pool."""
        if len(held) != len(nodes) + 1 + len(nodepools) or held[len(nodes)] is not None or any(
                a is not b for a, b in zip(held[len(nodes) + 1:], nodepools, strict=True)):
            return None
        # the places whose Node was replaced, found in C: a pass over 5,000 Nodes in Python is milliseconds
        changed = list(itertools.islice(itertools.compress(range(len(nodes)), map(operator.is_not, held, nodes)),
                                        most + 1))
        if not changed:
            return index
        if len(changed) > most:
            return None
        by_name, members = dict(index.nodes), dict(index.members)
        for i in changed:
            before, after = held[i], nodes[i]
            name, pool = o.name(before), o.pool_of(before)
            if o.name(after) != name or o.pool_of(after) != pool:
                return None
            by_name[name] = after
            if pool:
                held_now = members[pool]
                at = next(itertools.compress(itertools.count(), map(operator.is_, held_now, itertools.repeat(before))))
                members[pool] = (*held_now[:at], after, *held_now[at + 1:])
        return cls(by_name, index.nodepools, members, index.pool_by_node)
