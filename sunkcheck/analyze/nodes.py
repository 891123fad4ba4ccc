"""Runbook step 2: do the pool's Nodes carry the metadata the binding relies on?"""

from __future__ import annotations

import datetime
import functools
import itertools
import json

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from sunkcheck import duration
from sunkcheck import objects as o
from sunkcheck.analyze.feasibility import (BLOCKING_EFFECTS, STARTUP_TAINTS, Workload, describe_expression,
                                           match_expression, not_ready, passes, required_terms, tolerates,
                                           untolerated_taints)
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import NodeCounts, Summary, Unready
from sunkcheck.snapshot import Snapshot
from sunkcheck.text import counted

# Operators that need the label to be present: a binding built on them relies on the label.
POSITIVE_OPERATORS = ("In", "Exists", "Gt", "Lt")
KUBERNETES = "Kubernetes"
# Label keys (by prefix) something other than the Node Pool keeps on every Node, a replaced one too, and who: a
# binding on them needs nothing from the pool's nodeLabels (CKS's own keys sit in its reserved namespaces,
# o.is_reserved_key). Under nvidia.com/ only what NVIDIA's controllers write from what they find: the keys a
# person sets to configure them (mig.config, device-plugin.config, gpu.deploy.*, gpu.workload.config,
# vgpu.deploy.*) are the pool's to supply like any other.
LABELLERS = {
    "kubernetes.io/": KUBERNETES,  # the kubelet: hostname, os, arch
    "node.kubernetes.io/": KUBERNETES,  # the kubelet: instance-type; the node lifecycle controller: condition taints
    "topology.kubernetes.io/": KUBERNETES,  # the cloud provider: region, zone
    "beta.kubernetes.io/": KUBERNETES,  # the kubelet: the deprecated os, arch, instance-type
    # GFD labels each GPU Node from its hardware and driver: NVIDIA/k8s-device-plugin internal/lm (nvml.go,
    # resource.go, vgpu.go) and docs/gpu-feature-discovery/README.md "Generated Labels"; gpu.multiprocessors,
    # gpu.slices.*, gpu.engines.* and mig-<profile>.* are its MIG-strategy labels
    **dict.fromkeys((f"nvidia.com/{k}" for k in (
        "gpu.product", "gpu.count", "gpu.memory", "gpu.family", "gpu.machine", "gpu.mode", "gpu.compute.",
        "gpu.replicas", "gpu.sharing-strategy", "gpu.clique", "gpu.imex-domain", "gpu.multiprocessors", "gpu.slices.",
        "gpu.engines.", "cuda.", "gfd.", "mig.capable", "mig.strategy", "mig-", "mps.capable", "vgpu.present",
        "vgpu.host-driver-")), "NVIDIA GPU Feature Discovery"),
    # the GPU Operator marks the Nodes NFD finds an NVIDIA PCI device on (gpu-operator controllers/state_manager.go)
    "nvidia.com/gpu.present": "NVIDIA GPU Operator",
    "nvidia.com/mig.config.state": "NVIDIA MIG Manager",  # how applying the hand-set mig.config went (mig-parted)
    "gpu.nvidia.com/": "CoreWeave",  # GPU model and class labels: CoreWeave's legacy (pre-CKS) docs, third-party tools
    "feature.node.kubernetes.io/": "Node Feature Discovery",  # NFD labels the CPU, kernel and PCI features it finds
}


def live_terms(pod_spec: dict) -> list[dict]:
    """The required nodeSelectorTerms that can match a Node, or one empty term without required node affinity (the
    nodeSelector alone). A term with no requirement, or with an expression without a key, matches no Node (the
    feasibility engine's answer): Kubernetes ORs the terms, so it adds nothing."""
    terms = required_terms(pod_spec)
    if terms is None:
        return [{}]
    return [t for t in terms if (t.get("matchExpressions") or t.get("matchFields"))
            and all(isinstance(e.get("key"), str) for e in t.get("matchExpressions") or ())]


