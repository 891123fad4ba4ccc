"""Row foreign-pod-resources: Pods of other workloads hold what the slurmd Pod requests on the pool's Nodes."""

from __future__ import annotations

from collections import defaultdict

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze import pods as pd
from sunkcheck.analyze.binding import HOSTNAME_LABEL, Binding
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.feasibility import BLOCKING_EFFECTS, Unreadable, matches_affinity, pod_requests, required_terms
from sunkcheck.model import FEASIBLE, DeadEnd, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import EXAMPLES, Match, Rule, some
from sunkcheck.symptoms.fixes import (EVICTION_REFUSED, add_toleration, evict_pods, expression_yaml, new_taint_key, prose,
                                      prose_list, taint_nodepool, unlabel_node)
from sunkcheck.symptoms.nodeset._resources import fits, node_overhead
from sunkcheck.symptoms.nodeset._shared import (daemonset_of, grouped_evidence, owner_kinds, pod_names, reasons_by_detail,
                                               tolerated_by)
from sunkcheck.symptoms.nodeset._tolerations import tolerate_first
from sunkcheck.text import counted


def foreign_pod_resources(b: Binding) -> Match | None:
    """Pool Nodes short only of what other Pods hold there (they fit beside their node overhead alone): the Pods that
    could go elsewhere, with what keeps each kind off the pool (a new taint, its own template, a DaemonSet's scope)."""
    # a fact of the NodeSet, the pools meant for it, each Node and the Pods on it: judged again for those that changed
    held = b.cluster.per_node(("held by others", *sorted(b.expected)), (b.nodeset,), lambda n: _held_by_others(b, n),
                              b.pool_nodes)
    nodes = [n for n, name in zip(b.pool_nodes, b.pool_node_names, strict=True) if held[name]]
    if not nodes:
        return None
    squatters = _squatters(b, nodes)
    daemons = [p for p in squatters if daemonset_of(p)]  # no taint nor delete frees their Node: their scope does
    let_in = [(p, why) for p in squatters if not daemonset_of(p)
              and (why := _let_in_by(p, b.cluster.nodes.get(o.node_name(p) or "")))]
    evidence = _short_evidence(b, nodes) + [f"Pod {pod_names([p])} tolerates {why}" for p, why in let_in]
    evidence += [_daemon_evidence(p) for p in daemons]
    return Match(tuple(evidence), "\n".join(_squatter_fixes(b, nodes, squatters, let_in, daemons)),
                 symptom=f"FEASIBLE leaves out {counted(len(nodes), 'pool Node')} where other Pods hold what the slurmd "
                         "Pod requests", dead_end=_dead_end(nodes, squatters), awaits=_awaits(squatters))


def _kept(pod: dict) -> bool:
    """Whether the Pod's controller keeps it running where it is (a ReplicaSet's, a StatefulSet's, a DaemonSet's):
    it never leaves by itself. A Job's Pod ends with its run; one no such controller keeps may end too."""
    return any(r.get("controller") and r.get("kind") in (*RECREATED_ELSEWHERE, "DaemonSet")
               for r in o.meta(pod).get("ownerReferences") or ())


def _dead_end(nodes: list[dict], squatters: list[dict]) -> DeadEnd | None:
    """Pool Nodes held only by Pods their controller keeps there: FEASIBLE never reaches the pool's Nodes until
    someone moves them, so `--wait` stops. A Node one other Pod holds as well may free up when it ends: no dead end."""
    held: dict[str, list[dict]] = defaultdict(list)
    for p in squatters:
        held[o.node_name(p) or ""].append(p)
    kept = [o.name(n) for n in nodes if held[o.name(n)] and all(_kept(p) for p in held[o.name(n)])]
    if not kept:
        return None
    pods = [pod_names([p]) for name in kept for p in held[name]]
    return DeadEnd(f"{counted(len(kept), 'pool Node')} ({some(kept)}) held by {some(pods)}, which their controller "
                   "keeps running there: they do not leave by themselves", (FEASIBLE,))


def _awaits(squatters: list[dict]) -> str:
    """The Pods that may end by themselves (a Job's) and the Nodes they free: what a wait waits for."""
    ending = [f"{pod_names([p])} on {o.node_name(p)}" for p in squatters if not _kept(p)]
    return f"{some(ending)} to end" if ending else ""


