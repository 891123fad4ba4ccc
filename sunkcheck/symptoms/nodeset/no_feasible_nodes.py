"""Row no-feasible-nodes: FEASIBLE 0, with what refuses the slurmd Pod on each Node and its fix."""

from __future__ import annotations

import difflib

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.feasibility import describe_expression, match_expression, scheduler_summary
from sunkcheck.model import FEASIBLE, NO_POOL, DeadEnd, Reason, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule, some
from sunkcheck.symptoms.fixes import HAND_TAINT_CAUTION, arg, expression_yaml, join_fixes, prose, value
from sunkcheck.symptoms.nodeset._resources import fits, resources_fix, short_beside_claims
from sunkcheck.symptoms.nodeset._shared import (absent_pools, claimed_fix, grouped_evidence, hand_said, health_reasons,
                                                health_said, held_by, nearest_pool, no_such_pool, reasons_by_detail,
                                                refused_for_good, taint_sources, untaint_hand)
from sunkcheck.symptoms.nodeset._tolerations import tolerate
from sunkcheck.symptoms.nodeset._values import value_mismatches
from sunkcheck.symptoms.nodeset.misscheduled import RULE as misscheduled
from sunkcheck.text import counted


def no_feasible_nodes(b: Binding) -> Match | None:
    """FEASIBLE 0 with Nodes to judge (the pools', else the cluster's) or a pool named that does not exist: every
    reason the Nodes refuse the slurmd Pod, grouped, with the cause the evidence shows and a fix per reason."""
    if b.feasible != 0:
        return None
    absent = absent_pools(b)
    nodes = b.pool_nodes if b.pools else list(b.cluster.nodes.values())
    if not nodes and not absent:
        return None
    health = {o.name(n): health_reasons(b, n) for n in nodes}
    if b.pools and not absent and _only_in_repair(b, health):
        return None  # every Node is in repair, and nothing else refuses them: pool-nodes-in-repair's, not a mismatch
    grouped = _refusals(b, nodes, health)
    values = value_mismatches(b, nodes) if "affinity" in _checks(grouped) else []
    # sunkcheck's own count in the scheduler's words: labelled, so it never reads as a FailedScheduling Event quoted
    evidence = [f"sunkcheck, as kube-scheduler would put it: {scheduler_summary(b.verdicts.values())}"]
    evidence += [no_such_pool(b, p.name) for p in absent]
    evidence += grouped_evidence(b, grouped, len(nodes)) + [line for line, _ in values]
    fixes = [fix for _, fix in values]
    # a value another NodeSet selects now: misscheduled, when reported, spells what to do with this one's Pods there
    referred = [fix for _, fix in value_mismatches(b, nodes, misscheduled.id)] if values else fixes
    beside = ((misscheduled.id, _feasibility_fix(b, grouped, absent, nodes, referred)),) if referred != fixes else ()
    return Match(tuple(evidence), _feasibility_fix(b, grouped, absent, nodes, fixes),
                 cause=_feasibility_cause(b, grouped, absent, nodes), dead_end=_dead_end(b, absent, nodes),
                 fix_beside=beside)


def _pool_name_fix(b: Binding, absent: list[Pool]) -> str:
    """Name existing pools in place of the absent ones: each one's nearest existing pool when there is one (said to
    be where its slurmd Pods run when they do), else the pools the NodeSet already names that exist. A snippet names
    only pools no other NodeSet holds: one naming a held pool would put this NodeSet on another's Nodes, so a held
    nearest pool gets words, who holds it and what to decide, instead."""
    near = {p.name: n for p in absent if (n := nearest_pool(b, p.name))}
    kept = sorted(b.pool_names - {p.name for p in absent})
    text = f"name an existing Node Pool in the {o.POOL_LABEL} expression"
    if not near:
        return text + (", in its place:\n" + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": kept})
                       if kept else "")
    free = {name: n for name, n in near.items() if not held_by(b, n)}
    words = [_held_pool_words(b, name, n) for name, n in sorted(near.items()) if name not in free]
    if not free:
        return f"{text}: " + "\n".join(words)
    hosting = {b.cluster.pool_of(o.node_name(p)) for p in b.pods if not o.is_terminal(p)}
    said = ", ".join(f"{prose(n)} for {value(name)}" + (" (its slurmd Pods run there)" if n in hosting else "")
                     for name, n in sorted(free.items()))
    return "\n".join([text + f": did you mean {said}? If so, in its place:\n" + expression_yaml(
        {"key": o.POOL_LABEL, "operator": "In", "values": sorted(set(kept) | set(free.values()))}), *words])


