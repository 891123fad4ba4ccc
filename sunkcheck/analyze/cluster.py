"""Indexes over one snapshot, built once per run and shared by every target."""

from __future__ import annotations

from dataclasses import dataclass

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

    @classmethod
    def of(cls, snapshot: Snapshot) -> Cluster:
        pods_on: dict[str, list[dict]] = {}
        for pod in snapshot.pods or ():
            if o.node_name(pod) and not o.is_terminal(pod):
                pods_on.setdefault(o.node_name(pod), []).append(pod)
        return cls(snapshot, {o.name(n): n for n in snapshot.nodes or ()}, pods_on,
                   {o.name(p): p for p in snapshot.nodepools or ()})

    def pool(self, name: str) -> Pool:
        return Pool(name, self.nodepools.get(name),
                    tuple(n for n in self.nodes.values() if o.pool_of(n) == name),
                    tuple(ev.events_for(self.snapshot.events, "NodePool", name)))

    @property
    def pool_names(self) -> list[str]:
        """Every pool the snapshot knows of, from NodePool objects and from Node labels."""
        return sorted(set(self.nodepools) | {p for p in map(o.pool_of, self.nodes.values()) if p})

    def pool_of(self, node_name: str | None) -> str | None:
        node = self.nodes.get(node_name or "")
        return o.pool_of(node) if node else None