def _held_by_others(b: Binding, node: dict) -> bool:
    """Whether the slurmd Pod is refused the Node for its resources alone, and would fit beside the node overhead:
    what is short, other Pods hold. A pool not meant for the NodeSet (when some were named) has no squatters of its."""
    if b.expected and o.pool_of(node) not in b.expected:
        return False
    v = b.verdict(o.name(node))
    return not v.feasible and {r.check for r in v.reasons} == {"resources"} and fits(b, node, node_overhead(b, node))


def _short_evidence(b: Binding, nodes: list[dict]) -> list[str]:
    """A line per Node and reason; on a big pool, one line per reason with the Nodes alike (a line per Node would
    fill the output)."""
    if len(nodes) > EXAMPLES:
        return grouped_evidence(b, reasons_by_detail(b, nodes), len(b.pool_nodes))
    verdicts = [b.verdict(o.name(n)) for n in nodes]
    return [f"Node {v.name} ({v.pool}): {r.detail}" for v in verdicts for r in v.reasons]


def _squatter_fixes(b: Binding, nodes: list[dict], squatters: list[dict], let_in: list[tuple[dict, str]],
                    daemons: list[dict]) -> list[str]:
    """A new taint for the Pods it keeps off (or for none yet, when nothing could be told to squat), the toleration
    taken from the Pods that tolerate the pool's taints, the Nodes taken out of the DaemonSets' scope."""
    tolerant = [p for p, _ in let_in]
    others = [p for p in squatters if not daemonset_of(p) and all(p is not q for q in tolerant)]
    fixes = []
    if others or not squatters:  # a taint keeps them off: one the pool has not yet
        held = {o.node_name(p) for p in tolerant + daemons} - {o.node_name(p) for p in others}
        read = [n for n in b.pool_nodes if b.cluster.snapshot.pods_read(o.name(n))]  # every one, unless a live check's
        fixes.append(_taint_plan(b, [n for n in nodes if o.name(n) not in held], others, read, daemons))
    if tolerant:
        fixes += [f"{pod_names([p])} tolerates {why}, so no taint keeps it off the pool: remove that toleration from "
                  f"{_template_of(p)}, or exclude the pool in its required affinity" for p, why in let_in]
        fixes[-1] += _evict(b, tolerant, "once their template keeps them off the pool")
    return fixes + _descope(b, daemons)


def _new_taint(pools: list[Pool]) -> dict:
    """A NoSchedule taint whose key none of the pools' taints has. The pool's Nodes carry its taints: they tell the
    keys taken even when the Node Pool could not be read."""
    taken = {t.get("key") for p in pools for t in p.node_taints} | {t.get("key") for p in pools for n in p.nodes
                                                                     for t in o.taints(n)}
    return {"key": new_taint_key(taken), "value": "true", "effect": "NoSchedule"}


def _taint_plan(b: Binding, nodes: list[dict], squatters: list[dict], seen: list[dict], leaving: list[dict]) -> str:
    """A new taint on the pools of `nodes`, tolerated by the NodeSet and by the DaemonSets whose Pods run on the
    `seen` Nodes (those `leaving` the pool aside), then the squatters deleted."""
    pools = [p for p in b.pools if any(o.pool_of(n) == p.name for n in nodes)]
    taint = _new_taint(pools)
    fix = ("keep other Pods off the pool with a taint (example.com stands for your domain), or fix their affinity to "
           "exclude the pool. Tolerate the taint in the node definition first, so no slurmd Pod is refused: "
           f"{add_toleration(taint, b.pod_spec.get('tolerations') or [])}\n"
           + tolerate_first(b, taint, [n for p in pools for n in p.nodes],
                            [n for n in seen if o.pool_of(n) in {p.name for p in pools}], "then, ", leaving)
           + "then taint the Node Pool (CKS applies it to its Nodes; NoSchedule evicts nothing):\n"
           + "\n".join(taint_nodepool(p, [taint]) for p in pools))
    immune = [p for p in squatters if tolerated_by(o.spec(p).get("tolerations") or (), taint)]
    if immune:
        fix += f"\n({pod_names(immune)} tolerates that taint too: exclude the pool in its affinity instead)"
    return fix + _evict(b, squatters, "once tainted")


# A taint whose key and value no toleration names (no label key holds a NUL): only a toleration of every taint, by the
# feasibility engine's rule, tolerates it.
_ANY_NEW_TAINT = {"key": "\0", "value": "\0", "effect": "NoSchedule"}


