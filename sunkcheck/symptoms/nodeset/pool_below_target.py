"""Row pool-below-target: a Node Pool whose CURRENT is below its TARGET, and whether it ever arrives."""

from __future__ import annotations

from sunkcheck.analyze import nodepool as np
from sunkcheck.analyze.binding import Binding
from sunkcheck.analyze.nodepool import Pool, blockers
from sunkcheck.model import POOL_CURRENT, DeadEnd, PoolCounts, Status
from sunkcheck.objects import POOL_LABEL
from sunkcheck.reads import Read
from sunkcheck.symptoms import Match, Rule
from sunkcheck.symptoms.fixes import arg, nodepool_command, prose
from sunkcheck.text import counted


def pool_below_target(b: Binding) -> Match | None:
    """Pools short of their TARGET: provisioning, waiting for capacity, or never arriving without quota (a
    dead end for --wait); or whose CURRENT counts Nodes the cluster does not hold (`uncounted`: the pool has not
    delivered them either, whatever its status says)."""
    sizes = dict(np.sizes(b.pools, b.cluster.snapshot.nodes is not None))
    short = [p for p in b.pools if p.obj is not None and p.target is not None
             and ((p.current or 0) < p.target or np.uncounted(sizes[p.name]))]
    if not short:
        return None
    evidence, fixes, never = [], [], []
    for p in short:
        said, fix, lasting = _short(p, sizes[p.name])
        evidence += said
        fixes += [fix, nodepool_command("describe", p.name)]
        if lasting:
            never.append(p.name)
    stuck = DeadEnd(f"the Quota condition of Node Pool {', '.join(never)} is False: its Nodes never arrive without "
                    "more quota", (POOL_CURRENT,)) if never else None
    return Match(tuple(evidence), "\n".join(fixes), Status.CRITICAL if never else Status.WARNING, dead_end=stuck)


def _short(p: Pool, size: PoolCounts) -> tuple[list[str], str, bool]:
    """One pool short of its TARGET: the evidence, what to do before following it, and whether its Nodes never arrive
    (its Quota condition False)."""
    missing = np.uncounted(size)
    evidence = [f"Node Pool {p.name}: CURRENT {size.current} of TARGET {size.target}"
                + (f" ({p.instance_type})" if p.instance_type else "")
                + (f", {_held(p, size.present or 0)}" if missing else "")]
    found = blockers(p)
    evidence += [f"Node Pool {p.name}: {text}" for _, text in found]
    if missing and size.current >= size.target:
        return evidence, (f"Node Pool {p.name} counts Nodes the cluster does not hold: its status ran ahead of a Node "
                          "still registering (a new Node takes ~20 min), or behind one removed. Compare the Nodes "
                          f"carrying its label with its status:\nkubectl get nodes -l {arg(f'{POOL_LABEL}={p.name}')}"), False
    if any(level is Status.CRITICAL for level, _ in found):
        return evidence, (f"request {prose(p.instance_type or 'instance type')} quota for Node Pool {p.name}: "
                          "its Nodes will never arrive without it. Its conditions:"), True
    if found:
        return evidence, f"Node Pool {p.name} waits for capacity: it clears by itself. Follow it:", False
    return evidence, f"Node Pool {p.name} may still be provisioning (a new Node takes ~20 min). Follow it:", False


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
