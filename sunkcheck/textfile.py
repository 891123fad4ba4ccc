"""Write a file so that a reader (node_exporter) sees the old or the new content, never a partial one."""

from __future__ import annotations

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


def write_atomically(path: str | Path, text: str) -> None:
    """Write to a temporary file in the same directory (same filesystem), then rename it over `path`, which
    must be a regular file if it exists (check_target)."""
    path = Path(path)
    check_target(path)
    try:
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
    except OSError as e:
        raise InputError(f"--textfile {path}: cannot write in {path.parent}: {e.strerror or e}") from None