def _let_in_by(pod: dict, node: dict | None) -> str | None:
    """What lets a squatter past the taints that keep other Pods off: a toleration of every taint (no new taint
    would keep it off), or of its Node's own taints (a toleration copied from a slurm manifest); None if none."""
    tolerations = o.spec(pod).get("tolerations") or ()
    if tolerated_by(tolerations, _ANY_NEW_TAINT):
        return "every taint (a toleration with no key)"
    tolerated = [o.format_taint(t) for t in o.taints(node or {}) if _scoping(t) and tolerated_by(tolerations, t)]
    if not tolerated:
        return None
    return f"the taint{'s' if len(tolerated) > 1 else ''} {prose_list(tolerated)} of its Node {o.name(node or {})}"


def _scoping(taint: dict) -> bool:
    """Whether a taint keeps Pods off a Node (NoSchedule, NoExecute) on someone's purpose, not the Node's state's."""
    return taint.get("effect") in BLOCKING_EFFECTS and not nd.is_state_taint(str(taint.get("key", "")))


def _template_of(pod: dict) -> str:
    """Where the Pod's tolerations are set: its controller's Pod template (a ReplicaSet's is its Deployment's)."""
    refs = o.meta(pod).get("ownerReferences") or ()
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    if ref is None:
        return "its manifest"
    owner = f"{prose(ref.get('kind'))} {prose(ref.get('name'))}"
    return f"the Deployment owning {owner}" if ref.get("kind") == "ReplicaSet" else f"the Pod template of {owner}"


def _holds_resources(pod: dict) -> bool:
    """Whether the Pod holds anything another could use: running, no slurmd Pod nor static Pod, requesting some."""
    return (not o.is_terminal(pod) and pd.nodeset_owner(pod) is None and "Node" not in owner_kinds(pod)
            and any(isinstance(q, Unreadable) or q > 0 for q in pod_requests(o.spec(pod)).values()))


def _squatters(b: Binding, nodes: list[dict]) -> list[dict]:
    """The Pods holding resources on `nodes` that could go elsewhere: not a NodeSet's slurmd Pod, a static Pod or a
    finished one; a DaemonSet's Pod only when it is no node overhead (`_is_overhead`) and the slurmd Pod would fit
    without it once the others are gone. Judged on the Node alone: a live check reads no more."""
    found = []
    for n in nodes:
        here = b.neighbours(n)[0]
        held = [p for p in here if _holds_resources(p)]
        movable = [p for p in held if not daemonset_of(p)]
        rest = [p for p in here if all(p is not q for q in movable)]
        found += movable + _squatting_daemons(b, n, held, rest)
    return found


def _squatting_daemons(b: Binding, node: dict, held: list[dict], rest: list[dict]) -> list[dict]:
    """The DaemonSet Pods of `held` that are no node overhead and without which the slurmd Pod would fit beside the
    `rest` of the Node's Pods; none when it fits already."""
    if fits(b, node, rest):
        return []
    overhead = node_overhead(b, node)
    return [d for d in held if daemonset_of(d) and all(d is not p for p in overhead)
            and fits(b, node, [p for p in rest if p is not d])]


def _daemon_evidence(pod: dict) -> str:
    return (f"Pod {pod_names([pod])} is DaemonSet {o.namespace(pod)}/{daemonset_of(pod)}'s: the slurmd Pod would fit "
            f"on {o.node_name(pod)} without it, not a node agent's few millicores")


def _descope(b: Binding, daemons: list[dict]) -> list[str]:
    """Per DaemonSet holding pool Nodes: take them out of its scope. A NoSchedule taint leaves a running daemon Pod
    there, and a deleted one is recreated at once; a NoExecute taint would evict every other Pod not tolerating it
    too."""
    by_daemonset: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
    for p in daemons:
        by_daemonset[(o.namespace(p), daemonset_of(p))].append(p)
    fixes = []
    for (ns, ds), pods in sorted(by_daemonset.items()):
        hosts = [o.node_name(p) or "" for p in pods]
        fix = (f"DaemonSet {ns}/{prose(ds)} holds {some(hosts)}: a NoSchedule taint leaves a running daemon Pod in place, and "
               "the DaemonSet recreates one deleted while its scope holds the Node, so take the Node out of its scope")
        fix += "".join(_unlabel_for_daemon(b, p) for p in pods)
        pools = sorted({b.cluster.pool_of(h) or "" for h in hosts} - {""})
        fix += ("or " if fix.endswith("\n") else ": ") + "exclude the pool in its required node affinity (in every term):\n"
        fixes.append(fix + expression_yaml({"key": o.POOL_LABEL, "operator": "NotIn", "values": pools}))
    return fixes


