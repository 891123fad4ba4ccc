"""`check --wait` on watches: one list per resource, then only the changes, through serve's reflectors, cache and
judgement (the same pipeline as a check), so a wait answers the moment the binding converges (converge's rule,
as the polling wait in sunkcheck.runner uses it)."""

from __future__ import annotations

import datetime
import gc
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from sunkcheck import objects as o
from sunkcheck import source
from sunkcheck.collect import pods as collect_pods
from sunkcheck.converge import Clock, ages_in, converged, progress, stuck
from sunkcheck.model import InputError, Report, Source, Status
from sunkcheck.serve.watch import WATCH_ROLE, Fault, Health
from sunkcheck.snapshot import Snapshot
from sunkcheck.target import Target

if TYPE_CHECKING:
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.service import Watches

SETTLE = 5.0
"""Seconds the workloads' status and the Nodes must stay as they are before a wait reads every other workload's
Pod, or every Node: while Nodes join, FEASIBLE trails them by a reconcile, and neither is what is missing."""
ANSWER_WAIT = 5.0
"""Seconds a watch may wait for its answer (status line and headers) with its source still counted as read: an API
server answers at once, or within 3 s where its watch cache trails the resourceVersion asked. Longer, the source is
not read (said in the progress line, and at the end)."""
LOOK_AGAIN = 1.0
"""Seconds between judgements while an answer waits for a source failing or not answered to be current again (heard
from again: that need change nothing in the cache)."""


class PollInstead(Exception):
    """The watches cannot settle this wait for a reason a poll reports itself, as a check does (a read failed in a way
    waiting cannot clear; no target at all): poll, adding nothing, for the seconds left after `elapsed`."""

    def __init__(self, elapsed: float):
        super().__init__(elapsed)
        self.elapsed = elapsed


class WatchForbidden(Exception):
    """A watch answered 403 (a role that allows get and list, not watch): said in one line (the message), then a
    poll for the seconds left after `elapsed`."""

    def __init__(self, sources: list[str], interval: float, elapsed: float):
        super().__init__(f"--wait: watching is not allowed (403 on the watch of {', '.join(sources)}; `{WATCH_ROLE}` "
                         f"prints the role with watch): polling every {interval:g}s instead")
        self.elapsed = elapsed


