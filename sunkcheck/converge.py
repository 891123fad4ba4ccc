"""What `--wait` waits for: the binding has converged when every count agrees (pure, from a Report)."""

from __future__ import annotations

import datetime
import math
from dataclasses import replace

from sunkcheck import duration
from sunkcheck import objects as o
from sunkcheck.analyze.feasibility import not_ready
from sunkcheck.analyze.nodepool import uncounted
from sunkcheck.analyze.nodes import JOIN, NAMED, down_for, grown, retold, taints_grown, young
from sunkcheck.analyze.nodeset import desired, effective, shown
from sunkcheck.model import (FEASIBLE, NO_NODE, POOL_CURRENT, DaemonSetCounts, Lasting, NodeSetCounts, PodCounts,
                             PoolCounts, Report, Result, SlurmCounts, Status, Unready)
from sunkcheck.suggest import listed
from sunkcheck.text import counted


def pending(result: Result) -> list[str]:
    """The conditions not yet met for one target, in runbook order (empty when converged)."""
    out = [f"{s.name} step unknown" for s in result.steps if s.status is Status.UNKNOWN]
    if out and len(out) == len(result.steps):  # its state not read at all (a wait's API server gone): nothing else
        return ["every step unknown"]
    nodeset, daemonset = result.counts(NodeSetCounts), result.counts(DaemonSetCounts)
    for c in (nodeset, daemonset):  # a status for an older spec says nothing about the latest one yet
        if c is not None and c.observed_generation is not None:
            out.append(f"status generation {c.observed_generation}/{c.generation}")
    out += short_pools(result)
    if arriving := joining(result):  # out of service, so FEASIBLE leaves them out: not the capacity asked for yet
        out.append(f"{counted(len(arriving), 'Node')} joining")
    if late := overdue(result):  # joined during the wait and never arrived: the scale-up did not deliver them
        out.append(f"{counted(len(late), 'Node')} {LATE}")
    out += registering(result)
    if nodeset is not None:
        out += _nodeset(nodeset, result.counts(SlurmCounts), result.counts(PodCounts))
    if daemonset is not None:
        if daemonset.desired == 0:  # a DaemonSet runs somewhere: no Node in its scope yet is not converged
            out.append(NO_NODE)
        for column, count in (("CURRENT", daemonset.current), ("READY", daemonset.ready)):
            if count != daemonset.desired:
                out.append(f"{column} {count}/{daemonset.desired}")
    return out


def short_pools(result: Result) -> list[str]:
    """`pool CURRENT 2/3 (gpu-b)`: each pool whose CURRENT is below its TARGET, judged alone (a pool beyond its
    TARGET, a scale-down or a Node replacement under way, makes up for no other's shortfall), named where the
    NodeSet has several; the nodepool step's sums where the pools' own counts are not known."""
    pool = result.counts(PoolCounts)
    sizes = result.pool_sizes or ((("", pool),) if pool is not None else ())
    several = len(sizes) > 1
    return [f"{POOL_CURRENT} {c.current}/{c.target}" + (f" ({name})" if several else "")
            for name, c in sizes if c.current < c.target]


def not_ready_at_end(report: Report, most: int = 3) -> str:
    """`g44s02 (15m), g44s03 and 2 more`: the Nodes of the targets' pools not Ready (the first `most`, and how many
    more), each with how long it has been not Ready by the cluster's time, as the nodes step says it, where known;
    "" when none. Node health, no row: a converged wait says it beside its answer, which it leaves as it is."""
    seen = {u.name: down_for(u.down_since, r.clock) for r in report.results for u in r.unready if u.status != "True"}
    return listed([f"{name} ({shown})" if shown else name for name, shown in seen.items()], most)