def _held_pool_words(b: Binding, name: str, pool: str) -> str:
    """The nearest pool to an absent one, held by another NodeSet: who holds it and the choice that is the owners',
    with no snippet (pasted, it would put both NodeSets on its Nodes)."""
    return (f"did you mean {prose(pool)} for {value(name)}? {held_by(b, pool)}: naming it would put this NodeSet on "
            f"the same Nodes, so no snippet does; decide with its owners: share {prose(pool)} (each NodeSet "
            "then leaves the other's Nodes out by name), or give this NodeSet a Node Pool of its own and name that one "
            f"in place of {value(name)}")


Grouped = dict[tuple[str, str], list[str]]
"""The Nodes failing each (check, detail)."""


def _checks(grouped: Grouped) -> set[str]:
    """The checks some Node fails."""
    return {check for check, _ in grouped}


def _failing(grouped: Grouped, *checks: str) -> set[str]:
    """The Nodes failing one of `checks`."""
    return {n for (check, _), names in grouped.items() if check in checks for n in names}


def _only_in_repair(b: Binding, health: dict[str, set[Reason]]) -> bool:
    """Whether every Node is in repair and nothing but its health refuses it."""
    return bool(health) and all(health.values()) and not any(
        set(b.verdict(name).reasons) - found for name, found in health.items())


def _refusals(b: Binding, nodes: list[dict], health: dict[str, set[Reason]]) -> Grouped:
    """The Nodes by reason. A Node in repair says nothing about why the others do not match: its health is a cause
    only when it is most Nodes' (less an affinity failed on the state expression alone: the state reason says it, and
    the taints of its state: the cordon or the state they go with says it)."""
    sick = sum(map(bool, health.values())) * 2 > len(nodes)

    def reasons(node: dict) -> list[Reason]:
        own = health[o.name(node)]
        return [r for r in b.verdict(o.name(node)).reasons if r not in own or (sick and r in health_said(own))]

    return reasons_by_detail(b, nodes, reasons)


def _dead_end(b: Binding, absent: list[Pool], nodes: list[dict]) -> DeadEnd | None:
    """When every Node is refused for something that does not clear by itself, or every pool named does not exist (no
    Node joins one until someone creates it); with no pool known (an affinity matching no Node names none), the
    nodepool step stays unknown for good too. No Nodes beside an existing pool is a pool still to fill: no dead end."""
    if not nodes and len(absent) < len(b.pools):
        return None
    if not nodes:
        return DeadEnd(f"no Node Pool named {' or '.join(sorted(p.name for p in absent))} exists and the NodeSet names "
                       "no other: no Node joins it until someone creates it", (FEASIBLE,))
    for_good = [refused_for_good(b, n) for n in nodes]
    if not all(for_good):
        return None
    return DeadEnd(f"every Node is refused by {' or '.join(sorted(set().union(*for_good), reverse=True))}: none of "
                   "it changes by itself", (FEASIBLE,) if b.pools else (FEASIBLE, NO_POOL))


def _feasibility_cause(b: Binding, grouped: Grouped, absent: list[Pool], nodes: list[dict]) -> str:
    """The likely cause the evidence shows, of all the rule names: labels, taints, resources, claims, health."""
    checks = _checks(grouped)
    causes = ["the NodeSet names a Node Pool that does not exist"] if absent else []
    if "affinity" in checks:
        causes.append("the NodeSet's affinity doesn't match the Nodes' labels (a key they lack, or a value they don't "
                      "carry)")
    selected = _selected(b, nodes)  # a Node the affinity refuses: its claim or its room is moot
    if "taint" in checks:
        causes += _taint_causes(b, _meant(b, nodes, selected))
    if names := _short(b, grouped, selected):
        too_big = any(not fits(b, b.cluster.nodes[n], []) for n in names)
        causes.append("the slurmd Pod's requests " + ("exceed the Nodes' allocatable" if too_big else
                                                       "exceed what other Pods leave free on the Nodes")
                      + " (a resource-infeasible Node empties the pool like a label mismatch)")
    if _failing(grouped, "claimed") & selected:
        causes.append("another NodeSet holds the Nodes")
    if sick := _failing(grouped, "state", "unschedulable"):
        share = f"all {len(nodes)} of the pool's Nodes are" if len(sick) == len(nodes) else \
            f"{len(sick)} of the pool's {len(nodes)} Nodes are"
        causes.append(f"{share} in repair (cordoned, out of production or not Ready): a Node health matter for CKS, "
                      "not the NodeSet's")
    text = "; ".join(causes) or "no Node refuses the slurmd Pod now (compare with the NodeSet's Events)"
    return text[0].upper() + text[1:] + "."


