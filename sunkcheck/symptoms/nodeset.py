"""The runbook's troubleshooting table for SUNK NodeSets, one predicate per row."""

from __future__ import annotations

import difflib
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import HOSTNAME_LABEL, Binding, named_pools
from sunkcheck.analyze.feasibility import (BLOCKING_EFFECTS, DAEMON_TOLERATIONS, HOST_NETWORK_TOLERATION,
                                           container_requests, describe_expression, match_expression, matches_affinity,
                                           not_ready, pod_requests, read_quantity, resource_checks, resource_reasons,
                                           scheduler_summary, scheduler_units, short_of, taint_reason, tolerates)
from sunkcheck.analyze.feasibility import NodeView, Unreadable
from sunkcheck.analyze.nodepool import Pool, blockers
from sunkcheck.analyze.nodeset import columns_line, desired, effective, falls_short, lagging, replicas, shown
from sunkcheck.model import FEASIBLE, NO_POOL, POOL_CURRENT, DeadEnd, Reason, Status
from sunkcheck.objects import LABEL_KEY, LABEL_VALUE
from sunkcheck.symptoms import EXAMPLES, Match, Rule, some
from sunkcheck.symptoms.notes import runs_a_workload
from sunkcheck.symptoms.fixes import (add_expressions, add_toleration, arg, expression_yaml, join_fixes, label_nodepool,
                                      new_taint_key, nodepool_command, prose, relabel_node, taint_nodepool, unlabel_node,
                                      untaint_node)
from sunkcheck.text import counted


def pool_below_target(b: Binding) -> Match | None:
    short = [p for p in b.pools if p.obj is not None and p.target is not None and (p.current or 0) < p.target]
    if not short:
        return None
    evidence, fixes, severity, never = [], [], Status.WARNING, []
    for p in short:
        evidence.append(f"Node Pool {p.name}: CURRENT {p.current or 0} of TARGET {p.target}"
                        + (f" ({p.instance_type})" if p.instance_type else ""))
        found = blockers(p)
        evidence += [f"Node Pool {p.name}: {text}" for _, text in found]
        if any(level is Status.CRITICAL for level, _ in found):
            severity = Status.CRITICAL
            never.append(p.name)
            fixes.append(f"request {prose(p.instance_type or 'instance type')} quota for Node Pool {p.name}: "
                         "its Nodes will never arrive without it. Its conditions:")
        elif found:
            fixes.append(f"Node Pool {p.name} waits for capacity: it clears by itself. Follow it:")
        else:
            fixes.append(f"Node Pool {p.name} may still be provisioning (a new Node takes ~20 min). Follow it:")
        fixes.append(nodepool_command("describe", p.name))
    stuck = DeadEnd(f"the Quota condition of Node Pool {', '.join(never)} is False: its Nodes never arrive without "
                    "more quota", (POOL_CURRENT,)) if never else None
    return Match(tuple(evidence), "\n".join(fixes), severity, dead_end=stuck)


def reserved_label_namespace(b: Binding) -> Match | None:
    """A reserved key in a pool's nodeLabels or nodeTaints that the NodeSet relies on (an expression or a toleration
    on it), which CKS drops: a reserved key it does not rely on is the reserved-key note's. The fix moves each to
    the operator's own domain on the pool, then has the NodeSet select the new label key (each expression on a
    moved key, as YAML) and, only for a moved taint, tolerate the new taint key first."""
    evidence, patches, taints, keys = [], [], [], set()
    tolerations = b.pod_spec.get("tolerations") or []
    needed = nd.keys_relied_on(b.terms, tolerations)
    for p in b.pools:
        dropped = {k: None for k in p.node_labels if o.is_reserved_key(k) and k in needed}
        evidence += [f"Node Pool {p.name}: spec.nodeLabels key {k} is in a reserved namespace; CKS drops it" for k in dropped]
        reserved_taints = [t for t in p.node_taints if o.is_reserved_key(t.get("key") or "") and t.get("key") in needed]
        evidence += [f"Node Pool {p.name}: spec.nodeTaints key {t.get('key')} is in a reserved namespace; CKS drops it"
                     for t in reserved_taints]
        if dropped or reserved_taints:
            evidence += [ev.describe(e) for e in p.events if ev.reason(e) == ev.SANITIZED]
        keys |= set(dropped)
        if dropped:
            renamed = {_own_domain(k): p.node_labels[k] for k in dropped}
            patches.append(label_nodepool(p.name, dropped | renamed))
        moved = [{k: t[k] for k in ("key", "value", "effect") if k in t} | {"key": _own_domain(str(t["key"]))}
                 for t in reserved_taints]
        taints += [f"{add_toleration(t, tolerations)}\nthen taint Node Pool {prose(p.name)} with it:\n"
                   f"{taint_nodepool(p, [t])}" for t in moved]
    relied = [] if b.cluster.snapshot.nodes is None else \
        nd.uncarried_reserved(b.terms, b.cluster.nodes.values())  # "no Node carries it" needs the Nodes
    evidence += [f"the NodeSet relies on {describe_expression(e)}, a reserved-namespace key no Node carries"
                 for e in relied]
    if not evidence:
        return None
    # CKS's own keys (node.coreweave.cloud/type) reach the Nodes: only a dropped one's expression moves
    selecting = [e for e in nd.positive(b.terms) if e["key"] in keys | {r["key"] for r in relied}]
    fix = ("move the label to a domain you control (example.com stands for yours)"
           + (":\n" + "\n".join(patches) if patches else ": set it under your domain in the Node Pool's nodeLabels"))
    fix += "".join(f"\nthen select the new key in the node definition's affinity, in place of "
                   f"{prose(describe_expression(e))}:\n" + expression_yaml(e | {"key": _own_domain(e["key"])})
                   for e in selecting)
    if taints:
        fix += "\nthe taint too: tolerate its new key first, so no slurmd Pod is refused; " + "\n".join(taints)
    stuck = DeadEnd(f"the NodeSet relies on {', '.join(sorted({e['key'] for e in relied}))}, which CKS drops from "
                    "every Node (a reserved namespace)", (FEASIBLE,)) if relied else None
    return Match(tuple(evidence), fix, dead_end=stuck)


def _own_domain(key: str) -> str:
    prefix, _, rest = key.partition("/")
    head = prefix.split(".")[0] if "." in prefix else "sunk"
    return f"{head}.example.com/{rest}"


def _label_value(expr: dict) -> str:
    return str((expr.get("values") or ["true"])[0]) if expr["operator"] in ("In", "Exists") else "<value>"


def pool_labels_missing(b: Binding) -> Match | None:
    """A key no pool Node carries at all. A key the Nodes carry with another value reached them: the NodeSet asks
    for the wrong value, no-feasible-nodes' to explain."""
    nodes = b.pool_nodes
    if not nodes:
        return None
    missing = nd.relied_on(b.terms, lambda e: nd.is_user_key(e["key"]) and not _values_carried(e["key"], nodes))
    if not missing:
        return None
    evidence, fixes = [], []
    if len(b.terms) > 1:  # Kubernetes ORs the terms: one carried would do, so the fix completes the nearest
        evidence.append(f"each of the {len(b.terms)} nodeSelectorTerms needs a label no pool Node carries; the nearest "
                        f"to matching needs {', '.join(sorted({e['key'] for e in missing}))}")
    for e in missing:
        evidence.append(f"{describe_expression(e)}: 0/{len(nodes)} Nodes in {', '.join(sorted(b.pool_names))} carry {e['key']}")
        for p in b.pools:
            if e["key"] in p.node_labels:
                evidence.append(f"Node Pool {p.name}: spec.nodeLabels sets {e['key']}={p.node_labels[e['key']]} "
                                "but no Node carries it")
                continue
            near = difflib.get_close_matches(e["key"], list(p.node_labels) + [k for n in p.nodes for k in o.labels(n)], 1)
            evidence.append(f"Node Pool {p.name}: spec.nodeLabels has no {e['key']}"
                            + (f" (did you mean {near[0]}?)" if near else ""))
            fixes.append(label_nodepool(p.name, {e["key"]: _label_value(e)}))
    fix = "set the label on the Node Pool, not on Nodes, then check its Events:\n" + "\n".join(
        fixes or [nodepool_command("describe", p.name) for p in b.pools])
    values = _value_mismatches(b)  # no-feasible-nodes, which would name them, is explained away by this row
    # a key a pool's nodeLabels set reaches its Nodes in time (CKS stamps it), and a pool not read may set it
    keys = {e["key"] for e in missing}
    never = all(p.obj is not None and not keys.intersection(p.node_labels) for p in b.pools)
    stuck = DeadEnd(f"no Node Pool sets {', '.join(sorted(keys))} in its nodeLabels, so no Node ever carries it",
                    (FEASIBLE,)) if never else None
    return Match(tuple(evidence + [line for line, _ in values]), "\n".join([fix] + [f for _, f in values]),
                 dead_end=stuck)


def _values_carried(key: str, nodes) -> Counter:
    """How many of `nodes` carry each value of label `key`."""
    return Counter(o.labels(n)[key] for n in nodes if key in o.labels(n))


def labels_not_from_pool(b: Binding) -> Match | None:
    """Labels and taints the NodeSet relies on, set on a pool's Nodes by hand: the fix moves them into the pool's
    spec. Never into a pool not meant for the NodeSet (with an expectation: --pool, the annotation), nor offered
    for a pool another workload uses where only some Nodes carry them: either would spread the NodeSet over the
    whole of another team's pool."""
    evidence: list[str] = []
    fixes, busy = [], []
    snap = b.cluster.snapshot
    intended = _intended_pools(b) if b.expected else None
    for p in b.pools:
        if p.obj is None:
            continue
        labels: dict[str, str] = {}
        fewer: set[str] = set()
        picked: dict[str, list[str]] = {}  # by key: the Nodes carrying it by hand
        overwritten: dict[str, str] = {}  # by Node: the key=value the pool's nodeLabels patch would overwrite there
        kept: dict[str, bool] = {}  # by Node: whether a term still selects it once CKS reapplies the pool's labels

        def stays(node: dict) -> bool:
            if (name := o.name(node)) not in kept:
                kept[name] = nd.selects(b.selection, _reapplied(p, node), name)
            return kept[name]

        for e in (e for e in nd.positive(b.terms) if nd.is_user_key(e["key"])):
            key, carriers = e["key"], nd.carrying(e, p.nodes)
            hand = [n for n in carriers if p.node_labels.get(key) != o.labels(n)[key] and not stays(n)]
            if hand:
                value = o.labels(hand[0])[key]
                evidence.append(f"{key}={value} on {len(hand)}/{len(p.nodes)} Nodes of {p.name} "
                                f"({some(o.name(n) for n in hand)}), "
                                f"but Node Pool {p.name} spec.nodeLabels does not set it")
                labels[key] = value
                picked[key] = sorted(o.name(n) for n in hand)
                if len(carriers) < len(p.nodes):
                    fewer |= {o.name(n) for n in hand}
                    lacking = [o.name(n) for n in p.nodes if all(n is not c for c in carriers)]
                    evidence.append(f"{len(lacking)}/{len(p.nodes)} Nodes of {p.name} fail {describe_expression(e)} "
                                    f"({some(lacking)}): the NodeSet cannot use them")
                    overwritten |= {o.name(n): f"{key}={o.labels(n)[key]}" for n in p.nodes
                                    if key in o.labels(n) and o.labels(n)[key] != value}
        moved = nd.moved_hand_taints(p, b.pod_spec)  # the live read of their Nodes' Pods uses the same two helpers
        for text, (taint, hand) in moved.items():
            evidence.append(f"taint {text} on {len(hand)}/{len(p.nodes)} Nodes of {p.name} ({some(o.name(n) for n in hand)}), "
                            f"but Node Pool {p.name} spec.nodeTaints does not set it")
        if intended is not None and p.name not in intended:
            fixes.append(_not_meant_fix(b, p, picked))
            continue
        if fewer and _used_by_others(b, p):
            busy.append(p.name)
            fixes.append(f"only {some(sorted(map(prose, fewer)))} of the {len(p.nodes)} Nodes of {prose(p.name)} carry "
                         f"{prose(', '.join(f'{k}={v}' for k, v in sorted(labels.items())))}, and other workloads run "
                         f"on it: never set it in its nodeLabels (that puts the NodeSet on all {len(p.nodes)}, beside "
                         "them)")
            continue
        taints = [taint for taint, _ in moved.values()]
        # the pool's Nodes that lack a taint get it too: their daemon Pods are read (a Node carrying it loses none)
        first = "".join(_tolerate_first(b, t, reach := nd.keeps_off(p, t),
                                        [n for n in reach if snap.pods_read(o.name(n))],
                                        f"for {prose(o.format_taint(t))}, ") for t in taints)
        tainting = (first + ("then set it in the pool's nodeTaints:\n" if first else "") + taint_nodepool(p, taints)
                    ) if taints else ""
        if labels or taints:
            fixes.append(_pool_fix(p, labels, fewer, overwritten, tainting))
    if not evidence:
        return None
    if busy:
        fixes.append(_say_the_pool(b, busy))
    return Match(tuple(evidence), "CKS reapplies only the pool's own metadata when it replaces a Node:\n" + "\n".join(fixes))


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
    line = (f"if the NodeSet is meant for {prose(', '.join(own)) or 'another pool'} only, bind it by pool name, or say "
            "so and sunkcheck names its Pods outside it and how to drain them")
    if not own:
        return line + " (--pool <pool>)"
    return (line + ":\n" + " ".join(["sunkcheck check -n", arg(b.namespace), "--nodeset", arg(b.name),
                                    *(f"--pool {arg(p)}" for p in own)]))


