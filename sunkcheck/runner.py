"""One check run across one or more kubeconfig contexts, and `--wait` until convergence: on watches (one list,
then the changes), or polling where watching is not allowed."""

from __future__ import annotations

import datetime
import gc
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable

from sunkcheck import source
from sunkcheck.converge import Clock, ages_in, converged, stuck
from sunkcheck.model import InputError, Lasting, Report, Source, Unchecked, unknown
from sunkcheck.pipeline import diagnose, pinned
from sunkcheck.target import Target, read_on

MAX_CLUSTERS_AT_ONCE = 8


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
        read: Source | None = None
        try:
            templates = tuple(e.nodeset_object(target.namespace or "default") for e in predicted or ())
            loaded = source.load(replace(access, context=context), reading, all_namespaces, record=save is not None,
                                 predicted=templates)
            read = loaded.source
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
            report = diagnose(loaded.snapshot, loaded.target, loaded.errors, loaded.slurm_error, loaded.read_namespace,
                              loaded.unread, every_nodeset=loaded.every_nodeset)
            report = replace(report, errors=report.errors + unsaved, sources=(loaded.source,) if loaded.source else (),
                             failing=unread(loaded))
            if context is not None and access.snapshot is None:  # a context named: the fixes act on it alone
                report = pinned(report, context)
        except InputError as e:
            e.source = e.source or read  # a missing object or flag found in what was read: `sources` says where
            if not several:
                raise
            error = _in_context(context, Lasting(e) if e.lasting else str(e), e.source)
            return Report((), (error,), (e.source,) if e.source else (), unchecked=(Unchecked(context or "", error),))
        if not several:
            return report
        return replace(report, results=tuple(replace(r, context=context or "") for r in report.results),
                       errors=tuple(_in_context(context, e, read) for e in report.errors))

    checked_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    if not several:
        return replace(one(contexts[0]), checked_at=checked_at)
    with ThreadPoolExecutor(min(MAX_CLUSTERS_AT_ONCE, len(contexts))) as pool:
        reports = list(pool.map(one, contexts))
    results = sorted((r for rep in reports for r in rep.results), key=lambda r: (r.context, r.namespace, r.name))
    return Report(tuple(results), tuple(e for rep in reports for e in rep.errors),
                  tuple(s for rep in reports for s in rep.sources), checked_at,
                  unchecked=tuple(c for rep in reports for c in rep.unchecked),
                  current_at=min((rep.current_at for rep in reports if rep.current_at is not None), default=None),
                  failing=tuple(sorted({name for rep in reports for name in rep.failing})))


def last_current(report: Report) -> float | None:
    """When what `report` says was last current (Unix time): its own current_at, else when it was checked; None for
    a report that checked nothing."""
    if report.current_at is not None or not report.checked_at:
        return report.current_at
    return datetime.datetime.fromisoformat(report.checked_at).timestamp()


def unread(loaded: source.Loaded) -> tuple[str, ...]:
    """The resources a live read failed to read at all (not those read in part, as a Role allows: the NodeSets of
    one namespace): the steps they feed are UNKNOWN, and the textfile says sunkcheck_up 0, as serve's does."""
    return tuple(sorted(name for name in loaded.unread if getattr(loaded.snapshot, name, None) is None))


def _in_context(context: str | None, error: str, read: Source | None = None) -> str:
    """An error line of one of several contexts, still Lasting if it was; named once: a line that says where it
    was `read` (a missing object's, a fatal read's) is left as it is."""
    if read is not None and read.type == "live" and read_on(read.context, read.server) in error:
        return error
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
    start, clock = time.monotonic(), Clock()
    report = Report(())
    while True:
        try:
            report = clock.stamp(run(), time.monotonic())
        except InputError as e:
            error = Lasting(e) if e.lasting else str(e)
            # the targets of the last poll that read them stay, each UNKNOWN: none of their state is current, as
            # of when that poll read it
            report = Report(tuple(unknown(r, error) for r in report.results), (error,), report.sources,
                            current_at=last_current(report))
        if converged(report):
            return report, True
        elapsed = time.monotonic() - start
        if elapsed >= seconds or stuck(report):
            return report, False
        on_poll(report, elapsed)
        gc.collect()  # the executable runs without automatic collection: one sweep per poll bounds memory
        time.sleep(min(interval, max(seconds - elapsed, 0), ages_in(report)))  # polled again when a Node ages
