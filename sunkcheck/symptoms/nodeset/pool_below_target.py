"""Row pool-below-target: a Node Pool whose CURRENT is below its TARGET, and whether it ever arrives."""

from __future__ import annotations

from collections.abc import Iterable

from sunkcheck import objects as o
from sunkcheck.analyze import nodepool as np
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import Pool, blockers
from sunkcheck.model import POOL_CURRENT, DeadEnd, PoolCounts, Status
from sunkcheck.analyze.nodes import JOIN
from sunkcheck.objects import POOL_LABEL, POOL_UID_LABEL
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule, some
from sunkcheck.symptoms.fixes import arg, nodepool_command, prose
from sunkcheck.text import counted


def pool_below_target(b: Binding) -> Match | None:
    """Pools short of their TARGET: provisioning, waiting for capacity, or never arriving without quota (a
    dead end for --wait); or whose CURRENT counts Nodes the cluster does not hold (`uncounted`: the pool has not
    delivered them either, whatever its status says), among them the Nodes read that lost its label (`unlabelled`)."""
    sizes = dict(np.sizes(b.pools, b.cluster.snapshot.nodes is not None))
    short = [p for p in b.pools if p.obj is not None and p.target is not None
             and ((p.current or 0) < p.target or np.uncounted(sizes[p.name]))]
    if not short:
        return None
    evidence, fixes, never = [], [], []
    for p in short:
        said, fix, lasting = _short(p, sizes[p.name], unlabelled(p, b.cluster.nodes.values()))
        evidence += said
        fixes += [fix, nodepool_command("describe", p.name)]
        if lasting:
            never.append(p.name)
    stuck = DeadEnd(f"the Quota condition of Node Pool {', '.join(never)} is False: its Nodes never arrive without "
                    "more quota", (POOL_CURRENT,)) if never else None
    # CURRENT at TARGET, the pool short of Nodes only where its count says: the runbook's title would contradict it
    counting = all(sizes[p.name].current >= sizes[p.name].target for p in short)
    return Match(tuple(evidence), "\n".join(fixes), Status.CRITICAL if never else Status.WARNING, dead_end=stuck,
                 symptom="Node Pool CURRENT counts Nodes the cluster does not hold" if counting else "",
                 cause=COUNTING if counting else "")


CKS_PREFIX = POOL_LABEL.partition("/")[0] + "/"
"""The prefix of CKS's labels on a pool's Nodes (compute.coreweave.com/)."""


COUNTING = ("The Node Pool's status counts Nodes the cluster does not hold with its label: a Node still registering, "
            "one removed, or one that lost its pool label.")


def unlabelled(p: Pool, nodes: Iterable[dict]) -> dict[str, str]:
    """The Nodes read that name the pool in a label (its uid, in POOL_UID_LABEL or any; its name under CKS's prefix)
    but carry no POOL_LABEL, each with the first such label: they lost it, and whatever selects the pool's Nodes by it
    leaves them out."""
    uid = o.meta(p.obj or {}).get("uid")
    found = {o.name(n): next((f"{k}={v}" for k, v in labels.items()
                              if (uid and v == uid) or (k.startswith(CKS_PREFIX) and v == p.name)), "")
             for n in nodes if POOL_LABEL not in (labels := o.labels(n))}
    return {n: said for n, said in sorted(found.items()) if said}


def _short(p: Pool, size: PoolCounts, lost: dict[str, str]) -> tuple[list[str], str, bool]:
    """One pool short of its TARGET: the evidence, what to do before following it, and whether its Nodes never arrive
    (its Quota condition False). `lost`: its Nodes read that lost its label."""
    missing = np.uncounted(size)
    evidence = [f"Node Pool {p.name}: CURRENT {size.current} of TARGET {size.target}"
                + (f" ({p.instance_type})" if p.instance_type else "")
                + (f", {_held(p, size.present or 0)}" if missing else "")]
    evidence += [f"Node {n} carries {said} (Node Pool {p.name}'s) but no {POOL_LABEL} label" for n, said in lost.items()]
    found = blockers(p)
    evidence += [f"Node Pool {p.name}: {text}" for _, text in found]
    if missing and size.current >= size.target:
        return evidence, _uncounted_fix(p, lost, missing), False
    if any(level is Status.CRITICAL for level, _ in found):
        return evidence, (f"request {prose(p.instance_type or 'instance type')} quota for Node Pool {p.name}: "
                          "its Nodes will never arrive without it. Its conditions:"), True
    if found:
        return evidence, f"Node Pool {p.name} waits for capacity: it clears by itself. Follow it:", False
    return evidence, f"Node Pool {p.name} may still be provisioning (a new Node takes ~20 min). Follow it:", False


def _uncounted_fix(p: Pool, lost: dict[str, str], missing: int) -> str:
    """What a pool counting Nodes the cluster does not hold asks: the Nodes read that lost its label named (CKS sets
    it: CoreWeave support restores it); the others (a live read selects the pool's Nodes by that label, so it never
    sees one that lost it) a Node registering, one removed, or one that lost its label, with the read that finds it."""
    label = f"{POOL_LABEL}={p.name}"
    it = "it" if len(lost) == 1 else "them"
    fix = (f"{some(list(lost))} lost {'its' if len(lost) == 1 else 'their'} pool label {prose(label)}, which CKS sets "
           f"(whatever selects the pool's Nodes by it leaves {it} out): ask CoreWeave support to restore it; see why "
           "with:\n"
           + "\n".join(f"kubectl describe node {arg(n)}" for n in lost)) if lost else ""
    if missing <= len(lost):
        return fix
    uid = o.meta(p.obj or {}).get("uid")
    selector = f"{POOL_UID_LABEL}={uid},!{POOL_LABEL}" if uid else f"!{POOL_LABEL}"
    return (fix + "\n" if fix else "") + (
        f"Node Pool {p.name} counts Nodes the cluster does not hold: its status ran ahead of a Node still registering "
        f"(`--wait` waits {JOIN // 60:.0f} minutes for one), behind one removed, or a Node lost its pool label "
        f"{prose(label)} (CKS sets it: ask CoreWeave support). Compare the Nodes carrying its label with its status, "
        "and list the Nodes without a pool label" + ("" if uid else " (compare their instance type)") + ":\n"
        f"kubectl get nodes -l {arg(label)}\nkubectl get nodes -l {arg(selector)} -L {POOL_UID_LABEL}")


def _held(pool: Pool, present: int) -> str:
    """`but 3 Nodes in the cluster carry compute.coreweave.com/node-pool=gpu-a`."""
    return f"but {counted(present, 'Node')} in the cluster {'carries' if present == 1 else 'carry'} {POOL_LABEL}={pool.name}"


RULE = Rule("pool-below-target", Status.WARNING, "nodepool",
            "Node Pool CURRENT is below TARGET",
            "The Node Pool has not delivered its Nodes: a Node Pool problem (quota, capacity, provisioning), "
            "not a matching problem.",
            "Check `kubectl describe nodepool <pool>`: wait for queued capacity, request quota if the Quota condition is False.",
            pool_below_target, needs=("nodepools",), severity_note="critical when quota says the Nodes will never arrive",
            reads=(Read.POOL_NODES,))