def binding_terms(pod_spec: dict, extra_selector: dict | None = None) -> list[list[dict]]:
    """The label requirements of each of the `live_terms`, with the nodeSelector entries (template, and
    `extra_selector` for the one outside it): a Node must meet every requirement of one term (Kubernetes ORs the
    terms). Less the inherited production-state requirement (a pool in repair is still the NodeSet's).

    One definition for what the NodeSet selects: pool discovery matches it, the live plan reads its Nodes."""
    selector = dict(pod_spec.get("nodeSelector") or {}) | dict(extra_selector or {})
    entries = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(selector.items())]
    terms = []
    for term in live_terms(pod_spec):
        exprs = entries + [e for e in term.get("matchExpressions") or () if e["key"] != o.STATE_LABEL]
        terms.append([e for i, e in enumerate(exprs) if e not in exprs[:i]])
    return terms


def positive(terms: list[list[dict]]) -> list[dict]:
    """Each requirement of the terms that needs its label present, once: what a binding can rely on a label for."""
    found: list[dict] = []
    for e in (e for t in terms for e in t if e.get("operator") in POSITIVE_OPERATORS):
        if e not in found:
            found.append(e)
    return found


def relied_on(terms: list[list[dict]], unmet: Callable[[dict], bool]) -> list[dict]:
    """The positive requirements `unmet` finds unmet that the binding cannot do without: none when some term has
    none (Kubernetes ORs the terms: that one matches without them), else those of the first term with the
    fewest, the one a fix completes."""
    return min(([e for e in positive([t]) if unmet(e)] for t in terms), key=len, default=[])


def selector(pod_spec: dict) -> Workload:
    """The template judged by its nodeName, nodeSelector and required node affinity alone: the engine's NodeAffinity
    check, memoized across look-alike Nodes."""
    return Workload(pod_spec, {}, ("affinity",))


def binding_spec(pod_spec: dict, extra_selector: dict | None = None, term: dict | None = None) -> dict:
    """The template with `extra_selector` in its nodeSelector (a NodeSet's spec.nodeSelector, outside the template,
    never reaches the Pods but says which pool it is meant for) and, given, `term` as its one required term
    (Kubernetes ORs the terms: each brings its own pools)."""
    spec = dict(pod_spec, nodeSelector=dict(pod_spec.get("nodeSelector") or {}) | dict(extra_selector or {}))
    if term is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return spec


def term_specs(pod_spec: dict, extra_selector: dict | None = None) -> list[dict]:
    """`binding_spec` once per term of `live_terms`, in the order of `binding_terms`; the template alone without
    required node affinity."""
    if required_terms(pod_spec) is None:
        return [binding_spec(pod_spec, extra_selector)]
    return [binding_spec(pod_spec, extra_selector, t) for t in live_terms(pod_spec)]


def expressions_selector(term: list[dict]) -> Workload:
    """A `selector` requiring the expressions of `term` (a term of `binding_terms`, perhaps amended)."""
    return selector(binding_spec({}, None, {"matchExpressions": term}))


def selects(judge: Workload, labels: dict, name: str = "") -> bool:
    """Whether a Node named `name` carrying `labels` meets the `selector`, as the feasibility engine judges it, back
    in production: the NodeSet's inherited state requirement aside (a pool in repair is still the NodeSet's)."""
    node = {"metadata": {"name": name, "labels": labels | {o.STATE_LABEL: o.PRODUCTION}}}
    return passes(judge, node)


def selected_by(pool: Pool, judge: Workload) -> bool:
    """Whether the `selector` selects the pool: its own nodeLabels (what its Nodes should carry) or one of its Nodes
    meet it."""
    stamped = pool.node_labels | {o.POOL_LABEL: pool.name}
    return selects(judge, stamped) or any(selects(judge, o.labels(n), o.name(n)) for n in pool.nodes)


SERVICE_CHECKS = ("state", "unschedulable")


def in_service(pod_spec: dict) -> Workload:
    """The template judged by the Node's health alone: production, Ready, and not cordoned unless it tolerates the
    cordon (the engine's state and unschedulable checks)."""
    return Workload(pod_spec, {}, SERVICE_CHECKS)


def out_of_service(node: dict, service: Workload) -> bool:
    """Whether the engine's state or unschedulable check (`service`, of `in_service`) refuses the Node (out of
    production, not Ready, or cordoned without the cordon tolerated), or it is starting (`startup_taints`). CKS
    repairs Nodes all the time on a big pool, and no slurmd Pod may land there meanwhile (a Node still joining after a
    scale-up is NotReady, then carries its network's start-up taint a few seconds more, and takes none until then)."""
    return not passes(service, node) or bool(startup_taints(node, service.pod_spec.get("tolerations") or []))


