"""Ending a run on a signal. SIGTERM (a CronJob's deadline, `kubectl delete pod`, systemd, timeout(1)), SIGHUP
(the terminal closed) and the first SIGINT (Ctrl-C) end the run at once, wherever it is: mid-request, mid-save,
mid-SSH, between `--wait`'s polls. Unwinding the stack would wait for the threads still reading (a request runs
to its deadline), so the handler ends the run itself: it kills the child process groups (exec credential
plugins, ProxyCommands) with what they started, removes the temporary files and directories in the making,
undoes what changed the terminal, lets the command say its last words (the UNKNOWN document, `sunkcheck_up 0`)
and exits with EXIT_CODE. A second SIGINT meanwhile kills at once. Installed by the executable only (cli): a
program calling sunkcheck.cli.main keeps its own handlers."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager, suppress
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
EXIT_CODE = 3
"""UNKNOWN, as every run that could not check to the end."""

# No lock: the handler runs in the main thread, between two of its bytecodes, so one the main thread held would
# deadlock it. Each registry change is one atomic operation, and `spawn` orders its own (see there).
_groups: set[int] = set()
_paths: set[str] = set()
_undo: list[Callable[[], None]] = []
_last_words: Callable[[str], None] = lambda reason: None  # noqa: E731 - until install() says otherwise
_stopping = False
_critical = threading.local()
"""Whether this thread is in a `deferred` block (the handler asks the main thread's)."""
_deferred: list[int] = []


def install(last_words: Callable[[str], None]) -> None:
    """Handle SIGNALS from now on; `last_words(reason)` prints what the run owes its readers. A signal that is
    ignored already stays ignored (nohup's SIGHUP, a background job's SIGINT), as Python does for SIGINT."""
    global _last_words
    _last_words = last_words
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _stop)


@contextmanager
def deferred() -> Iterator[None]:
    """A stop arriving meanwhile waits until the block ends: for steps that must not be cut in two (a child
    started and not yet registered, a snapshot directory moved aside and the new one not yet in its place)."""
    outer = getattr(_critical, "active", False)
    _critical.active = True
    try:
        yield
    finally:
        _critical.active = outer
        if not outer and _deferred:
            _stop(_deferred[0], None)


def spawn(args: list[str], **popen: Any) -> subprocess.Popen:
    """subprocess.Popen in its own session (process group), killed with everything it started if the run is
    stopped before `release`. In another thread than the stop's, the stop sets _stopping before it reads
    _groups, so a group added after that read is killed here."""
    with deferred():
        proc = subprocess.Popen(args, start_new_session=True, **popen)
        _groups.add(proc.pid)
        if _stopping:
            _kill(proc.pid)
    return proc


def release(proc: subprocess.Popen) -> None:
    """The child has been reaped: its process group id may be reused, never killed from now on."""
    _groups.discard(proc.pid)


def kill(proc: subprocess.Popen) -> None:
    """Kill a spawned child with everything it started, reap it and release it."""
    _kill(proc.pid)
    proc.wait()  # not communicate(): a grandchild that left the group may hold the pipes open
    release(proc)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


@contextmanager
def temporary(path: str | Path) -> Iterator[None]:
    """`path` (a file or a directory sunkcheck is making) is removed if the run is stopped meanwhile."""
    _paths.add(str(path))
    try:
        yield
    finally:
        _paths.discard(str(path))


@contextmanager
def undone(undo: Callable[[], None]) -> Iterator[None]:
    """`undo()` runs if the run is stopped meanwhile (say, a live status line that hid the terminal's cursor)."""
    _undo.append(undo)
    try:
        yield
    finally:
        _undo.remove(undo)


def _kill(pgid: int) -> None:
    with suppress(OSError):  # gone already
        os.killpg(pgid, signal.SIGKILL)


def _stop(signum: int, frame: FrameType | None) -> None:
    """The handler (always run in the main thread): end the run now."""
    global _stopping
    if getattr(_critical, "active", False):  # the main thread is in a `deferred` block: at its end
        _deferred.append(signum)
        return
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C kills at once
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # ending already
    _stopping = True
    for pgid in list(_groups):
        _kill(pgid)
    for path in list(_paths):
        _remove(Path(path))
    for undo in reversed(_undo):
        with suppress(Exception):
            undo()
    with suppress(Exception):
        atexit._run_exitfuncs()  # the credential files written from kubeconfig data go there
    with suppress(Exception):  # whatever fails in them, the run ends with its documented code
        _last_words(f"interrupted by {signal.Signals(signum).name}")
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(EXIT_CODE)


def _remove(path: Path) -> None:
    """A file, or a directory and what it holds (rmtree never follows a symbolic link)."""
    with suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
