"""`check --wait` on watches: one list per resource, then only the changes, through serve's reflectors, cache and
judgement (the same pipeline as a check), so a wait answers the moment the binding converges (converge's rule,
as the polling wait in sunkcheck.runner uses it)."""

from __future__ import annotations

import datetime
import gc
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from sunkcheck import source
from sunkcheck.converge import converged, progress, stuck
from sunkcheck.model import InputError, Report, Source
from sunkcheck.serve.watch import WATCH_ROLE, Health
from sunkcheck.target import Target

if TYPE_CHECKING:
    from sunkcheck.serve.cache import Cache


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
    from sunkcheck.serve.loop import DEBOUNCE, MAX_DELAY, judge
    from sunkcheck.serve.service import Watches, watched_sources

    start = time.monotonic()
    try:
        kube = Kube(access.kubeconfig, context, access.request_timeout)
        target, sources = watched_sources(kube, target, all_namespaces)
    except InputError:
        return None
    gc.enable()  # objects replaced as their changes arrive: collected as they go, as serve's are
    # the Nodes and other Pods the read plan names, as serve watches them; every Pod's watch, once made, kept
    watches = Watches(kube, target, sources, keep_every_pod=True)
    cache = watches.cache
    watches.start()
    origin = Source("live", kube.context, kube.server)
    said, shown = "", 0.0
    try:
        while True:
            # every list done and its watch answered (or a read failed, as a check's may): a check would report now
            while not _answered(watches.health) and time.monotonic() - start < seconds:
                if cache.take(0.1):  # the Node watches start as soon as the plan names them, as serve's
                    cache.snapshot(target, early=True)
                    watches.follow(None)
            health = watches.health
            if any(h.lasting and not h.synced for h in health.values()):
                # an error waiting cannot clear: a poll reports it as a check does, and stops at once (converge.stuck)
                raise PollInstead(time.monotonic() - start)
            refused = sorted(name for name, h in health.items() if h.watch_refused)
            if refused:
                raise WatchForbidden(refused, interval, time.monotonic() - start)
            snapshot = cache.snapshot(target)
            if watches.follow(cache.pod_nodes or frozenset()) and time.monotonic() - start < seconds:
                continue  # judged once the watches the plan now names are listed
            checked_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            report = replace(judge(cache, target, health, snapshot=snapshot), sources=(origin,), checked_at=checked_at)
            if not report.results and report.errors:  # no target read (a NodeSet not there, its list failing): a poll
                # says it as check does
                raise PollInstead(time.monotonic() - start)
            if converged(report):
                return report, True
            elapsed = time.monotonic() - start
            if seconds - elapsed < 1e-3 or stuck(report):  # within a millisecond: a float sum of waits may stop short
                return unread(report, watches.health), False
            if progress(report) != said or elapsed - shown >= interval:
                on_poll(report, elapsed)
                said, shown = progress(report), elapsed
            if _changed(cache, max(min(shown + interval, seconds) - elapsed, 1e-3)):  # a float sum never stalls it
                burst = time.monotonic()  # a burst (Pods turning Ready one by one) is one judgement
                while time.monotonic() - burst < MAX_DELAY and _changed(cache, DEBOUNCE):
                    pass
    finally:
        watches.close()


def _answered(health: dict[str, Health]) -> bool:
    """Every list done and its watch answered, or a read failed: a check would report now."""
    return all(h.errors or (h.synced and h.watch_refused is not None) for h in health.values())


def unread(report: Report, health: dict[str, Health]) -> Report:
    """`report` with an error per resource whose watch has failed since it last heard from the server (the server
    gone, say): the state at the end could not be read, so the answer is unknown, and says why."""
    down: dict[str, str] = {}
    for name, h in health.items():
        if h.down:
            kind = name.partition("/")[0]
            down.setdefault(kind, f"{kind}: not read at the end, its watch failing: {h.last_error}")
    return replace(report, errors=(*report.errors, *down.values())) if down else report


def _changed(cache: Cache, seconds: float) -> bool:
    """Wait up to `seconds` for a change to the cache: whether one came (the one wait of a watched --wait)."""
    return bool(cache.take(max(seconds, 0.0)))