JOIN = 15 * 60.0
"""Seconds from a Node's registration to serving that --wait allows it (cluster-autoscaler's MaxNodeStartupTime): a
Node out of service for longer since it registered is broken or in repair, and holds no wait back."""


def startup_taints(node: dict, tolerations: list[dict]) -> list[dict]:
    """The Node's start-up taints (STARTUP_TAINTS) that `tolerations` do not tolerate: while it carries one, the Node
    is starting, and takes no slurmd Pod."""
    return [t for t in untolerated_taints(tolerations, o.taints(node)) if t.get("key") in STARTUP_TAINTS]


def removed_by(taint: dict) -> str:
    """`node.cilium.io/agent-not-ready=true:NoSchedule (start-up taint: the Cilium agent removes it once it runs on
    the Node)`."""
    by = STARTUP_TAINTS[str(taint.get("key"))]
    return f"{o.format_taint(taint)} (start-up taint: {by.who} removes it {by.when})"


def unready(node: dict, tolerations: list[dict]) -> Unready | None:
    """The Node's registration, Ready condition and start-up taints, as `--wait` weighs them; None when it is Ready
    and carries no start-up taint `tolerations` leave in its way."""
    found = startup_taints(node, tolerations)
    if o.is_ready(node) and not found:
        return None
    cond = o.condition(node, "Ready") or {}
    starting = tuple(map(removed_by, found))
    added = tuple(a for t in found if (a := o.timestamp(t.get("timeAdded"))) is not None)
    return Unready(o.name(node), o.timestamp(o.meta(node).get("creationTimestamp")), str(cond.get("status") or ""),
                   str(cond.get("reason") or ""), starting, None if o.is_ready(node) else down_since(node),
                   added)


def down_since(node: dict) -> datetime.datetime | None:
    """When the Node's time not Ready counts from: its Ready condition's transition, no earlier than it registered
    (None when neither is known)."""
    cond = o.condition(node, "Ready") or {}
    return max((t for t in (o.timestamp(o.meta(node).get("creationTimestamp")), o.timestamp(cond.get("lastTransitionTime")))
                if t is not None), default=None)


