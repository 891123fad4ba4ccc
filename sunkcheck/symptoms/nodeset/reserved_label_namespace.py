"""Row reserved-label-namespace: a reserved key the NodeSet relies on, which CKS drops from the pool's Nodes."""

from __future__ import annotations

from sunkcheck import objects as o
from sunkcheck.analyze import events as ev
from sunkcheck.analyze import nodes as nd
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import Pool
from sunkcheck.analyze.feasibility import describe_expression
from sunkcheck.model import FEASIBLE, DeadEnd, Status
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import add_toleration, expression_yaml, label_nodepool, prose, taint_nodepool
from sunkcheck.symptoms.nodeset._tolerations import tolerate_first


def reserved_label_namespace(b: Binding) -> Match | None:
    """A reserved key in a pool's nodeLabels or nodeTaints that the NodeSet relies on (an expression or a toleration
    on it), which CKS drops: a reserved key it does not rely on is the reserved-key note's. The fix moves each to
    the operator's own domain on the pool, then has the NodeSet select the new label key (each expression on a
    moved key, as YAML) and, only for a moved taint, tolerate the new taint key first."""
    tolerations = b.pod_spec.get("tolerations") or []
    needed = nd.keys_relied_on(b.terms, tolerations)
    evidence, patches, taints, keys = [], [], [], set()
    for p in b.pools:
        dropped = [k for k in p.node_labels if o.is_reserved_key(k) and k in needed]
        reserved_taints = nd.relied_reserved_taints(p, b.terms, tolerations)
        evidence += _dropped_evidence(p, dropped, reserved_taints)
        keys |= set(dropped)
        if dropped:
            patches.append(label_nodepool(p.name, dict.fromkeys(dropped) | {_own_domain(k): p.node_labels[k] for k in dropped}))
        taints += [f"{add_toleration(t, tolerations)}\n{_reached_first(b, p, t)}then taint Node Pool {prose(p.name)} "
                   f"with it:\n{taint_nodepool(p, [t])}" for t in map(_moved_taint, reserved_taints)]
    relied = [] if b.cluster.snapshot.nodes is None else \
        nd.uncarried_reserved(b.terms, b.cluster.nodes.values())  # "no Node carries it" needs the Nodes
    evidence += [f"the NodeSet relies on {describe_expression(e)}, a reserved-namespace key no Node carries"
                 for e in relied]
    if not evidence:
        return None
    stuck = DeadEnd(f"the NodeSet relies on {', '.join(sorted({e['key'] for e in relied}))}, which CKS drops from "
                    "every Node (a reserved namespace)", (FEASIBLE,)) if relied else None
    return Match(tuple(evidence), _move_fix(b, patches, taints, keys | {r["key"] for r in relied}), dead_end=stuck)


def _dropped_evidence(pool: Pool, dropped: list[str], taints: list[dict]) -> list[str]:
    """The reserved keys of the pool's spec that CKS drops, with the Events saying so."""
    evidence = [f"Node Pool {pool.name}: spec.nodeLabels key {k} is in a reserved namespace; CKS drops it" for k in dropped]
    evidence += [f"Node Pool {pool.name}: spec.nodeTaints key {t.get('key')} is in a reserved namespace; CKS drops it"
                 for t in taints]
    if dropped or taints:
        evidence += [ev.describe(e) for e in pool.events if ev.reason(e) == ev.SANITIZED]
    return evidence


def _moved_taint(taint: dict) -> dict:
    """The taint with its key in the operator's own domain."""
    return {k: taint[k] for k in ("key", "value", "effect") if k in taint} | {"key": _own_domain(str(taint["key"]))}


def _reached_first(b: Binding, pool: Pool, taint: dict) -> str:
    """What to tolerate before the moved taint reaches the pool's Nodes (CKS dropped the reserved one: it reaches
    every Node of the pool, evicting, if NoExecute, the daemon Pods that do not tolerate it)."""
    reach = nd.keeps_off(pool, taint)
    return tolerate_first(b, taint, reach, [n for n in reach if b.cluster.snapshot.pods_read(o.name(n))])


def _move_fix(b: Binding, patches: list[str], taints: list[str], keys: set[str]) -> str:
    """The labels moved to the operator's domain (the pools' patches), the expressions on the moved `keys` changed
    with them, and the taints moved after their new key is tolerated. CKS's own keys (node.coreweave.cloud/type)
    reach the Nodes: only a dropped one's expression moves."""
    fix = ("move the label to a domain you control (example.com stands for yours)"
           + (":\n" + "\n".join(patches) if patches else ": set it under your domain in the Node Pool's nodeLabels"))
    fix += "".join(f"\nthen select the new key in the node definition's affinity, in place of "
                   f"{prose(describe_expression(e))}:\n" + expression_yaml(e | {"key": _own_domain(e["key"])})
                   for e in nd.positive(b.terms) if e["key"] in keys)
    if taints:
        fix += "\nthe taint too: tolerate its new key first, so no slurmd Pod is refused; " + "\n".join(taints)
    return fix


def _own_domain(key: str) -> str:
    """The key under example.com, standing for the operator's own domain."""
    prefix, _, rest = key.partition("/")
    head = prefix.split(".")[0] if "." in prefix else "sunk"
    return f"{head}.example.com/{rest}"


RULE = Rule("reserved-label-namespace", Status.CRITICAL, "events",
            "A label added to the Node Pool never appears on any Node",
            "The label key is in the reserved coreweave.com or coreweave.cloud namespace, "
            "so CKS drops it (CWNodePoolMetadataSanitized).",
            "Check for a CWNodePoolMetadataSanitized Event on the Node Pool, then move the label to a domain you control.",
            reserved_label_namespace,
            reads=(Read.POOL_NODES, Read.RESERVED_KEY_CARRIERS, Read.PODS_ON_NODES_A_MOVED_RESERVED_TAINT_REACHES))
