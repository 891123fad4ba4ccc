"""Row misscheduled: slurmd Pods on Nodes the NodeSet now refuses, with both ways out (restore, or drain)."""

from __future__ import annotations

from collections.abc import Callable

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.feasibility import describe_expression, match_expression, matches_affinity
from sunkcheck.model import Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import (DRAINED_EVICTION, HAND_TAINT_CAUTION, add_toleration, arg, drain, evict_drained,
                                      expression_yaml, label_nodepool, prose, prose_list, relabel_node, unlabel_node)
from sunkcheck.symptoms.nodeset._moved import leave_moved, nodesets
from sunkcheck.symptoms.nodeset._shared import (absent_pools, hand_said, intended_pools, repair_said, selecting,
                                                taint_source, untaint_hand)
from sunkcheck.symptoms.nodeset._values import ask_carried
from sunkcheck.symptoms.nodeset.pool_nodes_unusable import RULE as unusable
from sunkcheck.symptoms.nodeset.pool_nodes_unusable import drifted


def misscheduled(b: Binding) -> Match | None:
    """Pods on Nodes the NodeSet refuses. The runbook: confirm the intended Nodes, then let the NodeSet replace the
    Pods. So two branches, each to paste: the Nodes are still meant for the NodeSet (restore what changed: the
    label and both values, or the taint; the Pods then count as scheduled again, their jobs untouched), or they are
    meant to leave (drain their Slurm nodes, wait for their jobs to end, then evict the Pods). A Pod refused for a
    start-up taint alone is neither: its agent restarting put the taint back, and it lifts once the agent is ready."""
    reported, repair = b.counts.misscheduled, b.repair_pods
    held = [_starting(b, o.node_name(p) or "") for p in b.misscheduled_pods]
    starting = [p for p, h in zip(b.misscheduled_pods, held, strict=True) if h]
    wrong = [p for p, h in zip(b.misscheduled_pods, held, strict=True) if not h]
    if not _beyond_repair(reported, wrong + starting, repair):
        return None
    evidence = _evidence(b, reported, wrong, starting)
    aside = _starting_aside(_hosts(starting)) + _in_repair_aside(_hosts(repair))
    if not wrong:
        return Match(tuple(evidence), aside.removeprefix("\n")) if starting else _unrefused(b, reported or 0, evidence, aside)
    takers = _moved_to(b, wrong)
    # Nodes pool-nodes-unusable finds drifted: its fix restores them, so beside it this one refers to it
    restored = frozenset(drifted(b).intersection(o.node_name(p) for p in wrong))
    beside = ((unusable.id, _both_ways(b, wrong, takers, restored) + aside),) if restored else ()
    return Match(tuple(evidence), _both_ways(b, wrong, takers) + aside, fix_beside=beside)


def _evidence(b: Binding, reported: int | None, wrong: list[dict], starting: list[dict]) -> list[str]:
    """The count, then each Pod counted: refused for a mismatch, for a start-up taint, or on a Node in repair."""
    repair = b.repair_pods
    return ([f"MISSCHEDULED {reported}"] if reported else []) + [_refused_evidence(b, p) for p in wrong] + [
        _starting_evidence(b, p) for p in starting] + [
        f"Pod {o.name(p)} on Node {node} in repair, not a mismatch: {repair_said(b, b.cluster.nodes[node])}"
        for p, node in zip(repair, _hosts(repair), strict=True)]


def _hosts(pods: list[dict]) -> list[str]:
    return [o.node_name(p) or "" for p in pods]


