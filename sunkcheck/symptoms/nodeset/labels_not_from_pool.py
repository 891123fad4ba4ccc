"""Row labels-not-from-pool: labels and taints the NodeSet relies on, set on a pool's Nodes by hand."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import describe_expression, matches_affinity
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import (arg, expression_yaml, label_nodepool, prose, prose_list, taint_nodepool,
                                      unlabel_node)
from sunkcheck.symptoms.nodeset._moved import leave_moved, nodesets, pool_restores
from sunkcheck.symptoms.nodeset._shared import intended_pools, reapplied, selecting, values_carried
from sunkcheck.symptoms.nodeset._tolerations import tolerate_first
from sunkcheck.symptoms.notes import runs_a_workload
from sunkcheck.text import counted


def labels_not_from_pool(b: Binding) -> Match | None:
    """Labels and taints the NodeSet relies on, set on a pool's Nodes by hand: the fix moves them into the pool's
    spec. Never into a pool not meant for the NodeSet (with an expectation: --pool, the annotation), nor offered
    for a pool another workload uses where only some Nodes carry them: either would spread the NodeSet over the
    whole of another team's pool. A pool whose nodeLabels now set another value is a relabel CKS has yet to apply."""
    evidence: list[str] = []
    fixes, busy, relabels = [], [], []
    intended = intended_pools(b) if b.expected else None
    for p in (p for p in b.pools if p.obj is not None):
        found = _hand_labels(b, p)
        # the live read of their Nodes' Pods uses the same two helpers
        moved = nd.moved_hand_taints(p, b.pod_spec, b.cluster.each)
        relabels += [(p, *r) for r in found.relabels]
        evidence += found.evidence + [f"taint {text} on {len(hand)}/{len(p.nodes)} Nodes of {p.name} "
                                      f"({some(o.name(n) for n in hand)}), but Node Pool {p.name} spec.nodeTaints does "
                                      "not set it" for text, (_, hand) in moved.items()]
        meant = intended is None or p.name in intended
        if meant and found.fewer and _used_by_others(b, p):
            busy.append(p.name)
            fixes.append(_busy_fix(p, found))
        elif fix := (_pool_fix(b, p, found, [t for t, _ in moved.values()]) if meant else
                     _not_meant_fix(b, p, found.picked)):
            fixes.append(fix)
    if busy:
        fixes.append(_say_the_pool(b, busy))
    if relabels:
        return _relabelled(b, relabels, evidence, fixes)
    return Match(tuple(evidence), f"{REAPPLIED}\n" + "\n".join(fixes)) if evidence else None


Relabel = tuple[Pool, dict, str, list[dict]]
"""A pool, the expression its nodeLabels now refuse, the value they set, the Nodes still carrying the old one."""


def _relabelled(b: Binding, relabels: list[Relabel], evidence: list[str], fixes: list[str]) -> Match:
    """The relabels first, judged as the state they lead to (`_moved`'s relabelled pool): once CKS applies them, the
    Nodes leave; no Node left is as critical as FEASIBLE 0. The hand labels beside them keep their own fix."""
    leaving = {o.name(n) for *_, nodes in relabels for n in nodes}
    stays = [n for n in b.pool_nodes if b.verdict(o.name(n)).feasible and o.name(n) not in leaving]
    text = [_relabel_fix(b, *r) for r in relabels] + ([REAPPLIED, *fixes] if fixes else [])
    return Match(tuple(_relabel_evidence(*r) for r in relabels) + tuple(evidence), "\n".join(text),
                 Status.WARNING if stays else Status.CRITICAL,
                 cause="The Node Pool's nodeLabels set another value than the NodeSet requires; its Nodes still carry "
                       "the old one until CKS applies the pool's.",
                 symptom=f"{counted(len(leaving), 'Node')} leave the NodeSet once CKS applies the Node Pool's labels")


REAPPLIED = "CKS reapplies only the pool's own metadata when it replaces a Node:"


def _relabel_evidence(pool: Pool, expr: dict, own: str, nodes: list[dict]) -> str:
    key = expr["key"]
    carried = prose_list(f"{key}={v}" for v in sorted(values_carried(key, nodes)))
    return (f"Node Pool {pool.name} spec.nodeLabels sets {key}={own} now; {len(nodes)}/{len(pool.nodes)} of its Nodes "
            f"({some(o.name(n) for n in nodes)}) still carry {carried}: once CKS applies the pool's value, they fail "
            f"{describe_expression(expr)} and leave the NodeSet")


