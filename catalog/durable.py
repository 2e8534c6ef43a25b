"""Making what was written survive a crash: the one fsync helper of the catalog."""

from __future__ import annotations

import os


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush ``path`` (a file, or a directory: its entries) to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