def _taint_causes(b: Binding, nodes: list[dict]) -> list[str]:
    """The untolerated taints as causes: the pool's, each set by hand, the Nodes' others."""
    sources = taint_sources(b, nodes)
    said = {source for _, source in sources}
    causes = ["the NodeSet doesn't tolerate the Node Pool's taint"] if "pool" in said else []
    causes += ["the NodeSet doesn't tolerate SUNK's lock taint, which SUNK sets on the Nodes running Slurm jobs"
               ] if "lock" in said else []
    causes += [f"the taint {prose(text)} on {some(names)}, which Node Pool {prose(pool)}'s nodeTaints do not set "
               "(set on the Nodes by hand, for maintenance say), keeps the NodeSet off them"
               for (text, source), (_, names, pool) in sources.items() if source == "hand"]
    return causes + (["the NodeSet doesn't tolerate the Nodes' taint"] if "other" in said else [])


def _feasibility_fix(b: Binding, grouped: Grouped, absent: list[Pool], nodes: list[dict], value_fixes: list[str]) -> str:
    """A fix per reason: the pool's name, each taint (tolerated, or removed when set by hand), the values asked for
    or the affinity, the requests; what belongs to CKS (Nodes in repair) or to no single NodeSet (claims) said."""
    checks = _checks(grouped)
    fixes = [_pool_name_fix(b, absent)] if absent else []
    selected = _selected(b, nodes)  # a Node the affinity refuses: its claim or its room is moot
    if "taint" in checks:
        fixes += _taint_fixes(b, _meant(b, nodes, selected))
    fixes += value_fixes
    if "affinity" in checks and not value_fixes:
        fixes.append(_affinity_fix(b, sorted(_failing(grouped, "affinity"))))
    if not b.pools and not absent:  # the whole cluster judged: naming the pool meant judges its Nodes alone
        fixes.append("no Node Pool is known for this NodeSet: name the one meant with --pool, and sunkcheck checks its "
                     "Nodes alone")
    if held := _short(b, grouped, selected):
        fixes += resources_fix(b, held)
    if sick := _failing(grouped, "state", "unschedulable"):
        fixes.append(f"{len(sick)} of {counted(len(nodes), 'Node')} are in repair too (not in production or not Ready, "
                     "or cordoned): that part is a Node health matter for CKS, with nothing to tolerate or change for it; "
                     "the rest of this fix is the NodeSet's")
    if claimed := _failing(grouped, "claimed") & selected:
        fixes.append(claimed_fix(b, claimed, nodes))
    return join_fixes(fixes) or "compare the NodeSet's affinity and tolerations with the Nodes' labels and taints"


def _taint_fixes(b: Binding, nodes: list[dict]) -> list[str]:
    """Each untolerated taint tolerated, under a key none of the Nodes' taints has, or removed when set by hand."""
    taken = frozenset(str(t.get("key")) for n in nodes for t in o.taints(n))
    return [_hand_taint_fix(t, names, b.cluster.pool(pool)) if source == "hand" else
            tolerate(b, t, taken, "the pool's" if source == "pool" else "the Nodes'")
            for (_, source), (t, names, pool) in taint_sources(b, nodes).items()]


def _short(b: Binding, grouped: Grouped, selected: set[str]) -> list[str]:
    """The Nodes the affinity selects that are short of room, less those only another NodeSet's slurmd Pod leaves
    short (its claim is the cause)."""
    return short_beside_claims(b, sorted(_failing(grouped, "resources") & selected))


def _selected(b: Binding, nodes: list[dict]) -> set[str]:
    """The names of `nodes` the NodeSet's required affinity selects."""
    return {o.name(n) for n in nodes if not any(r.check == "affinity" for r in b.verdict(o.name(n)).reasons)}


def _meant(b: Binding, nodes: list[dict], selected: set[str]) -> list[dict]:
    """The Nodes whose taints are the NodeSet's to tolerate: its pools' (a fixed affinity lands there), else, with no
    pool known (the whole cluster judged), those its affinity selects: another team's pool, which the affinity
    refuses anyway, is never a taint to tolerate."""
    return nodes if b.pools else [n for n in nodes if o.name(n) in selected]