def _both_ways(b: Binding, wrong: list[dict], takers: list[str], restored: frozenset[str] = frozenset()) -> str:
    """Keep the Nodes or let them go; when other NodeSets select them now (`takers`), letting go is said first, as the
    move they were most likely relabelled for, and keeping them takes them from those NodeSets."""
    if not takers:
        return (f"{_keep(b, wrong, restored)}\nif they are meant to leave it, drain their Slurm nodes (named like the "
                "Pods) first, on a login node: removing a slurmd Pod kills the Slurm jobs on it:\n"
                + _drain_then_evict(b, wrong))
    names = sorted({o.node_name(p) or "" for p in wrong})
    who, many = nodesets(takers), len(takers) > 1
    return (f"{who} {'select' if many else 'selects'} {some(names)} now, where this NodeSet's Pods run: the Nodes "
            f"have moved to {'them' if many else 'it'}, so no fix asks for what they carry (both NodeSets would select "
            f"them)\n{leave_moved(b, wrong)}\n{_keep(b, wrong, restored, who)}")


def _moved_to(b: Binding, wrong: list[dict]) -> list[str]:
    """The other NodeSets that select the Nodes of the Pods `wrong` now, when each is selected by one: the Nodes
    moved to them (their pool relabelled for them, say). Else none."""
    found = [selecting(b, [b.cluster.nodes[node]]) for node in {o.node_name(p) or "" for p in wrong}]
    return sorted(set().union(*found)) if all(found) else []


def _unrefused(b: Binding, reported: int, evidence: list[str], aside: str) -> Match:
    """A count beyond the Pods in repair, where sunkcheck finds no Pod the NodeSet refuses: the Pods on Nodes out of
    service for another reason (a cordon in production, a Node not Ready) are the only ones it can mean, named with
    their Node and why; the Pods are listed to find the rest when those are fewer than the count."""
    unrefused = _out_of_service_pods(b)
    hosts = [o.node_name(p) or "" for p in unrefused]
    named = [f"Pod {o.name(p)} on Node {node}, which the NodeSet does not refuse: {_service_said(b, node)}; a Pod "
             "there is the only kind the count can mean" for p, node in zip(unrefused, hosts, strict=True)]
    find = ("find the Pods on Nodes the NodeSet no longer selects:\n"
            f"kubectl get pods -n {arg(b.namespace)} -l {arg(f'{o.INSTANCE_LABEL}={b.name}')} -o wide")
    if len(unrefused) >= reported - len(b.repair_pods):
        find = ""
    return Match((*evidence, *named), (find + _out_of_service_aside(hosts) + aside).removeprefix("\n"))


def _service_said(b: Binding, name: str) -> str:
    """Why a Node is out of service (its cordon and reason, not Ready), with its lifecycle state."""
    state = o.labels(b.cluster.nodes[name]).get(o.STATE_LABEL)
    return repair_said(b, b.cluster.nodes[name]) + (f", {o.STATE_LABEL} is {prose(state)}" if state else "")


def _out_of_service_pods(b: Binding) -> list[dict]:
    """The slurmd Pods on Nodes out of service that the NodeSet neither refuses nor has in repair: cordoned while in
    production, or not Ready. sunkcheck counts them as no mismatch (a cordon keeps new Pods off and evicts nothing)."""
    known = {id(p) for p in (*b.misscheduled_pods, *b.repair_pods)}
    return [p for p in b.pods if id(p) not in known and not o.is_terminal(p)
            and (node := b.cluster.nodes.get(o.node_name(p) or "")) is not None and b.out_of_service(node)]


def _out_of_service_aside(hosts: list[str]) -> str:
    """The Pods on Nodes out of service but not refused: nothing in the NodeSet changes for them."""
    return _hands_off(hosts, lambda one: (
        f"out of service but not refused: change nothing in the NodeSet for {'it' if one else 'them'} (a cordon "
        f"keeps new Pods off and evicts nothing); when what {'it' if one else 'they'} went out of service for is "
        "over, the Node is uncordoned or Ready again; follow it"))


def _beyond_repair(reported: int | None, wrong: list[dict], repair: list[dict]) -> bool:
    """Whether Pods are misscheduled (by the status, else by sunkcheck) other than those on Nodes in repair: those
    are counted too, and are the Node's health (the nodes step's): alone, no row."""
    if not (reported or (reported is None and wrong)):
        return False
    return bool(wrong) or (reported or 0) > len(repair)