def _relabel_fix(b: Binding, pool: Pool, expr: dict, own: str, nodes: list[dict]) -> str:
    """Both ways out of a pool relabelled away from what the NodeSet requires: the pool's value put back (a merge
    patch: its other nodeLabels entries stay), or the NodeSet asking for the new one; where another NodeSet selects
    the Nodes once relabelled, the pool moved to it: leaving is said in place of asking (both would select them)."""
    key, restores = expr["key"], pool_restores(b, expr, nodes)
    head = f"Node Pool {prose(pool.name)} now sets {prose(key + '=' + own)}, which the NodeSet refuses: "
    back = ("if that change is a mistake, put the value back in the Node Pool (its other nodeLabels stay as they are):\n"
            + "\n".join(restores) if restores else
            "if that change is a mistake, put back in the nodeLabels of the Node Pool the value the NodeSet requires")
    relabelled = [n | {"metadata": o.meta(n) | {"labels": o.labels(n) | {key: own}}} for n in nodes]
    if takers := selecting(b, relabelled):
        return (f"{head}{nodesets(takers)} will select its Nodes then\n"
                f"{leave_moved(b, [p for p in b.pods if o.node_name(p) in {o.name(n) for n in nodes}])}\n{back}")
    if expr.get("operator") != "In":
        return f"{head}{back}\nor, if {prose(own)} is meant, accept it in the affinity of the node definition"
    # both values while CKS relabels: no Node leaves on the way (asking for the new one alone refuses them all now)
    both = [*map(str, expr.get("values") or ()), own]
    return (f"{head}{back}\nor, if {prose(own)} is meant, accept it beside the old value in the affinity of "
            f"the node definition, in place of {prose(describe_expression(expr))}, so no Node leaves while CKS relabels them "
            f"(drop the old value once every Node carries {prose(own)}):\n"
            + expression_yaml({"key": key, "operator": "In", "values": both}))


@dataclass
class _HandLabels:
    """The labels a pool's Nodes carry by hand that the NodeSet relies on."""

    evidence: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """By key: the value set by hand."""
    picked: dict[str, list[str]] = field(default_factory=dict)
    """By key: the Nodes carrying it by hand."""
    fewer: set[str] = field(default_factory=set)
    """The Nodes carrying by hand a label that only some of the pool's Nodes carry."""
    overwritten: dict[str, str] = field(default_factory=dict)
    """By Node: the key=value the pool's nodeLabels patch would overwrite there."""
    relabels: list[tuple[dict, str, list[dict]]] = field(default_factory=list)
    """Each expression whose key the pool's nodeLabels set to a value it refuses, with that value and the Nodes that
    still carry one it takes: they leave the NodeSet once CKS applies the pool's value."""


def _hand_labels(b: Binding, pool: Pool) -> _HandLabels:
    """Each user label the NodeSet requires that the pool's Nodes carry by hand, with another value than the pool's
    and on Nodes no term selects once CKS reapplies the pool's labels."""
    found = _HandLabels()
    # a pass over every Node of the pool, made once a Node carries a label off the pool's value (most bind by reserved
    # keys alone, and a pool's Nodes carry its value)
    kept = functools.cache(lambda: _selected_reapplied(b, pool))
    for e in (e for e in nd.positive(b.terms) if nd.is_user_key(e["key"])):
        key, carriers = e["key"], nd.carriers(e, pool.nodes, b.cluster.each)
        own = pool.node_labels.get(key)
        off = b.cluster.each(("off the pool's value", key, repr(own)), carriers, functools.partial(_off_value, key, own))
        hand = [n for n in itertools.compress(carriers, off) if o.name(n) not in kept()]
        if hand and own is not None:  # the pool sets another value: not hand labels, a relabel CKS has yet to apply
            found.relabels.append((e, own, hand))
        elif hand:
            _add_hand_label(found, pool, e, hand, carriers)
    return found


def _selected_reapplied(b: Binding, pool: Pool) -> set[str]:
    """The pool's Nodes a term still selects once CKS reapplies the pool's labels (`reapplied`): a fact of the NodeSet
    (its selection), the pool's object (its nodeLabels) and each Node, kept per Node."""
    return {name for name, ok in b.cluster.per_node(("selects reapplied",), (b.nodeset, pool.obj), lambda n: nd.selects(
        b.selection, reapplied(pool, n), o.name(n)), pool.nodes).items() if ok}


def _off_value(key: str, value: object, node: dict) -> bool:
    """Whether the Node's label `key` has another value than `value` (the pool's)."""
    return value != o.labels(node)[key]


