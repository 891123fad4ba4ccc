"""Write a file so that a reader (node_exporter) sees the old or the new content, never a partial one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sunkcheck.model import InputError


def write_atomically(path: str | Path, text: str) -> None:
    """Write to a temporary file in the same directory (same filesystem), then rename it over `path`."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise InputError(f"--textfile {path}: cannot write in {path.parent}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # node_exporter may run as another user
        os.replace(tmp, path)
    except OSError as e:
        raise InputError(f"--textfile {path}: {e.strerror or e}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)  # gone already when the rename succeeded; never left behind
