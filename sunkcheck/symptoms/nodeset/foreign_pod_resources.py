"""Row foreign-pod-resources: Pods of other workloads hold what the slurmd Pod requests on the pool's Nodes."""

from __future__ import annotations

from collections import defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.feasibility import (
    BLOCKING_EFFECTS,
    Unreadable,
    pod_requests,
    tolerates,
)
from sunkcheck.model import Status
from sunkcheck.symptoms import EXAMPLES, Match, Rule, some
from sunkcheck.symptoms.fixes import (
    add_toleration,
    arg,
    expression_yaml,
    new_taint_key,
    prose,
    taint_nodepool,
    unlabel_node,
)
from sunkcheck.symptoms.nodeset._resources import fits, node_overhead
from sunkcheck.symptoms.nodeset._shared import daemonset_of, grouped_evidence, owner_kinds, pod_names, reasons_by_detail
from sunkcheck.symptoms.nodeset._tolerations import tolerate_first


def foreign_pod_resources(b: Binding) -> Match | None:
    evidence, nodes = [], []
    for n in b.pool_nodes:
        if b.expected and o.pool_of(n) not in b.expected:
            continue  # the pools it is meant for were named: another pool's Pods are not squatting on it
        v = b.verdict(o.name(n))
        if v.feasible or {r.check for r in v.reasons} != {"resources"}:
            continue
        if not fits(b, n, node_overhead(b, n)):
            continue  # would not fit beside its node overhead alone either: no Pod squats, pool-nodes-unusable's
        nodes.append(n)
        evidence += [f"Node {v.name} ({v.pool}): {r.detail}" for r in v.reasons]
    if not evidence:
        return None
    if len(nodes) > EXAMPLES:  # a line per Node fills the output on a big pool: Nodes alike are one line
        evidence = grouped_evidence(b, reasons_by_detail(b, nodes), len(b.pool_nodes))
    squatters = _squatters(b, nodes)
    daemons = [p for p in squatters if daemonset_of(p)]  # no taint nor delete frees their Node: their scope does
    movable = [p for p in squatters if not daemonset_of(p)]
    let_in = [(p, why) for p in movable if (why := _let_in_by(p, b.cluster.nodes.get(o.node_name(p) or "")))]
    evidence += [f"Pod {pod_names([p])} tolerates {why}" for p, why in let_in]
    evidence += [_daemon_evidence(p) for p in daemons]
    tolerant = [p for p, _ in let_in]
    others = [p for p in movable if all(p is not q for q in tolerant)]
    fixes = []
    if others or nodes and not squatters:  # a taint keeps them off: one the pool has not yet
        held = {o.node_name(p) for p in tolerant + daemons} - {o.node_name(p) for p in others}
        read = [n for n in b.pool_nodes if b.cluster.snapshot.pods_read(o.name(n))]  # every one, unless a live check's
        fixes.append(_taint_plan(b, [n for n in nodes if o.name(n) not in held], others, read, daemons))
    if tolerant:
        fixes += [f"{pod_names([p])} tolerates {why}, so no taint keeps it off the pool: remove that toleration from "
                  f"{_template_of(p)}, or exclude the pool in its required affinity" for p, why in let_in]
        fixes[-1] += _evict(tolerant, "once their template keeps them off the pool")
    fixes += _descope(b, daemons)
    return Match(tuple(evidence), "\n".join(fixes))


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
           + tolerate_first(b, taint, [n for p in pools for n in p.nodes],
                                  [n for n in seen if o.pool_of(n) in {p.name for p in pools}], "then, ", leaving)
           + "then taint the Node Pool (CKS applies it to its Nodes; NoSchedule evicts nothing):\n"
           + "\n".join(taint_nodepool(p, [taint]) for p in pools))
    immune = [p for p in squatters if any(tolerates(t, taint) for t in o.spec(p).get("tolerations") or ())]
    if immune:
        fix += f"\n({pod_names(immune)} tolerates that taint too: exclude the pool in its affinity instead)"
    return fix + _evict(squatters, "once tainted")


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
        held = [p for p in here if not o.is_terminal(p) and pd.nodeset_owner(p) is None and "Node" not in owner_kinds(p)
                and any(isinstance(q, Unreadable) or q > 0 for q in pod_requests(o.spec(p)).values())]
        movable = [p for p in held if not daemonset_of(p)]
        rest = [p for p in here if all(p is not q for q in movable)]
        found += movable
        if not fits(b, n, rest):
            overhead = node_overhead(b, n)
            found += [d for d in held if daemonset_of(d) and all(d is not p for p in overhead)
                      and fits(b, n, [p for p in rest if p is not d])]
    return found


def _daemon_evidence(pod: dict) -> str:
    return (f"Pod {pod_names([pod])} is DaemonSet {o.namespace(pod)}/{daemonset_of(pod)}'s: the slurmd Pod would fit "
            f"on {o.node_name(pod)} without it, not a node agent's few millicores")


def _descope(b: Binding, daemons: list[dict]) -> list[str]:
    """Per DaemonSet holding pool Nodes: take them out of its scope. A NoSchedule taint leaves a running daemon Pod
    there, and a deleted one is recreated at once; a NoExecute taint would evict every other Pod not tolerating it
    too. The label that puts it there: what its nodeSelector asks for (the controller copies it onto each Pod), else
    the labels its Node alone carries, neither set by the pool nor by a controller (they come back)."""
    by_daemonset: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
    for p in daemons:
        by_daemonset[(o.namespace(p), daemonset_of(p))].append(p)
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
    owned = [p for p in pods if owner_kinds(p)]
    orphans = [p for p in pods if not owner_kinds(p)]
    text = ""
    if owned:
        text += f"\nthen delete the Pods holding the resources, {when} (their controller recreates them elsewhere):\n"
        text += _delete_pods(owned)
    if orphans:
        text += (f"\nno controller owns {pod_names(orphans)}: deleted, it is not recreated; ask its owner first:\n"
                 f"{_delete_pods(orphans)}")
    return text


def _delete_pods(pods: list[dict]) -> str:
    by_namespace: dict[str, list[str]] = defaultdict(list)
    for p in pods:
        by_namespace[o.namespace(p)].append(arg(o.name(p)))
    return "\n".join(f"kubectl delete pod -n {arg(ns)} {' '.join(names)}" for ns, names in sorted(by_namespace.items()))


RULE = Rule("foreign-pod-resources", Status.WARNING, "nodeset",
            "FEASIBLE is one or two below the Node Pool's CURRENT",
            "A non-Slurm Pod occupies those Nodes and consumes the resources the slurmd Pod requests.",
            "Add a taint to the Node Pool and its toleration to the NodeSet, and first to each DaemonSet that belongs on the "
            "pool (one that does not tolerate it gets no Pod on the Nodes CKS adds later) and each other NodeSet on the "
            "pool (one that does not can no longer place its Pods there), or fix the other workload's "
            "affinity to exclude these Nodes; a Pod tolerating the pool's taint loses that toleration instead. Then delete "
            "the Pods already there by name (draining the Node would evict every Pod on it); a DaemonSet's Pod is never "
            "deleted (it comes back): take the Node out of the DaemonSet's scope.",
            foreign_pod_resources, needs=("nodes", "pods"), reads=("pool-nodes", "pods-on-usable-nodes"))