def _pool_fix(pool: Pool, labels: dict, fewer: set[str], overwritten: dict[str, str], tainting: str) -> str:
    """The pool's nodeLabels patch and `tainting` (the nodeTaints patch and what to do before it); when only some
    of its Nodes carry a label's value (`fewer`), the patches would put it on every Node and spread the NodeSet over
    them all: right when a replaced Node lost it, not when those Nodes were picked out by hand, so both are said,
    each with its own commands (the pool's taint belongs to the whole-pool branch). The other Nodes may carry the
    key with another value on purpose (another NodeSet's): the patch would overwrite it, so it names them, and the
    first command only lists each Node's value."""
    commands = "\n".join(c for c in (label_nodepool(pool.name, labels) if labels else "", tainting) if c)
    if not fewer:
        return commands
    pairs = ", ".join(prose(f"{k}={v}") for k, v in sorted(labels.items()))
    carry = "carry" if len(fewer) > 1 else "carries"
    own = "nodeLabels (and the taint in its nodeTaints)" if tainting else "nodeLabels"
    text = f"only {some(sorted(map(prose, fewer)))} of the {len(pool.nodes)} Nodes of {prose(pool.name)} {carry} {pairs}"
    whole = "If the whole pool is (a replaced Node lost the label)"
    if overwritten:
        others = sorted(overwritten)
        values = ", ".join(prose(v) for v in sorted(set(overwritten.values())))
        text += (f"; {len(others)} other{'s' if len(others) > 1 else ''} ({some(map(prose, others))}) "
                 f"{'carry' if len(others) > 1 else 'carries'} {values}, perhaps on purpose (another NodeSet's)")
        whole += f", this overwrites {values} on {prose(', '.join(others))}"
        listing = " "
        if LABEL_VALUE.fits(pool.name) and all(map(LABEL_KEY.fits, labels)):  # else a key could be read as a flag
            listing = (" List each Node's value first:\n" + f"kubectl get nodes -l {arg(o.POOL_LABEL + '=' + pool.name)} "
                       f"-L {arg(','.join(sorted(labels)))}\n")
    else:
        listing = " "
    return (f"{text}: setting it in the pool's nodeLabels puts it on all {len(pool.nodes)} and spreads the NodeSet over "
            f"them.{listing}If only those Nodes are meant for the NodeSet, give them a Node Pool of their own that sets "
            f"it in its {own}, and change nothing in {prose(pool.name)}. {whole}:\n{commands}")


def _reapplied(pool: Pool, node: dict) -> dict:
    """The labels CKS gives the Node when it replaces it: its own less the hand-set ones, plus the pool's. A hand
    label some term needs is not relied on when another term matches the Node without it."""
    return {k: v for k, v in o.labels(node).items() if not nd.is_user_key(k)} | {
        k: v for k, v in pool.node_labels.items() if nd.is_user_key(k)}


def _absent_pools(b: Binding) -> list:
    """The pools the binding names that have no Node Pool and no Nodes (when Node Pools were read)."""
    return [p for p in b.pools if p.obj is None and not p.nodes and b.cluster.snapshot.nodepools is not None]


CORDON_REASON = "node.coreweave.cloud/cordonReason"


def _nearest_pool(b: Binding, name: str) -> str | None:
    """The existing Node Pool the NodeSet does not name whose name is nearest `name` (a typo's likely target)."""
    near = difflib.get_close_matches(name, sorted(set(b.cluster.pool_names) - b.pool_names), 1)
    return near[0] if near else None


def _no_such_pool(b: Binding, name: str) -> str:
    near = _nearest_pool(b, name)
    return (f"no Node Pool named {name} (Node Pools: {', '.join(b.cluster.pool_names) or 'none'})"
            + (f"; did you mean {near}?" if near else ""))


def _pool_name_fix(b: Binding, absent) -> str:
    """Name existing pools in place of the absent ones: each one's nearest existing pool when there is one (said to
    be where its slurmd Pods run when they do), else the pools the NodeSet already names that exist."""
    near = {p.name: n for p in absent if (n := _nearest_pool(b, p.name))}
    kept = sorted(b.pool_names - {p.name for p in absent})
    text = f"name an existing Node Pool in the {o.POOL_LABEL} expression"
    if not near:
        return text + (", in its place:\n" + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": kept})
                       if kept else "")
    hosting = {b.cluster.pool_of(o.node_name(p)) for p in b.pods if not o.is_terminal(p)}
    said = ", ".join(f"{prose(n)} for {prose(name)}" + (" (its slurmd Pods run there)" if n in hosting else "")
                     for name, n in sorted(near.items()))
    return (text + f": did you mean {said}? If so, in its place:\n"
            + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": sorted(set(kept) | set(near.values()))}))


def no_feasible_nodes(b: Binding) -> Match | None:
    if b.feasible != 0:
        return None
    absent = _absent_pools(b)
    nodes = b.pool_nodes if b.pools else list(b.cluster.nodes.values())
    if not nodes and not absent:
        return None
    health = {o.name(n): _health(b, n) for n in nodes}
    if b.pools and not absent and nodes and all(health.values()) and not any(
            set(b.verdict(name).reasons) - found for name, found in health.items()):
        return None  # every Node is in repair, and nothing else refuses them: pool-nodes-in-repair's, not a mismatch
    # sunkcheck's own count in the scheduler's words: labelled, so it never reads as a FailedScheduling Event quoted
    evidence = [f"sunkcheck, as kube-scheduler would put it: {scheduler_summary(b.verdicts.values())}"]
    evidence += [_no_such_pool(b, p.name) for p in absent]
    # a Node in repair says nothing about why the others do not match: its health is a cause only when it is
    # most Nodes' (less an affinity failed on the state expression alone: the state reason says it, and
    # Kubernetes' own taints: the cordon or the state they go with says it)
    sick = sum(map(bool, health.values())) * 2 > len(nodes)
    grouped = _reasons_by_detail(b, nodes, lambda n: [r for r in b.verdict(o.name(n)).reasons if r not in health[o.name(n)]
                                                      or sick and r in _said(health[o.name(n)])])
    evidence += _grouped_evidence(b, grouped, len(nodes))
    checks = {check for check, _ in grouped}
    values = _value_mismatches(b, nodes) if "affinity" in checks else []
    evidence += [line for line, _ in values]
    for_good = [_refused_for_good(b, n) for n in nodes]
    # with no pool known (an affinity matching no Node names none), the nodepool step stays unknown for good too
    stuck = DeadEnd(f"every Node is refused by {' or '.join(sorted(set().union(*for_good), reverse=True))}: none of "
                    "it changes by itself", (FEASIBLE,) if b.pools else (FEASIBLE, NO_POOL)) if all(for_good) else None
    return Match(tuple(evidence), _feasibility_fix(b, grouped, absent, nodes, [fix for _, fix in values]),
                 cause=_feasibility_cause(b, grouped, absent, nodes), dead_end=stuck)


def _refused_for_good(b: Binding, node: dict) -> set[str]:
    """What keeps the NodeSet off the Node and does not clear by itself (none: something may): the affinity it fails
    even with its pool's nodeLabels stamped and in production (what CKS converges a Node to), a taint it does not
    tolerate that is neither Kubernetes' own nor SUNK's lock (those come and go with their cause, or a Slurm job)."""
    pool = b.cluster.pool(o.pool_of(node) or "")
    labels = o.labels(node) | pool.node_labels | {o.STATE_LABEL: o.PRODUCTION}
    # a pool not read could stamp any label: its Nodes' labels may still change
    unknown = pool.obj is None and o.pool_of(node) is not None
    found = set() if unknown or matches_affinity(b.pod_spec, node | {"metadata": o.meta(node) | {"labels": labels}}) \
        else {"its labels"}
    if any(t.get("key") != o.LOCK_TAINT for t in _user_taints(b, node)):
        found.add("a taint the NodeSet does not tolerate")
    return found


def _said(health: set[Reason]) -> set[Reason]:
    """A Node's health as the evidence says it: the cordon and the state, not the taints Kubernetes puts with
    them (node.kubernetes.io/unschedulable is the cordon, never a taint to tolerate); a Kubernetes taint alone
    (a pressure condition) is said as it is."""
    said = {r for r in health if r.check in ("state", "unschedulable")}
    return said or {r for r in health if r.check == "taint"}


def _feasibility_cause(b: Binding, grouped: dict[tuple[str, str], list[str]], absent, nodes) -> str:
    """The likely cause the evidence shows, of all the rule names: labels, taints, resources, claims, health."""
    checks = {check for check, _ in grouped}
    causes = ["the NodeSet names a Node Pool that does not exist"] if absent else []
    if "affinity" in checks:
        causes.append("the NodeSet's affinity doesn't match the Nodes' labels (a key they lack, or a value they don't "
                      "carry)")
    if "taint" in checks:
        sources = _taint_sources(b, nodes)
        said = {source for _, source in sources}
        if "pool" in said:
            causes.append("the NodeSet doesn't tolerate the Node Pool's taint")
        causes += [f"the taint {prose(text)} on {some(names)}, which Node Pool {prose(pool)}'s nodeTaints do not set "
                   "(set on the Nodes by hand, for maintenance say), keeps the NodeSet off them"
                   for (text, source), (_, names, pool) in sources.items() if source == "hand"]
        if "other" in said:
            causes.append("the NodeSet doesn't tolerate the Nodes' taint")
    selected = _selected(b, nodes)  # a Node the affinity refuses: its claim or its room is moot
    names = {n for (check, _), found in grouped.items() if check == "resources" for n in found} & selected
    if names:
        too_big = any(not _fits(b, b.cluster.nodes[n], []) for n in names)
        causes.append("the slurmd Pod's requests " + ("exceed the Nodes' allocatable" if too_big else
                                                       "exceed what other Pods leave free on the Nodes")
                      + " (a resource-infeasible Node empties the pool like a label mismatch)")
    if any(n in selected for (check, _), found in grouped.items() if check == "claimed" for n in found):
        causes.append("another NodeSet holds the Nodes")
    if checks & {"state", "unschedulable"}:
        sick = {n for (check, _), names in grouped.items() if check in ("state", "unschedulable") for n in names}
        share = f"all {len(nodes)} of the pool's Nodes are" if len(sick) == len(nodes) else \
            f"{len(sick)} of the pool's {len(nodes)} Nodes are"
        causes.append(f"{share} in repair (cordoned, out of production or not Ready): a Node health matter for CKS, "
                      "not the NodeSet's")
    text = "; ".join(causes) or "no Node refuses the slurmd Pod now (compare with the NodeSet's Events)"
    return text[0].upper() + text[1:] + "."


def pool_nodes_in_repair(b: Binding) -> Match | None:
    """Every pool Node is out of service (cordoned, out of production, not Ready) and none is feasible: a Node
    health matter for CKS, no NodeSet change. A mismatch beside it is still no-feasible-nodes'."""
    nodes = b.pool_nodes
    if not nodes or any(o.name(n) in b.feasible_nodes for n in nodes) or not all(map(b.out_of_service, nodes)):
        return None
    evidence = [f"all {counted(len(nodes), 'Node')} of {', '.join(sorted(b.pool_names))} are out of service "
                f"(FEASIBLE {b.feasible})"]
    running = {o.node_name(p): p for p in b.pods if not o.is_terminal(p)}
    for n in nodes[:EXAMPLES]:
        pod = running.get(o.name(n))
        evidence.append(f"Node {o.name(n)}: {_repair_said(b, n)}"
                        + (f"; slurmd Pod {o.name(pod)} runs on (a cordon evicts nothing)" if pod else ""))
    if len(nodes) > EXAMPLES:
        evidence.append(f"and {counted(len(nodes) - EXAMPLES, 'more Node')} out of service")
    # the Nodes may refuse the NodeSet for a mismatch too (no-feasible-nodes'): the repair asks nothing of it, the
    # mismatch still does
    mismatch = any(set(b.verdict(o.name(n)).reasons) - _health(b, n) for n in nodes)
    change = ("Change nothing in the NodeSet or the Node Pool for the repair; the mismatch no-feasible-nodes reports "
              "besides is still to fix, or the Nodes stay unusable once back" if mismatch else
              "Change nothing in the NodeSet or the Node Pool")
    return Match(tuple(evidence), "a Node health matter, not the NodeSet's: CKS cordons Nodes and takes them out of "
                 f"production to repair them, and returns them itself. {change} "
                 f"(never tolerate the cordon nor write a {o.STATE_LABEL} expression). If the Nodes stay out, ask "
                 f"CoreWeave support. Follow the repair (its {CORDON_REASON} annotation, state label and conditions):\n"
                 f"kubectl describe node {arg(o.name(nodes[0]))}")


def _repair_said(b: Binding, node: dict) -> str:
    """A Node in repair as the evidence says it: its state and cordon, with the reason CKS gave for the cordon."""
    said = "; ".join(sorted(r.detail for r in _said(_health(b, node)))) or "out of service"
    why = (o.meta(node).get("annotations") or {}).get(CORDON_REASON)
    return said + (f" ({CORDON_REASON}: {prose(str(why))})" if why else "")


def _health(b: Binding, node: dict) -> set[Reason]:
    """A Node's reasons that are its health, not a mismatch: not production or not Ready, cordoned, Kubernetes'
    own taints (they go with their cause), and then an affinity that fails only the inherited state expression."""
    reasons = b.verdict(o.name(node)).reasons
    found = {r for r in reasons if r.check in ("state", "unschedulable")}
    found |= {taint_reason(t, b.workload.kind) for t in o.taints(node)
              if nd.is_kubernetes_key(str(t.get("key", "")))}.intersection(reasons)
    if found and not _drifted_affinity(b, node):
        found.update(r for r in reasons if r.check == "affinity")
    return found


def _value_mismatches(b: Binding, nodes: list[dict] | None = None) -> list[tuple[str, str]]:
    """Required values the pool's Nodes lack although they carry the key (a case slip, a stale value), or
    same-key expressions they cannot match together (SUNK's merge unions a key's layers and can keep both):
    the labels reached the Nodes, the NodeSet asks for the wrong value. Evidence and fix for each key. With no pool
    known, `nodes` (the cluster's) tell only the same-key conflicts: any value some Node carries would be a guess."""
    pooled = bool(b.pools)
    nodes = b.pool_nodes if pooled or nodes is None else nodes
    found = []
    for term in nd.binding_terms(b.pod_spec):
        by_key: dict[str, list[dict]] = defaultdict(list)
        for e in term:
            if e.get("operator") == "In" and e["key"] not in (o.POOL_LABEL, HOSTNAME_LABEL):  # a hostname names Nodes
                by_key[e["key"]].append(e)
        for key, exprs in by_key.items():
            have = _values_carried(key, nodes)
            if not have or any(all(v in (e.get("values") or ()) for e in exprs) for v in have) or \
                    not pooled and len(exprs) < 2:
                continue  # absent (pool-labels-missing's), or some pool Node matches
            where = (f"the Nodes of {', '.join(sorted(b.pool_names))}" if pooled else "the cluster's Nodes") + \
                f" carry {key} = " + ", ".join(f"{v} ({n})" for v, n in sorted(have.items()))
            if len(exprs) > 1:
                found.append(_layered(b, term, exprs, where))
                continue
            widened, use = _ask_carried(b, term, key, nodes)
            wanted = {str(v).lower() for v in exprs[0].get("values") or ()}
            case = "; values are case-sensitive" if wanted & {v.lower() for v in have} else ""
            found.append((f"{describe_expression(exprs[0])}: {where}{case}",
                          "ask for the value the pool's Nodes carry, in place of "
                          f"{prose(describe_expression(exprs[0]))}{widened}:\n{use}"))
    return found


def _ask_carried(b: Binding, term: list[dict], key: str, nodes: Sequence[dict]) -> tuple[str, str]:
    """The term's expression on `key` asking for the values `nodes` carry: one source for every row that offers it
    (no-feasible-nodes, and misscheduled's alternative to restoring the pool's value), so they print one snippet."""
    return _value_binding(b, term, {"key": key, "operator": "In", "values": sorted(_values_carried(key, nodes))})


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
                                                "values": sorted(_values_carried(key, b.pool_nodes))})
        return evidence, (f"set {prose(key)} in one layer only (Kubernetes requires every expression of the term), "
                          f"as{' below' if widened else ''}{widened}:\n{use}")
    keep = {"key": key, "operator": "In", "values": [own]}
    drop = [describe_expression(e) for e in exprs if own not in (e.get("values") or ())]
    others = "".join(f"; {prose(v)} is the value of the Nodes NodeSet {prose(who)} runs on" for v, who in taken.items())
    widened, use = _value_binding(b, term, keep) if b.pools else ("", expression_yaml(keep))
    return (evidence + others,
            f"keep {prose(own)}, the NodeSet's own value ({why}), and remove the layer that brings in "
            f"{prose(' and '.join(drop))}: Kubernetes requires every expression of the term, so it keeps one on "
            f"{prose(key)}{widened}:\n{use}")


