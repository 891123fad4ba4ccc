"""Evidence helpers several NodeSet rows use: the pools, the Nodes' health, taints by source, grouped reasons."""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from sunkcheck import objects as o
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import HOSTNAME_LABEL, Binding
from sunkcheck.analyze.discovery import named_pools
from sunkcheck.analyze.feasibility import matches_affinity, taint_reason, tolerates
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import Reason
from sunkcheck.symptoms import some
from sunkcheck.symptoms.fixes import add_expressions, prose, prose_list, untaint_node


def selecting(b: Binding, nodes: Iterable[dict], key: str | None = None) -> list[str]:
    """The other NodeSets read whose required affinity selects one of `nodes` that this NodeSet does not leave out
    by name (by label `key`, when given: one a term of theirs requires): those Nodes are theirs now, so no fix asks
    for what they carry (two NodeSets would select the same Nodes)."""
    mine = [n for n in nodes if not b.picked_out(n)]
    return sorted(f"{o.namespace(w)}/{o.name(w)}" for w in b.peers
                  if (key is None or key in {e["key"] for e in nd.positive(nd.binding_terms(o.pod_spec(w)))})
                  and any(matches_affinity(o.pod_spec(w), n) for n in mine))


def values_carried(key: str, nodes: Iterable[dict]) -> Counter:
    """How many of `nodes` carry each value of label `key`."""
    return Counter(o.labels(n)[key] for n in nodes if key in o.labels(n))


def reapplied(pool: Pool, node: dict) -> dict:
    """The labels CKS gives the Node when it replaces it: its own less the hand-set ones, plus the pool's. A hand
    label some term needs is not relied on when another term matches the Node without it."""
    return {k: v for k, v in o.labels(node).items() if not nd.is_user_key(k)} | {
        k: v for k, v in pool.node_labels.items() if nd.is_user_key(k)}


def absent_pools(b: Binding) -> list:
    """The pools the binding names that have no Node Pool and no Nodes (when Node Pools were read)."""
    return [p for p in b.pools if p.obj is None and not p.nodes and b.cluster.snapshot.nodepools is not None]


CORDON_REASON = o.CORDON_REASON


def holders(b: Binding, pool: str) -> list[str]:
    """The other NodeSets read that hold the pool: they name it, or their required affinity selects one of its
    Nodes."""
    nodes = b.cluster.pool(pool).nodes
    return sorted(f"{o.namespace(w)}/{o.name(w)}" for w in b.peers if pool in named_pools(o.pod_spec(w))
                  or any(matches_affinity(o.pod_spec(w), n) for n in nodes))


def held_by(b: Binding, pool: str) -> str:
    """Who else holds the pool, in words (empty when none): a fix pointing at it would share or change its Nodes."""
    held = holders(b, pool)
    return (f"NodeSet{'s' if len(held) > 1 else ''} {prose_list(held)} hold{'' if len(held) > 1 else 's'} it"
            if held else "")


def nearest_pool(b: Binding, name: str) -> str | None:
    """The existing Node Pool the NodeSet does not name whose name is near `name` (a typo's likely target): the
    nearest no other NodeSet holds, else the nearest."""
    near = difflib.get_close_matches(name, sorted(set(b.cluster.pool_names) - b.pool_names), len(b.cluster.pool_names))
    return next((p for p in near if not holders(b, p)), near[0] if near else None)


def no_such_pool(b: Binding, name: str) -> str:
    """A pool the NodeSet names that does not exist, with the Node Pools that do and the nearest one (and who
    holds it)."""
    near = nearest_pool(b, name)
    held = held_by(b, near) if near else ""
    return (f"no Node Pool named {name} (Node Pools: {', '.join(b.cluster.pool_names) or 'none'})"
            + (f"; did you mean {near}{f' ({held})' if held else ''}?" if near else ""))


def health_said(health: set[Reason]) -> set[Reason]:
    """A Node's health as the evidence says it: the cordon and the state, not the taints Kubernetes puts with
    them (node.kubernetes.io/unschedulable is the cordon, never a taint to tolerate); a Kubernetes taint alone
    (a pressure condition) is said as it is."""
    said = {r for r in health if r.check in ("state", "unschedulable")}
    return said or {r for r in health if r.check == "taint"}


def repair_said(b: Binding, node: dict) -> str:
    """A Node in repair as the evidence says it: its state and cordon, with the reason CKS gave for the cordon."""
    said = "; ".join(sorted(r.detail for r in health_said(health_reasons(b, node)))) or "out of service"
    why = (o.meta(node).get("annotations") or {}).get(CORDON_REASON)
    return said + (f" ({CORDON_REASON}: {prose(str(why))})" if why else "")


