"""Runbook step 4, live: the NodeSet(s) to check, and the other NodeSets beside them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sunkcheck import objects as o
from sunkcheck.collect.kube import NODESETS, PODS, CallError, Kube
from sunkcheck.collect.nodes import requirement
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


def unlabelled_pods(kube: Kube, nodesets: list[dict], found: list[dict]) -> list[dict]:
    """The slurmd Pods the label selector missed: those a NodeSet's controller ownerReference names, without
    `app.kubernetes.io/instance=<NodeSet>` (which SUNK is not known to set). Read only where the NodeSet's status counts
    more Pods (CURRENT plus MISSCHEDULED) than the label found: one list of its namespace's Pods not labelled for it,
    keeping those it controls (other workloads' Pods there are not kept, and no other namespace is read)."""
    short: dict[str, list[str]] = {}
    for n in nodesets:
        counts = o.status_counts(n)
        if (counts["current"] or 0) + (counts["misscheduled"] or 0) > sum(_labelled(p, n) for p in found):
            short.setdefault(o.namespace(n), []).append(o.name(n))
    return [p for namespace, names in sorted(short.items()) for p in kube.list(
        PODS, namespace, label_selector=requirement(o.INSTANCE_LABEL, "notin", names), keep=_controlled_by(names))]


def _labelled(pod: dict, nodeset: dict) -> bool:
    """Whether the label selector found the Pod as the NodeSet's: labelled for it, owned by it or by nothing."""
    return (o.namespace(pod) == o.namespace(nodeset) and o.labels(pod).get(o.INSTANCE_LABEL) == o.name(nodeset)
            and (not o.meta(pod).get("ownerReferences") or o.owned_by(pod, "NodeSet", o.name(nodeset))))


def _controlled_by(names: list[str]) -> Callable[[dict], dict | None]:
    """Keeps a Pod whose controller ownerReference is one of the NodeSets `names` (in the Pod's namespace)."""
    return lambda pod: pod if any(ref.get("kind") == "NodeSet" and ref.get("name") in names and ref.get("controller")
                                  for ref in o.meta(pod).get("ownerReferences") or ()) else None
