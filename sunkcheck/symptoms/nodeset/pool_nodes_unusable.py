"""Row pool-nodes-unusable: some of the pool's Nodes drifted (a label, a taint, a claim, their size)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from collections import defaultdict
from fractions import Fraction

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.discovery import named_pools
from sunkcheck.analyze.nodes import JOIN
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.feasibility import describe_expression, match_expression, passes, pod_requests, taint_reason
from sunkcheck.model import FEASIBLE, DeadEnd, Reason, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import (HAND_TAINT_CAUTION, arg, join_fixes, other_effect, prose, prose_list,
                                      relabel_node, uncovered, unlabel_node, untaint_node)
from sunkcheck.symptoms.nodeset._resources import node_overhead, resources_fix, shortfall
from sunkcheck.symptoms.nodeset._shared import (TOLERATED_SOURCES, claimed_fix, drifted_affinity, grouped_evidence, held_by,
                                                hand_said, pod_names, pool_taints_on_key, reasons_by_detail,
                                                refused_for_good, selecting, taint_sources, untaint_hand,
                                                user_taints)
from sunkcheck.symptoms.nodeset._tolerations import tolerate
from sunkcheck.text import counted


def pool_nodes_unusable(b: Binding) -> Match | None:
    """Pool Nodes the binding lost to drift: a label gone, a taint added by hand, another NodeSet's claim, less of a
    resource than the slurmd Pod requests, alone or beside the node agents every Node runs (`overhead`: no fix moves
    them). Node health is left out (CKS takes Nodes out of production for repair all the time on a big pool, and a
    cordon is deliberate; the nodes step counts them), and so are resources other Pods hold (foreign-pod-resources').
    sunkcheck's own verdicts, not FEASIBLE: a stale status hides the drift."""
    named = b.once(_judged)
    total = len(named)
    grouped = b.once(_grouped)
    if not grouped:
        return None
    unusable = {n for names in grouped.values() for n in names}
    evidence = [f"{len(unusable)} of {total} pool Nodes cannot take a slurmd Pod (FEASIBLE {b.feasible}"
                f"{_not_drift(b, named, unusable)})"]
    evidence += grouped_evidence(b, grouped, total)
    small = {check for check, _ in grouped} == {"resources"}
    return Match(tuple(evidence), _drift_fix(b, grouped),
                 cause="The slurmd Pod requests more than these Nodes have allocatable (a Node replaced with less "
                       "memory, a device not advertised), or than they leave beside the node agents every Node runs: "
                       "FEASIBLE falls below the pool's Nodes." if small else "", dead_end=_dead_end(b, unusable))


def drifted(b: Binding) -> set[str]:
    """The pool Nodes this row finds drifted whose drift its fix restores with a command (misscheduled refers to it
    for them): not those whose lost label no pool sets, nor those a labelling controller's label fails."""
    found = {n for names in b.once(_grouped).values() for n in names}
    return found - {n for n, failed in b.once(_lost).items() if _unrestorable(b, n, failed)}


def _unrestorable(b: Binding, name: str, failed: list[dict]) -> bool:
    """Whether a Node fails (`failed`: the required expressions it fails) a required label no command here puts back:
    a labelling controller's, or one lost that its pool's nodeLabels do not set."""
    labels = o.labels(b.cluster.nodes[name])
    return any(nd.labeller(e["key"]) is not None or (e["key"] not in labels and _pool_value(b, name, e["key"]) is None)
               for e in failed)


def _pool_value(b: Binding, name: str, key: str) -> str | None:
    """The value the Node's pool's nodeLabels set for `key` (None: unset, or the pool was not read)."""
    return b.cluster.pool(o.pool_of(b.cluster.nodes[name]) or "").node_labels.get(key)


def _judged(b: Binding) -> list[tuple[dict, str]]:
    """The pool's Nodes and their names, less those of pools the NodeSet never selected (pool-split's: no drift);
    asked of the Binding (`Binding.once`): the row and its grouping by drift both walk them."""
    shut_out = {pool.name for pool, _, _ in b.exclusions}
    return [(n, name) for n, name in zip(b.pool_nodes, b.pool_node_names, strict=True)
            if not shut_out or o.pool_of(n) not in shut_out]


def _grouped(b: Binding) -> dict[tuple[str, str], list[str]]:
    """The Nodes not feasible by their drift reasons; asked of the Binding (`Binding.once`), as misscheduled asks
    which Nodes drifted too."""
    return reasons_by_detail(b, [n for n, name in b.once(_judged) if name not in b.feasible_nodes],
                             lambda n: _drift(b, n))


def _lost(b: Binding) -> dict[str, list[dict]]:
    """The Nodes drifted for their labels, by name, each with the required expressions its labels fail; asked of the
    Binding (`Binding.once`): the fix and misscheduled read them."""
    names = sorted({n for (check, _), names in b.once(_grouped).items() if check == "affinity" for n in names})
    return {n: _failed(b, o.labels(b.cluster.nodes[n])) for n in names}


def _not_drift(b: Binding, named: list[tuple[dict, str]], unusable: set[str]) -> str:
    """The pool's other Nodes not feasible, by why, so the count adds up: out of service (the nodes step's), left out
    by name (the intent), short of what other Pods hold (foreign-pod-resources')."""
    why: dict[str, list[str]] = defaultdict(list)
    for node, name in named:
        if name not in b.feasible_nodes and name not in unusable:
            why[_why_not(b, node)].append(name)
    return "".join(f"; {len(names)} more {what}: {some(names)}" for what, names in sorted(why.items()))


def _why_not(b: Binding, node: dict) -> str:
    """Why a pool Node is not feasible though it has not drifted, in the words of the count's line."""
    if b.out_of_service(node):
        return "starting, not drift" if passes(b.service, node) else "in repair or not Ready, not drift"
    if b.picked_out(node):
        return "left out by name"
    if any(r.check == "resources" for r in b.verdict(o.name(node)).reasons):
        return "short of what other Pods hold there"
    return "not feasible otherwise (sunkcheck explain --node says why)"


def _dead_end(b: Binding, unusable: set[str]) -> DeadEnd | None:
    """Pool Nodes refused for good (as no-feasible-nodes judges it: labels CKS will not stamp, a taint not tolerated):
    FEASIBLE never reaches the pool's Nodes, though others are used, so `--wait` stops (new Nodes of a pool whose
    nodeTaints the NodeSet does not tolerate, after a scale-up)."""
    held = {name: why for name in sorted(unusable) if (why := refused_for_good(b, b.cluster.nodes[name]))}
    if not held:
        return None
    reasons = " or ".join(sorted(set().union(*held.values()), reverse=True))
    return DeadEnd(f"{counted(len(held), 'pool Node')} ({some(list(held))}) refused by {reasons}: none of it changes by "
                   "itself", (FEASIBLE,))


def _drift(b: Binding, node: dict) -> list[Reason]:
    """A Node's affinity and claim reasons, its untolerated taints other than its state's (cordon, not-ready,
    pressure, start-up: they go with their cause) and the start-up taints it carries for long (`Binding.lingering`),
    and the resources it has less of than the slurmd Pod requests. A Node the NodeSet leaves out by name has none."""
    if b.picked_out(node):  # the intent, never drift; its other reasons (a claim by the NodeSet that picked it) are
        # no concern of this one
        return []
    reasons = b.verdict(o.name(node)).reasons
    found = [r for r in reasons if r.check == "claimed" or (r.check == "affinity" and drifted_affinity(b, node))]
    if any(r.check == "taint" for r in reasons):
        found += [_untolerated(b, t) for t in user_taints(b, node)]
        found += [Reason("taint", f"{nd.removed_by(t)}, still there {JOIN // 60:.0f} minutes or more after "
                                  f"{_aged_from(b, t)}") for t in b.lingering(node)]
    return found + _short_reasons(b, node)


def _aged_from(b: Binding, taint: dict) -> str:
    """What a start-up taint left on is aged from: when it was put on where its timeAdded is believed
    (`nodes.believed`), else the Node's registration."""
    added = o.timestamp(taint.get("timeAdded"))
    return "it was put on" if b.clock is not None and nd.believed(added, b.clock) else "the Node registered"


def _untolerated(b: Binding, taint: dict) -> Reason:
    """The taint's reason, saying so where it is SUNK's lock and the NodeSet tolerates its key with another effect
    only (`other_effect`: the fix adds the entry that tolerates it). Another taint's is no toleration to fix where the
    pool does not set it, and the fix says so where it does."""
    reason = taint_reason(taint, b.workload.kind)
    other = other_effect(taint, b.pod_spec.get("tolerations") or []) if taint.get("key") == o.LOCK_TAINT else None
    return reason if other is None else replace(reason, detail=f"{reason.detail}: the NodeSet's "
                                                                f"{prose(taint.get('key'))} toleration {uncovered(other, taint)}")


def _drift_fix(b: Binding, grouped: dict[tuple[str, str], list[str]]) -> str:
    """A fix per kind of drift: the labels restored, the pool's taints tolerated and hand taints removed, the
    claims and the requests."""
    nodes: dict[str, set[str]] = defaultdict(set)
    for (check, _), names in grouped.items():
        nodes[check].update(names)
    fixes = []
    if "affinity" in nodes:
        fixes += _lost_labels_fix(b, b.once(_lost))
    if "taint" in nodes:
        # the pool's own taints (and SUNK's lock) are tolerated, never removed: CKS stamps them back, and they are
        # what keeps others off the pool
        sources = taint_sources(b, [b.cluster.nodes[n] for n in sorted(nodes["taint"])])
        pooled = {(t.get("key"), t.get("effect")): t for (_, source), (t, _, _) in sources.items()
                  if source in TOLERATED_SOURCES}
        fixes += [tolerate(b, t) for t in pooled.values()]  # one toleration per key and effect (the lock's value varies)
        fixes += _removals(b, [(t, names, b.cluster.pool(pool)) for (_, source), (t, names, pool) in sources.items()
                               if source not in TOLERATED_SOURCES])
        fixes += _lingering_fix(b, sorted(nodes["taint"]))
    if "claimed" in nodes:
        fixes.append(claimed_fix(b, nodes["claimed"], b.pool_nodes))
    resized = resources_fix(b, sorted(nodes["resources"])) if "resources" in nodes else []
    return join_fixes(fixes + resized)


def _lingering_fix(b: Binding, names: list[str]) -> list[str]:
    """Start-up taints left on for long: whoever removes each has not (an agent on the Node: its Pods there say why;
    the control plane's: CKS's). Never removed by hand: the Node would take Pods before what the taint waits for
    (its network) works."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for n in names:
        for key in dict.fromkeys(str(t.get("key")) for t in b.lingering(b.cluster.nodes[n])):
            by_key[key].append(n)
    fixes = []
    for key, where in sorted(by_key.items()):
        by = nd.STARTUP_TAINTS[key]
        said = (f"{by.who} has not removed its start-up taint {prose(key)} from {some(where)}"
                + (": it is not running there" if by.on_node else f" (it does {by.when}): CKS runs it, ask CoreWeave support")
                + ". Never remove the taint by hand (Pods would land before what it waits for works); ")
        fixes.append(said + ("see why in the Pods on the Node:\n" + "\n".join(
            f"kubectl get pods -A -o wide --field-selector spec.nodeName={arg(n)}" for n in where) if by.on_node
            else f"compare with:\nkubectl describe node {arg(where[0])}"))
    return fixes


def _removals(b: Binding, hand: list[tuple[dict, list[str], Pool]]) -> list[str]:
    """The taints set by hand removed from their Nodes. One on the key of a taint the pool sets is the pool's edited
    on the Node (its value, its effect) or set beside it: the pool's goes back in the same command, and it is never
    offered for the pool's nodeTaints (there it would reach every Node, as the NodeSet does not tolerate it)."""
    other = [untaint_node(names, t) for t, names, pool in hand if not pool_taints_on_key(pool, t)]
    fixes = [("remove the taints the pool does not set (or set them in its nodeTaints and tolerate them); "
              f"{HAND_TAINT_CAUTION}:\n" + "\n".join(other))] if other else []
    return fixes + [f"{some(names)} {'carry' if len(names) > 1 else 'carries'} {prose(o.format_taint(t))}, set by hand: "
                    f"remove it ({HAND_TAINT_CAUTION}){hand_said(pool, t)}:\n"
                    + untaint_hand(pool, t, names) for t, names, pool in hand if pool_taints_on_key(pool, t)]


def _lost_labels_fix(b: Binding, lost_on: dict[str, list[dict]]) -> list[str]:
    """What restores the labels the Nodes fail (`lost_on`: each Node's failed expressions): the pool's nodeLabels for
    a label set on the pool (or by hand) and gone; for one a controller keeps on every Node from what it finds (GPU
    Feature Discovery), the Node's hardware or that controller, never the pool. A label the Node carries with a value
    the NodeSet refuses was not lost: see `_refused_label_fix`."""
    hand: list[str] = []
    lost: dict[tuple[str, str], list[str]] = {}  # (key, the pool's value) -> the Nodes that lost it
    by_labeller: dict[str, tuple[set[str], list[str]]] = {}  # who -> (the keys the Nodes fail, the Nodes)
    others: dict[str, tuple[set[str], list[str]]] = {}  # another NodeSet's pool -> (the keys it never set, the Nodes)
    for n, failed in lost_on.items():
        labels = o.labels(b.cluster.nodes[n])
        for key in {e["key"] for e in failed}:
            if (who := nd.labeller(key)) is None:
                continue
            _gather(by_labeller, who, key, n)
        for key in {e["key"] for e in failed if nd.labeller(e["key"]) is None and e["key"] not in labels}:
            value = _pool_value(b, n, key)
            if value is not None:
                lost.setdefault((key, value), []).append(n)
            elif pool := _others_pool(b, n):
                _gather(others, pool, key, n)
            else:
                hand += [] if n in hand else [n]
    # a label the pool sets and a Node lost: its pool's value put back (CKS stamps it on new Nodes, not on this one)
    fixes = [f"put back the label Node Pool {prose(_pool_name(b, where[0]))} sets, lost on {some(where)}:\n"
             + relabel_node(where, key, value) for (key, value), where in sorted(lost.items())]
    fixes += [_others_fix(b, pool, keys, where) for pool, (keys, where) in sorted(others.items())]
    fixes += [f"restore the labels lost on {some(hand)} (no Node Pool read sets them): set them again, or correct the "
              f"NodeSet's affinity; compare with:\nkubectl describe node {arg(hand[0])}"] if hand else []
    fixes += [_refused_label_fix(b, where, e) for e, where in _refused_labels(b, lost_on).values()]
    fixes += [f"{who} sets {', '.join(map(prose, sorted(keys)))} from what each Node has, not the Node Pool: {some(where)} "
              f"report{'s' if len(where) == 1 else ''} other hardware than the NodeSet asks for, or {who} has not "
              f"labelled {'it' if len(where) == 1 else 'them'} yet; a Node short of hardware is CKS's to repair. "
              f"Compare with:\nkubectl describe node {arg(where[0])}" for who, (keys, where) in sorted(by_labeller.items())]
    return fixes


def _gather(groups: dict[str, tuple[set[str], list[str]]], group: str, key: str, node: str) -> None:
    """Add `key` and `node` to `group`'s keys and Nodes (each Node once, in order)."""
    keys, where = groups.setdefault(group, (set(), []))
    keys.add(key)
    where += [] if node in where else [node]


def _others_fix(b: Binding, pool: str, keys: set[str], where: list[str]) -> str:
    """Labels another NodeSet's pool never set on its Nodes: nothing was lost, the pool is not this NodeSet's."""
    return (f"Node Pool {prose(pool)} sets no {', '.join(map(prose, sorted(keys)))}, so {some(where)} never carried "
            f"{'it' if len(keys) == 1 else 'them'}, and {held_by(b, pool)}: drop {prose(pool)} from this NodeSet's "
            f"{o.POOL_LABEL} values")


def _others_pool(b: Binding, name: str) -> str | None:
    """The Node's pool when it is read, another NodeSet holds it and this one names it beside others: a label that
    pool does not set was never the Node's to lose, the pool is the other NodeSet's, and dropping it from the values
    leaves this NodeSet its other pools."""
    pool = _pool_name(b, name)
    named = named_pools(b.pod_spec)
    read = b.cluster.pool(pool).obj is not None
    return pool if read and pool in named and len(named) > 1 and held_by(b, pool) else None


def _pool_name(b: Binding, name: str) -> str:
    return o.pool_of(b.cluster.nodes[name]) or ""


def _failed(b: Binding, labels: dict) -> list[dict]:
    """The required expressions `labels` fail, once each."""
    return list({describe_expression(e): e for term in b.terms_without_selector for e in term
                 if not match_expression(e, labels)}.values())


def _refused_labels(b: Binding, lost_on: dict[str, list[dict]]) -> dict[tuple[str, str, str], tuple[dict, list[str]]]:
    """The labels the Nodes carry with a value an expression refuses (none a controller keeps; `lost_on`: each Node's
    failed expressions), by pool, expression and value: one fix for the Nodes alike, every one of them in its
    command."""
    refused: dict[tuple[str, str, str], tuple[dict, list[str]]] = {}
    for n, failed in lost_on.items():
        labels = o.labels(b.cluster.nodes[n])
        for e in failed:
            if nd.labeller(e["key"]) is None and e["key"] in labels:
                alike = (o.pool_of(b.cluster.nodes[n]) or "", describe_expression(e), labels[e["key"]])
                refused.setdefault(alike, (e, []))[1].append(n)
    return refused


def _refused_label_fix(b: Binding, names: list[str], expr: dict) -> str:
    """A label on Nodes of one pool, alike, with a value `expr` refuses (NotIn, DoesNotExist, In another value,
    Gt/Lt). The pool's own value is the pool's to change: a `kubectl label` would come back with the next replacement
    Node. A hand label the pool does not set is removed when its absence is what the NodeSet asks for."""
    node = b.cluster.nodes[names[0]]
    labels = o.labels(node)
    key = expr["key"]
    pool = b.cluster.pool(o.pool_of(node) or "")
    nodes = some(map(prose, names))
    # no apostrophe of these words before a quoted cluster string: pasted whole, it would end that string's quotes
    said = (f"the label {prose(key + '=' + labels[key])} on {nodes}, which the NodeSet refuses (it requires "
            f"{prose(describe_expression(expr))})")
    if pool.obj is None:
        return f"{said}, may be set by Node Pool {prose(pool.name)} or by hand (the Node Pool could not be read)"
    if others := selecting(b, [b.cluster.nodes[n] for n in names], key):
        # the label another NodeSet selects these Nodes by: removing or changing it takes them from that one
        them = "it" if len(names) == 1 else "them"
        return (f"{said}, is the label NodeSet{'s' if len(others) > 1 else ''} {prose_list(others)} select"
                f"{'' if len(others) > 1 else 's'} {nodes} by: leave it (removed or changed, {nodes} "
                f"{'leaves' if len(names) == 1 else 'leave'} {prose_list(others)}); if this NodeSet should have {them}, "
                "decide it with the owners")
    if key in pool.node_labels:
        own = pool.node_labels[key]
        if not match_expression(expr, {key: own}):
            return (f"{said}, is set by Node Pool {pool.name} (spec.nodeLabels {prose(key + '=' + own)}): change the "
                    "NodeSet's requirement or the pool's nodeLabels (CKS puts the pool's value back on its Nodes)")
        # set by hand, maybe on purpose (a Node taken aside to debug): put back only for a Node still meant for it
        return (f"{said}, was set by hand over Node Pool {pool.name}'s value: if {nodes} {'is' if len(names) == 1 else 'are'} "
                f"still meant for the NodeSet, put the pool's back:\n{relabel_node(names, key, own)}")
    if match_expression(expr, {k: v for k, v in labels.items() if k != key}):
        return (f"{said}, was set by hand (Node Pool {pool.name} does not set it): if what it marks is over, remove "
                f"it:\n{unlabel_node(names, [key])}")
    return (f"{said}, was set by hand (Node Pool {pool.name} does not set it): correct it to a value the NodeSet "
            "accepts, or set that value in the pool's nodeLabels")


def _short_reasons(b: Binding, node: dict) -> list[Reason]:
    """A Node in service too small for the slurmd Pod, empty or beside its node agents, as drift evidence (a Node
    still joining may advertise nothing yet: its health, not its size)."""
    if b.out_of_service(node):
        return []
    empty, agents = shortfall(b, node), node_overhead(b, node)
    found = []
    for resource, (want, have) in sorted(shortfall(b, node, beside_overhead=True).items()):
        fmt = partial(o.format_quantity, resource)
        if not have:  # a device its plugin does not advertise there
            found.append(Reason("resources", f"no {resource} advertised (none allocatable), the slurmd Pod requests "
                                             f"{fmt(want)}"))
        elif resource in empty:
            found.append(Reason("resources", f"allocatable {resource} {fmt(have)}, below the slurmd Pod's request "
                                             f"{fmt(want)}"))
        else:  # fits empty, not beside the node agents: each Node's own agents named, Nodes alike one line
            held = sum((q for p in agents if isinstance(q := (pod_requests(o.spec(p)) | {"pods": Fraction(1)}).get(resource),
                                                        Fraction)), Fraction(0))
            common = (f"allocatable {resource} {fmt(have)}, of which node agents hold {fmt(held)}: less than the "
                      f"slurmd Pod's request {fmt(want)} is left")
            found.append(Reason("resources", f"{common} ({pod_names(agents)})", common=common))
    return found


RULE = Rule("pool-nodes-unusable", Status.WARNING, "nodes",
            "Some of the pool's Nodes cannot take a slurmd Pod",
            "A few Nodes drifted from the pool (a label gone, a taint added by hand), another NodeSet holds them, or "
            "they have less of a resource than the slurmd Pod requests (a Node replaced with less memory, a device not "
            "advertised), alone or beside the node agents every Node runs (cilium: node overhead, no squatter): FEASIBLE "
            "falls below the pool's Nodes. Nodes the NodeSet leaves out by name (kubernetes.io/hostname or "
            "metadata.name, In or NotIn: several NodeSets sharing a pool) are no drift.",
            "Restore the pool's labels and taints on those Nodes, or give each NodeSet its own pool. SUNK's lock taint "
            "(on the Nodes running Slurm jobs) stays: the NodeSet tolerates it. A Node short of what its instance type "
            "has is CKS's to repair (a device not advertised: its device plugin); else lower the request to what the Nodes "
            "have, leaving room for their DaemonSets.",
            pool_nodes_unusable, needs=("nodes",),
            explained_by=("reserved-label-namespace", "pool-labels-missing", "labels-not-from-pool", "no-feasible-nodes"),
            reads=(Read.POOL_NODES, Read.AFFINITY_NODES, Read.PODS_ON_USABLE_NODES))