def _hand_taint_fix(taint: dict, names: list[str], pool: Pool) -> str:
    """A taint set on Nodes by hand is no binding to tolerate: it marks them (maintenance), and a toleration would
    defeat it for good. Remove it when what it marks is over (with the pool's own on its key put back)."""
    # no apostrophe in these words: before a quoted cluster string, pasted whole, it would end that string's quotes
    return (f"the taint {prose(o.format_taint(taint))} on {some(names)} is not in the nodeTaints of Node Pool "
            f"{prose(pool.name)}: it was set on the Nodes by hand (a maintenance taint, say), so do not tolerate it (the "
            f"NodeSet would ignore it for good); when what it marks is over, remove it ({HAND_TAINT_CAUTION})"
            + (f" (likewise on {', '.join(names[EXAMPLES:])})" if len(names) > EXAMPLES else "") + hand_said(pool, taint)
            + ":\n" + "\n".join(untaint_hand(pool, taint, n) for n in names[:EXAMPLES]))


def _affinity_fix(b: Binding, names: list[str]) -> str:
    """Name the expressions the Nodes fail (never the inherited state one: it keeps Nodes in repair out); bind by
    pool name in their place unless the NodeSet already does."""
    labels = [o.labels(b.cluster.nodes[n]) for n in names if n in b.cluster.nodes]
    terms = nd.binding_terms(b.pod_spec)
    failed = ", ".join({prose(describe_expression(e)): e for term in terms for e in term
                        if not all(match_expression(e, have) for have in labels)})
    near = _near_keys(terms, labels)
    plausible = names if b.pools else _refused_by_labels_alone(b, names)
    example = next((n for n in plausible if any(k in o.labels(b.cluster.nodes[n]) for k in near.values())),
                   plausible[0] if plausible else None)
    text = "make the required affinity match labels the pool's Nodes carry" + _near_words(b, near, example)
    compare = f"\ncompare with one of the Nodes:\nkubectl describe node {arg(example)}" if example else ""
    if not failed:
        return text + compare
    if any(e["key"] == o.POOL_LABEL for term in terms for e in term):
        return text + f": correct or drop {failed}, which the Nodes fail ({o.POOL_LABEL} selects the pool)" + compare
    if not b.pool_names:
        return text + f": correct {failed}, which the Nodes fail" + compare
    return (text + f", e.g. bind by pool name in place of {failed} (keep the others):\n"
            + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.pool_names)}) + compare)


def _refused_by_labels_alone(b: Binding, names: list[str]) -> list[str]:
    """With no pool known (the whole cluster judged), the Nodes worth comparing with: those the NodeSet fits but for
    its affinity (its requests, GPUs included, its tolerations, no other NodeSet's claim); a control-plane Node
    without the GPUs it asks for says nothing about the labels meant."""
    return [n for n in names if {r.check for r in b.verdict(n).reasons} <= {"affinity"}]


def _near_keys(terms: list[list[dict]], labels: list[dict]) -> dict[str, str]:
    """The required keys no Node carries that are a letter or two off one they do (sunk.example.com/nodes for
    /node), with that one: the Nodes carrying the near miss are those the NodeSet is meant for, the ones to compare
    with (not the first Node of the cluster)."""
    keys = sorted({k for have in labels for k in have})
    return {e["key"]: m[0] for term in terms for e in term if e["key"] not in keys
            and (m := difflib.get_close_matches(e["key"], keys, 1, 0.9))}


def _near_words(b: Binding, near: dict[str, str], example: str | None) -> str:
    """Each near key offered in place of the one no Node carries, with a Node carrying it."""
    pool = o.pool_of(b.cluster.nodes[example or ""]) if near else None
    where = f" of {prose(pool)}" if pool else ""
    return "".join(f"; did you mean {prose(m)} for {value(k)}? Node {prose(example)}{where} carries it"
                   for k, m in sorted(near.items()))


RULE = Rule("no-feasible-nodes", Status.CRITICAL, "nodeset",
            "FEASIBLE is 0: no Node of the pool can take a slurmd Pod",
            "The NodeSet's affinity doesn't match the Nodes' labels (a key they lack, or a value they don't carry), it "
            "doesn't tolerate the Node Pool's taint, or its requests exceed what the Nodes have (each match names its "
            "own; a taint set on the Nodes by hand, not in the pool's nodeTaints, is said as such, to remove rather than "
            "tolerate). A pool whose Nodes are all in repair is pool-nodes-in-repair's.",
            "Compare the NodeSet's affinity (keys and values) and tolerations against `kubectl describe node` output for one "
            "Node in the pool.",
            no_feasible_nodes, needs=("nodes",), explained_by=("reserved-label-namespace", "pool-labels-missing"),
            reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.EVERY_NODE_WHEN_FEASIBLE_0, Read.PODS_ON_USABLE_NODES,
                   Read.PODS_ON_POOL_NODES, Read.PODS_ON_EVERY_NODE_WITHOUT_A_POOL))
