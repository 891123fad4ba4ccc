"""Row pool-labels-missing: a label the NodeSet requires that no Node of its pool carries."""

from __future__ import annotations

import difflib

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.discovery import named_pools
from sunkcheck.analyze.feasibility import describe_expression
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import FEASIBLE, DeadEnd, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import label_nodepool, nodepool_command, prose, prose_list
from sunkcheck.symptoms.nodeset._shared import held_by, values_carried
from sunkcheck.symptoms.nodeset._values import value_mismatches


def pool_labels_missing(b: Binding) -> Match | None:
    """A key no pool Node carries at all. A key the Nodes carry with another value reached them: the NodeSet asks
    for the wrong value, no-feasible-nodes' to explain."""
    nodes = b.pool_nodes
    if not nodes:
        return None
    missing = nd.relied_on(b.terms, lambda e: nd.is_user_key(e["key"]) and not values_carried(e["key"], nodes))
    if not missing:
        return None
    evidence, fixes = [], []
    if len(b.terms) > 1:  # Kubernetes ORs the terms: one carried would do, so the fix completes the nearest
        evidence.append(f"each of the {len(b.terms)} nodeSelectorTerms needs a label no pool Node carries; the nearest "
                        f"to matching needs {', '.join(sorted({e['key'] for e in missing}))}")
    for e in missing:
        evidence.append(f"{describe_expression(e)}: 0/{len(nodes)} Nodes in {', '.join(sorted(b.pool_names))} carry {e['key']}")
        for p in b.pools:
            said, patch = _pool_lacks(b, p, e)
            evidence += said
            fixes += patch
    free = [p for p in b.pools if not held_by(b, p.name)]
    fix = _label_fix(b, free, fixes, missing) if free else _held_fix(b, missing)
    values = value_mismatches(b)  # no-feasible-nodes, which would name them, is explained away by this row
    # a key a pool's nodeLabels set reaches its Nodes in time (CKS stamps it), and a pool not read may set it
    keys = {e["key"] for e in missing}
    never = all(p.obj is not None and not keys.intersection(p.node_labels) for p in b.pools)
    stuck = DeadEnd(f"no Node Pool sets {', '.join(sorted(keys))} in its nodeLabels, so no Node ever carries it",
                    (FEASIBLE,)) if never else None
    return Match(tuple(evidence + [line for line, _ in values]), "\n".join([fix] + [f for _, f in values]),
                 dead_end=stuck)


def _label_fix(b: Binding, free: list[Pool], patches: list[str], missing: list[dict]) -> str:
    """The label set on the pools no other NodeSet holds (or, where a pool's nodeLabels set it already, its Events
    read), or the requirement dropped if no pool is meant to carry it."""
    fix = "set the label on the Node Pool, not on Nodes, then check its Events:\n" + "\n".join(
        patches or [nodepool_command("describe", p.name) for p in free])
    return fix + "".join(f"\nor, if no Node Pool is meant to carry {prose(key)}, remove or correct it in {where}"
                         for key, where in _requirements(b, missing))


def _held_fix(b: Binding, missing: list[dict]) -> str:
    """Every pool is another NodeSet's: labelling one would bring this NodeSet onto that one's Nodes, so the fix says
    so first, then the choice that is this NodeSet's owners': share the pool (the requirement dropped, the Nodes split
    by name), or a Node Pool of its own whose nodeLabels set the label."""
    pools = "; ".join(f"{prose(p.name)}: {held_by(b, p.name)}" for p in b.pools)
    dropped = " and ".join(f"{prose(key)} in {where}" for key, where in _requirements(b, missing))
    labels = prose_list(f"{e['key']}={_label_value(e)}" for e in missing)
    named = f", and name that pool in its {o.POOL_LABEL} expression" if named_pools(b.pod_spec) else ""
    return (f"do not label the Node Pool for this NodeSet ({pools}): it would bring this NodeSet onto another "
            f"NodeSet's Nodes. Decide what this NodeSet is for, with the other's owners: to share the pool, remove or "
            f"correct {dropped} and leave each other's Nodes out by name; for Nodes of its own, give it a Node Pool "
            f"of its own whose nodeLabels set {labels}{named}")


def _requirements(b: Binding, missing: list[dict]) -> list[tuple[str, str]]:
    """Each missing key with where the NodeSet requires it."""
    return sorted({(e["key"], _required_in(b, e["key"])) for e in missing})


def _pool_lacks(b: Binding, p: Pool, e: dict) -> tuple[list[str], list[str]]:
    """What the pool says of the missing key (its nodeLabels set it, or the nearest key they have) and the patch
    setting it there: none for a pool another NodeSet holds, where labelling is no fix of this one's."""
    if e["key"] in p.node_labels:
        return [f"Node Pool {p.name}: spec.nodeLabels sets {e['key']}={p.node_labels[e['key']]} but no Node carries it"], []
    near = difflib.get_close_matches(e["key"], list(p.node_labels) + [k for n in p.nodes for k in o.labels(n)], 1)
    said = [f"Node Pool {p.name}: spec.nodeLabels has no {e['key']}" + (f" (did you mean {near[0]}?)" if near else "")]
    if held := held_by(b, p.name):
        return [*said, f"Node Pool {p.name}: {held}, so no fix labels it"], []
    return said, [label_nodepool(p.name, {e["key"]: _label_value(e)})]


def _required_in(b: Binding, key: str) -> str:
    """Where the NodeSet requires `key`: a nodeSelector (the template's, or the one outside it) or its affinity."""
    if key in (b.pod_spec.get("nodeSelector") or {}):
        return "the node definition's nodeSelector"
    if key in (o.spec(b.nodeset).get("nodeSelector") or {}):
        return "the NodeSet's spec.nodeSelector"
    return "the node definition's required affinity"


def _label_value(expr: dict) -> str:
    return str((expr.get("values") or ["true"])[0]) if expr["operator"] in ("In", "Exists") else "<value>"


RULE = Rule("pool-labels-missing", Status.CRITICAL, "nodes",
            "No Node in the pool carries the label the binding relies on",
            "The label is not in the Node Pool's nodeLabels (or CKS has not applied it), so nothing matches the NodeSet's "
            "affinity.",
            "Set the label in the Node Pool's spec.nodeLabels, then check the Node Pool's Events.",
            pool_labels_missing, needs=("nodes",), explained_by=("reserved-label-namespace",),
            reads=(Read.POOL_NODES,))