def _refused_evidence(b: Binding, pod: dict) -> str:
    node = o.node_name(pod) or ""  # misscheduled Pods are on a known Node
    why = "; ".join(r.detail for r in b.refusals(node))
    return f"Pod {o.name(pod)} on Node {node} (pool {b.cluster.pool_of(node) or 'none'}): {why}"


def _starting(b: Binding, node: str) -> bool:
    """Whether the NodeSet refuses Node `node` for start-up taints alone (`nodes.startup_taints`): one put back on a
    Node long in service says its agent is restarting (Cilium's, with NoExecute, evicts what does not tolerate it),
    no mismatch; it lifts once the agent is ready."""
    tolerations, host = b.pod_spec.get("tolerations") or [], b.cluster.nodes[node]
    return (all(r.check == "taint" for r in b.refusals(node)) and bool(nd.startup_taints(host, tolerations))
            and not nd.untolerated_scoping_taints(tolerations, host))


def _starting_evidence(b: Binding, pod: dict) -> str:
    node = o.node_name(pod) or ""  # misscheduled Pods are on a known Node
    taints = ", ".join(map(nd.removed_by, nd.startup_taints(b.cluster.nodes[node], b.pod_spec.get("tolerations") or [])))
    return (f"Pod {o.name(pod)} on Node {node} (pool {b.cluster.pool_of(node) or 'none'}): untolerated {taints}: the "
            "Node is starting again (its agent restarting), not a mismatch")


def _starting_aside(hosts: list[str]) -> str:
    """The Pods on Nodes whose start-up taint is back: never tolerated, removed, drained or evicted for it."""
    return _hands_off(hosts, lambda one: (
        f"refused for a start-up taint put back on {'its Node' if one else 'their Nodes'} (the agent that removes it "
        "is restarting): change nothing in the NodeSet or on the Node, the taint lifts once that agent is ready again "
        "(never tolerate or remove it: Pods would land before what it waits for works); if it stays, follow it"))


def _in_repair_aside(hosts: list[str]) -> str:
    """The Pods on Nodes in repair: never restored, drained or evicted; CKS returns their Nodes."""
    return _hands_off(hosts, lambda one: (
        f"in repair: change nothing for {'it' if one else 'them'} (CKS returns {'the Node' if one else 'them'} to "
        "production itself); follow the repair"))


def _hands_off(hosts: list[str], said: Callable[[bool], str]) -> str:
    """A line on the Pods on `hosts` that no fix touches, `said` of one Pod or several, and the command to follow
    their Nodes; empty without Pods."""
    if not hosts:
        return ""
    one = len(hosts) == 1
    return (f"\nthe Pod{'' if one else 's'} on {'Node' if one else 'Nodes'} {some(hosts)}, {said(one)}:\n"
            f"kubectl describe node {arg(hosts[0])}")


def _keep(b: Binding, wrong: list[dict], restored: frozenset[str] = frozenset(), taken_by: str = "") -> str:
    """The branch keeping the Nodes: restore what changed there, said to be likely when they are the NodeSet's own
    pool's (a typo'd pool: where its Pods run is its own), or, when other NodeSets select them now (`taken_by`, in
    words), said to take them from those. What changed on the Nodes `restored` is pool-nodes-unusable's fix, referred
    to rather than repeated. A label CKS manages gone from them opens the branch, and it opens with editing nothing:
    read top-down, nothing else is restored before CKS has put that label back."""
    names = sorted({o.node_name(p) or "" for p in wrong})
    intended = intended_pools(b) | ({pool for p in b.pods if (pool := b.cluster.pool_of(o.node_name(p)))}
                                     if absent_pools(b) else set())
    home = all(_at_home(b, b.cluster.nodes[n], intended) for n in names)
    nodes = f"Node{'s' if len(names) > 1 else ''} {some(names)}"
    likely = " (of its own pool, they most likely are)" if home else ""
    own = [n for n in names if n not in restored]
    one = len(restored) == 1
    cks, rest = _restore(b, own) if own else ([], [])
    steps = ([f"what changed on {some(restored)} is the drift {unusable.id} reports: its fix restores "
              f"{'it' if one else 'them'}"] if restored else []) + rest
    meant = "if not" if taken_by else f"if {nodes} {'are' if len(names) > 1 else 'is'} still meant for the NodeSet{likely}"
    return _keep_said(meant, cks, steps, f", which takes {nodes} from {taken_by}" if taken_by else "")