def _nodeset(ns: NodeSetCounts, slurm: SlurmCounts | None, pods: PodCounts | None) -> list[str]:
    # a status without FEASIBLE is judged by sunkcheck's count; a count the status lacks is not converged
    feasible = ns.feasible_computed if ns.feasible is None else ns.feasible
    if feasible is None or ns.pool_nodes is None or ns.pool_nodes_in_repair is None or ns.pool_nodes_left_out is None:
        return []  # the Nodes not read: the step is UNKNOWN (pending says so), nothing to weigh the status against
    out = []
    # a Node out of service takes no Pod, nor one the NodeSet leaves out by name (another NodeSet's share of the
    # pool, or outside the Nodes it is pinned to); any other must
    usable = ns.pool_nodes - ns.pool_nodes_in_repair - ns.pool_nodes_left_out
    if feasible < usable:
        out.append(f"{FEASIBLE} {feasible}/{usable}")
    # DESIRED is replicas when set: below FEASIBLE an intentional cap, above it FEASIBLE bounds the NodeSet instead,
    # so only the size it makes counts (a status that says FEASIBLE there is converged as well)
    should = desired(ns.replicas, feasible)
    if ns.desired is None or effective(ns.desired, feasible) != effective(should, feasible):
        out.append(f"DESIRED {shown(ns.desired)}/{shown(should)}")
    # a Node cordoned for repair keeps its running slurmd Pod, which FEASIBLE no longer counts: READY may exceed
    # the effective size by the pool's Nodes in repair, no more (a scale-down still removing Pods has not converged)
    size = effective(ns.desired, feasible)
    if ns.ready is None or size is None or not size <= ns.ready <= size + ns.pool_nodes_in_repair:
        out.append(f"READY {shown(ns.ready)}/{shown(size)}")
    # Pods counted beyond those that exist: a scale-down removed Nodes and their Pods, and the status (FEASIBLE,
    # DESIRED and all) has not caught up yet; converged by those stale counts alone, the wait would end too early
    if pods is not None and ns.current is not None and ns.current > pods.pods:
        out.append(f"CURRENT {ns.current}/{pods.pods}")
    if slurm is not None and slurm.slurm_nodes != ns.ready:
        out.append(f"Slurm nodes {slurm.slurm_nodes}/{ns.ready}")
    return out


def joining(result: Result) -> list[Unready]:
    """The target's pool Nodes still joining: not Ready or starting, and registered less than nodes.JOIN before the
    cluster's time (`Result.clock`, `nodes.young`), whatever their Ready condition went through since. Times the API
    server wrote, compared with each other: neither the local clock nor a kubelet's, either of which may be skewed
    from it, decides."""
    clock = result.clock
    return [] if clock is None else [u for u in result.unready if young(u, clock)]


LATE = f"not Ready {duration.shown(JOIN)} after registering"


def overdue(result: Result) -> list[Unready]:
    """The target's pool Nodes the wait saw joining (`Unready.awaited`) that are no longer young and still not Ready:
    waited for as long as a Node may take to join, they never arrived, and the wait has not converged (as a pool
    counting Nodes that never register, which pool-below-target reports). A Ready one still carrying a start-up taint
    is pool-nodes-unusable's; a Node not Ready already old when the wait first saw it (in repair) was never awaited."""
    clock = result.clock
    return [] if clock is None else [u for u in result.unready
                                     if u.awaited and u.status != "True" and not young(u, clock)]


def ages_at(result: Result) -> datetime.datetime | None:
    """The cluster's time at which the first of the target's Nodes still young at its clock (`nodes.young`) no longer
    is, the first start-up taint put on less than nodes.JOIN before it (`nodes.left_at`) has been on that long, one
    dated too far ahead to be believed comes within nodes.SKEW (`nodes.taints_grown`), or the first slurmd Pod still
    starting leaves its grace (`Result.starting_until`): its judgement changes then without any event (a Node joining
    is no longer waited for, `joining`; a start-up taint still on it is reported as left on, Binding.lingering; a Pod
    still not Ready is slurmd-not-ready's). None when nothing is young: nothing ages."""
    clock = result.clock
    if clock is None:
        return None
    ats = [*(at for u in result.unready for at in (grown(u), *taints_grown(u, clock))), *result.starting_until]
    return min((at for at in ats if at is not None and clock < at), default=None)