def minutes_down(since: datetime.datetime | None, now: datetime.datetime | None) -> int:
    """Whole minutes from `since` to `now` (the cluster's time): what the nodes step says; 0 when either is unknown,
    or `since` is ahead (a kubelet's clock, which writes the transition, running ahead of the cluster's)."""
    return max(int((now - since).total_seconds() // 60), 0) if now and since else 0


def down_for(since: datetime.datetime | None, now: datetime.datetime | None) -> str:
    """`45m`: how long the Node has not been Ready as the nodes step and a converged wait say it (`minutes_down`,
    shown); "" under a minute or when unknown."""
    minutes = minutes_down(since, now)
    return duration.shown(minutes * 60) if minutes > 0 else ""


def retold(since: datetime.datetime | None, now: datetime.datetime) -> datetime.datetime | None:
    """The cluster's time from which the whole minutes not Ready since `since` are one more than at `now`: the nodes
    step's duration reads differently from then (None when `since` is unknown)."""
    return None if since is None else o.later(since, (minutes_down(since, now) + 1) * 60)


def grown(u: Unready) -> datetime.datetime | None:
    """The cluster's time from which the Node is no longer `young`: JOIN after it registered (None when unknown)."""
    return None if u.created is None else o.later(u.created, JOIN)


SKEW = JOIN
"""Seconds a start-up taint's timeAdded may run ahead of the API server's clock and still be believed: its writer's
clock (the node controller's, kubectl's) ahead of the server's, as a kubelet's may be by minutes. One further ahead
tells nothing of when the taint went on (a skewed or hostile writer: dated 2099, it would be "just put on" forever), so
the taint is aged from the Node's registration instead, until the clock comes within SKEW of it."""


def believed(added: datetime.datetime | None, clock: datetime.datetime) -> bool:
    """Whether a start-up taint's timeAdded says when it went on: known, and no more than SKEW past `clock`."""
    return added is not None and added <= o.later(clock, SKEW)


def left_at(added: datetime.datetime | None, created: datetime.datetime | None,
            clock: datetime.datetime) -> datetime.datetime | None:
    """The cluster's time from which a start-up taint has been on its Node for JOIN: since its timeAdded where
    `believed` (one put back on a Node long in service, its agent restarting, is that recent), else since the Node
    registered, `created` (None when neither is known)."""
    since = added if believed(added, clock) else created
    return None if since is None else o.later(since, JOIN)


def taints_grown(u: Unready, clock: datetime.datetime) -> list[datetime.datetime]:
    """The cluster's times at which a start-up taint of the Node's that says when it went on (`Unready.added`) is
    judged otherwise with no event: JOIN after it went on (`left_at`), or, dated further ahead than SKEW, when the
    clock comes within SKEW of it and it is believed (until then it is aged as the Node is, `grown`)."""
    ats = [left_at(a, u.created, clock) if believed(a, clock) else o.later(a, -SKEW) for a in u.added]
    return [at for at in ats if at is not None]


def left_on(taint: dict, created: datetime.datetime | None, clock: datetime.datetime) -> bool:
    """Whether the start-up taint has been on for JOIN or more by `clock` (`left_at`; when unknown, so long)."""
    at = left_at(o.timestamp(taint.get("timeAdded")), created, clock)
    return at is None or clock >= at


def young(u: Unready, clock: datetime.datetime) -> bool:
    """Whether the Node registered less than JOIN before `clock` (the cluster's time): whatever its Ready condition
    went through since (a kubelet restarted during bootstrap, a flap), a Node not serving yet so soon after it
    registered is still joining."""
    return (at := grown(u)) is not None and clock < at


def cluster_time(snapshot: Snapshot) -> datetime.datetime | None:
    """The API server's time when `snapshot` was read, at least (Snapshot.server_time: its Date headers, else the
    newest creation time read, Snapshot.newest_creation; a recording's meta.json time); None when unknown (a recording that
    says not when). Never a time a kubelet writes (a condition's heartbeat or transition, by its own clock): one whose
    clock runs ahead, or a heartbeat in 2099, would make every Node joining look old."""
    return snapshot.server_time


def in_production(node: dict) -> dict:
    """The Node as CKS returns it from repair: its state label production (the NodeSet's inherited state expression
    then holds). What it still fails is a mismatch; what it no longer fails was its health."""
    return node | {"metadata": o.meta(node) | {"labels": o.labels(node) | {o.STATE_LABEL: o.PRODUCTION}}}


@functools.cache  # asked of every label of every Node a row weighs: a few dozen keys, thousands of times
def labeller(key: str) -> str | None:
    """Who keeps label `key` on every Node, if not the Node Pool."""
    return next((who for prefix, who in LABELLERS.items() if key.startswith(prefix)), None)


def is_user_key(key: str) -> bool:
    """A label a Node Pool's nodeLabels must supply (not one CKS, Kubernetes or a labelling controller sets)."""
    return key != o.POOL_LABEL and labeller(key) is None and not o.is_reserved_key(key)


def is_user_taint(key: str) -> bool:
    """A taint a Node Pool's nodeTaints must supply: no labelling controller taints, so only the Node's state's
    (`is_state_taint`) and CKS's are not (a hand-set nvidia.com/gpu taint is lost on replacement like any other)."""
    return not is_state_taint(key) and not o.is_reserved_key(key)


def is_state_taint(key: str) -> bool:
    """A taint that says the Node's state: Kubernetes' own (cordon, not-ready, pressure) or a start-up taint
    (STARTUP_TAINTS). It goes away with its cause, so no fix tolerates or removes it."""
    return labeller(key) == KUBERNETES or key in STARTUP_TAINTS


def untolerated_scoping_taints(tolerations: list[dict], node: dict) -> list[dict]:
    """The Node's taints `tolerations` do not tolerate, less those of its state (`is_state_taint`: cordon, not-ready,
    pressure, start-up): they go away with their cause, so no fix tolerates or removes them."""
    return [t for t in untolerated_taints(tolerations, o.taints(node)) if not is_state_taint(str(t.get("key", "")))]


Each = Callable[[tuple, Sequence[dict], Callable[[dict], Any]], Sequence[Any]]
"""A pass of one fact over objects: Cluster.each, which serve keeps between diagnoses (a fact of each object alone)."""


def afresh(how: tuple, items: Sequence[dict], fact: Callable[[dict], Any]) -> tuple[Any, ...]:
    """Each: every object judged."""
    return tuple(map(fact, items))


def hand_taints(pool: Pool, each: Each = afresh) -> dict[str, tuple[dict, list[dict]]]:
    """The taints some of the pool's Nodes carry that its nodeTaints do not set (less Kubernetes' and CKS's own), by
    their text: each as key, value and effect, with the Nodes carrying it. None when the Node Pool was not read (its
    nodeTaints unknown). Set in the pool's nodeTaints, one reaches the pool's other Nodes too: `lacking` them.
    `each` makes the pass over the Nodes (serve keeps it)."""
    found: dict[str, tuple[dict, list[dict]]] = {}
    if pool.obj is None:
        return found
    how = ("hand taints", json.dumps(pool.node_taints, sort_keys=True, default=str))  # what else a Node's are judged by
    for n, taints in zip(pool.nodes, each(how, pool.nodes, lambda n: _hand_set(pool, n)), strict=True):
        for t in taints:
            taint = {k: t[k] for k in ("key", "value", "effect") if k in t}
            found.setdefault(o.format_taint(t), (taint, []))[1].append(n)
    return found


def _hand_set(pool: Pool, node: dict) -> tuple[dict, ...]:
    """The Node's user taints the pool's nodeTaints do not set."""
    return tuple(t for t in o.taints(node) if is_user_taint(str(t.get("key", ""))) and not set_by_pool(pool, t))


def set_by_pool(pool: Pool, taint: dict) -> bool:
    """Whether the pool's nodeTaints set `taint` (its key, value and effect)."""
    return any(tolerates(pt | {"operator": "Equal"}, taint) for pt in pool.node_taints)


def lacking(pool: Pool, taint: dict) -> list[dict]:
    """The pool's Nodes that do not carry `taint` (its key, value and effect): those it newly reaches once set in the
    pool's nodeTaints."""
    text = o.format_taint(taint)
    return [n for n in pool.nodes if all(o.format_taint(t) != text for t in o.taints(n))]


def moved_hand_taints(pool: Pool, pod_spec: dict, each: Each = afresh) -> dict[str, tuple[dict, list[dict]]]:
    """The hand taints labels-not-from-pool moves into the pool's nodeTaints: those a toleration naming their key
    tolerates as they are, value and effect (one it does not is no taint meant for it: maintenance, another team's, or
    the pool's own taint edited on a Node, which set on the pool would keep the NodeSet off every Node), and whose key
    and effect none of the pool's taints has (a Node holds one taint per key and effect: that one is the pool's, edited).
    One definition for the row and the live read of the Pods it weighs (`keeps_off`), so the two cannot drift apart."""
    tolerations = [t for t in pod_spec.get("tolerations") or () if t.get("key")]
    return {text: found for text, found in hand_taints(pool, each).items()
            if any(t["key"] == found[0].get("key") and tolerates(t, found[0]) for t in tolerations)
            and pool_twin(pool, found[0]) is None}


def pool_twin(pool: Pool, taint: dict) -> dict | None:
    """The pool's taint with `taint`'s key and effect, if its nodeTaints set one."""
    return next((t for t in pool.node_taints if (t.get("key"), t.get("effect")) == (taint.get("key"), taint.get("effect"))),
                None)


def keeps_off(pool: Pool, taint: dict) -> list[dict]:
    """The pool's Nodes where `taint`, set in its nodeTaints, newly keeps off what does not tolerate it (a DaemonSet's
    Pod, another NodeSet's): those lacking it. None for PreferNoSchedule, which keeps no Pod off."""
    return lacking(pool, taint) if taint.get("effect") in BLOCKING_EFFECTS else []


def uncarried_reserved(terms: list[list[dict]], nodes: Collection[dict]) -> list[dict]:
    """The requirements on a reserved-namespace key that none of `nodes` carries (CKS drops such labels) and the
    binding cannot do without."""
    return relied_on(terms, lambda e: o.is_reserved_key(e["key"]) and not any(e["key"] in o.labels(n) for n in nodes))


def relied_reserved_taints(pool: Pool, terms: list[list[dict]], tolerations: list[dict]) -> list[dict]:
    """The pool's nodeTaints on a reserved key the binding relies on (CKS drops them): reserved-label-namespace moves
    each to the operator's own domain, where it reaches every Node of the pool. One definition for the row and the live
    read of the Pods it weighs."""
    needed = keys_relied_on(terms, tolerations)
    return [t for t in pool.node_taints if o.is_reserved_key(t.get("key") or "") and t.get("key") in needed]


def keys_relied_on(terms: list[list[dict]], tolerations: list[dict]) -> set[str]:
    """The keys the binding relies on a label or taint for: those of its affinity's (and nodeSelector's) requirements
    and of its tolerations. A pool's reserved key outside them is a leftover nothing of the binding misses."""
    return {e["key"] for t in terms for e in t} | {t["key"] for t in tolerations if t.get("key")}


def carrying(expr: dict, nodes: Iterable[dict]) -> list[dict]:
    return [n for n in nodes if match_expression(expr, o.labels(n))]


def _carries(expr: dict, nodes: Sequence[dict], each: Each) -> Sequence[bool]:
    """Whether each of `nodes` carries what `expr` requires, by `each`."""
    return each(("carries", json.dumps(expr, sort_keys=True, default=str)), nodes,
                lambda n: match_expression(expr, o.labels(n)))


def carriers(expr: dict, nodes: Sequence[dict], each: Each = afresh) -> list[dict]:
    """`carrying`, by `each`."""
    return list(itertools.compress(nodes, _carries(expr, nodes, each)))


def carried(expr: dict, nodes: Sequence[dict], each: Each = afresh) -> int:
    """How many of `nodes` carry what `expr` requires (`carrying`'s count, by `each`)."""
    return sum(_carries(expr, nodes, each))


def uncarried_by(nodes: Collection[dict]) -> Callable[[dict], bool]:
    """Whether none of `nodes` meets a requirement: what shuts a pool of those Nodes out."""
    return lambda expr: not carrying(expr, nodes)


def _carried(terms: list[list[dict]], term_nodes: list[list[dict]], each: Each) -> list[list[tuple[dict, int, int]]]:
    """Each term's positive requirements, with how many of the Nodes it is judged against carry each, of how many
    (counted once per requirement: the summary asks twice, of thousands of Nodes)."""
    return [[(e, carried(e, judged, each), len(judged)) for e in positive([term])]
            for term, judged in zip(terms, term_nodes, strict=True)]


def _health(node: dict) -> tuple[bool, bool, bool]:
    """Whether the Node is Ready, in production, cordoned: what the summary counts."""
    return (o.is_ready(node), o.labels(node).get(o.STATE_LABEL) == o.PRODUCTION,
            bool(o.spec(node).get("unschedulable")))


def _short_of_one(carried: list[tuple[dict, int, int]]) -> bool:
    """Whether some Node the term is judged against lacks one of its requirements (`_carried`'s, for one term)."""
    return any(n < total for _, n, total in carried)


def _ready_starting(nodes: list[dict], health: Sequence[tuple[bool, bool, bool]], service: Workload) -> int:
    """How many of `nodes` are Ready (by their `_health`) but starting: a start-up taint the template (`service`'s)
    does not tolerate."""
    tolerations = service.pod_spec.get("tolerations") or []
    return sum(ready and bool(startup_taints(n, tolerations)) for n, (ready, _, _) in zip(nodes, health, strict=True))


NAMED = 3
"""The Nodes not Ready the nodes step names, at most: the first few say which and since when; the count says the rest."""


def _not_ready(nodes: list[dict], health: Sequence[tuple[bool, bool, bool]], ready: int,
               clock: Callable[[], datetime.datetime | None]) -> str:
    """`; not Ready: g4 for 45m (Ready=False: KubeletNotReady)`: the first NAMED Nodes not Ready and how long by the
    cluster's time (`clock`, asked only here: without the API server's Date, a walk over every object read), in whole
    minutes (a live read and the replay of its recording then agree), no longer than since it registered; none said
    under a minute, nor where a kubelet's clock, which writes the transition, runs ahead of the cluster's. Empty when
    every Node is Ready (`ready`, the count's: then no walk over a pool of thousands)."""
    if ready == len(nodes):
        return ""
    down = [n for n, (up, _, _) in zip(nodes, health, strict=True) if not up]
    now, said = clock(), []
    for node in down[:NAMED]:
        cond = o.condition(node, "Ready") or {}
        how_long = f" for {shown}" if (shown := down_for(down_since(node), now)) else ""
        said.append(f"{o.name(node)}{how_long} ({not_ready(cond.get('status'), cond.get('reason')).removeprefix('not Ready (')}")
    more = f" and {len(down) - NAMED} more" if len(down) > NAMED else ""
    return f"; not Ready: {', '.join(said)}{more}"


REASON_SHOWN = 80
"""Characters of a cordonReason the nodes step shows: the annotation is free text, of any length."""


def _cordoned(nodes: list[dict], health: Sequence[tuple[bool, bool, bool]], cordoned: int) -> str:
    """`; cordoned: g4 with cordonReason "gpu xid 79", g5 without a cordonReason (a hand cordon, not CKS's)`: the first
    NAMED cordoned Nodes and what their cordonReason annotation says: CKS writes why there, `kubectl cordon` writes
    none, but anyone who may annotate Nodes writes it too, so it is quoted as the Node's claim, never as who cordoned
    it, and quoted as JSON writes a string, so no reason reads as more entries of the list. Wording only: a Node in
    repair is no failure. Empty when none is cordoned (`cordoned`)."""
    if not cordoned:
        return ""
    said = []
    for node in [n for n, (_, _, off) in zip(nodes, health, strict=True) if off][:NAMED]:
        reason = " ".join(str(o.annotations(node).get(o.CORDON_REASON) or "").split())
        if len(reason) > REASON_SHOWN:
            reason = reason[:REASON_SHOWN - 3] + "..."
        said.append(f"{o.name(node)} with cordonReason {json.dumps(reason, ensure_ascii=False)}" if reason else
                    f"{o.name(node)} without a cordonReason (a hand cordon, not CKS's)")
    more = f" and {cordoned - NAMED} more" if cordoned > NAMED else ""
    return f"; cordoned: {', '.join(said)}{more}"


def summary(pools: tuple[Pool, ...], terms: list[list[dict]], term_nodes: list[list[dict]], service: Workload,
            each: Each = afresh, clock: Callable[[], datetime.datetime | None] = lambda: None) -> Summary:
    """No Node in the pools, every term short of a label it relies on on the Nodes it is judged against
    (`term_nodes`, one list per term), a Node not Ready or starting (the line counts them, and names the first not
    Ready with how long by `clock`, the cluster's time, and the first cordoned with their cordonReason, `_cordoned`;
    starting said only where some Node is) or every Node out of
    service (for `service`, of `in_service`) shows a failure (some cordoned or out of production do not: CKS repairs
    Nodes all the time). `each` makes the passes over the Nodes (serve keeps them)."""
    nodes = [n for p in pools for n in p.nodes]
    health = each(("health",), nodes, _health)
    ready, production, cordoned = map(sum, zip(*health, strict=True)) if health else (0, 0, 0)
    where = ", ".join(p.name for p in pools) or "no pool"
    text = f"{counted(len(nodes), 'Node')} in {where}: {ready} Ready, {production} production, {cordoned} cordoned"
    if starting := _ready_starting(nodes, health, service):
        text += f", {starting} starting (a start-up taint)"
    carried_by = _carried(terms, term_nodes, each)
    counts: list[tuple[dict, int, int]] = []  # each once, in the terms' order
    for found in (found for per_term in carried_by for found in per_term):
        if found not in counts:
            counts.append(found)
    if counts:
        text += "; " + ", ".join(f"{describe_expression(e)} on {n}/{total}" for e, n, total in counts)
    text += _not_ready(nodes, health, ready, clock) + _cordoned(nodes, health, cordoned)
    short = all(map(_short_of_one, carried_by))
    return Summary(text, NodeCounts(len(nodes), ready, production, cordoned),
                   not nodes or (bool(terms) and short) or ready - starting < len(nodes)
                   or all(out_of_service(n, service) for n in nodes))
