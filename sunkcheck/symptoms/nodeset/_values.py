"""Label values the NodeSet asks for that the pool's Nodes do not carry, with the expression to ask instead."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import HOSTNAME_LABEL, Binding
from sunkcheck.analyze.feasibility import describe_expression
from sunkcheck.symptoms.fixes import expression_yaml, prose, prose_list
from sunkcheck.symptoms.nodeset._moved import moved_value_fix, nodesets
from sunkcheck.symptoms.nodeset._shared import selecting, values_carried


def value_mismatches(b: Binding, nodes: list[dict] | None = None, beside: str = "") -> list[tuple[str, str]]:
    """Required values the pool's Nodes lack although they carry the key (a case slip, a stale value), or
    same-key expressions they cannot match together (SUNK's merge unions a key's layers and can keep both):
    the labels reached the Nodes, the NodeSet asks for the wrong value. Evidence and fix for each key. With no pool
    known, `nodes` (the cluster's) tell only the same-key conflicts: any value some Node carries would be a guess.
    `beside`: a reported row whose fix spells what to do when the value is another NodeSet's (`moved_value_fix`)."""
    pooled = bool(b.pools)
    nodes = b.pool_nodes if pooled or nodes is None else nodes
    found = []
    for term in nd.binding_terms(b.pod_spec):
        for key, exprs in _value_expressions(term).items():
            have = values_carried(key, nodes)
            if not _unmatched(have, exprs) or (not pooled and len(exprs) < 2):
                continue  # absent (pool-labels-missing's), or some pool Node matches
            where = (f"the Nodes of {', '.join(sorted(b.pool_names))}" if pooled else "the cluster's Nodes") + \
                f" carry {key} = " + ", ".join(f"{v} ({n})" for v, n in sorted(have.items()))
            found.append(_layered(b, term, exprs, where) if len(exprs) > 1 else
                         _other_value(b, term, exprs[0], nodes, where, beside))
    return found


def _value_expressions(term: list[dict]) -> dict[str, list[dict]]:
    """The term's In expressions by key, less the pool's name and the hostname (it names Nodes, not their kind)."""
    by_key: dict[str, list[dict]] = defaultdict(list)
    for e in term:
        if e.get("operator") == "In" and e["key"] not in (o.POOL_LABEL, HOSTNAME_LABEL):
            by_key[e["key"]].append(e)
    return by_key


def _unmatched(have: Counter, exprs: list[dict]) -> bool:
    """Whether the Nodes carry the key (`have`, by value) and none carries a value every expression accepts."""
    return bool(have) and not any(all(v in (e.get("values") or ()) for e in exprs) for v in have)


def _other_value(b: Binding, term: list[dict], expr: dict, nodes: Sequence[dict], where: str,
                 beside: str = "") -> tuple[str, str]:
    """An expression asking for a value the Nodes do not carry (said when it differs only in case): ask for theirs,
    unless another NodeSet selects them by that value now (`moved_value_fix`)."""
    wanted = {str(v).lower() for v in expr.get("values") or ()}
    case = "; values are case-sensitive" if wanted & {str(v).lower() for v in values_carried(expr["key"], nodes)} else ""
    carriers = [n for n in nodes if expr["key"] in o.labels(n)]
    if takers := selecting(b, carriers, expr["key"]):
        return (f"{describe_expression(expr)}: {where}{case}; {nodesets(takers)} "
                f"{'select' if len(takers) > 1 else 'selects'} them", moved_value_fix(b, expr, carriers, takers, beside))
    widened, use = ask_carried(b, term, expr["key"], nodes)
    return (f"{describe_expression(expr)}: {where}{case}",
            f"ask for the value the pool's Nodes carry, in place of {prose(describe_expression(expr))}{widened}:\n{use}")


def ask_carried(b: Binding, term: list[dict], key: str, nodes: Sequence[dict]) -> tuple[str, str]:
    """The term's expression on `key` asking for the values `nodes` carry: one source for every row that offers it
    (no-feasible-nodes, and misscheduled's alternative to restoring the pool's value), so they print one snippet."""
    return _value_binding(b, term, {"key": key, "operator": "In", "values": sorted(values_carried(key, nodes))})


def _layered(b: Binding, term: list[dict], exprs: list[dict], where: str) -> tuple[str, str]:
    """Expressions on one key that no Node matches together: a layer brought one in beside the NodeSet's own. The
    fix keeps the NodeSet's own value (its pool's, or the one whose Nodes no other NodeSet runs on) and removes the
    layer bringing the other, never widening the NodeSet onto another NodeSet's Nodes."""
    key = exprs[0]["key"]
    evidence = (f"{' and '.join(map(describe_expression, exprs))} are {'both' if len(exprs) == 2 else 'all'} required, "
                f"and {where}: none matches them together")
    own, why, taken = _own_value(b, key, list(dict.fromkeys(str(v) for e in exprs for v in e.get("values") or ())))
    if own is None:  # no telling which is the NodeSet's: the value its Nodes carry, bound by pool name when need be
        widened, use = _value_binding(b, term, {"key": key, "operator": "In",
                                                "values": sorted(values_carried(key, b.pool_nodes))})
        return evidence, (f"set {prose(key)} in one layer only (Kubernetes requires every expression of the term), "
                          f"as{' below' if widened else ''}{widened}:\n{use}")
    keep = {"key": key, "operator": "In", "values": [own]}
    drop = [describe_expression(e) for e in exprs if own not in (e.get("values") or ())]
    others = "".join(f"; {prose(v)} is the value of the Nodes NodeSet {prose(who)} runs on" for v, who in taken.items())
    widened, use = _value_binding(b, term, keep) if b.pools else ("", expression_yaml(keep))
    return (evidence + others,
            f"keep {prose(own)}, the NodeSet's own value ({why}), and remove the layer that brings in "
            f"{prose_list(drop, ' and ')}: Kubernetes requires every expression of the term, so it keeps one on "
            f"{prose(key)}{widened}:\n{use}")


def _own_value(b: Binding, key: str, values: list[str]) -> tuple[str | None, str, dict[str, str]]:
    """Which of `values` is the NodeSet's own: the one its pool's Nodes carry, or, with no pool known, the one whose
    Nodes no other NodeSet runs on (with the NodeSets running on the others'). None when that does not tell."""
    if b.pools:
        carried = [v for v in values if v in values_carried(key, b.pool_nodes)]
        pools = ", ".join(sorted(b.pool_names))
        return (carried[0], f"the Nodes of {prose(pools)} carry it", {}) if len(carried) == 1 else (None, "", {})
    free, taken = [], {}
    for v in values:
        carriers = [n for n in b.cluster.nodes.values() if o.labels(n).get(key) == v]
        holders = sorted({who for n in carriers if (who := b.neighbours(n)[1])})
        if carriers and not holders:
            free.append((v, sorted({o.pool_of(n) or "" for n in carriers} - {""})))
        elif holders:
            taken[v] = ", ".join(holders)
    if len(free) != 1:
        return None, "", {}
    (own, homes), = free
    where = f"the Nodes of {prose_list(homes)} carry it" if homes else "Nodes carry it"
    return own, where + ", and no other NodeSet runs on them", taken


def _value_binding(b: Binding, term: list[dict], expr: dict) -> tuple[str, str]:
    """The words and snippet putting `expr` in place of the term's expressions on its key. Other pools' Nodes may
    carry that value too (their nodeLabels, a hand label): the corrected term would take them as well, so the
    snippet binds by pool name beside it and the words name them."""
    term = [e for e in term if e["key"] != expr["key"]] + [expr]
    judge = nd.expressions_selector(term)
    others = sorted(p for p in set(b.cluster.pool_names) - b.pool_names if nd.selected_by(b.cluster.pool(p), judge))
    if not others:
        return "", expression_yaml(expr)
    pools = f"Node Pool{'s' if len(others) > 1 else ''} {prose_list(others)}"
    return (f", and bind by pool name beside it: the Nodes of {pools} carry that value too, and it alone would select "
            "them", expression_yaml(expr, {"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.pool_names)}))
