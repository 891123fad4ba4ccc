"""One check run across one or more kubeconfig contexts, and `--wait` until convergence: on watches (one list,
then the changes), or polling where watching is not allowed."""

from __future__ import annotations

import datetime
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Callable

from sunkcheck import source
from sunkcheck.converge import converged, progress, stuck
from sunkcheck.model import InputError, Lasting, Report, Source
from sunkcheck.pipeline import diagnose
from sunkcheck.target import Target

MAX_CLUSTERS_AT_ONCE = 8
# What the last check read outlives it: a one-shot run exits without freeing it (cli._exit_now), and freeing
# thousands of parsed objects costs ~2% of a big live check; --wait's next poll replaces it.
_last_read: list[source.Loaded] = []


def check(access: source.Access, contexts: list[str | None], target: Target, all_namespaces: bool,
          save: Path | None = None, predicted: list | None = None, force: bool = False) -> Report:
    """Diagnose every context concurrently into one report; with several, a context that cannot be
    checked becomes an error line and the others still report. `predicted` NodeSets (from values)
    replace the deployed ones: a what-if before deploying. `save` records what was read (replacing a
    snapshot there only with `force`); a save that fails is an error line beside the diagnosis."""
    from sunkcheck import snapshot

    several = len(contexts) > 1

    def save_dir(context: str | None) -> Path:
        assert save is not None  # called only with --save
        return save / context if several and context else save

    if save is not None:
        if access.snapshot is not None:
            raise InputError("--save records a live run; this one replays a snapshot already")
        for context in contexts:  # refused before the cluster is read
            snapshot.check_destination(save_dir(context), force)
    # the deployed NodeSet may not exist yet: read them all, the prediction names its own
    reading = replace(target, nodeset=None) if predicted is not None else target

    def one(context: str | None) -> Report:
        try:
            templates = tuple(e.nodeset_object(target.namespace or "default") for e in predicted or ())
            loaded = source.load(replace(access, context=context), reading, all_namespaces, record=save is not None,
                                 predicted=templates)
            if predicted is not None:
                from sunkcheck.values.whatif import predict

                # where `helm install` without -n puts the release: the context's namespace (a replay: the one read)
                default = loaded.target.namespace or loaded.read_namespace
                loaded = replace(loaded, snapshot=predict(loaded.snapshot, predicted, target.namespace, default),
                                 target=replace(loaded.target, nodeset=target.nodeset))
            unsaved: tuple[str, ...] = ()
            if save is not None:
                try:
                    record(save_dir(context), loaded, force)
                except snapshot.SaveError as e:
                    unsaved = (f"--save: {e}",)
            _last_read.append(loaded)
            report = diagnose(loaded.snapshot, loaded.target, loaded.errors, loaded.slurm_error, loaded.read_namespace,
                              loaded.unread)
            report = replace(report, errors=report.errors + unsaved, sources=(loaded.source,) if loaded.source else ())
        except InputError as e:
            if not several:
                raise
            return Report((), (_in_context(context, Lasting(e) if e.lasting else str(e)),), (e.source,) if e.source else (),
                          unchecked=(context or "",))
        if not several:
            return report
        return replace(report, results=tuple(replace(r, context=context or "") for r in report.results),
                       errors=tuple(_in_context(context, e) for e in report.errors))

    _last_read.clear()
    checked_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if not several:
        return replace(one(contexts[0]), checked_at=checked_at)
    with ThreadPoolExecutor(min(MAX_CLUSTERS_AT_ONCE, len(contexts))) as pool:
        reports = list(pool.map(one, contexts))
    results = sorted((r for rep in reports for r in rep.results), key=lambda r: (r.context, r.namespace, r.name))
    return Report(tuple(results), tuple(e for rep in reports for e in rep.errors),
                  tuple(s for rep in reports for s in rep.sources), checked_at,
                  unchecked=tuple(c for rep in reports for c in rep.unchecked))


def _in_context(context: str | None, error: str) -> str:
    """An error line of one of several contexts, still Lasting if it was."""
    return type(error)(f"context {context}: {error}")


def record(directory: Path, loaded: source.Loaded, force: bool = False) -> list[Path]:
    """Write what a live run read as a snapshot (with its meta.json)."""
    from sunkcheck import snapshot

    if loaded.meta is None:
        raise InputError("--save records a live run; this one replays a snapshot already")
    return snapshot.save(directory, loaded.snapshot, loaded.meta, force)