def _keep_said(meant: str, cks: list[str], steps: list[str], takes: str) -> str:
    """The keep branch in words, opening with `meant` (when it applies): what changed, put back (`takes`: whom that
    takes the Nodes from); a label CKS manages first, and nothing else before CKS has put it back."""
    then = "; the Pods then count as scheduled again, their Slurm jobs untouched:\n" + "\n".join(steps)
    if not cks:
        return f"{meant}, restore what changed{takes}{then}"
    return (f"{meant}, edit nothing yet (only CKS puts back a label it manages):\n" + "\n".join(cks)
            + (f"\nonce CKS has put it back, restore the rest{takes}{then}" if steps else ""))


def _restore(b: Binding, names: list[str]) -> tuple[list[str], list[str]]:
    """What changed on the Nodes the NodeSet refuses, each with what puts it back: the label (its key, the Nodes'
    value and the one required) or the taint, grouped over the Nodes alike; the labels CKS manages (no edit puts
    them back) apart, first."""
    labels = _changed_labels(b, names).items()
    cks = [_cks_label(e, found) for (_, value), (e, found, _) in labels if _cks_managed(e, value)]
    parts = [_restore_label(b, e, value, found, term) for (_, value), (e, found, term) in labels
             if not _cks_managed(e, value)]
    parts += [_restore_taint(b, text, t, found) for text, (t, found) in _changed_taints(b, names).items()]
    return cks, (parts if cks or parts else ["compare the NodeSet's affinity and tolerations with the Nodes' labels "
                                             f"and taints:\nkubectl describe node {arg(names[0])}"])


def _changed_labels(b: Binding, names: list[str]) -> dict[tuple[str, str | None], tuple[dict, list[str], list[dict]]]:
    """The expressions the Nodes refused for their affinity fail, by expression and the Nodes' value: each with the
    Nodes and its term. Kubernetes ORs the terms: the nearest to matching says what changed."""
    labels: dict[tuple[str, str | None], tuple[dict, list[str], list[dict]]] = {}
    for name in (n for n in names if any(r.check == "affinity" for r in b.refusals(n))):
        have = o.labels(b.cluster.nodes[name])
        term = _nearest_term(nd.binding_terms(b.pod_spec), have)
        for e in (e for e in term if not match_expression(e, have)):
            labels.setdefault((describe_expression(e), have.get(e["key"])), (e, [], term))[1].append(name)
    return labels


def _nearest_term(terms: list[list[dict]], labels: dict) -> list[dict]:
    """The term failing the fewest of its expressions on `labels`."""
    return min(terms, key=lambda t: sum(not match_expression(e, labels) for e in t))


def _changed_taints(b: Binding, names: list[str]) -> dict[str, tuple[dict, list[str]]]:
    """The taints the NodeSet does not tolerate on the Nodes refused for one, by text, with their Nodes."""
    taints: dict[str, tuple[dict, list[str]]] = {}
    tolerations = b.pod_spec.get("tolerations") or []
    for name in (n for n in names if any(r.check == "taint" for r in b.refusals(n))):
        for t in nd.untolerated_scoping_taints(tolerations, b.cluster.nodes[name]):
            taints.setdefault(o.format_taint(t), (t, []))[1].append(name)
    return taints