def health_reasons(b: Binding, node: dict) -> set[Reason]:
    """A Node's reasons that are its health, not a mismatch: not production or not Ready, cordoned, the taints of its
    state (Kubernetes' own, start-up: they go with their cause), and then an affinity that fails only the inherited
    state expression."""
    reasons = b.verdict(o.name(node)).reasons
    found = {r for r in reasons if r.check in ("state", "unschedulable")}
    found |= {taint_reason(t, b.workload.kind) for t in o.taints(node)
              if nd.is_state_taint(str(t.get("key", "")))}.intersection(reasons)
    if found and not drifted_affinity(b, node):
        found.update(r for r in reasons if r.check == "affinity")
    return found


def reasons_by_detail(b: Binding, nodes: Iterable[dict], reasons_of: Callable[[dict], list[Reason]] | None = None,
                      ) -> dict[tuple[str, str], list[str]]:
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


def grouped_evidence(b: Binding, grouped: dict[tuple[str, str], list[str]], total: int) -> list[str]:
    """One line per reason, the commonest first: `2/8 Nodes in slurm-cpu: <detail> (<names>)`."""
    where = ", ".join(sorted(b.pool_names)) or "the cluster"
    return [f"{len(names)}/{total} Nodes in {where}: {detail} ({some(names)})"
            for (_, detail), names in sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def drifted_affinity(b: Binding, node: dict) -> bool:
    """Whether the Node would fail the required affinity even in production: a Node CKS took out of
    production for repair fails only the inherited state expression, which is health, not drift."""
    return not matches_affinity(b.pod_spec, nd.in_production(node))


def user_taints(b: Binding, node: dict) -> list[dict]:
    """The Node's taints the NodeSet does not tolerate, less its state's (cordon, not-ready, pressure, start-up):
    those go away with their cause, so no fix tolerates or removes them."""
    return nd.untolerated_scoping_taints(b.pod_spec.get("tolerations") or [], node)


def taint_source(pool: Pool, taint: dict) -> str:
    """Where a taint on a Node of `pool` comes from: "lock" (SUNK's, on the Nodes running Slurm jobs: no pool sets
    it), "pool" (its nodeTaints set it), "hand" (a user taint the pool, read, does not set), "other" (the pool
    unread, none, or CKS's own)."""
    if taint.get("key") == o.LOCK_TAINT:
        return "lock"
    if nd.set_by_pool(pool, taint):
        return "pool"
    return "hand" if pool.obj is not None and nd.is_user_taint(str(taint.get("key", ""))) else "other"


def pool_taints_on_key(pool: Pool, taint: dict) -> list[dict]:
    """The pool's own taints on `taint`'s key. A taint set by hand on that key is the pool's edited on the Node (its
    value or its effect) or set beside it: removed, it takes the pool's back with it (`untaint_node`'s restore), or the
    Node is left open to what the pool's taint keeps off; never moved into the pool, which would keep it on every Node."""
    return [t for t in pool.node_taints if t.get("key") == taint.get("key")]


def untaint_hand(pool: Pool, taint: dict, names: str | list[str]) -> str:
    """The command removing a taint set by hand from Nodes of `pool`, putting back the pool's own on its key."""
    return untaint_node(names, taint, pool_taints_on_key(pool, taint))


def hand_said(pool: Pool, taint: dict) -> str:
    """The words a removal of a taint set by hand on the key of the pool's own ends with (empty for another key)."""
    own = pool_taints_on_key(pool, taint)
    # no apostrophe in these words: before a quoted cluster string, pasted whole, it would end that string's quotes
    return (f"; it sits on the key of {prose_list(map(o.format_taint, own))}, the taint Node Pool {prose(pool.name)} "
            "sets, which the command puts back") if own else ""


TOLERATED_SOURCES = ("lock", "pool")
"""The taint sources a fix tolerates, never removes: CKS stamps a pool's back, SUNK lifts its lock after the job."""


def taint_sources(b: Binding, nodes: Iterable[dict]) -> dict[tuple[str, str], tuple[dict, list[str], str]]:
    """The untolerated taints of `nodes` (less their state's), by text and `taint_source`: each with the Nodes
    carrying it and their pool."""
    found: dict[tuple[str, str], tuple[dict, list[str], str]] = {}
    for n in nodes:
        pool = b.cluster.pool(o.pool_of(n) or "")
        for t in user_taints(b, n):
            found.setdefault((o.format_taint(t), taint_source(pool, t)), (t, [], pool.name))[1].append(o.name(n))
    return found


def claimed_fix(b: Binding, names: Iterable[str], judged: Iterable[dict]) -> str:
    """Nodes another NodeSet holds: a pool for each NodeSet, or the pool shared by leaving them out of this NodeSet
    by name (a hostname NotIn requirement beside its own, which a shared pool's NodeSets carry). Not when no Node
    of those `judged` that the NodeSet selects would be left: FEASIBLE would stay 0 (`held_whole` says what frees
    them)."""
    names = sorted(names)
    if not any(o.name(n) not in names and not drifted_affinity(b, n) for n in judged):
        return held_whole(b, names)
    out = {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": names}
    return ("another NodeSet holds these Nodes: give each NodeSet its own Node Pool, or share the pool and leave them "
            "out of this NodeSet by name: " + add_expressions([out], b.pod_spec))


def held_whole(b: Binding, names: list[str]) -> str:
    """Every Node the NodeSet selects is held by another NodeSet, so none is left out by name. Pods of a NodeSet
    that no longer selects their Node (its pool relabelled for this one, say: MISSCHEDULED there) hold it only until
    they are drained and removed, and this NodeSet then takes it; a NodeSet that still selects its Nodes keeps them,
    which is its owners' choice and this one's."""
    by_holder: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_holder[b.neighbours(b.cluster.nodes[name])[1] or ""].append(name)
    peers = {f"{o.namespace(w)}/{o.name(w)}": o.pod_spec(w) for w in b.peers}
    parts = []
    for holder, held in sorted(by_holder.items()):
        spec = peers.get(holder)
        if spec is not None and not any(matches_affinity(spec, b.cluster.nodes[n]) for n in held):
            parts.append(f"NodeSet {prose(holder)}'s slurmd Pods hold {some(held)}, which it no longer selects "
                         "(MISSCHEDULED there): they keep the Nodes until its Slurm nodes are drained and those Pods "
                         f"removed (a check of NodeSet {prose(holder)} spells the steps), and this NodeSet then takes "
                         "them with nothing of its own to change")
        else:
            parts.append(f"NodeSet {prose(holder)} holds {some(held)} and still selects them: give each NodeSet its own "
                         "Node Pool, or decide with its owners which NodeSet the pool is for")
    return ("another NodeSet holds every Node this NodeSet selects, so no fix leaves them out of it by name (that would "
            "leave it none): " + "; ".join(parts))


def owner_kinds(pod: dict) -> set[str]:
    """The kinds of the Pod's owners (Node: a static Pod; DaemonSet: a daemon Pod)."""
    return {ref.get("kind") for ref in o.meta(pod).get("ownerReferences") or ()}


def daemonset_of(pod: dict) -> str | None:
    """The name of the DaemonSet owning the Pod, None when no DaemonSet does."""
    return next((ref.get("name") for ref in o.meta(pod).get("ownerReferences") or () if ref.get("kind") == "DaemonSet"), None)


def pod_names(pods: list[dict]) -> str:
    """Pods as `namespace/name`, as the evidence names them."""
    return ", ".join(f"{o.namespace(p)}/{o.name(p)}" for p in pods)


def intended_pools(b: Binding) -> set[str]:
    """The pools the NodeSet's Pods belong in: when someone said (--pool, the annotation), the expected ones and
    those it names itself; else its pools, unless found only because its Pods run there (then none)."""
    if b.expected:
        return set(b.expected) | set(named_pools(b.pod_spec))
    return set() if b.pool_source.startswith("pools its Pods") else b.pool_names


def slurm_node_where(b: Binding, slurm_name: str) -> str:
    """The Kubernetes Node (and its pool) behind a Slurm node: its slurmd Pod's, else the one its IP tail names; when
    several Nodes share that tail, the mapping is ambiguous and said so, never guessed."""
    nodes = b.kube_nodes_of(slurm_name)
    if len(nodes) > 1:
        return "ambiguous: its IP tail matches Nodes " + ", ".join(f"{n} (pool {b.cluster.pool_of(n) or 'none'})" for n in nodes)
    return f"Node {nodes[0]}, pool {b.cluster.pool_of(nodes[0]) or 'none'}" if nodes else "no Kubernetes Node found"


def tolerated_by(tolerations: Iterable[dict], taint: dict) -> bool:
    """Whether one of `tolerations` tolerates `taint`, by the feasibility engine's rule."""
    return any(tolerates(t, taint) for t in tolerations)


def refused_for_good(b: Binding, node: dict) -> set[str]:
    """What keeps the NodeSet off the Node and does not clear by itself (none: something may): the affinity it fails
    even with its pool's nodeLabels stamped and in production (what CKS converges a Node to), a taint it does not
    tolerate that is neither the Node's state's (`nodes.is_state_taint`) nor SUNK's lock (those come and go with their
    cause, or a Slurm job)."""
    pool = b.cluster.pool(o.pool_of(node) or "")
    labels = o.labels(node) | pool.node_labels | {o.STATE_LABEL: o.PRODUCTION}
    # a pool not read could stamp any label: its Nodes' labels may still change
    unknown = pool.obj is None and o.pool_of(node) is not None
    found = set() if unknown or matches_affinity(b.pod_spec, node | {"metadata": o.meta(node) | {"labels": labels}}) \
        else {"its labels"}
    if any(t.get("key") != o.LOCK_TAINT for t in user_taints(b, node)):
        found.add("a taint the NodeSet does not tolerate")
    return found
