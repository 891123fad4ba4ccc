"""Temporary files and directories made beside a destination (so that a rename puts them in place at once):
named recognisably (`.NAME.sunkcheck-XXXXXXXX.tmp`), locked (flock) while the run that made them lives, and
removed by a stop (stop.temporary). What a SIGKILL leaves is removed by a later run writing beside the same
destination, and only what is surely stale: sunkcheck's name for that destination, a plain file or directory
(never a symbolic link) of the same user, that no live run holds locked, a minute old."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator

from sunkcheck import stop

MARK = "sunkcheck-"
STALE_AFTER = 60.0
"""Seconds: a scratch entry younger than this may be one a live run has just made and not locked yet."""


def _pattern(destination: Path) -> re.Pattern:
    # tempfile's names: eight characters of [a-z0-9_]
    return re.compile(rf"\.{re.escape(destination.name)}\.{MARK}[a-z0-9_]{{8}}\.(?:tmp|old)")


def make(destination: Path, suffix: str = ".tmp", directory: bool = False) -> tuple[Path, int]:
    """A new private file or directory beside `destination`, after removing the stale ones, and a descriptor of
    it that holds its lock until it is closed. OSError when it cannot be made."""
    sweep(destination)
    prefix = f".{destination.name}.{MARK}"
    if directory:
        path = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=destination.parent))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    else:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=destination.parent)
        path = Path(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        if directory:
            path.rmdir()
        else:
            path.unlink()
        raise
    return path, fd


@contextmanager
def scratch(destination: Path, suffix: str = ".tmp", directory: bool = False) -> Iterator[tuple[Path, int]]:
    """`make`'s entry and descriptor for the block (then closed), removed if the run is stopped meanwhile. The
    caller renames it into place or removes it."""
    path, fd = make(destination, suffix, directory)
    try:
        with stop.temporary(path):
            yield path, fd
    finally:
        os.close(fd)


def sweep(destination: Path) -> list[Path]:
    """Remove the scratch entries a killed run left beside `destination` (see the module); what was removed."""
    pattern = _pattern(destination)
    try:
        entries = [e for e in os.scandir(destination.parent) if pattern.fullmatch(e.name)]
    except OSError:
        return []
    removed = []
    for entry in entries:
        path = Path(entry.path)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        kind = stat.S_IFMT(info.st_mode)
        if kind not in (stat.S_IFDIR, stat.S_IFREG) or info.st_uid != os.getuid() \
                or time.time() - info.st_mtime < STALE_AFTER:
            continue
        if _remove_unheld(path, kind == stat.S_IFDIR):
            removed.append(path)
    return removed


def _remove_unheld(path: Path, directory: bool) -> bool:
    """Remove `path` unless a live run holds its lock (held by this run while it removes it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECTORY if directory else 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a live run's
        os.close(fd)
        return False
    try:
        if directory:
            shutil.rmtree(path)  # never follows a symbolic link inside
        else:
            path.unlink()
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