def watched(access: source.Access, context: str | None, target: Target, all_namespaces: bool, seconds: float,
            interval: float, on_poll: Callable[[Report, float], None]) -> tuple[Report, bool] | None:
    """`wait` on serve's watch-fed cache: one list per resource, then only the changes, judged again after each
    burst (debounced as serve does), so it returns the moment the binding converges or reaches a dead end, or
    at `seconds`. `on_poll` is told when the progress changes, and every `interval` seconds otherwise.
    None where the watches cannot start (the poll says why, each time); PollInstead where they cannot settle it;
    WatchForbidden on a 403 to a watch."""
    from sunkcheck.collect.kube import Kube
    from sunkcheck.serve.loop import judge
    from sunkcheck.serve.service import Watches, watched_sources

    start = time.monotonic()
    try:
        kube = Kube(access.kubeconfig, context, access.request_timeout)
        target, sources = watched_sources(kube, target, all_namespaces)
    except InputError:
        return None
    gc.enable()  # objects replaced as their changes arrive: collected as they go, as serve's are
    # the Nodes and other Pods the read plan names, as serve watches them; every Pod's watch, once made, kept
    watches = Watches(kube, target, sources, waiting=True)
    cache = watches.cache
    watches.start()
    origin = Source("live", kube.context, kube.server)
    said, shown, still, ending, clock = "", 0.0, _Still(), False, Clock()
    try:
        while True:
            _listed(watches, target, start + seconds)
            health = watches.health
            _settles(health, interval, time.monotonic() - start)
            snapshot = cache.snapshot(target)
            planned, now = cache.pod_nodes or frozenset(), time.monotonic()
            due = whole_due(_whole(watches, planned), _current(snapshot), still.seconds(snapshot, now),
                            0.0 if ending else seconds - (now - start))
            if watches.follow(planned if not due else None, every_node=not due) and time.monotonic() - start < seconds:
                continue  # judged once the watches the plan now names are listed
            checked_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            # the Nodes' age and the graces by the API server's clock
            read = snapshot.dated(kube.clock.now(), kube.clock.latest())
            report = clock.stamp(replace(judge(cache, target, health, snapshot=read), sources=(origin,),
                                         checked_at=checked_at), time.monotonic())
            if not report.results and report.errors:  # no target read (a NodeSet not there, its list failing): a poll
                # says it as check does
                raise PollInstead(time.monotonic() - start)
            if due and (converged(report) or stuck(report)):  # an answer is given with the Pods a check reads
                ending = True
                continue
            # nor with a source that may trail the server: a watch about to be answered is waited for, and one failing
            # or never answered holds the answer back until it is current again, or the deadline says it was not read
            answered = converged(report) or stuck(report)
            if answered and _answering(watches.health) and time.monotonic() - start < seconds:
                _answers(watches.health, start + seconds)
                continue  # judged again with what they brought
            behind = answered and bool(_behind(watches.health, time.monotonic()))
            if converged(report) and not behind:
                return report, True
            elapsed = time.monotonic() - start
            if seconds - elapsed < 1e-3 or (stuck(report) and not behind):  # within a millisecond: a float sum of
                return unread(report, cache, target, read, watches.health), False  # waits may stop short
            counted = _as_read_now(report, cache, target, read, health)
            counted = _held_back(counted) if due else counted
            if progress(counted) != said or elapsed - shown >= interval:
                on_poll(counted, elapsed)
                said, shown = progress(counted), elapsed
            # judged again when a whole read is due, and when a Node ages past a rule of time (no change says so)
            wake = min(shown + interval, seconds, now - start + due if due else seconds, elapsed + ages_in(report),
                       elapsed + LOOK_AGAIN if behind else seconds)
            _burst(cache, max(wake - elapsed, 1e-3))  # a float sum never stalls it
    finally:
        watches.close()


def _listed(watches: Watches, target: Target, until: float) -> None:
    """Wait until every list is done and its watch answered (or a read failed, as a check's may: a check would report
    now), or time.monotonic() is `until`. The Node watches start as soon as the plan names them, as serve's; a read of
    every Node waits for a judgement (whole_due)."""
    while not _answered(watches.health) and time.monotonic() < until:
        if watches.cache.take(0.1):
            watches.cache.snapshot(target, early=True)
            watches.follow(None, every_node=False)


def _settles(health: dict[str, Health], interval: float, elapsed: float) -> None:
    """PollInstead for an error waiting cannot clear (a poll reports it as a check does, and stops at once:
    converge.stuck); WatchForbidden where a watch was answered 403."""
    if any(h.lasting and not h.synced for h in health.values()):
        raise PollInstead(elapsed)
    refused = sorted(name for name, h in health.items() if h.watch_refused)
    if refused:
        raise WatchForbidden(refused, interval, elapsed)


def _burst(cache: Cache, seconds: float) -> None:
    """Wait up to `seconds` for a change, then for the burst it opens to pass (Pods turning Ready one by one are one
    judgement: debounced as serve's, for MAX_DELAY at most)."""
    from sunkcheck.serve.loop import DEBOUNCE, MAX_DELAY

    if _changed(cache, seconds):
        burst = time.monotonic()
        while time.monotonic() - burst < MAX_DELAY and _changed(cache, DEBOUNCE):
            pass


def whole_due(whole: bool, current: bool, still: float, left: float) -> float:
    """Seconds until a wait makes the read of the whole cluster the read plan names (`whole`; 0: now, or none).

    That is one list of every Pod, or of every Node (FEASIBLE 0 beside Nodes of the pool), which a wait makes only
    once the workloads' status is current (`current`) and it and the Nodes have stayed as they are for SETTLE
    seconds (`still`, so far): while Nodes join, the status trails them (FEASIBLE 0, the plan naming every new Node's
    Pods), though neither read is what holds them back. And before it answers: with the wait's last SETTLE seconds
    (`left`), or at once (0) where it is about to end, so that its answer is a check's."""
    if not whole:
        return 0.0
    return max(min(left - SETTLE, SETTLE - still if current else math.inf), 0.0)