def retold_at(result: Result) -> datetime.datetime | None:
    """The cluster's time at which the nodes step's `for Nm` of one of the Nodes not Ready it names (the first NAMED,
    in its order) next reads one minute more (`nodes.retold`): its text changes then without any event. None without
    the cluster's time, or when it names none with a duration."""
    clock = result.clock
    if clock is None:
        return None
    named = [u for u in result.unready if u.status != "True"][:NAMED]
    return min((at for u in named if (at := retold(u.down_since, clock)) is not None), default=None)


def judged_again_at(result: Result) -> datetime.datetime | None:
    """The earliest moment the target's judgement changes without any event (`ages_at`) or its nodes step's text does
    (`retold_at`): when serve judges it again, that what it publishes stays what a check would print."""
    return min((at for at in (ages_at(result), retold_at(result)) if at is not None), default=None)


def ages_in(report: Report) -> float:
    """Seconds, by each target's clock, until the first `ages_at` of the report's targets (math.inf when none): a wait
    judges again then, whether a change arrived or not."""
    return min(((at - r.clock).total_seconds() for r in report.results if r.clock and (at := ages_at(r))),
               default=math.inf)


def registering(result: Result) -> list[str]:
    """`pool gpu-a Nodes 3/4`: each pool whose CURRENT counts Nodes the cluster does not hold yet (nodepool.uncounted:
    its status ran ahead of Nodes registering after a scale-up), while that has lasted less than nodes.JOIN by the
    cluster's time (`Result.uncounted_since`, from Clock); past it, pool-below-target reports them and the wait no
    longer waits for them."""
    since, clock = result.uncounted_since, result.clock
    if since is not None and clock is not None and (clock - since).total_seconds() >= JOIN:
        return []
    return [f"pool {name} Nodes {c.present}/{min(c.current, c.target)}" for name, c in result.pool_sizes if uncounted(c)]


class Clock:
    """The cluster's time through one wait, the API server's (`Result.clock`, never the local clock): each target's
    in the latest read, or the one it had at the first read that showed one, advanced by the seconds waited since
    (the monotonic clock), whichever is later. Both trail the API server's clock, so a Node is never judged older
    than it is; the first read's keeps a Node NotReady for long from holding the wait beyond nodes.JOIN where the
    time read does not advance (a server without Date headers, whose objects' creation times are all it tells). It
    also stamps since when a pool has counted Nodes the cluster does not hold (`registering`), and which Nodes it saw
    joining that have stayed out of service since (`Unready.awaited`)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str, str], tuple[datetime.datetime, float]] = {}
        self.uncounted: dict[tuple[str, str, str], datetime.datetime] = {}
        self.awaited: dict[tuple[str, str, str], set[str]] = {}

    def stamp(self, report: Report, now: float) -> Report:
        """`report` with each target's clock advanced as of `now` (time.monotonic())."""
        return replace(report, results=tuple(self._advanced(r, now) for r in report.results))

    def _advanced(self, result: Result, now: float) -> Result:
        key = (result.context, result.namespace, result.name)
        # since when a pool has counted Nodes the cluster does not hold, without a read showing them all since
        short = any(uncounted(c) for _, c in result.pool_sizes)
        if not short:
            self.uncounted.pop(key, None)
        if result.clock is not None:
            at, then = self.first.setdefault(key, (result.clock, now))
            clock = max(result.clock, o.later(at, now - then))
            result = replace(result, clock=clock,
                             uncounted_since=self.uncounted.setdefault(key, clock) if short else None)
        awaited = self.awaited.setdefault(key, set())
        if not any(s.name == "nodes" and s.status is Status.UNKNOWN for s in result.steps):  # the Nodes read: one
            # once in service is forgotten (out again later, it is in repair, not a Node that never arrived)
            awaited &= {u.name for u in result.unready}
            awaited |= {u.name for u in joining(result)}
        return replace(result, unready=tuple(replace(u, awaited=u.name in awaited) for u in result.unready))


