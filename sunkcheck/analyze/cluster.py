"""Indexes over one snapshot, built once per run and shared by every target."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.snapshot import Snapshot


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

    @classmethod
    def of(cls, snapshot: Snapshot) -> Cluster:
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
        return cls(snapshot, {o.name(n): n for n in nodes}, pods_on, nodepools, pools, events)

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