def _unlabel_for_daemon(b: Binding, pod: dict) -> str:
    """The hand labels that put a DaemonSet's Pod on its Node, taken off: what its nodeSelector asks for (the
    controller copies it onto each Pod), else the labels its Node alone carries, neither set by the pool nor by a
    controller (they come back); nothing when no such label does."""
    node, pool = b.cluster.nodes[o.node_name(pod) or ""], b.cluster.pool(b.cluster.pool_of(o.node_name(pod)) or "")
    selector = o.spec(pod).get("nodeSelector") or {}
    asked = selector or {k: v for k, v in o.labels(node).items() if not all(o.labels(n).get(k) == v for n in pool.nodes)}
    hand = {k: v for k, v in asked.items() if _hand_label(pool, node, k, v)}
    if not hand:
        return ""
    pairs, pool_name = prose_list(f"{k}={v}" for k, v in sorted(hand.items())), prose(pool.name)
    return ((f": its nodeSelector asks for {pairs}, which Node Pool {pool_name} does not set: " if selector else
             f": {o.name(node)} alone carries {pairs}, which Node Pool {pool_name} does not set: if the "
             "DaemonSet selects it, ")
            + f"remove it from {o.name(node)} (the controller deletes its Pod there within seconds; whatever "
            f"else selects it loses the Node too):\n{unlabel_node(o.name(node), sorted(hand))}\n")


def _hand_label(pool: Pool, node: dict, key: str, value: str) -> bool:
    """Whether the Node carries `key`=`value` set by hand: a user key its pool's nodeLabels do not set so."""
    return nd.is_user_key(key) and pool.node_labels.get(key) != value and o.labels(node).get(key) == value


def _evict(b: Binding, pods: list[dict], when: str) -> str:
    """Evict exactly the Pods their controller recreates elsewhere with nothing lost (a drain would evict every Pod
    on the Node, a delete would bypass their disruption budgets); the others are their owner's to move: no command
    removes them."""
    stays = {id(p): why for p in pods if (why := _stays(p, b.cluster.nodes.get(o.node_name(p) or "")))}
    movable = [p for p in pods if id(p) not in stays]
    text = ""
    if movable:
        text += (f"\nthen evict the Pods holding the resources, {when} (their controller recreates them elsewhere; "
                 f"{EVICTION_REFUSED}):\n{evict_pods(movable)}")
    return text + "".join(f"\nPod {pod_names([p])} {stays[id(p)]}" for p in pods if id(p) in stays)


RECREATED_ELSEWHERE = ("ReplicaSet", "StatefulSet")
"""The controllers that create an evicted Pod again wherever the scheduler finds room (a Deployment's through its
ReplicaSet). A Job's Pod evicted ends the run it holds; a DaemonSet's comes back on the same Node."""
_NO_NODE = "\0"  # a Node name (and hostname) no Node has: no label value nor name holds a NUL


def _stays(pod: dict, node: dict | None) -> str | None:
    """Why evicting the Pod frees nothing for good or loses data, in words ending its line (no apostrophe: a cluster
    string may follow): no controller recreates it elsewhere, its volumes hold data of its own or of its Node, or its
    required node affinity or nodeSelector asks for its Node by name or for any label of it: the check reads no Node
    outside the pool, so none is known to take a copy, which stays Pending once the pool is tainted. None when
    evicting it moves it."""
    ref = next((r for r in o.meta(pod).get("ownerReferences") or () if r.get("controller")), None)
    if ref is None:
        return "has no controller: evicted, it is not recreated; ask its owner"
    owner = f"{prose(ref.get('kind'))} {prose(ref.get('name'))}"
    if ref.get("kind") == "Job":
        return f"runs for Job {prose(ref.get('name'))}: evicted, its run ends; ask its owner, or wait for the Job to finish"
    if ref.get("kind") not in RECREATED_ELSEWHERE:
        return f"belongs to {owner}, which may not recreate it elsewhere: ask its owner, or wait for it to finish"
    if held := _local_data(o.spec(pod)):
        return f"holds data that may not follow it to another Node: {held}; ask its owner to move it"
    if node is None or not _placed_by(o.spec(pod), node):
        return None
    if not _placed_by(o.spec(pod), _renamed(node, o.labels(node))):
        return (f"is pinned to {prose(o.name(node))} by name (its required node affinity or nodeSelector): recreated by "
                f"{owner}, it may only go back to a Node so named, and stays Pending on this one once the pool is "
                "tainted; ask its owner to unpin it")
    if not _placed_by(o.spec(pod), _renamed(node, {})):
        return (f"asks in its required node affinity or nodeSelector for {prose_list(_asked_keys(o.spec(pod)))} of "
                f"its Node, which the check sees on no Node outside the pool (it reads the pool Nodes alone): recreated "
                f"by {owner}, it may stay Pending once the pool is tainted; ask its owner whether a Node "
                "outside the pool takes it")
    return None