def _add_hand_label(found: _HandLabels, pool: Pool, expr: dict, hand: list[dict], carriers: list[dict]) -> None:
    """One hand label in `found`: its evidence, its value, its Nodes; and when only some Nodes carry it, those that
    lack it and those whose own value the pool's patch would overwrite."""
    key = expr["key"]
    value = o.labels(hand[0])[key]
    found.evidence.append(f"{key}={value} on {len(hand)}/{len(pool.nodes)} Nodes of {pool.name} "
                          f"({some(o.name(n) for n in hand)}), but Node Pool {pool.name} spec.nodeLabels does not set it")
    found.labels[key] = value
    found.picked[key] = sorted(o.name(n) for n in hand)
    if len(carriers) < len(pool.nodes):
        found.fewer |= {o.name(n) for n in hand}
        lacking = [o.name(n) for n in pool.nodes if all(n is not c for c in carriers)]
        found.evidence.append(f"{len(lacking)}/{len(pool.nodes)} Nodes of {pool.name} fail {describe_expression(expr)} "
                              f"({some(lacking)}): the NodeSet cannot use them")
        found.overwritten |= {o.name(n): f"{key}={o.labels(n)[key]}" for n in pool.nodes
                              if key in o.labels(n) and o.labels(n)[key] != value}


def _busy_fix(pool: Pool, found: _HandLabels) -> str:
    """Another team's pool where only some Nodes carry the labels: never the pool's nodeLabels."""
    return (f"only {some(sorted(map(prose, found.fewer)))} of the {len(pool.nodes)} Nodes of {prose(pool.name)} carry "
            f"{prose_list(f'{k}={v}' for k, v in sorted(found.labels.items()))}, and other workloads run "
            f"on it: never set it in its nodeLabels (that puts the NodeSet on all {len(pool.nodes)}, beside them)")


def _tainting(b: Binding, pool: Pool, taints: list[dict]) -> str:
    """The pool's nodeTaints patch, and before it the tolerations it needs: the pool's Nodes that lack a taint get
    it too, so their daemon Pods are read (a Node carrying it loses none)."""
    if not taints:
        return ""
    snap = b.cluster.snapshot
    first = "".join(tolerate_first(b, t, reach := nd.keeps_off(pool, t),
                                   [n for n in reach if snap.pods_read(o.name(n))],
                                   f"for {prose(o.format_taint(t))}, ") for t in taints)
    return first + ("then set it in the pool's nodeTaints:\n" if first else "") + taint_nodepool(pool, taints)


def _not_meant_fix(b: Binding, pool: Pool, picked: dict[str, list[str]]) -> str:
    """A pool not meant for the NodeSet keeps its spec (set there, a label reaches every Node of it): the labels
    come off the Nodes `picked` by hand, after the slurmd Pods there are drained (nodeselector-ignored's fix)."""
    text = f"{prose(pool.name)} is not meant for the NodeSet: set none of this in its spec"
    if not picked:
        return text
    if {n for names in picked.values() for n in names} & {o.node_name(p) for p in b.pods}:
        return text + "; its slurmd Pods there come off first (nodeselector-ignored: drain their Slurm nodes), then the labels"
    return (text + "; take the labels off its Nodes (no slurmd Pod runs there):\n"
            + "\n".join(unlabel_node(names, [k]) for k, names in sorted(picked.items())))


def _used_by_others(b: Binding, pool: Pool) -> bool:
    """Whether a Pod of a workload other than Slurm (no node agent's, no NodeSet's: another NodeSet's Nodes are a
    Slurm pool shared on purpose) runs on one of the pool's Nodes: the pool is another team's."""
    return any(runs_a_workload(p) and pd.nodeset_owner(p) is None and id(p) not in b.own_pods
               for n in pool.nodes for p in b.cluster.pods_on.get(o.name(n), ()))


def _say_the_pool(b: Binding, busy: list[str]) -> str:
    """Which pools the NodeSet is meant for, said so sunkcheck can tell its Pods on `busy` pools apart."""
    own = sorted(b.pool_names - set(busy))
    line = (f"if the NodeSet is meant for {prose_list(own) or 'another pool'} only, bind it by pool name, or say "
            "so and sunkcheck names its Pods outside it and how to drain them")
    if not own:
        return line + " (--pool <pool>)"
    return (line + ":\n" + " ".join(["sunkcheck check -n", arg(b.namespace), "--nodeset", arg(b.name),
                                    *(f"--pool {arg(p)}" for p in own)]))


