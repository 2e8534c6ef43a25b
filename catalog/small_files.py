"""Small local files rewritten or appended in place: the lock holder, the status records and
the event log (catalog.locks, spark_exec.status, spark_exec.events).

Their directory is made only when an open finds none (no ``mkdir`` per refresh), and a
record is overwritten in place rather than truncated to zero or renamed over: on ext4 both
of those make the file be flushed at its close or rename (``auto_da_alloc``), a wait the
refresh would pay each time.
"""

from __future__ import annotations

import os
from pathlib import Path


def open_making_directory(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags, mode)``; the parent directory is made when the open finds none."""
    try:
        return os.open(path, flags, mode)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, flags, mode)


def overwrite(fd: int, data: bytes) -> None:
    """Make the file open at ``fd`` hold exactly ``data``: written from offset 0, truncated
    only when the file is longer (never to zero first)."""
    if os.fstat(fd).st_size > len(data):
        os.ftruncate(fd, len(data))
    os.pwrite(fd, data, 0)