_LOCAL_DATA = (("emptyDir", "emptyDir", "deleted with the Pod"), ("ephemeral", "ephemeral volume", "deleted with the Pod"),
               ("hostPath", "hostPath", "left on its Node"),
               ("persistentVolumeClaim", "PersistentVolumeClaim", "its volume may be local to the Node: the check reads no "
                "PersistentVolume"))
"""The volume kinds whose data an evicted Pod may not find elsewhere, each with what becomes of it."""


def _local_data(spec: dict) -> str:
    """The Pod's volumes holding data of its own or of its Node, in words (a claim by its name); empty when none does."""
    volumes = [v for v in spec.get("volumes") or () if isinstance(v, dict)]
    return "; ".join(f"{what} {prose_list(names)} ({fate})" for kind, what, fate in _LOCAL_DATA
                     if (names := [_volume_name(v, kind) for v in volumes if kind in v]))


def _volume_name(volume: dict, kind: str) -> object:
    """What names a volume to its owner: a claim's name, else the volume's."""
    source = volume.get(kind)
    return source.get("claimName") if kind == "persistentVolumeClaim" and isinstance(source, dict) else volume.get("name")


def _asked_keys(spec: dict) -> list[str]:
    """The label keys the Pod's nodeSelector and required node affinity ask a Node to carry."""
    keys = set(spec.get("nodeSelector") or {})
    for term in required_terms(spec) or ():
        keys |= {str(e.get("key")) for e in term.get("matchExpressions") or ()
                 if e.get("operator") not in ("NotIn", "DoesNotExist")}
    return sorted(keys)


def _placed_by(spec: dict, node: dict) -> bool:
    """Whether the Pod's nodeSelector and required node affinity take the Node. Its nodeName aside: the scheduler
    sets it on every Pod it binds."""
    return matches_affinity({k: v for k, v in spec.items() if k != "nodeName"}, node)


def _renamed(node: dict, labels: dict) -> dict:
    """The Node under another name (metadata.name, kubernetes.io/hostname), bearing `labels`."""
    return node | {"metadata": o.meta(node) | {"name": _NO_NODE, "labels": labels | {HOSTNAME_LABEL: _NO_NODE}}}


RULE = Rule("foreign-pod-resources", Status.WARNING, "nodeset",
            "FEASIBLE is one or two below the Node Pool's CURRENT",
            "A non-Slurm Pod occupies those Nodes and consumes the resources the slurmd Pod requests.",
            "Add a taint to the Node Pool and its toleration to the NodeSet, and first to each DaemonSet that belongs on the "
            "pool (one that does not tolerate it gets no Pod on the Nodes CKS adds later) and each other NodeSet on the "
            "pool (one that does not can no longer place its Pods there), or fix the other workload's "
            "affinity to exclude these Nodes; a Pod tolerating the pool's taint loses that toleration instead. Then evict "
            "the Pods already there by name (draining the Node would evict every Pod on it; an eviction, unlike a delete, "
            "honours their PodDisruptionBudgets), only those a ReplicaSet or StatefulSet recreates elsewhere: a Job's Pod "
            "(evicted, its run ends), one no controller owns, one holding an emptyDir, ephemeral, hostPath or claimed "
            "volume (its data stays behind or may be local to the Node), or one asking for its Node by name or for any "
            "label of it (the check reads no Node outside the pool, so none is known to take it) is its owner's to move; "
            "a DaemonSet's Pod is never evicted (it comes back): take the Node out of the DaemonSet's scope.",
            foreign_pod_resources, needs=("nodes", "pods"), reads=(Read.POOL_NODES, Read.PODS_ON_USABLE_NODES))