def _pool_fix(b: Binding, pool: Pool, found: _HandLabels, taints: list[dict]) -> str | None:
    """The pool's nodeLabels patch and its nodeTaints patch with what to do before it (`_tainting`), None when there
    is neither; when only some of its Nodes carry a label's value (`fewer`), the patches would put it on every Node
    and spread the NodeSet over them all: right when a replaced Node lost it, not when those Nodes were picked out by
    hand, so both are said, each with its own commands (the pool's taint belongs to the whole-pool branch)."""
    if not found.labels and not taints:
        return None
    labels, fewer, tainting = found.labels, found.fewer, _tainting(b, pool, taints)
    commands = "\n".join(c for c in (label_nodepool(pool.name, labels) if labels else "", tainting) if c)
    if not fewer:
        return commands
    pairs = ", ".join(prose(f"{k}={v}") for k, v in sorted(labels.items()))
    carry = "carry" if len(fewer) > 1 else "carries"
    own = "nodeLabels (and the taint in its nodeTaints)" if tainting else "nodeLabels"
    text = f"only {some(sorted(map(prose, fewer)))} of the {len(pool.nodes)} Nodes of {prose(pool.name)} {carry} {pairs}"
    others, whole, listing = _overwritten_words(pool, found)
    head = (f"{text}{others}: setting it in the pool's nodeLabels puts it on all {len(pool.nodes)} and spreads the "
            f"NodeSet over them.{listing}If only those Nodes are meant for the NodeSet, give them a Node Pool of their "
            f"own that sets it in its {own}, and change nothing in {prose(pool.name)}.")
    if lose := _losing(b, pool, labels):  # the labels would take its Nodes from another NodeSet: no command for it
        return (f"{head} Labelling the whole pool would take its Nodes from NodeSet{'s' if len(lose) > 1 else ''} "
                f"{prose_list(lose)}, which select{'' if len(lose) > 1 else 's'} them without it: decide it with "
                f"{'their' if len(lose) > 1 else 'its'} owners")
    return f"{head} If the whole pool is (a replaced Node lost the label){whole}:\n{commands}"


def _losing(b: Binding, pool: Pool, labels: dict[str, str]) -> list[str]:
    """The other NodeSets read that select some Node of `pool` now and would not once it carries `labels` (one that
    requires a label absent, or another value): the pool's nodeLabels patch would take those Nodes from them."""
    relabelled = [(n, n | {"metadata": o.meta(n) | {"labels": o.labels(n) | labels}}) for n in pool.nodes]
    return sorted(f"{o.namespace(w)}/{o.name(w)}" for w in b.peers
                  if any(matches_affinity(o.pod_spec(w), n) and not matches_affinity(o.pod_spec(w), after)
                         for n, after in relabelled))


def _overwritten_words(pool: Pool, found: _HandLabels) -> tuple[str, str, str]:
    """The other Nodes may carry the key with another value on purpose (another NodeSet's): the patch would
    overwrite it, so the words name them, and the first command only lists each Node's value (unless a key could be
    read as a flag)."""
    if not found.overwritten:
        return "", "", " "
    others = sorted(found.overwritten)
    values = ", ".join(prose(v) for v in sorted(set(found.overwritten.values())))
    said = (f"; {len(others)} other{'s' if len(others) > 1 else ''} ({some(map(prose, others))}) "
            f"{'carry' if len(others) > 1 else 'carries'} {values}, perhaps on purpose (another NodeSet's)")
    listing = " "
    if LABEL_VALUE.fits(pool.name) and all(map(LABEL_KEY.fits, found.labels)):
        listing = (" List each Node's value first:\n" + f"kubectl get nodes -l {arg(o.POOL_LABEL + '=' + pool.name)} "
                   f"-L {arg(','.join(sorted(found.labels)))}\n")
    return said, f", this overwrites {values} on {prose_list(others)}", listing


RULE = Rule("labels-not-from-pool", Status.WARNING, "nodes",
            "Nodes lose their labels after a Node Pool scale event",
            "The labels or taints were applied to individual Nodes instead of the Node Pool spec.",
            "Move the labels and taints into the Node Pool's nodeLabels and nodeTaints.",
            labels_not_from_pool, needs=("nodes", "nodepools"),
            reads=(Read.POOL_NODES, Read.PODS_ON_NODES_LACKING_A_HAND_TAINT, Read.PODS_ON_UNEVEN_POOL_NODES))
