"""Indexes over one snapshot, built once per run and shared by every target."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze.feasibility import Workload
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import NodeVerdict
from sunkcheck.snapshot import Snapshot


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

    def _template(self, workload: Workload) -> int:
        """A number for what of `workload` a verdict depends on (hashed once per Workload and diagnosis, not
        once per Node), the same for equal templates from one diagnosis to the next."""
        found = self._workloads.get(id(workload))
        if found is None:
            key = (id(workload.pod_spec), workload.checks, workload.kind, tuple(sorted(workload.requests.items())))
            token = self._tokens.get(key, (None, next(self._counter)))[1]
            self._tokens[key] = (workload.pod_spec, token)  # the template held, so that its id is not reused
            found = self._workloads[id(workload)] = (workload, token, key)
        return found[1]

    def turn(self) -> None:
        """A diagnosis is done: keep what it used, for the next one."""
        used = {key for _, _, key in self._workloads.values()}
        self._tokens = {key: found for key, found in self._tokens.items() if key in used}
        self._before, self._now, self._workloads = self._now, {}, {}


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

    @classmethod
    def of(cls, snapshot: Snapshot, judged: Judged | None = None) -> Cluster:
        pods_on: dict[str, list[dict]] = {}
        for pod in snapshot.pods or ():
            if (node_name := o.node_name(pod)) and not o.is_terminal(pod):
                pods_on.setdefault(node_name, []).append(pod)
        events = ev.by_object(snapshot.events)
        nodepools = {o.name(p): p for p in snapshot.nodepools or ()}
        members: dict[str, list[dict]] = {name: [] for name in nodepools}
        nodes = sorted(snapshot.nodes or (), key=o.name)
        for node in nodes:
            if pool := o.pool_of(node):
                members.setdefault(pool, []).append(node)
        pools = {name: Pool(name, nodepools.get(name), tuple(nodes), tuple(ev.about(events, "NodePool", name)))
                 for name, nodes in sorted(members.items())}
        return cls(snapshot, {o.name(n): n for n in nodes}, pods_on, nodepools, pools, events, judged)

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