def _own_value(b: Binding, key: str, values: list[str]) -> tuple[str | None, str, dict[str, str]]:
    """Which of `values` is the NodeSet's own: the one its pool's Nodes carry, or, with no pool known, the one whose
    Nodes no other NodeSet runs on (with the NodeSets running on the others'). None when that does not tell."""
    if b.pools:
        carried = [v for v in values if v in _values_carried(key, b.pool_nodes)]
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
    where = f"the Nodes of {prose(', '.join(homes))} carry it" if homes else "Nodes carry it"
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
    pools = f"Node Pool{'s' if len(others) > 1 else ''} {prose(', '.join(others))}"
    return (f", and bind by pool name beside it: the Nodes of {pools} carry that value too, and it alone would select "
            "them", expression_yaml(expr, {"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.pool_names)}))


def _reasons_by_detail(b: Binding, nodes, reasons_of=None) -> dict[tuple[str, str], list[str]]:
    """The Nodes failing each (check, detail): every reason of their verdicts, or `reasons_of(node)`. Nodes whose
    reasons differ only in the Pods named (each Node's own agents hold its resources), in how much those Pods hold, or
    in their own value of a label an expression refuses say the same thing: one detail, with an example or the
    values."""
    alike: dict[tuple[str, str], list[tuple[str, Reason]]] = defaultdict(list)
    for n in nodes:
        for r in reasons_of(n) if reasons_of else b.verdict(o.name(n)).reasons:
            alike[(r.check, r.family or r.common or r.detail)].append((o.name(n), r))
    grouped: dict[tuple[str, str], list[str]] = {}
    for (check, shared), found in alike.items():
        name, first = found[0]
        detail, common = first.detail, first.common
        if first.family and any(r.common != common for _, r in found):  # short by different amounts
            detail = f"{shared} (e.g. on {name}: {detail.split(', ', 1)[-1]})"
        elif any(r.detail != detail for _, r in found):
            if first.variant:  # each Node's own value: the values, once each (a hostname's are the Nodes' names)
                values = list(dict.fromkeys(r.variant for _, r in found))
                detail = common if values == [repr(n) for n, _ in found] else f"{common} ({some(values)})"
            elif detail.startswith(common + " (") and detail.endswith(")"):
                detail = f"{common} (e.g. on {name}: {detail[len(common) + 2:-1]})"
        grouped.setdefault((check, detail), []).extend(n for n, _ in found)
    return grouped


def _grouped_evidence(b: Binding, grouped: dict[tuple[str, str], list[str]], total: int) -> list[str]:
    """One line per reason, the commonest first: `2/8 Nodes in slurm-cpu: <detail> (<names>)`."""
    where = ", ".join(sorted(b.pool_names)) or "the cluster"
    return [f"{len(names)}/{total} Nodes in {where}: {detail} ({some(names)})"
            for (_, detail), names in sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def pool_nodes_unusable(b: Binding) -> Match | None:
    """Pool Nodes the binding lost to drift: a label gone, a taint added by hand, another NodeSet's claim, less of a
    resource than the slurmd Pod requests, alone or beside the node agents every Node runs (`_overhead`: no fix moves
    them). Node health is left out (CKS takes Nodes out of production for repair all the time on a big pool, and a
    cordon is deliberate; the nodes step counts them), and so are resources other Pods hold (foreign-pod-resources').
    sunkcheck's own verdicts, not FEASIBLE: a stale status hides the drift."""
    shut_out = {pool.name for pool, _, _ in b.exclusions}  # not drift: the NodeSet never selected them (pool-split)
    nodes = [n for n in b.pool_nodes if o.pool_of(n) not in shut_out]
    total = len(nodes)
    grouped = _reasons_by_detail(b, [n for n in nodes if o.name(n) not in b.feasible_nodes], lambda n: _drift(b, n))
    if not grouped:
        return None
    unusable = {n for names in grouped.values() for n in names}
    evidence = [f"{len(unusable)} of {total} pool Nodes cannot take a slurmd Pod (FEASIBLE {b.feasible})"]
    evidence += _grouped_evidence(b, grouped, total)
    small = {check for check, _ in grouped} == {"resources"}
    return Match(tuple(evidence), _drift_fix(b, grouped),
                 cause="The slurmd Pod requests more than these Nodes have allocatable (a Node replaced with less "
                       "memory, a device not advertised), or than they leave beside the node agents every Node runs: "
                       "FEASIBLE falls below the pool's Nodes." if small else "")


def _drift(b: Binding, node: dict) -> list[Reason]:
    """A Node's affinity and claim reasons, its untolerated taints other than Kubernetes' own (cordon, not-ready,
    pressure: they go with their cause), and the resources it has less of than the slurmd Pod requests. A Node the
    NodeSet leaves out by name has none."""
    if b.picked_out(node):  # the intent, never drift; its other reasons (a claim by the NodeSet that picked it) are
        # no concern of this one
        return []
    reasons = b.verdict(o.name(node)).reasons
    found = [r for r in reasons if r.check == "claimed" or r.check == "affinity" and _drifted_affinity(b, node)]
    if any(r.check == "taint" for r in reasons):
        found += [taint_reason(t, b.workload.kind) for t in _user_taints(b, node)]
    return found + _short_reasons(b, node)


def _drifted_affinity(b: Binding, node: dict) -> bool:
    """Whether the Node would fail the required affinity even in production: a Node CKS took out of
    production for repair fails only the inherited state expression, which is health, not drift."""
    return not matches_affinity(b.pod_spec, nd.in_production(node))


def _user_taints(b: Binding, node: dict) -> list[dict]:
    """The Node's taints the NodeSet does not tolerate, less Kubernetes' own (cordon, not-ready, pressure):
    those go away with their cause, so no fix tolerates or removes them."""
    return nd.untolerated_scoping_taints(b.pod_spec.get("tolerations") or [], node)


def _drift_fix(b: Binding, grouped: dict[tuple[str, str], list[str]]) -> str:
    nodes: dict[str, set[str]] = defaultdict(set)
    for (check, _), names in grouped.items():
        nodes[check].update(names)
    fixes = []
    if "affinity" in nodes:
        fixes += _lost_labels_fix(b, sorted(nodes["affinity"]))
    if "taint" in nodes:
        # the pool's own taints (and SUNK's lock) are tolerated, never removed: CKS stamps them back, and they are
        # what keeps others off the pool
        sources = _taint_sources(b, [b.cluster.nodes[n] for n in sorted(nodes["taint"])])
        pooled = {(t.get("key"), t.get("effect")): t for (_, source), (t, _, _) in sources.items() if source == "pool"}
        fixes += [_tolerate(b, t) for t in pooled.values()]  # one toleration per key and effect (the lock's value varies)
        hand: dict[str, list[dict]] = defaultdict(list)
        for (_, source), (t, names, _) in sources.items():
            if source != "pool":
                for n in names:
                    hand[n].append(t)
        removals = [untaint_node(n, t) for n in sorted(hand)[:EXAMPLES] for t in hand[n]]
        if removals:
            fixes.append("remove the taints the pool does not set (or set them in its nodeTaints and tolerate them):\n"
                         + "\n".join(removals))
    if "claimed" in nodes:
        fixes.append("another NodeSet holds these Nodes: give each NodeSet its own Node Pool")
    resized = _resources_fix(b, sorted(nodes["resources"])) if "resources" in nodes else []
    return join_fixes(fixes + resized)


def _lost_labels_fix(b: Binding, names: list[str]) -> list[str]:
    """What restores the labels the Nodes fail: the pool's nodeLabels for a label set on the pool (or by hand) and
    gone; for one a controller keeps on every Node from what it finds (GPU Feature Discovery), the Node's hardware or
    that controller, never the pool. A label the Node carries with a value the NodeSet refuses was not lost: see
    `_refused_label_fix`."""
    hand: list[str] = []
    refused: list[tuple[str, dict]] = []
    by_labeller: dict[str, tuple[set[str], list[str]]] = {}  # who -> (the keys the Nodes fail, the Nodes)
    for n in names:
        labels = o.labels(b.cluster.nodes[n])
        failed = list({describe_expression(e): e for term in nd.binding_terms(b.pod_spec) for e in term
                       if not match_expression(e, labels)}.values())
        for key in {e["key"] for e in failed}:
            if (who := nd.labeller(key)) is None:
                continue
            keys, where = by_labeller.setdefault(who, (set(), []))
            keys.add(key)
            where += [] if n in where else [n]
        if any(nd.labeller(e["key"]) is None and e["key"] not in labels for e in failed):
            hand.append(n)
        refused += [(n, e) for e in failed if nd.labeller(e["key"]) is None and e["key"] in labels]
    fixes = [f"restore the labels lost on {some(hand)}: CKS reapplies the pool's nodeLabels (check the Node Pool's "
             "Events)"] if hand else []
    fixes += [_refused_label_fix(b, n, e) for n, e in refused[:EXAMPLES]]
    fixes += [f"{who} sets {', '.join(map(prose, sorted(keys)))} from what each Node has, not the Node Pool: {some(where)} "
              f"report{'s' if len(where) == 1 else ''} other hardware than the NodeSet asks for, or {who} has not "
              f"labelled {'it' if len(where) == 1 else 'them'} yet; a Node short of hardware is CKS's to repair. "
              f"Compare with:\nkubectl describe node {arg(where[0])}" for who, (keys, where) in sorted(by_labeller.items())]
    return fixes


def _refused_label_fix(b: Binding, name: str, expr: dict) -> str:
    """A label on the Node with a value `expr` refuses (NotIn, DoesNotExist, In another value, Gt/Lt). The pool's
    own value is the pool's to change: a `kubectl label` would come back with the next replacement Node. A hand
    label the pool does not set is removed when its absence is what the NodeSet asks for."""
    labels = o.labels(b.cluster.nodes[name])
    key = expr["key"]
    pool = b.cluster.pool(o.pool_of(b.cluster.nodes[name]) or "")
    said = prose(f"{key}={labels[key]} on {name}, which the NodeSet's {describe_expression(expr)} refuses")
    if pool.obj is None:
        return f"{said}, may be Node Pool {prose(pool.name)}'s or set by hand (the Node Pool could not be read)"
    if key in pool.node_labels:
        own = pool.node_labels[key]
        if not match_expression(expr, {key: own}):
            return (f"{said}, is set by Node Pool {pool.name} (spec.nodeLabels {prose(key + '=' + own)}): change the "
                    "NodeSet's requirement or the pool's nodeLabels (CKS puts the pool's value back on its Nodes)")
        # set by hand, maybe on purpose (a Node taken aside to debug): put back only for a Node still meant for it
        return (f"{said}, was set by hand over Node Pool {pool.name}'s value: if {name} is still meant for the NodeSet, "
                f"put the pool's back:\n{relabel_node(name, key, own)}")
    if match_expression(expr, {k: v for k, v in labels.items() if k != key}):
        return (f"{said}, was set by hand (Node Pool {pool.name} does not set it): if what it marks is over, remove "
                f"it:\n{unlabel_node(name, [key])}")
    return (f"{said}, was set by hand (Node Pool {pool.name} does not set it): correct it to a value the NodeSet "
            "accepts, or set that value in the pool's nodeLabels")


def _tolerate(b: Binding, taint: dict, taken: frozenset[str] = frozenset(), whose: str = "the pool's") -> str:
    """The toleration the NodeSet lacks. SUNK's lock is no drift: SUNK puts it on the Nodes running Slurm jobs
    and lifts it after, so it is never removed from a Node nor set on the pool."""
    what = (f"SUNK's lock taint {prose(o.format_taint(taint))} (SUNK sets it on the Nodes running Slurm jobs: leave it "
            "there)" if taint.get("key") == o.LOCK_TAINT else f"{whose} taint {prose(o.format_taint(taint))}")
    return f"tolerate {what}: " + add_toleration(taint, b.pod_spec.get("tolerations") or [], taken=taken)


def _feasibility_fix(b: Binding, grouped: dict[tuple[str, str], list[str]], absent, nodes, value_fixes: list[str]) -> str:
    checks = {check for check, _ in grouped}
    fixes = []
    if absent:
        fixes.append(_pool_name_fix(b, absent))
    if "taint" in checks:
        taken = frozenset(str(t.get("key")) for n in nodes for t in o.taints(n))
        for (_, source), (t, names, pool) in _taint_sources(b, nodes).items():
            fixes.append(_hand_taint_fix(t, names, pool) if source == "hand" else
                         _tolerate(b, t, taken, "the pool's" if source == "pool" else "the Nodes'"))
    fixes += value_fixes
    if "affinity" in checks and not value_fixes:
        fixes.append(_affinity_fix(b, sorted({n for (check, _), names in grouped.items() if check == "affinity"
                                              for n in names})))
    selected = _selected(b, nodes)  # a Node the affinity refuses: its claim or its room is moot
    if "resources" in checks:
        if held := sorted({n for (check, _), names in grouped.items() if check == "resources" for n in names} & selected):
            fixes += _resources_fix(b, held)
    sick = {n for (check, _), names in grouped.items() if check in ("state", "unschedulable") for n in names}
    if sick:
        fixes.append(f"{len(sick)} of {counted(len(nodes), 'Node')} are in repair too (not in production or not Ready, "
                     "or cordoned): that part is a Node health matter for CKS, with nothing to tolerate or change for it; "
                     "the rest of this fix is the NodeSet's")
    if any(n in selected for (check, _), names in grouped.items() if check == "claimed" for n in names):
        fixes.append("another NodeSet holds these Nodes: give each NodeSet its own Node Pool")
    return join_fixes(fixes) or "compare the NodeSet's affinity and tolerations with the Nodes' labels and taints"


def _selected(b: Binding, nodes) -> set[str]:
    """The names of `nodes` the NodeSet's required affinity selects."""
    return {o.name(n) for n in nodes if not any(r.check == "affinity" for r in b.verdict(o.name(n)).reasons)}


def _taint_sources(b: Binding, nodes) -> dict[tuple[str, str], tuple[dict, list[str], str]]:
    """The untolerated taints of `nodes` (less Kubernetes' own), by text and where they come from: "pool" (its
    nodeTaints set it, or SUNK's lock), "hand" (a user taint the Node's pool, read, does not set), "other" (the pool
    unread, none, or CKS's own): each with the Nodes carrying it and their pool."""
    found: dict[tuple[str, str], tuple[dict, list[str], str]] = {}
    for n in nodes:
        pool = b.cluster.pool(o.pool_of(n) or "")
        for t in _user_taints(b, n):
            key = str(t.get("key", ""))
            if key == o.LOCK_TAINT or nd.set_by_pool(pool, t):
                source = "pool"
            elif pool.obj is not None and nd.is_user_taint(key):
                source = "hand"
            else:
                source = "other"
            found.setdefault((o.format_taint(t), source), (t, [], pool.name))[1].append(o.name(n))
    return found


def _hand_taint_fix(taint: dict, names: list[str], pool: str) -> str:
    """A taint set on Nodes by hand is no binding to tolerate: it marks them (maintenance), and a toleration would
    defeat it for good. Remove it when what it marks is over."""
    return (f"the taint {prose(o.format_taint(taint))} on {some(names)} is not in Node Pool {prose(pool)}'s nodeTaints: "
            "it was set on the Nodes by hand (a maintenance taint, say), so do not tolerate it (the NodeSet would ignore "
            "it for good); when what it marks is over, remove it"
            + (f" (likewise on {', '.join(names[EXAMPLES:])})" if len(names) > EXAMPLES else "") + ":\n"
            + "\n".join(untaint_node(n, taint) for n in names[:EXAMPLES]))


def _resources_fix(b: Binding, names: list[str]) -> list[str]:
    """A request larger than a Node's allocatable is lowered; one that fits the empty Node is not (a full-Node Slurm
    node would shrink to make room): what the other Pods there hold is the shortfall, and they are what moves."""
    held = [n for n in names if _fits(b, b.cluster.nodes[n], [])]
    tight = [n for n in held if not _fits(b, b.cluster.nodes[n], _overhead(b, b.cluster.nodes[n]))]
    fixes = _requests_fix(b, [n for n in names if n not in held]) + _requests_fix(b, tight, beside_overhead=True)
    held = [n for n in held if n not in tight]
    if held:
        fixes.append(f"the slurmd Pod fits an empty Node, but other Pods hold what it requests on {some(held)} (named in "
                     "the evidence): keep them off the pool (a taint the NodeSet tolerates, their affinity, a DaemonSet's "
                     "scope) rather than lowering the request")
    return fixes


def _short(b: Binding, node: dict, beside_overhead: bool = False) -> dict[str, tuple[Fraction, Fraction]]:
    """What the slurmd Pod requests above the Node's allocatable (or, `beside_overhead`, above what its node overhead
    leaves), by resource: (request, allocatable)."""
    if not any(r.check == "resources" for r in b.verdict(o.name(node)).reasons):
        return {}
    return short_of(b.workload.requests, node, _overhead(b, node) if beside_overhead else [])


def _short_reasons(b: Binding, node: dict) -> list[Reason]:
    """A Node in service too small for the slurmd Pod, empty or beside its node agents, as drift evidence (a Node
    still joining may advertise nothing yet: its health, not its size)."""
    if b.out_of_service(node):
        return []
    empty, agents = _short(b, node), _overhead(b, node)
    found = []
    for resource, (want, have) in sorted(_short(b, node, beside_overhead=True).items()):
        fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
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
            found.append(Reason("resources", f"{common} ({_pod_names(agents)})", common=common))
    return found


def _allocatable(node: dict, resource: str) -> Fraction:
    """The Node's allocatable `resource` (0 when not advertised or unreadable: the report's errors say it)."""
    have = read_quantity(o.allocatable(node).get(resource) or 0, "")
    return have if isinstance(have, Fraction) else Fraction(0)


def _largest(b: Binding, resource: str, nodes: list[dict]) -> tuple[Fraction, list[str]]:
    """The largest allocatable `resource` among `nodes` (0 when none advertises it) and the Nodes that have it."""
    have = {o.name(n): q for n in nodes
            if isinstance(q := read_quantity(o.allocatable(n).get(resource) or 0, ""), Fraction)}
    top = max(have.values(), default=Fraction(0))
    return top, sorted(n for n, q in have.items() if q == top)


def _requests_fix(b: Binding, names: list[str], beside_overhead: bool = False) -> list[str]:
    """For each resource the slurmd Pod requests above the allocatable of Nodes `names` (`beside_overhead`: above
    what their node overhead leaves, `_overhead`): the request, the largest allocatable in the pool, and a request
    that fits them all, leaving room for the DaemonSet Pods already there and the Pod's other containers. When other
    Nodes of the pool have more, those may be short of the hardware their instance type has: that check comes
    first, as lowering the request shrinks every slurmd Pod."""
    nodes = [b.cluster.nodes[n] for n in names]
    pool = b.pool_nodes or nodes
    where = prose(", ".join(sorted({p for n in pool if (p := o.pool_of(n))})) or "the pool")
    shorts = {o.name(n): _short(b, n, beside_overhead) for n in nodes}
    fixes = []
    for resource in sorted({r for n in nodes for r in shorts[o.name(n)]}):
        fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
        short = [n for n in nodes if resource in shorts[o.name(n)]]
        want, _ = shorts[o.name(short[0])][resource]
        bare = [n for n in short if not _allocatable(n, resource)]
        if bare:  # no request of it fits a Node advertising none: its device plugin's (or its health's) to fix
            fixes.append(_unadvertised_fix(b, resource, want, bare, pool, where))
            short = [n for n in short if n not in bare]
            if not short:
                continue
        have = ", ".join(fmt(q) for q in sorted({shorts[o.name(n)][resource][1] for n in short}))
        largest, biggest = _largest(b, resource, pool)
        roomy = [n for n in biggest if n not in names]
        lower = _lower_request(b, resource, want, short)
        if beside_overhead and not (roomy and largest > max(shorts[o.name(n)][resource][1] for n in short)):
            fixes.append(f"{some(o.name(n) for n in short)} {'has' if len(short) == 1 else 'have'} {have} of allocatable "
                         f"{resource} and the slurmd Pod requests {fmt(want)}: it fits them empty, not beside the node "
                         f"agents every Node runs (DaemonSet Pods holding at most "
                         f"{float(OVERHEAD_SHARE):.0%} of it, no device), which stay: {lower}")
        elif roomy and largest >= want:
            fixes.append(f"{some(o.name(n) for n in short)} {'has' if len(short) == 1 else 'have'} {have} of allocatable "
                         f"{resource}, {some(roomy)} {fmt(largest)} (the largest in {where}), and the slurmd Pod requests "
                         f"{fmt(want)}: if their instance type should have as much as the others, they are short of "
                         "hardware, a Node health matter for CKS (ask CoreWeave support); compare their Capacity and "
                         f"Allocatable:\nkubectl describe node {arg(o.name(short[0]))}\nkubectl describe node {arg(roomy[0])}"
                         f"\nTo use them as they are instead, {lower}")
        else:
            fixes.append(f"the slurmd Pod requests {fmt(want)} of {resource}, above the largest allocatable {resource} in "
                         f"{where}, {fmt(largest)}" + (f" ({some(biggest)})" if biggest else "") + f": {lower}")
    return fixes


def _unadvertised_fix(b: Binding, resource: str, want: Fraction, bare: list[dict], pool: list[dict], where: str) -> str:
    """Nodes advertising none of a resource the slurmd Pod requests (a device: rdma/ib, nvidia.com/gpu): its device
    plugin is not running or not healthy there, unless the pool's instance type has no such device at all."""
    fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
    names = some(o.name(n) for n in bare)
    largest, biggest = _largest(b, resource, pool)
    if largest > 0:
        return (f"{names} {'advertises' if len(bare) == 1 else 'advertise'} no {resource} (none allocatable) where "
                f"{some(biggest)} {'advertises' if len(biggest) == 1 else 'advertise'} {fmt(largest)}, and the slurmd Pod "
                f"requests {fmt(want)}: its device plugin does not "
                "advertise the device there, a Node health matter (ask CoreWeave support if it stays so), no request to "
                f"change; compare their Capacity and Allocatable:\nkubectl describe node {arg(o.name(bare[0]))}"
                f"\nkubectl describe node {arg(biggest[0])}")
    return (f"no Node of {where} advertises {resource} (none allocatable), and the slurmd Pod requests {fmt(want)}: "
            "if the pool's instance type has that device, its device plugin does not advertise it (a Node health matter: "
            "ask CoreWeave support); if not, the node definition is bound to a pool without it. What a Node "
            f"advertises:\nkubectl describe node {arg(o.name(bare[0]))}")


def _lower_request(b: Binding, resource: str, want: Fraction, nodes: list[dict]) -> str:
    """The request of the container asking most of `resource` (the Pod's is `want`) that fits every one of `nodes`,
    as kube-scheduler counts (whole millicores or units, rounded up): their allocatable less what the DaemonSet (and
    static) Pods on them request and what the Pod's other containers do."""
    fmt = lambda q: o.format_quantity(resource, q)  # noqa: E731
    found = [(q, c) for c in o.pod_spec(b.nodeset).get("containers") or ()
             if isinstance(q := container_requests(c, True).get(resource), Fraction)]
    if not found:
        return f"lower what the node definition requests of {resource}"
    own, container = max(found, key=lambda found: found[0])
    scale = 1000 if resource == "cpu" else 1
    besides = want - own
    agents = {o.name(n): [q for p in b.neighbours(n)[0] if not o.is_terminal(p) and
                          (_daemonset_of(p) or "Node" in _owner_kinds(p))
                          and isinstance(q := pod_requests(o.spec(p)).get(resource), Fraction)] for n in nodes}
    room = min(scheduler_units(resource, _allocatable(n, resource))
               - sum(scheduler_units(resource, q) for q in agents[o.name(n)]) for n in nodes) - math.ceil(besides * scale)
    value = _round_down(resource, Fraction(room, scale))
    names = some(o.name(n) for n in nodes)
    held = max((sum(q, Fraction(0)) for q in agents.values()), default=Fraction(0))
    room_for = f"the DaemonSet Pods already there ({fmt(held)})" + (
        f" and the Pod's other containers ({fmt(besides)})" if besides else "")
    if value <= 0:
        return f"no request of {resource} fits {names} once {room_for} are placed"
    resources = container.get("resources") or {}
    field = "requests" if resource in (resources.get("requests") or {}) else "limits"  # a limit stands for a request
    limit = " (and its limit with it)" if field == "requests" and resource in (resources.get("limits") or {}) else ""
    return (f"set containers[{prose(container.get('name') or '?')}] resources.{field}.{resource} to {fmt(value)} or less"
            f"{limit}, from {fmt(own)}: that fits {names} with room for {room_for}")


def _round_down(resource: str, amount: Fraction) -> Fraction:
    """`amount` rounded down to a round request: whole Gi (else Mi) of memory, whole cores (else millicores), whole
    units of the rest."""
    if resource == "memory" or resource.startswith(("hugepages-", "ephemeral-storage")):
        unit = Fraction(next((u for u in (2**30, 2**20) if amount >= u), 1))
    else:
        unit = Fraction(1 if resource != "cpu" or amount >= 1 else Fraction(1, 1000))
    return math.floor(amount / unit) * unit


def _affinity_fix(b: Binding, names: list[str]) -> str:
    """Name the expressions the Nodes fail (never the inherited state one: it keeps Nodes in repair out); bind by
    pool name in their place unless the NodeSet already does."""
    labels = [o.labels(b.cluster.nodes[n]) for n in names if n in b.cluster.nodes]
    terms = nd.binding_terms(b.pod_spec)
    failed = list({prose(describe_expression(e)): e for term in terms for e in term
                   if not all(match_expression(e, have) for have in labels)})
    binds = any(e["key"] == o.POOL_LABEL for term in terms for e in term)
    # a key no Node carries but one a letter or two off (sunk.example.com/nodes for /node): the Nodes carrying the near
    # miss are those the NodeSet is meant for, the ones to compare with (not the first Node of the cluster)
    keys = sorted({k for have in labels for k in have})
    near = {e["key"]: m[0] for term in terms for e in term if e["key"] not in keys
            and (m := difflib.get_close_matches(e["key"], keys, 1, 0.9))}
    example = next((n for n in names if any(k in o.labels(b.cluster.nodes[n]) for k in near.values())),
                   names[0] if names else None)
    text = ("make the required affinity match labels the pool's Nodes carry"
            + "".join(f"; did you mean {prose(m)} for {prose(k)}? Node "
                      f"{prose(example)}{' of ' + prose(pool) if (pool := o.pool_of(b.cluster.nodes[example or ''])) else ''} "
                      "carries it" for k, m in sorted(near.items())))
    compare = f"\ncompare with one of the Nodes:\nkubectl describe node {arg(example)}" if example else ""
    if not failed:
        return text + compare
    if binds:
        return text + f": correct or drop {', '.join(failed)}, which the Nodes fail ({o.POOL_LABEL} selects the pool)" + compare
    if not b.pool_names:
        return text + f": correct {', '.join(failed)}, which the Nodes fail" + compare
    return (text + f", e.g. bind by pool name in place of {', '.join(failed)} (keep the others):\n"
            + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.pool_names)}) + compare)


def nodepool_missing(b: Binding) -> Match | None:
    """A pool the NodeSet names does not exist while others serve it: a typo, or a pool deleted since."""
    absent = _absent_pools(b)
    if not absent:
        return None
    evidence = [_no_such_pool(b, p.name) for p in absent]
    kept = sorted(b.pool_names - {p.name for p in absent})
    fix = f"create the Node Pool, or name only existing ones in the {o.POOL_LABEL} expression" + (
        ", in its place:\n" + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": kept}) if kept else "")
    return Match(tuple(evidence), fix)


def pool_split(b: Binding) -> Match | None:
    """An expected pool the NodeSet's affinity shuts out while it runs on others: FEASIBLE is short by exactly
    the Nodes that pool would add. With no FEASIBLE Node at all, it is no split (no-feasible-nodes)."""
    split = [(pool, shut, usable) for pool, shut, usable in b.excluded if usable]
    if not split or not b.feasible_nodes:
        return None
    evidence = [f"Node Pool {pool.name} ({pool.instance_type or 'instance type unknown'}) is meant for {b.name}, but "
                f"{', '.join(describe_expression(e) for e in shut)} shuts it out: {len(usable)}/{len(pool.nodes)} of its "
                f"Nodes would be feasible ({some(usable)})" for pool, shut, usable in split]
    gained = sum(len(usable) for _, _, usable in split)
    evidence.append(f"FEASIBLE {b.feasible}; with {', '.join(p.name for p, _, _ in split)} it would be {b.feasible + gained}")
    shut_out = sorted({prose(describe_expression(e)) for _, shut, _ in split for e in shut})
    # the pools it selects now stay: its running Pods would be misscheduled without them
    kept = sorted(b.selected_pools - b.expected)
    fix = (f"add {', '.join(sorted(b.expected - b.selected_pools))} to the pools {b.name} selects"
           + (f" now, keeping {', '.join(kept)} (dropped, its Nodes would leave the NodeSet)" if kept else "")
           + f", by name, in place of {', '.join(shut_out)} (keep its other expressions):\n"
           + expression_yaml({"key": o.POOL_LABEL, "operator": "In", "values": sorted(b.expected | b.selected_pools)}))
    return Match(tuple(evidence), fix)


def replicas_cap(b: Binding) -> Match | None:
    """DESIRED below FEASIBLE because `replicas` is set; replicas above FEASIBLE is no cap (the effective size is
    FEASIBLE then)."""
    cap = replicas(b.nodeset)
    want = b.counts["desired"] if b.counts["desired"] is not None else cap
    if cap is None or want is None or want >= b.feasible:
        return None
    idle = [n for n in b.feasible_nodes if b.cluster.pool_of(n) in b.pool_names and not b.verdict(n).placed]
    evidence = [f"spec.replicas {cap}: DESIRED {want} < FEASIBLE {b.feasible}"]
    if idle:
        evidence.append(f"{len(idle)} feasible Node(s) run no slurmd Pod: {some(idle)}")
    fix = (f"omit replicas from the node definition behind NodeSet {b.name} so DESIRED tracks FEASIBLE, "
           f"or raise it to at least {b.feasible}; an intentional cap can be suppressed with --ignore replicas-cap")
    return Match(tuple(evidence), fix, dead_end=DeadEnd(
        f"replicas {cap} caps DESIRED below FEASIBLE {b.feasible} (replicas-cap): no further Node gets a slurmd Pod "
        "however long it waits"))


def foreign_pod_resources(b: Binding) -> Match | None:
    evidence, nodes = [], []
    for n in b.pool_nodes:
        if b.expected and o.pool_of(n) not in b.expected:
            continue  # the pools it is meant for were named: another pool's Pods are not squatting on it
        v = b.verdict(o.name(n))
        if v.feasible or {r.check for r in v.reasons} != {"resources"}:
            continue
        if not _fits(b, n, _overhead(b, n)):
            continue  # would not fit beside its node overhead alone either: no Pod squats, pool-nodes-unusable's
        nodes.append(n)
        evidence += [f"Node {v.name} ({v.pool}): {r.detail}" for r in v.reasons]
    if not evidence:
        return None
    if len(nodes) > EXAMPLES:  # a line per Node fills the output on a big pool: Nodes alike are one line
        evidence = _grouped_evidence(b, _reasons_by_detail(b, nodes), len(b.pool_nodes))
    squatters = _squatters(b, nodes)
    daemons = [p for p in squatters if _daemonset_of(p)]  # no taint nor delete frees their Node: their scope does
    movable = [p for p in squatters if not _daemonset_of(p)]
    let_in = [(p, why) for p in movable if (why := _let_in_by(p, b.cluster.nodes.get(o.node_name(p) or "")))]
    evidence += [f"Pod {_pod_names([p])} tolerates {why}" for p, why in let_in]
    evidence += [_daemon_evidence(p) for p in daemons]
    tolerant = [p for p, _ in let_in]
    others = [p for p in movable if all(p is not q for q in tolerant)]
    fixes = []
    if others or nodes and not squatters:  # a taint keeps them off: one the pool has not yet
        held = {o.node_name(p) for p in tolerant + daemons} - {o.node_name(p) for p in others}
        read = [n for n in b.pool_nodes if b.cluster.snapshot.pods_read(o.name(n))]  # every one, unless a live check's
        fixes.append(_taint_plan(b, [n for n in nodes if o.name(n) not in held], others, read, daemons))
    if tolerant:
        fixes += [f"{_pod_names([p])} tolerates {why}, so no taint keeps it off the pool: remove that toleration from "
                  f"{_template_of(p)}, or exclude the pool in its required affinity" for p, why in let_in]
        fixes[-1] += _evict(tolerant, "once their template keeps them off the pool")
    fixes += _descope(b, daemons)
    return Match(tuple(evidence), "\n".join(fixes))


OVERHEAD_SHARE = Fraction(1, 20)  # product decision: a node agent holds at most 5% of what the slurmd Pod lacks


def _overhead(b: Binding, node: dict) -> list[dict]:
    """The Pods on `node` no fix moves: static Pods, and the DaemonSet Pods that are node overhead (`_is_overhead`)."""
    here = [p for p in b.neighbours(node)[0] if not o.is_terminal(p)]
    lacking = {c.subject for c in resource_checks(b.workload.requests, NodeView(node), here) if not c.ok}
    return [p for p in here if "Node" in _owner_kinds(p) or _daemonset_of(p) and _is_overhead(p, node, lacking)]


def _is_overhead(pod: dict, node: dict, lacking: set[str]) -> bool:
    """A DaemonSet Pod is node overhead (cilium, node-problem-detector: never de-scoped nor deleted, the CNI would
    go with it) when it requests no extended resource (a GPU, an RDMA device: a burn-in holding those is a squatter)
    and at most OVERHEAD_SHARE of the Node's allocatable of each resource the slurmd Pod lacks there."""
    held = pod_requests(o.spec(pod)) | {"pods": Fraction(1)}
    if any("/" in r and not r.startswith("hugepages-") and (isinstance(q, Unreadable) or q > 0) for r, q in held.items()):
        return False
    return all(isinstance(q := held.get(r, Fraction(0)), Fraction) and q <= _allocatable(node, r) * OVERHEAD_SHARE
               for r in lacking)


def _taint_plan(b: Binding, nodes: list[dict], squatters: list[dict], seen: list[dict], leaving: list[dict]) -> str:
    """A new taint on the pools of `nodes`, tolerated by the NodeSet and by the DaemonSets whose Pods run on the
    `seen` Nodes (those `leaving` the pool aside), then the squatters deleted."""
    pools = [p for p in b.pools if any(o.pool_of(n) == p.name for n in nodes)]
    # the pool's Nodes carry its taints: they tell the keys taken even when the Node Pool could not be read
    taken = {t.get("key") for p in pools for t in p.node_taints} | {t.get("key") for p in pools for n in p.nodes
                                                                     for t in o.taints(n)}
    taint = {"key": new_taint_key(taken), "value": "true", "effect": "NoSchedule"}
    fix = ("keep other Pods off the pool with a taint (example.com stands for your domain), or fix their affinity to "
           "exclude the pool. Tolerate the taint in the node definition first, so no slurmd Pod is refused: "
           f"{add_toleration(taint, b.pod_spec.get('tolerations') or [])}\n"
           + _tolerate_first(b, taint, [n for p in pools for n in p.nodes],
                                  [n for n in seen if o.pool_of(n) in {p.name for p in pools}], "then, ", leaving)
           + "then taint the Node Pool (CKS applies it to its Nodes; NoSchedule evicts nothing):\n"
           + "\n".join(taint_nodepool(p, [taint]) for p in pools))
    immune = [p for p in squatters if any(tolerates(t, taint) for t in o.spec(p).get("tolerations") or ())]
    if immune:
        fix += f"\n({_pod_names(immune)} tolerates that taint too: exclude the pool in its affinity instead)"
    return fix + _evict(squatters, "once tainted")


def _tolerate_first(b: Binding, taint: dict, reached: list[dict], seen: list[dict], lead: str = "",
                    leaving: Sequence[dict] = ()) -> str:
    """What a fix tainting the pool must do first, so the taint shuts nothing out that belongs there: tolerate it in
    each DaemonSet whose Pods run on the `reached` Nodes (those the taint newly reaches: a Node already carrying it
    changes nothing, `nd.keeps_off`) and in each other NodeSet read whose affinity selects one of them, with the entry
    to add. An untolerated NoSchedule taint makes a Node no longer one the DaemonSet controller wants a Pod on: its
    running Pod stays, but a Node CKS adds or replaces later gets none; an untolerated NoExecute one also deletes the
    running Pod. Another NodeSet can no longer place a slurmd Pod there (its FEASIBLE drops). PreferNoSchedule never
    keeps a Pod off: nothing to say. Only the Pods of `seen` (of `reached`) were read (a live check lists the Pods of
    the Nodes its rows declare), so a DaemonSet running on none of them is not named, and the text says which Nodes
    were read; likewise which NodeSets were, when not all. Pods of a DaemonSet `leaving` the pool (its scope taken
    off it) need no toleration."""
    if taint.get("effect") not in BLOCKING_EFFECTS or not reached:
        return ""
    gone = {(o.namespace(p), _daemonset_of(p)) for p in leaving}
    found: dict[tuple[str, str], tuple[dict, list[str]]] = {}
    for n in seen:
        for p in b.neighbours(n)[0]:
            if (ds := _daemonset_of(p)) is None or o.is_terminal(p) or (o.namespace(p), ds) in gone:
                continue
            if any(tolerates(t, taint) for t in o.spec(p).get("tolerations") or ()):
                continue
            pod, hosts = found.setdefault((o.namespace(p), ds), (p, []))
            hosts.append(o.name(n))
    pools = [p for p in b.pools if any(o.pool_of(n) == p.name for n in reached)]
    total, names = sum(len(p.nodes) for p in pools), [o.name(n) for n in reached]
    where, scope = ("its Nodes", f"the {total} Nodes of {prose(', '.join(p.name for p in pools))}") if len(reached) >= total \
        else (f"{some(names)}, its Nodes that lack it", f"the {len(reached)} Nodes of "
              f"{prose(', '.join(p.name for p in pools))} it would reach")
    noexec = taint.get("effect") == "NoExecute"
    why = ("a DaemonSet that does not tolerate it " + ("has its Pods there deleted once the taint reaches them, and "
                                                       if noexec else "keeps its running Pods, but ")
           + "gets none on the Nodes CKS adds or replaces later")
    shut = ("a NodeSet that does not tolerate it can no longer place a slurmd Pod there: its FEASIBLE drops, and "
            + ("its Pods there are deleted" if noexec else "its Pods there count as MISSCHEDULED"))
    # what was not read comes first, under a heading of its own: a sentence after a YAML snippet reads as part of it
    notes = []
    if len(seen) < len(reached):
        notes.append((f"sunkcheck read the Pods of {some(o.name(n) for n in seen)} only, of {scope}: check the "
                      "DaemonSets on the others too" if seen else
                      f"sunkcheck did not read the Pods of {scope} ({some(names)}): check the DaemonSets on them")
                     + ("" if found else f" ({why})") + " and tolerate the taint in each that belongs on the pool; "
                     "this lists each one's node selector:\nkubectl get daemonsets -A -o wide\n")
    if b.peers_unread:
        notes.append(f"sunkcheck read {prose(b.peers_unread)}: check the other NodeSets on the pool and tolerate the "
                     f"taint in each that selects its Nodes ({shut}); this lists them:\nkubectl get nodesets -A\n")
    before = "" if notes else "before tainting the pool, "
    parts = ["before tainting the pool:\n", *notes] if notes else []
    if found:
        parts.append(f"{before}tolerate the taint in the DaemonSets running on {where} ({why}):\n")
    for (ns, ds), (pod, hosts) in sorted(found.items()):
        own = [t for t in o.spec(pod).get("tolerations") or () if t not in DAEMON_TOLERATIONS
               and t != HOST_NETWORK_TOLERATION]  # the controller adds those to every daemon Pod, not to the template
        parts.append(f"DaemonSet {prose(ns + '/' + ds)} (its Pod on {some(hosts)}): "
                     + add_toleration(taint, own, "its Pod template's tolerations") + "\n")
    peers = [(w, hosts) for w in b.peers
             if not any(tolerates(t, taint) for t in o.pod_spec(w).get("tolerations") or ())
             and (hosts := [o.name(n) for n in reached if matches_affinity(o.pod_spec(w), n)])]
    if peers:
        parts.append(f"{before}tolerate the taint in the other NodeSets that select its Nodes ({shut}):\n")
    for w, hosts in sorted(peers, key=lambda found: (o.namespace(found[0]), o.name(found[0]))):
        parts.append(f"NodeSet {prose(o.namespace(w) + '/' + o.name(w))} (it selects {some(hosts)}): "
                     + add_toleration(taint, o.pod_spec(w).get("tolerations") or [], "its node definition's tolerations")
                     + "\n")
    text = "".join(parts)
    return lead + text if text else ""  # the lead joins the step to the fix before it


def _let_in_by(pod: dict, node: dict | None) -> str | None:
    """What lets a squatter past the taints that keep other Pods off: a toleration of every taint (no new taint
    would keep it off), or of its Node's own taints (a toleration copied from a slurm manifest); None if none."""
    if any(not t.get("key") and t.get("operator") == "Exists" and t.get("effect") in (None, "", "NoSchedule")
           for t in o.spec(pod).get("tolerations") or ()):
        return "every taint (a toleration with no key)"
    tolerated = [o.format_taint(t) for t in o.taints(node or {}) if t.get("effect") in BLOCKING_EFFECTS
                 and not nd.is_kubernetes_key(str(t.get("key", "")))
                 and any(tolerates(tol, t) for tol in o.spec(pod).get("tolerations") or ())]
    if not tolerated:
        return None
    return f"the taint{'s' if len(tolerated) > 1 else ''} {prose(', '.join(tolerated))} of its Node {o.name(node or {})}"


def _template_of(pod: dict) -> str:
    """Where the Pod's tolerations are set: its controller's Pod template (a ReplicaSet's is its Deployment's)."""
    refs = o.meta(pod).get("ownerReferences") or ()
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if ref is None:
        return "its manifest"
    owner = prose(f"{ref.get('kind')} {ref.get('name')}")
    return f"the Deployment owning {owner}" if ref.get("kind") == "ReplicaSet" else f"the Pod template of {owner}"


def _squatters(b: Binding, nodes: list[dict]) -> list[dict]:
    """The Pods holding resources on `nodes` that could go elsewhere: not a NodeSet's slurmd Pod, a static Pod or a
    finished one; a DaemonSet's Pod only when it is no node overhead (`_is_overhead`) and the slurmd Pod would fit
    without it once the others are gone. Judged on the Node alone: a live check reads no more."""
    found = []
    for n in nodes:
        here = b.neighbours(n)[0]
        held = [p for p in here if not o.is_terminal(p) and pd.nodeset_owner(p) is None and "Node" not in _owner_kinds(p)
                and any(isinstance(q, Unreadable) or q > 0 for q in pod_requests(o.spec(p)).values())]
        movable = [p for p in held if not _daemonset_of(p)]
        rest = [p for p in here if all(p is not q for q in movable)]
        found += movable
        if not _fits(b, n, rest):
            overhead = _overhead(b, n)
            found += [d for d in held if _daemonset_of(d) and all(d is not p for p in overhead)
                      and _fits(b, n, [p for p in rest if p is not d])]
    return found


def _fits(b: Binding, node: dict, others: list[dict]) -> bool:
    return not resource_reasons(b.workload.requests, node, others)


def _owner_kinds(pod: dict) -> set[str]:
    return {ref.get("kind") for ref in o.meta(pod).get("ownerReferences") or ()}


def _daemonset_of(pod: dict) -> str | None:
    return next((ref.get("name") for ref in o.meta(pod).get("ownerReferences") or () if ref.get("kind") == "DaemonSet"), None)


def _daemon_evidence(pod: dict) -> str:
    return (f"Pod {_pod_names([pod])} is DaemonSet {o.namespace(pod)}/{_daemonset_of(pod)}'s: the slurmd Pod would fit "
            f"on {o.node_name(pod)} without it, not a node agent's few millicores")


def _descope(b: Binding, daemons: list[dict]) -> list[str]:
    """Per DaemonSet holding pool Nodes: take them out of its scope. A NoSchedule taint leaves a running daemon Pod
    there, and a deleted one is recreated at once; a NoExecute taint would evict every other Pod not tolerating it
    too. The label that puts it there: what its nodeSelector asks for (the controller copies it onto each Pod), else
    the labels its Node alone carries, neither set by the pool nor by a controller (they come back)."""
    by_daemonset: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
    for p in daemons:
        by_daemonset[(o.namespace(p), _daemonset_of(p))].append(p)
    fixes = []
    for (ns, ds), pods in sorted(by_daemonset.items()):
        hosts = [o.node_name(p) or "" for p in pods]
        fix = (f"DaemonSet {ns}/{prose(ds)} holds {some(hosts)}: a NoSchedule taint leaves a running daemon Pod in place, and "
               "the DaemonSet recreates one deleted while its scope holds the Node, so take the Node out of its scope")
        for p in pods:
            node, pool = b.cluster.nodes[o.node_name(p) or ""], b.cluster.pool(b.cluster.pool_of(o.node_name(p)) or "")
            selector = o.spec(p).get("nodeSelector") or {}
            asked = selector or {k: v for k, v in o.labels(node).items()
                                 if not all(o.labels(n).get(k) == v for n in pool.nodes)}
            hand = {k: v for k, v in asked.items() if nd.is_user_key(k) and pool.node_labels.get(k) != v
                    and o.labels(node).get(k) == v}
            if not hand:
                continue
            pairs, pool_name = prose(", ".join(f"{k}={v}" for k, v in sorted(hand.items()))), prose(pool.name)
            fix += (f": its nodeSelector asks for {pairs}, which Node Pool {pool_name} does not set: " if selector else
                    f": {o.name(node)} alone carries {pairs}, which Node Pool {pool_name} does not set: if the "
                    "DaemonSet selects it, ")
            fix += (f"remove it from {o.name(node)} (the controller deletes its Pod there within seconds; whatever "
                    f"else selects it loses the Node too):\n{unlabel_node(o.name(node), sorted(hand))}\n")
        pools = sorted({b.cluster.pool_of(h) or "" for h in hosts} - {""})
        fix += ("or " if fix.endswith("\n") else ": ") + "exclude the pool in its required node affinity (in every term):\n"
        fixes.append(fix + expression_yaml({"key": o.POOL_LABEL, "operator": "NotIn", "values": pools}))
    return fixes


def _evict(pods: list[dict], when: str) -> str:
    """Delete exactly these Pods (a drain would evict every Pod on the Node and delete emptyDir data); a Pod no
    controller owns is gone for good once deleted."""
    owned = [p for p in pods if _owner_kinds(p)]
    orphans = [p for p in pods if not _owner_kinds(p)]
    text = ""
    if owned:
        text += f"\nthen delete the Pods holding the resources, {when} (their controller recreates them elsewhere):\n"
        text += _delete_pods(owned)
    if orphans:
        text += (f"\nno controller owns {_pod_names(orphans)}: deleted, it is not recreated; ask its owner first:\n"
                 f"{_delete_pods(orphans)}")
    return text


def _pod_names(pods: list[dict]) -> str:
    return ", ".join(f"{o.namespace(p)}/{o.name(p)}" for p in pods)


def _delete_pods(pods: list[dict]) -> str:
    by_namespace: dict[str, list[str]] = defaultdict(list)
    for p in pods:
        by_namespace[o.namespace(p)].append(arg(o.name(p)))
    return "\n".join(f"kubectl delete pod -n {arg(ns)} {' '.join(names)}" for ns, names in sorted(by_namespace.items()))


def _intended_pools(b: Binding) -> set[str]:
    """The pools the NodeSet's Pods belong in: when someone said (--pool, the annotation), the expected ones and
    those it names itself; else its pools, unless found only because its Pods run there (then none)."""
    if b.expected:
        return set(b.expected) | set(named_pools(b.pod_spec))
    return set() if b.pool_source.startswith("pools its Pods") else b.pool_names


def nodeselector_ignored(b: Binding) -> Match | None:
    outside = o.spec(b.nodeset).get("nodeSelector") or {}
    evidence = []
    if outside:
        loose = [o.name(n) for n in b.cluster.nodes.values() if matches_affinity(b.pod_spec, n)
                 and not all(o.labels(n).get(k) == v for k, v in outside.items())]
        if loose:
            pairs = ", ".join(f"{k}={v}" for k, v in sorted(outside.items()))
            evidence.append(f"spec.nodeSelector {pairs} sits outside spec.template.spec and never reaches the slurmd "
                            f"Pods: the template's affinity matches {len(loose)} Node(s) without those labels, "
                            f"{len(b.feasible_nodes.intersection(loose))} of them feasible")
    intended = _intended_pools(b)
    stray = [p for p in b.pods if (node := b.cluster.nodes.get(o.node_name(p) or ""))
             and o.pool_of(node) not in intended and matches_affinity(b.pod_spec, node)] if intended else []
    current, pool_nodes = b.counts["current"], sum(len(b.cluster.pool(name).nodes) for name in intended)
    if stray and current is not None and current > pool_nodes:
        evidence.append(f"CURRENT {current} > {counted(pool_nodes, 'Node')} in {', '.join(sorted(intended))}")
    evidence += [f"Pod {o.name(p)} on Node {o.node_name(p)} (pool {b.cluster.pool_of(o.node_name(p)) or 'none'})"
                 for p in stray[:EXAMPLES]]
    if len(stray) > EXAMPLES:
        evidence.append(f"and {counted(len(stray) - EXAMPLES, 'more Pod')} outside the pool")
    if not evidence:
        return None
    if outside:
        wanted = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(outside.items())]
        return Match(tuple(evidence), "move the constraint from nodeSelector into the node definition's affinity: "
                     + add_expressions(wanted, b.pod_spec))
    if b.expected and (hand := _hand_picked(b, stray)):
        return _off_hand_picked_nodes(b, stray, hand, tuple(evidence))
    return Match(tuple(evidence), f"bind the NodeSet to its pool by name (the {counted(len(stray), 'slurmd Pod')} "
                 "outside it are then misscheduled: run sunkcheck again for how to drain their Slurm nodes before "
                 "deleting them): " + add_expressions(
                     [{"key": o.POOL_LABEL, "operator": "In", "values": sorted(intended)}], b.pod_spec),
                 cause=_wide_affinity_cause(b, intended))


def _hand_picked(b: Binding, pods: list[dict]) -> dict[str, list[str]]:
    """The label keys set by hand (not by their pool's nodeLabels) that alone make the NodeSet select the Nodes of
    `pods`, by key, with their Nodes; empty unless every one of them is such a Node (their pool's own labels would
    not select them)."""
    found: dict[str, list[str]] = {}
    for name in sorted({o.node_name(p) or "" for p in pods}):
        node, pool = b.cluster.nodes[name], b.cluster.pool(b.cluster.pool_of(name) or "")
        if pool.obj is None or nd.selects(b.selection, _reapplied(pool, node), name):
            return {}
        for e in nd.positive(b.terms):
            if nd.is_user_key(key := e["key"]) and key in o.labels(node) and pool.node_labels.get(key) != o.labels(node)[key]:
                found.setdefault(key, []).append(name)
    return found


def _off_hand_picked_nodes(b: Binding, pods: list[dict], hand: dict[str, list[str]], evidence: tuple) -> Match:
    """slurmd Pods on Nodes of a pool not meant for the NodeSet, which labels set there by hand pull it onto: never
    the other pool's nodeLabels (that would label all its Nodes); drain the Slurm nodes, take the labels off those
    Nodes, then delete the Pods."""
    nodes = sorted({n for names in hand.values() for n in names})
    pools = sorted({b.cluster.pool_of(n) or "" for n in nodes})
    keys = ", ".join(sorted(hand))
    cause = (f"{prose(keys)} was set by hand on {'Nodes' if len(nodes) > 1 else 'Node'} {prose(', '.join(nodes))} of "
             f"{prose(', '.join(pools))}, not meant for the NodeSet (it is meant for {prose(', '.join(sorted(b.expected)))}): "
             "the affinity selects them, so slurmd Pods run there.")
    reason = f"sunkcheck: Node of a pool not meant for NodeSet {b.name}"
    fix = (f"leave {prose(', '.join(pools))}'s nodeLabels alone (set there, the label reaches every Node of it). "
           "Drain the Slurm nodes of those Pods first, on a login node: deleting a slurmd Pod kills the Slurm jobs on "
           "it:\n" + _drain(pods, reason) + "\nthen remove the label from those Nodes:\n"
           + "\n".join(unlabel_node(names, [k]) for k, names in sorted(hand.items()))
           + "\nthen delete the Pods (the NodeSet creates its Pods only on the Nodes it selects):\n" + _delete_own(b, pods))
    return Match(evidence, fix, cause=cause)


def _wide_affinity_cause(b: Binding, intended: set[str]) -> str:
    """No nodeSelector outside the template: the affinity itself selects by labels other pools' Nodes carry."""
    pools = ", ".join(sorted(intended))
    wanted = " and ".join(describe_expression(e) for e in nd.positive(b.terms_without_selector))
    if not wanted:
        return f"The node definition requires no label: any Node may take its Pods, nothing keeps them to {pools}."
    return (f"The node definition's required affinity selects {wanted}, which other pools' Nodes carry too: nothing in "
            f"it keeps the Pods to {pools}.")


def misscheduled(b: Binding) -> Match | None:
    """Pods on Nodes the NodeSet refuses. The runbook: confirm the intended Nodes, then let the NodeSet replace the
    Pods. So two branches, each to paste: the Nodes are still meant for the NodeSet (restore what changed: the
    label and both values, or the taint; the Pods then count as scheduled again, their jobs untouched), or they are
    meant to leave (drain their Slurm nodes, wait for their jobs to end, then delete the Pods)."""
    reported, wrong, repair = b.counts["misscheduled"], b.misscheduled_pods, b.repair_pods
    # a Pod on a Node in repair is counted too, and is the Node's health (the nodes step's): alone, no row
    if not (reported or (reported is None and wrong)) or not wrong and (reported or 0) <= len(repair):
        return None
    evidence = [f"MISSCHEDULED {reported}"] if reported else []
    for p in wrong:
        node = o.node_name(p) or ""  # misscheduled Pods are on a known Node
        why = "; ".join(r.detail for r in b.refusals(node))
        evidence.append(f"Pod {o.name(p)} on Node {node} (pool {b.cluster.pool_of(node) or 'none'}): {why}")
    hosts = [o.node_name(p) or "" for p in repair]
    evidence += [f"Pod {o.name(p)} on Node {node} in repair, not a mismatch: {_repair_said(b, b.cluster.nodes[node])}"
                 for p, node in zip(repair, hosts)]
    # the Pods on Nodes in repair: never restored, drained or deleted; CKS returns their Nodes
    one = len(repair) == 1
    aside = (f"\nthe Pod{'' if one else 's'} on {'Node' if one else 'Nodes'} {some(hosts)}, in repair: change nothing for "
             f"{'it' if one else 'them'} (CKS returns {'the Node' if one else 'them'} to production itself); follow "
             f"the repair:\nkubectl describe node {arg(hosts[0])}") if repair else ""
    if not wrong:
        return Match(tuple(evidence), "find the Pods on Nodes the NodeSet no longer selects:\n"
                     f"kubectl get pods -n {arg(b.namespace)} -l {arg(f'{o.INSTANCE_LABEL}={b.name}')} -o wide" + aside)
    names = sorted({o.node_name(p) or "" for p in wrong})
    intended = _intended_pools(b) | ({pool for p in b.pods if (pool := b.cluster.pool_of(o.node_name(p)))}
                                     if _absent_pools(b) else set())  # a typo'd pool: where its Pods run is its own
    home = all(_at_home(b, b.cluster.nodes[n], intended) for n in names)
    nodes = f"Node{'s' if len(names) > 1 else ''} {some(names)}"
    likely = " (of its own pool, they most likely are)" if home else ""
    keep = (f"if {nodes} {'are' if len(names) > 1 else 'is'} still meant for the NodeSet{likely}, restore what "
            "changed; the Pods then count as scheduled again, their Slurm jobs untouched:\n" + "\n".join(_restore(b, names)))
    leave = ("if they are meant to leave it, drain their Slurm nodes (named like the Pods) first, on a login node: "
             "deleting a slurmd Pod kills the Slurm jobs on it:\n" + _drain_then_delete(b, wrong))
    return Match(tuple(evidence), f"{keep}\n{leave}{aside}")


def _restore(b: Binding, names: list[str]) -> list[str]:
    """What changed on the Nodes the NodeSet refuses, each with what puts it back: the label (its key, the Nodes'
    value and the one required) or the taint, grouped over the Nodes alike."""
    labels: dict[tuple[str, str | None], tuple[dict, list[str], list[dict]]] = {}
    taints: dict[str, tuple[dict, list[str]]] = {}
    tolerations = b.pod_spec.get("tolerations") or []
    for name in names:
        node = b.cluster.nodes[name]
        checks = {r.check for r in b.refusals(name)}
        have = o.labels(node)
        if "affinity" in checks:  # Kubernetes ORs the terms: the nearest to matching says what changed
            term = min(nd.binding_terms(b.pod_spec), key=lambda t: sum(not match_expression(e, have) for e in t))
            for e in (e for e in term if not match_expression(e, have)):
                labels.setdefault((describe_expression(e), have.get(e["key"])), (e, [], term))[1].append(name)
        if "taint" in checks:
            for t in nd.untolerated_scoping_taints(tolerations, node):
                taints.setdefault(o.format_taint(t), (t, []))[1].append(name)
    parts = [_restore_label(b, e, value, found, term) for (_, value), (e, found, term) in labels.items()]
    for text, (t, found) in taints.items():
        pool = b.cluster.pool(o.pool_of(b.cluster.nodes[found[0]]) or "")
        said = f"{some(found)} {_carry(found)} the taint {prose(text)}, which the NodeSet does not tolerate"
        if t.get("key") == o.LOCK_TAINT or nd.set_by_pool(pool, t) or pool.obj is None or not nd.is_user_taint(str(t["key"])):
            parts.append(f"{said} (Node Pool {prose(pool.name)} sets it): tolerate it; "
                         + add_toleration(t, tolerations))
        else:
            parts.append(f"{said}; Node Pool {prose(pool.name)}'s nodeTaints do not set it (set by hand): remove it:\n"
                         + untaint_node(found, t))
    return parts or ["compare the NodeSet's affinity and tolerations with the Nodes' labels and taints:\n"
                     + f"kubectl describe node {arg(names[0])}"]


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
    if nd.is_user_key(key) and pool.obj is not None:
        own = pool.node_labels.get(key)
        if own is not None and match_expression(expr, {key: own}):
            return f"{said} (Node Pool {prose(pool.name)} sets {prose(key + '=' + own)}): put it back:\n" + \
                relabel_node(names, key, own)
        wanted = [str(v) for v in expr.get("values") or ()]
        if own is not None and own == value and expr["operator"] == "In" and len(wanted) == 1:
            # the pool's own value changed (CKS relabels every Node): restore it there, never Node by Node
            widened, use = _ask_carried(b, term, key, pool.nodes)
            return (f"{said}, the value Node Pool {prose(pool.name)}'s nodeLabels set now: set the required value back "
                    f"there (CKS relabels its Nodes):\n{label_nodepool(pool.name, {key: wanted[0]})}\n"
                    f"or, if {prose(own)} is meant, ask for it in the node definition's affinity, in place of "
                    f"{prose(describe_expression(expr))}{widened}:\n{use}")
        if own is None and expr["operator"] in ("NotIn", "DoesNotExist") and value is not None:
            return f"{said} (set by hand): remove it:\n" + "\n".join(unlabel_node(n, [key]) for n in names)
        if own is None and expr["operator"] == "In" and len(expr.get("values") or ()) == 1:
            return f"{said} (set by hand): put it back:\n" + relabel_node(names, key, str(expr["values"][0]))
    accepted = _accepting(b, expr, value) if value is not None else None
    if accepted is None:
        return f"{said}: correct that expression in the node definition's affinity, or the label"
    gone = [v for v in expr.get("values") or () if key == o.POOL_LABEL and v not in b.cluster.pool_names]
    return (f"{said}" + (f" (no Node Pool is named {prose(', '.join(map(str, gone)))})" if gone else "")
            + ": accept it again in the node definition's affinity, in place of that expression:\n"
            + expression_yaml(accepted))


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


def _drain_then_delete(b: Binding, pods: list[dict]) -> str:
    return (_drain(pods, f"sunkcheck: Node no longer matches NodeSet {b.name}") + "\n"
            "then let the NodeSet replace the Pods: delete them (it creates its Pods only on the Nodes it selects):\n"
            + _delete_own(b, pods))


def _drain(pods: list[dict], reason: str) -> str:
    """Drain the Slurm nodes of slurmd `pods` (named like them), then wait until no job runs on them."""
    names = ",".join(o.name(p) for p in pods)
    return (f"scontrol update {arg('nodename=' + names)} state=drain reason={arg(reason)}\n"
            "wait until this lists no job on them:\n"
            f"squeue -h -w {arg(names)}")


def _delete_own(b: Binding, pods: list[dict]) -> str:
    return f"kubectl delete pod -n {arg(b.namespace)} {' '.join(arg(o.name(p)) for p in pods)}"


def slurmd_pods_missing(b: Binding) -> Match | None:
    """The effective size (DESIRED, at most FEASIBLE) above the Pods on Nodes: by the controller's CURRENT, or by
    the slurmd Pods themselves (a stale status, or none reported). Without a status (the operator never reconciled
    the NodeSet), DESIRED is what the controller would set: `replicas`, else sunkcheck's FEASIBLE — for a NodeSet
    the API server stored (a uid), not a --values prediction. The Pods that were never created leave no Pod to
    read, only the NodeSet's Events."""
    reported, current = b.counts["desired"], b.counts["current"]
    deployed = bool(o.meta(b.nodeset).get("uid"))
    want = reported if reported is not None or not deployed else desired(replicas(b.nodeset), b.computed_feasible)
    size = effective(want, b.feasible)
    on_nodes = None if b.cluster.snapshot.pods is None else \
        len({n for p in b.pods if (n := o.node_name(p)) and not o.is_terminal(p)})
    if not falls_short(size, current, on_nodes):
        return None
    if reported is None:
        evidence = [f"the NodeSet reports no DESIRED (has the SUNK operator reconciled it?); sunkcheck finds {size} "
                    f"Node(s) it should run on" + ("" if on_nodes is None else f", and slurmd Pods run on {on_nodes}")]
    else:
        evidence = [f"DESIRED {reported}" + (f", FEASIBLE {b.feasible}" if size != reported else "")
                    + f", CURRENT {shown(current)}" + ("" if on_nodes is None else f": slurmd Pods run on {on_nodes} Node(s)")]
    unplaced = [p for p in b.pods if not o.node_name(p) and not o.is_terminal(p)]
    evidence += [f"Pod {o.name(p)} is not on a Node yet" for p in unplaced[:EXAMPLES]]
    events = b.cluster.events_about("NodeSet", b.name, b.namespace)
    for p in unplaced:
        events += b.cluster.events_about("Pod", o.name(p), b.namespace)
    evidence += [ev.describe(e) for e in events if ev.is_warning(e)]
    idle = [n for n in b.feasible_nodes if not b.verdict(n).placed]
    if idle:
        evidence.append(f"{len(idle)} feasible Node(s) run no slurmd Pod: {some(idle)}")
    fixes = [f"kubectl describe nodeset -n {arg(b.namespace)} {arg(b.name)}"]
    fixes += [f"kubectl describe pod -n {arg(b.namespace)} {arg(o.name(p))}" for p in unplaced[:EXAMPLES]]
    return Match(tuple(evidence), "a scale-up or rollout in progress clears by itself (--wait waits for it); else read "
                 "why the Pods are not created or placed (FailedCreate: a namespace ResourceQuota or admission webhook; "
                 "none: is the SUNK operator running?):\n" + "\n".join(fixes))


def nodeset_status_stale(b: Binding) -> Match | None:
    """The status describes an older generation of the spec: its counts say nothing of the latest one, so the
    rows judging them take sunkcheck's own (b.counts reports none); this row says why."""
    _, lag = lagging(b.nodeset)
    if not lag:
        return None
    generation, observed = lag["generation"], lag["observed_generation"]
    evidence = [f"metadata.generation {generation}, status.observedGeneration {observed}: the status "
                f"({columns_line(o.status_counts(b.nodeset))}) describes generation {observed} of {generation}, "
                "not the latest spec"]
    if b.cluster.snapshot.nodes is not None:
        in_pools = sum(o.name(n) in b.feasible_nodes for n in b.pool_nodes)
        evidence.append(f"for the latest spec sunkcheck finds {counted(b.computed_feasible, 'feasible Node')}"
                        + (f" ({in_pools} of the {len(b.pool_nodes)} Nodes of {', '.join(sorted(b.pool_names))})"
                           if b.pools else ""))
    return Match(tuple(evidence), "wait for the SUNK operator to reconcile the latest spec (--wait waits for the status "
                 "to catch up); if it stays behind, the operator is not reconciling the NodeSet: check that the SUNK "
                 "operator's Pod is running and read its log, and the NodeSet's Events:\n"
                 f"kubectl describe nodeset -n {arg(b.namespace)} {arg(b.name)}")


def _not_ready_pods(b: Binding) -> list[dict]:
    return [p for p in b.pods if o.node_name(p) and not o.is_ready(p) and not o.is_terminal(p)]


def _where(b: Binding, slurm_name: str) -> str:
    nodes = b.kube_nodes_of(slurm_name)
    if len(nodes) > 1:
        return "ambiguous: its IP tail matches Nodes " + ", ".join(f"{n} (pool {b.cluster.pool_of(n) or 'none'})" for n in nodes)
    return f"Node {nodes[0]}, pool {b.cluster.pool_of(nodes[0]) or 'none'}" if nodes else "no Kubernetes Node found"


def _sick_node(b: Binding, pod: dict) -> dict | None:
    """The Pod's Node when that is not Ready: the cause of the Pod's unreadiness (the node lifecycle controller marks
    its Pods not Ready), a Node health matter, nothing to change or delete in the NodeSet."""
    node = b.cluster.nodes.get(o.node_name(pod) or "")
    return node if node is not None and not o.is_ready(node) else None


def _not_ready_evidence(b: Binding, pod: dict) -> str:
    waiting = next((cs.get("state", {}).get("waiting", {}).get("reason") for cs in o.status(pod).get("containerStatuses") or ()
                    if cs.get("state", {}).get("waiting")), None)
    text = f"Pod {o.name(pod)} on Node {o.node_name(pod)} is not Ready" + (f" ({waiting})" if waiting else "")
    node = _sick_node(b, pod)
    if node is None:
        return text
    cond = o.condition(node, "Ready") or {}
    return f"{text}: its Node is {not_ready(cond.get('status'), cond.get('reason'))}, a Node health matter, not the NodeSet's"


def _not_ready_fix(b: Binding, pod: dict) -> str:
    """Read the Node when it is the cause (the Pod recovers with it, or Kubernetes evicts it), else the Pod."""
    node = _sick_node(b, pod)
    if node is not None:
        return f"kubectl describe node {arg(o.name(node))}"
    return f"kubectl describe pod -n {arg(b.namespace)} {arg(o.name(pod))}"


def slurmd_not_ready(b: Binding) -> Match | None:
    evidence = [_not_ready_evidence(b, p) for p in _not_ready_pods(b)]
    for name, node in sorted((b.slurm_nodes or {}).items()):
        if not node.healthy:
            evidence.append(f"Slurm node {name} ({_where(b, name)}): {node.describe()}")
    if not evidence:
        return None
    reads = [_not_ready_fix(b, p) for p in _not_ready_pods(b)[:EXAMPLES]]
    fixes = ["read the events of the Pods not Ready (of their Node, when that is not Ready):", *reads] if reads else []
    bad = [n for n, v in sorted((b.slurm_nodes or {}).items()) if not v.healthy]
    if bad:
        fixes += [f"read Slurm's reason for {prose(bad[0])}:", f"scontrol show node {arg(bad[0])}",
                  "once fixed, resume it (reasons starting sunk:verify-undrain clear after the next hourly verification):",
                  f"scontrol update NodeName={arg(bad[0])} State=RESUME"]
    return Match(tuple(evidence), "\n".join(fixes))


def slurm_node_count_mismatch(b: Binding) -> Match | None:
    nodes = b.slurm_nodes
    ready = b.counts["ready"]
    if nodes is None or ready is None:
        return None
    pod_names = {o.name(p) for p in b.pods if o.node_name(p)}
    no_pod, no_slurm = sorted(set(nodes) - pod_names), sorted(pod_names - set(nodes))
    registered_not_ready = sum(o.name(p) in nodes for p in _not_ready_pods(b))
    # equal counts can still hide a stale node and an unregistered Pod; a gap of exactly the not-Ready
    # slurmd Pods is slurmd-not-ready's to report
    if not no_pod and not no_slurm and len(nodes) in (ready, ready + registered_not_ready):
        return None
    where = f"in partition {b.partition}" if b.partition else f"named like the Pods of {b.name}"
    evidence = [f"Slurm shows {len(nodes)} node(s) {where}; the NodeSet has READY {ready}"]
    if b.partition and not nodes:
        seen = sorted({p for n in (b.all_slurm_nodes or {}).values() for p in n.partitions})
        evidence.append(f"partition {b.partition} lists no nodes: does it exist? (partitions seen: {', '.join(seen) or 'none'})")
    if no_pod:
        evidence.append(f"Slurm nodes with no slurmd Pod: {some(f'{n} ({_where(b, n)})' for n in no_pod)}")
    if no_slurm:
        evidence.append(f"slurmd Pods Slurm does not list: {some(no_slurm)}")
    fixes = ["check the partition name (--partition) and which NodeSets feed it"]
    if no_slurm:
        fixes += [f"read the log of slurmd in {prose(no_slurm[0])}, which Slurm does not list:",
                  f"kubectl logs -n {arg(b.namespace)} {arg(no_slurm[0])} -c slurmd"]
    if no_pod:
        fixes += [f"read Slurm's view of {prose(no_pod[0])}, which has no slurmd Pod:", f"scontrol show node {arg(no_pod[0])}"]
    return Match(tuple(evidence), "\n".join(fixes))


RULES = (
    Rule("pool-below-target", Status.WARNING, "nodepool",
         "Node Pool CURRENT is below TARGET",
         "The Node Pool has not delivered its Nodes: a Node Pool problem (quota, capacity, provisioning), "
         "not a matching problem.",
         "Check `kubectl describe nodepool <pool>`: wait for queued capacity, request quota if the Quota condition is False.",
         pool_below_target, needs=("nodepools",), severity_note="critical when quota says the Nodes will never arrive",
         reads=("pool-nodes",)),
    Rule("reserved-label-namespace", Status.CRITICAL, "events",
         "A label added to the Node Pool never appears on any Node",
         "The label key is in the reserved coreweave.com or coreweave.cloud namespace, "
         "so CKS drops it (CWNodePoolMetadataSanitized).",
         "Check for a CWNodePoolMetadataSanitized Event on the Node Pool, then move the label to a domain you control.",
         reserved_label_namespace, reads=("pool-nodes", "reserved-key-carriers")),
    Rule("pool-labels-missing", Status.CRITICAL, "nodes",
         "No Node in the pool carries the label the binding relies on",
         "The label is not in the Node Pool's nodeLabels (or CKS has not applied it), so nothing matches the NodeSet's affinity.",
         "Set the label in the Node Pool's spec.nodeLabels, then check the Node Pool's Events.",
         pool_labels_missing, needs=("nodes",), explained_by=("reserved-label-namespace",),
         reads=("pool-nodes",)),
    Rule("labels-not-from-pool", Status.WARNING, "nodes",
         "Nodes lose their labels after a Node Pool scale event",
         "The labels or taints were applied to individual Nodes instead of the Node Pool spec.",
         "Move the labels and taints into the Node Pool's nodeLabels and nodeTaints.",
         labels_not_from_pool, needs=("nodes", "nodepools"),
         reads=("pool-nodes", "pods-on-nodes-lacking-a-hand-taint", "pods-on-pool-nodes")),
    Rule("no-feasible-nodes", Status.CRITICAL, "nodeset",
         "FEASIBLE is 0: no Node of the pool can take a slurmd Pod",
         "The NodeSet's affinity doesn't match the Nodes' labels (a key they lack, or a value they don't carry), it "
         "doesn't tolerate the Node Pool's taint, or its requests exceed what the Nodes have (each match names its "
         "own; a taint set on the Nodes by hand, not in the pool's nodeTaints, is said as such, to remove rather than "
         "tolerate). A pool whose Nodes are all in repair is pool-nodes-in-repair's.",
         "Compare the NodeSet's affinity (keys and values) and tolerations against `kubectl describe node` output for one "
         "Node in the pool.",
         no_feasible_nodes, needs=("nodes",), explained_by=("reserved-label-namespace", "pool-labels-missing"),
         reads=("pool-nodes", "affinity-nodes", "every-node-when-feasible-0", "pods-on-usable-nodes",
                "pods-on-pool-nodes", "pods-on-every-node-without-a-pool")),
    Rule("pool-nodes-in-repair", Status.WARNING, "nodes",
         "Every Node of the pool is out of service: cordoned, out of production or not Ready",
         "CKS is repairing the Nodes (a cordon for a link flap or a failed health check, a state such as triage), or "
         "they have not joined yet: a Node health matter, not a NodeSet one. FEASIBLE is 0 until they return.",
         "Change nothing in the NodeSet (never tolerate the cordon): follow the repair with `kubectl describe node` "
         "(the node.coreweave.cloud/cordonReason annotation); ask CoreWeave support if the Nodes stay out.",
         pool_nodes_in_repair, needs=("nodes",), reads=("pool-nodes", "affinity-nodes")),
    Rule("pool-nodes-unusable", Status.WARNING, "nodes",
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
         reads=("pool-nodes", "affinity-nodes", "pods-on-usable-nodes")),
    Rule("nodepool-missing", Status.WARNING, "nodepool",
         "A Node Pool the NodeSet names does not exist",
         "A typo in the pool name, or a Node Pool deleted since: the capacity it was meant to add never arrives.",
         "Create the Node Pool, or name only existing pools in the NodeSet's affinity.",
         nodepool_missing, needs=("nodepools",), explained_by=("no-feasible-nodes",), reads=("pool-nodes",)),
    Rule("pool-split", Status.WARNING, "nodeset",
         "FEASIBLE is short by exactly the Node count of another Node Pool",
         "The NodeSet's affinity shuts out a Node Pool meant for it (named with --pool, or annotated "
         "sunkcheck.io/nodesets): its capacity spans several pools, but the NodeSet selects only some.",
         "Add the pools it shuts out to `values` with `operator: In`, keeping the pools it selects now, or match a "
         "label they all share.",
         pool_split, needs=("nodes",),
         reads=("pool-nodes", "affinity-nodes", "pods-on-usable-nodes", "pods-on-shut-out-nodes")),
    Rule("replicas-cap", Status.WARNING, "nodeset",
         "DESIRED is lower than FEASIBLE after a Node Pool scale-up",
         "`replicas` caps the NodeSet below the Node Pool size.",
         "Omit `replicas`, or raise it.",
         replicas_cap, reads=("pool-nodes", "affinity-nodes", "pods-on-usable-nodes")),
    Rule("foreign-pod-resources", Status.WARNING, "nodeset",
         "FEASIBLE is one or two below the Node Pool's CURRENT",
         "A non-Slurm Pod occupies those Nodes and consumes the resources the slurmd Pod requests.",
         "Add a taint to the Node Pool and its toleration to the NodeSet, and first to each DaemonSet that belongs on the "
         "pool (one that does not tolerate it gets no Pod on the Nodes CKS adds later) and each other NodeSet on the "
         "pool (one that does not can no longer place its Pods there), or fix the other workload's "
         "affinity to exclude these Nodes; a Pod tolerating the pool's taint loses that toleration instead. Then delete "
         "the Pods already there by name (draining the Node would evict every Pod on it); a DaemonSet's Pod is never "
         "deleted (it comes back): take the Node out of the DaemonSet's scope.",
         foreign_pod_resources, needs=("nodes", "pods"), reads=("pool-nodes", "pods-on-usable-nodes")),
    Rule("misscheduled", Status.WARNING, "nodeset",
         "MISSCHEDULED is above 0",
         "Pods sit on Nodes the NodeSet no longer selects or tolerates, usually after a label, affinity or taint change. "
         "A Pod on a Node CKS took out of production for repair is counted too: Node health, not this row's.",
         "Confirm the intended Nodes. Still meant for the NodeSet (likely on its own pool): restore what changed, the "
         "label's value or the taint, and the Pods count as scheduled again, their jobs untouched. Meant to leave: "
         "drain their Slurm nodes, wait until `squeue -w` lists no job, then let the NodeSet replace the Pods.",
         misscheduled, reads=("pod-hosts",)),
    Rule("slurmd-pods-missing", Status.WARNING, "nodeset",
         "CURRENT is below DESIRED: slurmd Pods are missing",
         "The NodeSet could not create or place some of its Pods (a ResourceQuota, an admission webhook, the operator "
         "down), or a scale-up or rollout is still under way.",
         "Read the NodeSet's Events (`kubectl describe nodeset`); wait for a rollout to finish.",
         slurmd_pods_missing, explained_by=("nodeset-status-stale",), reads=("affinity-nodes", "pods-on-usable-nodes")),
    Rule("nodeset-status-stale", Status.WARNING, "nodeset",
         "The NodeSet's status describes an older spec (observedGeneration below metadata.generation)",
         "The SUNK operator has not reconciled the latest change yet (right after `helm upgrade`), or is not running: "
         "DESIRED, FEASIBLE, CURRENT, READY and MISSCHEDULED describe the old spec, so no row judges them; the rows "
         "judging the spec against the Nodes still apply.",
         "Wait for the operator to reconcile (`--wait`); if the status stays behind, read the NodeSet's Events and "
         "check the SUNK operator.",
         nodeset_status_stale, reads=("pool-nodes", "affinity-nodes", "pods-on-usable-nodes")),
    Rule("nodeselector-ignored", Status.CRITICAL, "pods",
         "The NodeSet uses more Nodes than the target Node Pool contains",
         "The node definition sets the constraint with nodeSelector, which doesn't reach the Pod template.",
         "Move the constraint into an affinity block with requiredDuringSchedulingIgnoredDuringExecution.",
         nodeselector_ignored, reads=("pool-nodes", "affinity-nodes", "pod-hosts")),
    Rule("slurmd-not-ready", Status.WARNING, "pods",
         "slurmd Pods are placed but not Ready, or their Slurm nodes are down, drained or not responding",
         "slurmd cannot start or register, its Node is not Ready, or Slurm has taken the node out of service (see the "
         "reason).",
         "Read the Pod's events (its Node's, when that is not Ready) and the Slurm reason (`scontrol show node`); resume "
         "the node once the cause is fixed.",
         slurmd_not_ready, needs=("pods",), reads=("pod-hosts", "nodes-by-ip-when-slurm")),
    Rule("slurm-node-count-mismatch", Status.WARNING, "sinfo",
         "Slurm's nodes for the partition do not match the NodeSet's READY Pods (count or names)",
         "Slurm lists nodes the NodeSet doesn't run (stale, or another NodeSet's), or slurmd Pods never registered.",
         "Compare `sinfo` with the NodeSet's Pods; read slurmd's log for Pods Slurm doesn't list.",
         slurm_node_count_mismatch, needs=("sinfo",), reads=("pod-hosts", "nodes-by-ip-when-slurm")),
)
