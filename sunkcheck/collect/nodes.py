"""Runbook step 2, live: the Nodes. Every Node, or only the Nodes a NodeSet check can learn from."""

from __future__ import annotations

import re

from sunkcheck import objects as o
from sunkcheck.analyze.binding import named_pools
from sunkcheck.analyze.feasibility import required_terms
from sunkcheck.analyze.nodes import binding_expressions, uncarried_reserved
from sunkcheck.collect.kube import NODES, Kube

# apimachinery's label syntax: a selector can only name keys and values a Node could carry
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")


def fetch(kube: Kube, selector: str | None = None) -> list[dict]:
    return kube.list(NODES, label_selector=selector)


def scope(nodesets: list[dict], nodepools: list[dict] | None, pools: tuple[str, ...] = ()) -> list[str] | None:
    """Label selectors whose union holds every Node a check of `nodesets` can learn from; None: read them all.

    A Node outside them fails every NodeSet's required affinity and is in none of the pools they name or
    are meant for (`pools`, from --pool, else the Node Pools annotated for them), so no verdict, count or
    evidence depends on it — except in the two rules that read the whole cluster. The scheduler's "0/N
    nodes are available" line: a NodeSet with FEASIBLE 0 or unreported gets every Node. "A reserved key no
    Node carries": see `answers`. On a 5,000-Node cluster this reads the pool, as the runbook's
    `kubectl get nodes -l` does; other pools of its instance type only matter when they are meant for it.
    """
    if not nodesets or nodepools is None:
        return None
    wanted: set[tuple[str | None, ...]] = set()
    for nodeset in nodesets:
        spec = o.pod_spec(nodeset)
        expected = pools or [o.name(p) for p in nodepools if o.meant_for(p, nodeset)]
        bound = sorted(set(named_pools(spec)) | set(expected))
        terms = [_term(t, spec.get("nodeSelector") or {}) for t in required_terms(spec) or ()]
        if not o.status_counts(nodeset)["feasible"] or not bound or not terms or None in terms:
            return None
        wanted |= {(_requirement(o.POOL_LABEL, "in", bound),), *terms}
    if any(None in w for w in wanted):
        return None
    # a selector that adds requirements to another selects a subset of it: it reads nothing new
    return sorted(",".join(w) for w in wanted if not any(set(v) < set(w) for v in wanted))


def answers(nodesets: list[dict], selected: list[dict]) -> bool:
    """Whether the selected Nodes settle "a reserved key no Node carries": they do when they carry every
    reserved key the NodeSets rely on (the pool-name label, typically); otherwise read every Node."""
    return not any(uncarried_reserved(binding_expressions(o.pod_spec(ns), o.spec(ns).get("nodeSelector")), selected)
                   for ns in nodesets)


def _term(term: dict, node_selector: dict) -> tuple[str | None, ...] | None:
    """One nodeSelectorTerm (and the template's nodeSelector) as label-selector requirements matching at
    least the Nodes it matches; None when they would select every Node."""
    found = [_requirement(k, "=", [v]) for k, v in sorted(node_selector.items(), key=str)]
    for e in term.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op in ("In", "NotIn") and values:
            found.append(_requirement(key, op.lower(), values))
        elif op in ("Exists", "DoesNotExist") and not values:
            found.append(_requirement(key, "" if op == "Exists" else "!", []))
        # Gt, Lt and invalid requirements are left out: the selector then reads a superset
    return tuple(found) or None


def _requirement(key, op: str, values: list) -> str | None:
    """`key in (a,b)`, `key=a`, `key`, `!key`; None when the key or a value is not label syntax (no Node
    could carry it, and the server would reject the selector)."""
    if not isinstance(key, str) or not _KEY.match(key) or not all(isinstance(v, str) and _VALUE.match(v) for v in values):
        return None
    if op in ("", "!"):
        return op + key
    return f"{key}={values[0]}" if op == "=" else f"{key} {op} ({','.join(sorted(set(values)))})"
