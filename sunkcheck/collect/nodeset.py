"""Runbook step 4, live: the NodeSet(s) to check, and the other NodeSets beside them."""

from __future__ import annotations

from dataclasses import dataclass

from sunkcheck import objects as o
from sunkcheck.collect.kube import NODESETS, CallError, Kube
from sunkcheck.snapshot import ShapeError
from sunkcheck.target import EVERY_NODESET


def fetch(kube: Kube, namespace: str | None, name: str | None) -> list[dict]:
    return kube.list(NODESETS, namespace) if name is None else kube.named(NODESETS, name, namespace)


@dataclass(frozen=True)
class Peers:
    """The NodeSets read beside those checked: the rows ask whether another NodeSet holds a pool or a Node (a fix
    must never bind to, or taint, a pool another NodeSet uses), wherever it lives."""

    items: list[dict]
    scope: str
    """EVERY_NODESET, the one namespace whose NodeSets were read, or "" for none."""
    failure: CallError | ShapeError | None = None
    """Why the NodeSets of every namespace could not be read (a Role bound in one namespace: 403)."""


def peers(kube: Kube, namespace: str | None, name: str | None) -> Peers:
    """Every NodeSet of the cluster (one small list: NodeSets are few), else, where that fails, those of `namespace`
    when the check names one NodeSet `name` there (without a name, the check's own read lists them already)."""
    try:
        return Peers(kube.list(NODESETS), EVERY_NODESET)
    except (CallError, ShapeError) as e:
        if name is None:  # the check's own read lists the namespace's
            return Peers([], namespace or "", e)
        if namespace is None:
            return Peers([], "", e)
        try:
            return Peers(kube.list(NODESETS, namespace), namespace, e)
        except (CallError, ShapeError):
            return Peers([], "", e)


def beside(targets: list[dict], read: Peers) -> list[dict]:
    """The targets, then the other NodeSets read, each once: the targets as read by their own request."""
    known = {(o.namespace(t), o.name(t)) for t in targets}
    return [*targets, *(n for n in read.items if (o.namespace(n), o.name(n)) not in known)]