def _whole(watches: Watches, planned: frozenset[str]) -> bool:
    """Whether the read plan names a read of the whole cluster not watched yet: other workloads' Pods on more than
    BY_NODE_MAX Nodes (a watch per Node beneath: at once), or every Node beside those it selects. Either watch,
    once made, is kept while the plan names it (every Pod's, whatever it names)."""
    from sunkcheck.serve.sources import NODES_EVERY, OTHERS

    watched = {r.source.name for r in watches.reflectors}
    wanted = {s.name for s in watches.cache.node_watches or ()}
    every_node = len(wanted) > 1 and NODES_EVERY in wanted - watched
    return every_node or (len(planned) > collect_pods.BY_NODE_MAX and OTHERS not in watched)


class _Still:
    """How long the workloads (their generation and status) and the Nodes (their names and spec: taints, cordons)
    have stayed as they are, from one snapshot to the next. A Node's status is left out: 2,000 kubelets report
    every few seconds between them."""

    def __init__(self) -> None:
        self.shape: tuple = ()
        self.since = 0.0

    def seconds(self, snapshot: Snapshot, now: float) -> float:
        shape = (tuple((o.meta(w).get("generation"), o.status(w)) for w in _workloads(snapshot)),
                 tuple((o.name(n), o.spec(n)) for n in snapshot.nodes or ()))
        if shape != self.shape:
            self.shape, self.since = shape, now
        return now - self.since


def _held_back(report: Report) -> Report:
    """`report` as a progress line tells it while other workloads' Pods wait for the state to settle: without the
    pods step they leave unknown, nor the error line saying so (not read by choice, for now; the answer reads them)."""
    results = tuple(replace(r, steps=tuple(s for s in r.steps if s.name != "pods" or s.status is not Status.UNKNOWN))
                    for r in report.results)
    from sunkcheck.pipeline import uncaptured

    return replace(report, results=results, errors=tuple(e for e in report.errors if e != uncaptured("pods", "pods")))


def _workloads(snapshot: Snapshot) -> tuple[dict, ...]:
    return (*(snapshot.nodesets or ()), *(snapshot.daemonsets or ()))


def _current(snapshot: Snapshot) -> bool:
    """Whether every workload's status describes its latest spec."""
    from sunkcheck.plan import Plan

    return all(Plan.current(w) for w in _workloads(snapshot))


def _answered(health: dict[str, Health]) -> bool:
    """Every list done and its watch answered, or a read failed (a watch not answered for ANSWER_WAIT among them): a
    check would report now."""
    now = time.monotonic()
    return all(h.errors or (h.synced and h.watch_refused is not None) or _unanswered(h, now, ANSWER_WAIT)
               for h in health.values())


def _answering(health: dict[str, Health]) -> bool:
    """Whether a watch waits for its answer, for less than ANSWER_WAIT so far."""
    now = time.monotonic()
    return any(h.awaiting is not None and _unanswered(h, now, ANSWER_WAIT) is None for h in health.values())


def _answers(health: dict[str, Health], until: float) -> None:
    """Wait until no watch waits for its answer for less than ANSWER_WAIT, or time.monotonic() is `until`."""
    while _answering(health) and time.monotonic() < until:
        time.sleep(0.02)  # the watches' health alone is looked at: cheap


def _unanswered(health: Health, now: float, longer: float) -> float | None:
    """Seconds its watch has waited for its answer, if more than `longer`; else None."""
    asked = health.awaiting
    return None if asked is None or now - asked < longer else now - asked


def _behind(health: dict[str, Health], now: float) -> dict[str, str]:
    """The sources whose state may trail the API server's, each with why: its watch failed since it last heard (the
    server gone, say), or its watch has waited for its answer for ANSWER_WAIT seconds or more."""
    found = {}
    for name, h in health.items():
        if h.down:
            found[name] = f"its watch failing: {h.last_error}"
        elif (waited := _unanswered(h, now, ANSWER_WAIT)) is not None:
            found[name] = f"its watch not answered for {waited:.0f}s"
    return found


