"""Where the objects come from: a recorded snapshot directory, or the live cluster (read-only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sunkcheck.model import InputError
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target


@dataclass(frozen=True)
class Access:
    """How to reach a cluster, kubectl-style; `snapshot` set means replay instead."""

    snapshot: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    request_timeout: float | None = None


@dataclass(frozen=True)
class Loaded:
    snapshot: Snapshot
    target: Target
    """The target with its namespace resolved (a live run defaults to the context's namespace)."""
    errors: tuple[str, ...] = ()
    meta: dict | None = None


def load(access: Access, target: Target, all_namespaces: bool, extra_nodes: tuple[str, ...] = (),
         record: bool = False) -> Loaded:
    """Read the target's objects; `record` when they will be saved as a snapshot."""
    if access.snapshot is not None:
        if access.kubeconfig or access.context:
            raise InputError("--snapshot replays a recording: --kubeconfig and --context do not apply")
        from sunkcheck import snapshot

        return Loaded(snapshot.load(access.snapshot), target)
    from sunkcheck.collect.cluster import collect
    from sunkcheck.collect.kube import Kube

    kube = Kube(access.kubeconfig, access.context, access.request_timeout)
    namespace = None if all_namespaces else (target.namespace or kube.namespace)
    scoped = Target(target.nodeset, target.daemonset, namespace, target.pools, target.ignore)
    collected = collect(kube, scoped, namespace, extra_nodes, record)
    return Loaded(collected.snapshot, scoped, collected.errors, collected.meta)
