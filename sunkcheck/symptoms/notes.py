"""Notes: what is worth knowing about a binding without being a problem. A note never changes a status, an exit
code, the Nagios state, the textfile or the symptoms: it is printed after them. Every kind is one NoteKind in NOTES,
its live reads declared in NOTE_READS (sunkcheck.reads); `notes` is the one place they are made."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.discovery import named_pools
from sunkcheck.analyze.feasibility import Workload, matches_affinity
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.model import Note
from sunkcheck.reads import Read
from sunkcheck.symptoms import some
from sunkcheck.symptoms.fixes import arg, label_nodepool, nodepool_command, prose, prose_list, untaint_nodepool
from sunkcheck.symptoms.nodeset._shared import held_by
from sunkcheck.text import counted

NOTE_READS = (Read.SAME_TYPE_POOLS,)
"""What the notes read beyond the rows and summaries."""

NODE_AGENTS = ("DaemonSet", "Node")  # a Node's own agents (mirror Pods too) run on every Node: they make no pool busy


def same_type_pools(b: Binding) -> list[Pool]:
    """Without an expectation (--pool, the annotation), the other Node Pools of the instance type of the NodeSet's
    pools (their spec's) that no annotation gives to a NodeSet: the ones a user who forgot to say so might have meant."""
    types = {t for p in b.pools if (t := p.instance_type)}
    if b.expected or not types:
        return []
    return [p for name, p in b.cluster.pools.items() if name not in b.pool_names and p.obj is not None
            and o.spec(p.obj).get("instanceType") in types and not o.annotations(p.obj).get(o.NODESETS_ANNOTATION)]


def _someones(b: Binding, pool: Pool) -> bool:
    """Whether the pool is in use: a Pod other than a node agent's runs there (the NodeSet's own too), or another
    NodeSet read selects its Nodes (its Pods may not have started yet)."""
    return any(runs_a_workload(p) for n in pool.nodes for p in b.cluster.pods_on.get(o.name(n), ())) or any(
        matches_affinity(o.pod_spec(peer), n) for peer in b.peers for n in pool.nodes)


def runs_a_workload(pod: dict) -> bool:
    """A Pod that is no node agent's: a team's workload (or a NodeSet's) uses its Node."""
    return not {ref.get("kind") for ref in o.meta(pod).get("ownerReferences") or ()} & set(NODE_AGENTS)


def idle_pool(b: Binding) -> list[tuple[str, str]]:
    """A same-type pool nobody uses (`_someones`) with Nodes the NodeSet could use but does not select: capacity
    beside it that no row mentions. A pool another team's Pods run on is theirs: no note; nor one whose Pods were
    not all read (a failed list, a probe not made yet): "only node agents run there" would be a guess."""
    read = b.cluster.snapshot.pods_read
    pools = [p for p in same_type_pools(b) if not _someones(b, p) and all(read(o.name(n)) for n in p.nodes)]
    if not pools:
        return []
    unbound = Workload.from_template(without_node_affinity(b.pod_spec))
    own = sorted(p.name for p in b.pools if p.obj is not None or p.nodes)
    found = []
    for pool in pools:
        idle = [o.name(n) for n in pool.nodes if b.judge(unbound, n, first_only=True).feasible]
        if not idle:
            continue
        like = [p.name for p in b.pools if p.instance_type == pool.instance_type]
        text = (f"Node Pool {prose(pool.name)} has {counted(len(idle), 'idle Node')} ({some(idle)}) of instance type "
                f"{prose(pool.instance_type)}, like {prose_list(like)}: {prose(b.name)} could use them (no taint it "
                "does not tolerate, its requests fit, only node agents run there), but its affinity does not select them")
        hint = "\n".join([
            "if they are meant for it, say so, and sunkcheck checks that the NodeSet uses them; with --pool:",
            " ".join(["sunkcheck check -n", arg(b.namespace), "--nodeset", arg(b.name),
                      *(f"--pool {arg(p)}" for p in [*own, pool.name])]),
            "or, for every check, with the Node Pool annotation:",
            nodepool_command("annotate", pool.name, f" {arg(f'{o.NODESETS_ANNOTATION}={b.qualified_name}')}")])
        found.append((text, hint))
    return found


def without_node_affinity(pod_spec: dict) -> dict:
    """The template with no nodeSelector and no node affinity: where it could run if it selected any Node."""
    affinity = {k: v for k, v in (pod_spec.get("affinity") or {}).items() if k != "nodeAffinity"}
    return {k: v for k, v in pod_spec.items() if k not in ("nodeSelector", "affinity")} | (
        {"affinity": affinity} if affinity else {})


def unused_reserved_key(b: Binding) -> list[tuple[str, str]]:
    """A reserved key (coreweave.com, coreweave.cloud) in the nodeLabels or nodeTaints of one of the NodeSet's pools
    that nothing of the NodeSet relies on (reserved-label-namespace takes those it does): CKS drops it and says so in
    a Warning Event, but the binding misses nothing. The hint deletes it (moving it would add a key nobody asked for)."""
    needed = nd.keys_relied_on(b.terms, b.pod_spec.get("tolerations") or [])
    found = []
    for p in b.pools:
        labels = [k for k in p.node_labels if o.is_reserved_key(k) and k not in needed]
        taints = [t for t in p.node_taints if o.is_reserved_key(t.get("key") or "") and t.get("key") not in needed]
        if not labels and not taints:
            continue
        keys = [*labels, *(o.format_taint(t) for t in taints)]
        events = [ev.describe(e) for e in p.events if ev.reason(e) == ev.SANITIZED]
        text = (f"Node Pool {prose(p.name)} still sets {prose_list(keys)}, in a reserved namespace CKS drops "
                f"({prose_list(events, '; ') if events else f'no {ev.SANITIZED} Event read'}); "
                f"nothing of {prose(b.name)} selects or tolerates it")
        lines = ["CKS never applies it: delete it from the Node Pool spec:"]
        lines += [label_nodepool(p.name, dict.fromkeys(labels))] if labels else []
        lines += [untaint_nodepool(p, taints)] if taints else []
        found.append((text, "\n".join(lines)))
    return found


def pool_held_elsewhere(b: Binding) -> list[tuple[str, str]]:
    """A pool said to be meant for the NodeSet (--pool, the annotation) that it neither names nor selects, and that
    another NodeSet holds: checked as this one's though it is another's (a --pool mistyped, an annotation left)."""
    found = []
    for pool in sorted(b.expected):
        nodes = b.cluster.pool(pool).nodes
        if pool in named_pools(b.pod_spec) or any(matches_affinity(b.pod_spec, n) for n in nodes):
            continue
        if held := held_by(b, pool):
            text = (f"Node Pool {prose(pool)}, said to be meant for {prose(b.name)}, is another's: {held}, and "
                    f"{prose(b.name)} neither names nor selects it")
            found.append((text, "if it is not meant for this NodeSet, leave it out of --pool (or out of its "
                                f"{o.NODESETS_ANNOTATION} annotation); if it is, another NodeSet shares its Nodes"))
    return found


@dataclass(frozen=True)
class NoteKind:
    id: str
    """Stable, like a symptom's id, and never one."""
    find: Callable[[Binding], list[tuple[str, str]]]
    """Each note's text (one line) and hint (prose and commands on lines of their own)."""


NOTES = (NoteKind("idle-pool", idle_pool), NoteKind("unused-reserved-key", unused_reserved_key),
         NoteKind("pool-held-elsewhere", pool_held_elsewhere))
"""Every kind of note, in the order printed."""


def notes(b: Binding) -> tuple[Note, ...]:
    return tuple(Note(kind.id, text, hint) for kind in NOTES for text, hint in kind.find(b))