def _restore_taint(b: Binding, text: str, taint: dict, names: list[str]) -> str:
    """Tolerate a taint the pool sets (or SUNK's lock, or one whose source is unknown), said by its source; remove
    one set by hand."""
    pool = b.cluster.pool(o.pool_of(b.cluster.nodes[names[0]]) or "")
    said = f"{some(names)} {_carry(names)} the taint {prose(text)}, which the NodeSet does not tolerate"
    source = taint_source(pool, taint)
    if source != "hand":
        whose = {"lock": " (SUNK's lock: SUNK sets it on the Nodes running Slurm jobs, leave it there)",
                 "pool": f" (Node Pool {prose(pool.name)} sets it)"}.get(source, "")
        return f"{said}{whose}: tolerate it; " + add_toleration(taint, b.pod_spec.get("tolerations") or [])
    return (f"{said}; the nodeTaints of Node Pool {prose(pool.name)} do not set it (set by hand): remove it "
            f"({HAND_TAINT_CAUTION}){hand_said(pool, taint)}:\n"
            + untaint_hand(pool, taint, names))


def _carry(names: list[str]) -> str:
    return "carry" if len(names) > 1 else "carries"


def _restore_label(b: Binding, expr: dict, value: str | None, names: list[str], term: list[dict]) -> str:
    """Put back what an expression refuses: a hand-set value over the pool's (or in its place) on the Nodes; the
    value the pool's nodeLabels changed, in the pool (or the new one asked for in the NodeSet, as no-feasible-nodes
    asks); a value CKS or a labelling controller gives the Nodes in the NodeSet's affinity, which changed."""
    key = expr["key"]
    pool = b.cluster.pool(o.pool_of(b.cluster.nodes[names[0]]) or "")
    has = (f"{_carry(names)} {prose(key + '=' + value)}" if value is not None else
           f"lack{'s' if len(names) == 1 else ''} {prose(key)}")
    said = f"{some(names)} {has} where the NodeSet requires {prose(describe_expression(expr))}"
    if nd.is_user_key(key) and pool.obj is not None and (fix := _restore_user_label(b, pool, expr, value, names, term)):
        return f"{said}{fix}"
    accepted = _accepting(b, expr, value) if value is not None else None
    if accepted is not None and (takers := selecting(b, [b.cluster.nodes[n] for n in names], key)):
        who = nodesets(takers)
        return (f"{said}, a value {who} {'select' if len(takers) > 1 else 'selects'} them by: no fix accepts it here "
                f"(both NodeSets would select them); decide with the owners of {who} which NodeSet the Nodes are for")
    if accepted is None:  # a label CKS manages is never the one to edit: CKS reverts it
        return f"{said}: correct that expression in the node definition's affinity" + (
            f" (CKS manages {prose(key)} and reverts an edit of it)" if o.is_reserved_key(key) else ", or the label")
    gone = [v for v in expr.get("values") or () if key == o.POOL_LABEL and v not in b.cluster.pool_names]
    return (f"{said}" + (f" (no Node Pool is named {prose_list(map(str, gone))})" if gone else "")
            + ": accept it again in the node definition's affinity, in place of that expression:\n"
            + expression_yaml(accepted))


def _cks_managed(expr: dict, value: str | None) -> bool:
    """Whether the Nodes lack a label CKS sets and reverts any edit of: neither side is the user's to move."""
    return value is None and o.is_reserved_key(expr["key"])


def _cks_label(expr: dict, names: list[str]) -> str:
    """A label CKS manages, gone from the Nodes: for CKS to explain, never edited on the Nodes or in the NodeSet."""
    key = expr["key"]
    # (no apostrophe in these words: a quoted Node name follows, pasted whole)
    return (f"{some(names)} lack{'s' if len(names) == 1 else ''} {prose(key)} where the NodeSet requires "
            f"{prose(describe_expression(expr))}: CKS manages {prose(key)} (it sets and reverts labels of its "
            "domains), so a Node without it is for CKS to explain: edit neither the label nor that expression "
            "(changing it would unbind the NodeSet from its pool); see what the Node reports, and ask CoreWeave "
            f"support:\nkubectl describe node {arg(names[0])}")