def unread(report: Report, cache: Cache, target: Target, read: Snapshot, health: dict[str, Health]) -> Report:
    """`report`, unless a watch has failed since it last heard from the server (the server gone, say) or has waited
    for its answer for ANSWER_WAIT seconds or more: the state at the end could not be read, so the targets are judged
    as serve judges them then, each resource not read an error line saying why, its data left out (the targets
    UNKNOWN, no fix written from what was read before), and no checked_at: nothing was checked at the end; its data
    was last current when those watches last heard."""
    from sunkcheck.serve.loop import judge, known_at

    down = {name: Fault(f"not read at the end, {why}") for name, why in _behind(health, time.monotonic()).items()}
    if not down:
        return report
    now = datetime.datetime.now(datetime.UTC).timestamp()  # the calendar's: `time` may be a wait's virtual clock
    return replace(judge(cache, target, health, snapshot=read, faults=down, previous=report), sources=report.sources,
                   failing=tuple(sorted(down)), current_at=known_at(health, down, None, now))


def _as_read_now(report: Report, cache: Cache, target: Target, read: Snapshot, health: dict[str, Health]) -> Report:
    """`report` as a progress line tells it: each watch waiting for its answer for ANSWER_WAIT seconds or more an
    error line; and while a watch has failed since it last heard from the server (the API server gone), judged
    without what those sources held, so the steps they feed are unknown, never the counts read before as if they
    were current, their errors one line saying since when (`outage`)."""
    from sunkcheck.serve.loop import judge

    unanswered = tuple(dict.fromkeys(f"{name.partition('/')[0]}: not read now, {why}"  # by resource, as unread's
                                     for name, why in _behind(health, time.monotonic()).items() if not health[name].down))
    lost = outage(health)
    if not lost:
        return replace(report, errors=(*report.errors, *unanswered))
    down = {name: Fault(f"not read now, its watch failing: {h.last_error}") for name, h in health.items() if h.down}
    judged = judge(cache, target, health, snapshot=read, faults=down, previous=report)
    kinds = {name.partition("/")[0] for name in down}
    return replace(judged, errors=(*(e for e in report.errors if e.partition(":")[0] not in kinds), lost, *unanswered))


def outage(health: Mapping[str, Health]) -> str:
    """What the watches cannot read now, since when and why, one part per error (`nodes, pods not read since
    12:41:01 UTC, their watches failing: ...`); "" while each has heard from the server since it last failed. A
    progress line says it in place of the counts read before, which are no longer the cluster's."""
    down: dict[str, tuple[list[str], float]] = {}  # error -> the sources failing with it, since when (time.time())
    for name, h in sorted(health.items()):
        if h.down and (at := h.failing_at()) is not None:
            names, since = down.get(h.said.error, ([], at))
            down[h.said.error] = [*names, name], min(since, at)
    return "; ".join(_unread_since(names, len(health), since, error) for error, (names, since) in down.items())


def _unread_since(names: list[str], watched: int, since: float, error: str) -> str:
    """One error's part of `outage`: the sources failing with it, by what they read (`the API server` where they are
    every one of the `watched`), since `since` (time.time(): UTC, by this machine's clock)."""
    every = len(names) == watched
    what = "the API server" if every else ", ".join(dict.fromkeys(name.partition("/")[0] for name in names))
    whose = "every watch" if every else "its watch" if len(names) == 1 else "their watches"
    return f"{what} not read since {datetime.datetime.fromtimestamp(since, datetime.UTC):%H:%M:%S} UTC, {whose} " \
           f"failing: {error}"


def _changed(cache: Cache, seconds: float) -> bool:
    """Wait up to `seconds` for a change to the cache: whether one came (the one wait of a watched --wait)."""
    return bool(cache.take(max(seconds, 0.0)))