def progress(report: Report, named: bool = False, told: bool = False) -> str:
    """One line: what each target still waits for (`waiting`), and the checks that could not run; `told`, what
    could not be read said (each error once, as a progress line says why), not counted."""
    parts = [f"{r.name}: {said}" for r in report.results if (said := waiting(r, named))]
    if report.errors:
        parts.append("; ".join(dict.fromkeys(report.errors)) if told
                     else f"{counted(len(report.errors), 'check')} could not run")
    return "; ".join(parts) or "converged"


def waiting(result: Result, named: bool = False) -> str:
    """`READY 6/8 (waiting for ml/x on g1 to end)`: what the target still waits for ("" when converged); `named`, with
    the Nodes still joining or overdue and since when."""
    waits = [w + _pods(result) if w.startswith("READY ") else w for w in pending(result)]
    return f"{', '.join(waits)}{_awaited(result)}{_named(result) if named else ''}" if waits else ""


def _pods(result: Result, most: int = 5) -> str:
    """` (slurmd Pods: slurm-cpu-020-007 CrashLoopBackOff (6 restarts), 1 starting)`: what READY still waits for,
    the first `most` failing Pods by name, as the Nodes joining are named ("" for none)."""
    return f" (slurmd Pods: {listed(list(result.not_ready_pods), most)})" if result.not_ready_pods else ""


def _awaited(result: Result) -> str:
    """` (waiting for ml/x on g1 to end)`: what the target's rows found may clear by itself."""
    awaits = [s.awaits for s in result.symptoms if s.awaits]
    return f" (waiting for {'; '.join(awaits)})" if awaits else ""


def _named(result: Result) -> str:
    """` (Nodes joining: g1 registered 2026-12-05T06:01:02Z, not Ready (Ready=False: KubeletNotReady); ...)`, and
    alike the Nodes `overdue`."""
    return "".join(f" (Nodes {what}: {said})" for what, nodes in (("joining", joining(result)), (LATE, overdue(result)))
                   if (said := _registered(nodes)))


def _registered(nodes: list[Unready], most: int = 5) -> str:
    """`g1 registered 2026-12-05T06:01:02Z, not Ready (Ready=False: KubeletNotReady); ...`: the first `most`, oldest
    first, and how many more ("" for none)."""
    nodes = sorted(nodes, key=lambda u: (u.created, u.name))
    said = [f"{u.name} registered {u.created:%Y-%m-%dT%H:%M:%SZ}, {_state(u)}" for u in nodes[:most]]
    more = f"; and {len(nodes) - most} more" if len(nodes) > most else ""
    return "; ".join(said) + more


def _state(u: Unready) -> str:
    """A Node joining as the deadline line says it: its Ready condition when not Ready (its not-ready taint goes with
    it), else its start-up taints."""
    if u.status != "True":
        return not_ready(u.status, u.reason)
    return "Ready, carrying " + ", ".join(u.starting)


def converged(report: Report) -> bool:
    return not report.errors and bool(report.results) and not any(pending(r) for r in report.results)


def stuck(report: Report) -> list[str]:
    """Why waiting cannot converge: errors waiting cannot clear (a 403, a missing API), each target's dead ends
    that hold back a condition it still waits for, and its Nodes `overdue` (waited for as long as a Node may take to
    join)."""
    return [e for e in report.errors if isinstance(e, Lasting)] + [
        f"{r.name}: {s.dead_end.why}" for r in report.results if (waits := pending(r))
            for s in r.symptoms if s.dead_end
            and any(p == held or p.startswith(held + " ") for p in waits for held in s.dead_end.holds)] + [
        f"{r.name}: {listed([u.name for u in late], 3)} {LATE}, the longest a Node may take to join"
        for r in report.results if (late := overdue(r))]


def settled(report: Report) -> list[str]:
    """Why waiting could not have changed a converged report: its dead ends (a replicas cap)."""
    return [f"{r.name}: {s.dead_end.why}" for r in report.results for s in r.symptoms if s.dead_end]