def _restore_user_label(b: Binding, pool: Pool, expr: dict, value: str | None, names: list[str],
                        term: list[dict]) -> str | None:
    """For a user label of a pool read: the pool's value put back on the Nodes; the pool's own value changed (CKS
    relabels every Node), restored there, never Node by Node; a hand label removed; a label the pool does not set,
    set in its nodeLabels. None otherwise."""
    key = expr["key"]
    own = pool.node_labels.get(key)
    if own is not None and match_expression(expr, {key: own}):
        return f" (Node Pool {prose(pool.name)} sets {prose(key + '=' + own)}): put it back:\n" + relabel_node(names, key, own)
    wanted = [str(v) for v in expr.get("values") or ()]
    if own is not None and own == value and expr["operator"] == "In" and len(wanted) == 1:
        restore = (f", the value Node Pool {prose(pool.name)}'s nodeLabels set now: set the required value back "
                   f"there (CKS relabels its Nodes):\n{label_nodepool(pool.name, {key: wanted[0]})}")
        if selecting(b, [b.cluster.nodes[n] for n in names], key):  # another NodeSet's value: never asked for here
            return restore
        widened, use = ask_carried(b, term, key, pool.nodes)
        return (f"{restore}\nor, if {prose(own)} is meant, ask for it in the node definition's affinity, in place of "
                f"{prose(describe_expression(expr))}{widened}:\n{use}")
    if own is None and expr["operator"] in ("NotIn", "DoesNotExist") and value is not None:
        return " (set by hand): remove it:\n" + "\n".join(unlabel_node(n, [key]) for n in names)
    if own is None and expr["operator"] == "In" and len(wanted) == 1:
        # nothing says the Nodes ever carried it: labelling them by hand is what labels-not-from-pool warns of
        return (f"; Node Pool {prose(pool.name)}'s nodeLabels do not set it: set it there, not on the Nodes (CKS labels "
                f"every Node of the pool, the ones it replaces too):\n{label_nodepool(pool.name, {key: wanted[0]})}")
    return None


def _accepting(b: Binding, expr: dict, value: str) -> dict | None:
    """`expr` accepting `value` too (a pool name only for Node Pools that exist), or None when no edit of its values
    does."""
    values = [str(v) for v in expr.get("values") or ()]
    if expr["operator"] == "In":
        kept = [v for v in values if expr["key"] != o.POOL_LABEL or v in b.cluster.pool_names]
        return expr | {"values": sorted(set(kept) | {value})}
    if expr["operator"] == "NotIn" and len(values) > 1:
        return expr | {"values": [v for v in values if v != value]}
    return None


def _at_home(b: Binding, node: dict, intended: set[str]) -> bool:
    """Whether a Node the NodeSet refuses is one it is meant for: in its pool, or, when no pool is known, one its
    required affinity still selects (only a taint refuses it)."""
    return o.pool_of(node) in intended if intended else matches_affinity(b.pod_spec, node)


def _drain_then_evict(b: Binding, pods: list[dict]) -> str:
    return (drain(pods, f"sunkcheck: Node no longer matches NodeSet {b.name}") + "\n"
            "once it lists none, let the NodeSet replace the Pods: evict them (it creates its Pods only on the Nodes "
            f"it selects; {DRAINED_EVICTION}):\n" + evict_drained(pods))


RULE = Rule("misscheduled", Status.WARNING, "nodeset",
            "MISSCHEDULED is above 0",
            "Pods sit on Nodes the NodeSet no longer selects or tolerates, usually after a label, affinity or taint change. "
            "A Pod on a Node CKS took out of production for repair is counted too: Node health, not this row's.",
            "Confirm the intended Nodes. Still meant for the NodeSet (likely on its own pool): restore what changed, the "
            "label's value or the taint, and the Pods count as scheduled again, their jobs untouched. Meant to leave: "
            "drain their Slurm nodes, wait until `squeue -w` lists no job, then let the NodeSet replace the Pods.",
            misscheduled, reads=(Read.POD_HOSTS,))