def wait(run: Callable[[], Report], seconds: float, interval: float,
         on_poll: Callable[[Report, float], None]) -> tuple[Report, bool]:
    """Poll `run` until the binding converges, reaches a dead end (`converge.stuck`: waiting cannot help) or
    `seconds` pass: (last report, converged?). A poll that cannot check (say, the API server restarting) counts as
    not converged yet."""
    start = time.monotonic()
    while True:
        try:
            report = run()
        except InputError as e:
            report = Report((), (Lasting(e) if e.lasting else str(e),))
        if converged(report):
            return report, True
        elapsed = time.monotonic() - start
        if elapsed >= seconds or stuck(report):
            return report, False
        on_poll(report, elapsed)
        gc.collect()  # the executable runs without automatic collection: one sweep per poll bounds memory
        time.sleep(min(interval, max(seconds - elapsed, 0)))


class WatchRefused(Exception):
    """A watch answered 403 (a role that allows get and list only), or a list failed in a way waiting cannot clear
    (no message: the poll says it): poll for the seconds left after `elapsed`."""

    def __init__(self, message: str, elapsed: float):
        super().__init__(message)
        self.elapsed = elapsed


def watched(access: source.Access, context: str | None, target: Target, all_namespaces: bool, seconds: float,
            interval: float, on_poll: Callable[[Report, float], None]) -> tuple[Report, bool] | None:
    """`wait` on serve's watch-fed cache: one list per resource, then only the changes, judged again after each
    burst (debounced as serve does), so it returns the moment the binding converges or reaches a dead end, or
    at `seconds`. `on_poll` is told when the progress changes, and every `interval` seconds otherwise.
    None where the watches cannot start (the poll says why, each time); WatchRefused on a 403 to a watch."""
    from sunkcheck.collect.kube import Kube
    from sunkcheck.serve.cache import Cache
    from sunkcheck.serve.loop import DEBOUNCE, MAX_DELAY, judge
    from sunkcheck.serve.service import watched_sources
    from sunkcheck.serve.watch import Reflector

    start = time.monotonic()
    try:
        kube = Kube(access.kubeconfig, context, access.request_timeout)
        target, sources = watched_sources(kube, target, all_namespaces)
    except InputError:
        return None
    gc.enable()  # objects replaced as their changes arrive: collected as they go, as serve's are
    cache, stop = Cache(sources), threading.Event()
    reflectors = [Reflector(kube, s, cache, stop) for s in sources]
    for r in reflectors:
        r.thread.start()
    health = {r.source.name: r.health for r in reflectors}
    origin = Source("live", kube.context, kube.server)
    said, shown = "", 0.0
    try:
        # every list done and its watch answered (or a read failed, as a check's may): a check would report now
        while not all(h.errors or (h.synced and h.watch_refused is not None) for h in health.values()) \
                and time.monotonic() - start < seconds:
            cache.take(0.1)
        if any(h.lasting and not h.synced for h in health.values()):
            # an error waiting cannot clear: a poll reports it as a check does, and stops at once (converge.stuck)
            raise WatchRefused("", time.monotonic() - start)
        while True:
            refused = sorted(name for name, h in health.items() if h.watch_refused)
            if refused:
                raise WatchRefused(f"--wait: watching is not allowed (403 on the watch of {', '.join(refused)}): "
                                   f"polling every {interval:g}s instead", time.monotonic() - start)
            checked_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            report = replace(judge(cache, target, health), sources=(origin,), checked_at=checked_at)
            if not report.results and stuck(report):  # no target at all (a NodeSet not there): a poll says it as check does
                raise WatchRefused("", time.monotonic() - start)
            if converged(report):
                return report, True
            elapsed = time.monotonic() - start
            if seconds - elapsed < 1e-3 or stuck(report):  # within a millisecond: a float sum of waits may stop short
                return report, False
            if progress(report) != said or elapsed - shown >= interval:
                on_poll(report, elapsed)
                said, shown = progress(report), elapsed
            if _changed(cache, max(min(shown + interval, seconds) - elapsed, 1e-3)):  # a float sum never stalls it
                burst = time.monotonic()  # a burst (Pods turning Ready one by one) is one judgement
                while time.monotonic() - burst < MAX_DELAY and _changed(cache, DEBOUNCE):
                    pass
    finally:
        stop.set()


def _changed(cache, seconds: float) -> bool:
    """Wait up to `seconds` for a change to the cache: whether one came (the one wait of a watched --wait)."""
    return bool(cache.take(max(seconds, 0.0)))
