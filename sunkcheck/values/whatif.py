"""What-if: put the NodeSets a values change would create in place of the deployed ones, before deploying."""

from __future__ import annotations

from dataclasses import replace

from sunkcheck import objects as o
from sunkcheck.snapshot import Snapshot
from sunkcheck.values.compose import Effective


def predict(snapshot: Snapshot, nodesets: list[Effective], namespace: str | None, default: str | None) -> Snapshot:
    """The snapshot with the values' NodeSets (no status yet) instead of the deployed ones. Each lands in
    `namespace` (-n), else where a deployed NodeSet of that name lives (its Pods then count as its own), else in
    `default` (the release's namespace as helm would pick it), else in the namespace named default."""
    deployed = {o.name(n): o.namespace(n) for n in snapshot.nodesets or ()}
    return replace(snapshot, nodesets=tuple(e.nodeset_object(namespace or deployed.get(e.nodeset) or default or "default")
                                            for e in nodesets))
