"""`check --wait` on the command line: its durations checked, watches or polling chosen, and its progress and
last line on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from sunkcheck.model import InputError, Report
from sunkcheck.source import Access
from sunkcheck.target import Target
from sunkcheck.text import safe

MIN_INTERVAL = 0.1  # seconds between --wait's polls, at least: the API server's load


def durations(wait: str, interval: str | None, replay: bool) -> tuple[float, float]:
    """--wait's and --interval's seconds (0 without --wait), or the usage error they make."""
    from sunkcheck import duration

    wait_s, interval_s = duration.parse(wait, "--wait"), duration.parse(interval or "10s", "--interval")
    if interval is not None and not wait_s:
        raise InputError("--interval sets the time between --wait's polls: it needs --wait DURATION")
    if interval is not None and not 0 < interval_s <= wait_s:  # 0 would poll the API server without a pause
        raise InputError(f"--interval {interval.strip()}: the time between polls must be above 0 and at most "
                         f"--wait ({duration.shown(wait_s)})")
    if interval is not None and interval_s < MIN_INTERVAL:  # said, not raised to it in silence
        raise InputError(f"--interval {interval.strip()}: the time between polls must be at least "
                         f"{duration.shown(MIN_INTERVAL)}")
    if wait_s and replay:
        raise InputError("--wait polls a live cluster; a snapshot never changes")
    return wait_s, interval_s


def until_converged(run_once: Callable[[], Report], access: Access, contexts: list[str | None], target: Target,
                    all_namespaces: bool, save: Path | None, seconds: float, interval: float, verbosity: int) -> Report:
    """The report --wait ends with; on stderr its progress, and why it stopped when it did not converge."""
    from sunkcheck import duration
    from sunkcheck.converge import progress, waiting
    from sunkcheck.verbose import tracing

    with tracing(verbosity, progress=False), _Progress() as polls:
        report, converged = _wait(run_once, access, contexts, target, all_namespaces, save, seconds, interval,
                                  polls.show)
    if not converged:  # each target still waiting is at least WARNING, as the run is: its textfile status says so
        # messages naming the cluster's Nodes and reasons, inert in every output as the JSON `errors` are: `jq -r`
        # prints them as the last line on stderr reads
        report = replace(report, never_converged=safe(progress(report, named=True), one_line=True),
                         results=tuple(replace(r, unconverged=safe(waiting(r, named=True), one_line=True))
                                       for r in report.results))
    if not _say_why_it_ended(report, converged, polls.count) and not converged:
        sys.stderr.write(f"sunkcheck: timed out after {duration.shown(seconds)}: never converged: "
                         f"{report.never_converged}\n")
    return report


def _wait(run_once: Callable[[], Report], access: Access, contexts: list[str | None], target: Target,
          all_namespaces: bool, save: Path | None, seconds: float, interval: float,
          show: Callable[[Report, float], None]) -> tuple[Report, bool]:
    """--wait on watches (one list, then the changes) where it can: one cluster, nothing to save each poll and no
    Slurm to ask; polling otherwise, or for the time left when the role does not allow watching."""
    from sunkcheck import runner
    from sunkcheck.serve import wait as watching

    if len(contexts) == 1 and save is None and target.slurm is None:
        try:
            found = watching.watched(access, contexts[0], target, all_namespaces, seconds, interval, show)
        except watching.WatchForbidden as e:
            sys.stderr.write(f"sunkcheck: {e}\n")
            seconds = max(seconds - e.elapsed, 0.0)
        except watching.PollInstead as e:  # the poll says why
            seconds = max(seconds - e.elapsed, 0.0)
        else:
            if found is not None:
                return found
    return runner.wait(run_once, seconds, interval, show)


def _say_why_it_ended(report: Report, converged: bool, polls: int) -> bool:
    """--wait ended at a dead end (or converged beside one, a replicas cap): one line saying why waiting could not
    help; converged without one, a line saying so; whether a line was said."""
    from sunkcheck.converge import not_ready_at_end, settled, stuck

    why = settled(report) if converged else stuck(report)
    when = "at the first read" if not polls else f"after {polls + 1} reads"
    if why:
        sys.stderr.write(f"sunkcheck: --wait {'returned' if converged else 'stopped'} {when}: waiting cannot help: "
                         f"{safe('; '.join(why), one_line=True)}\n")
    elif converged:  # its status is the rows' it found: nothing was left to wait for
        down = not_ready_at_end(report)
        sys.stderr.write(f"sunkcheck: --wait returned {when}: converged, every count agreeing"
                         f"{safe(f'; not Ready: {down}', one_line=True) if down else ''}\n")
    return bool(why) or converged


class _Progress:
    """--wait's progress on stderr: a live status line on a terminal, one line per poll otherwise."""

    count = 0
    """Polls that had not converged."""

    def __enter__(self) -> _Progress:
        self.live = sys.stderr.isatty()
        if self.live:
            from rich.console import Console

            from sunkcheck import stop

            self.status = Console(stderr=True, highlight=False, markup=False).status("checking...")
            self.status.__enter__()
            self.undo = stop.undone(lambda: self.status.__exit__(None, None, None))  # its cursor, hidden
            self.undo.__enter__()
        return self

    def show(self, report: Report, elapsed: float) -> None:
        from sunkcheck.converge import progress

        self.count += 1
        line = f"waiting ({elapsed:.0f}s): {safe(progress(report, told=True), one_line=True)}"
        if self.live:
            self.status.update(line)
        else:
            sys.stderr.write(f"sunkcheck: {line}\n")
            sys.stderr.flush()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.live:
            self.undo.__exit__(kind, error, traceback)
            self.status.__exit__(kind, error, traceback)


