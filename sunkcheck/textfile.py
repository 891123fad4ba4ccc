"""Write a file so that a reader (node_exporter) sees the old or the new content, never a partial one."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from sunkcheck.model import InputError
from sunkcheck.scratch import scratch
from sunkcheck.snapshot import file_type


class TargetError(InputError):
    """The path is not a file sunkcheck may replace: nothing was written, and nothing will be."""


def check_target(path: str | Path) -> None:
    """Refuse a path that exists and is not a regular file: the rename would replace a device (/dev/null), a
    FIFO, a symbolic link (not what it points to) or a directory's entry, which running as root can do."""
    path = Path(path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise TargetError(f"--textfile {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise TargetError(f"--textfile {path}: is {file_type(mode)}, not a regular file: refusing to replace it")


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # what a shorter text may get past


def write_atomically(path: str | Path, text: str, fallback: str | None = None) -> None:
    """Write to a temporary file in the same directory (same filesystem), then rename it over `path`, which
    must be a regular file if it exists (check_target). When `text` cannot be written (a full disk, a file
    size limit), `fallback`, much shorter, is tried the same way, and the error says whether it was written."""
    path = Path(path)
    check_target(path)
    try:
        _replace(path, text)
    except OSError as e:
        failed = f"--textfile {path}: cannot write in {path.parent}: {e.strerror or e}"
        if fallback is None or fallback == text or e.errno not in _NO_ROOM:
            raise InputError(failed) from None
        try:
            _replace(path, fallback)
        except OSError as again:
            raise InputError(f"{failed}; nor sunkcheck_up 0 in its place: {again.strerror or again}") from None
        raise InputError(f"{failed}; wrote sunkcheck_up 0 in its place") from None


def _replace(path: Path, text: str) -> None:
    with scratch(path) as (tmp, fd):
        try:
            with os.fdopen(os.dup(fd), "w", encoding="utf-8") as f:  # the text format is UTF-8, whatever the locale
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # node_exporter may run as another user
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)  # gone already when the rename succeeded; never left behind
