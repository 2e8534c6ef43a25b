"""Make files and directory entries durable: several ``fsync`` calls at once.

Each ``fsync`` on a journaling file system (ext4's jbd2) waits for a journal commit; calls
made one after the other wait for one commit each, while calls in flight together join the
same commit.  Measured on this machine's ext4 (loaded, 2 cores): five fsyncs in a row 13.9 ms,
the same five at once 1.6 ms.  A checkpoint needs its files, its directory and its parent's
entry durable before ``CURRENT`` may name it (catalog.checkpoint): one barrier, not five.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): none across a fork
WORKERS = 8
_lock = threading.Lock()


def fsync_path(path: str | os.PathLike[str]) -> None:
    """``fsync`` a file's contents or a directory's entries."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: Sequence[str | os.PathLike[str]]) -> None:
    """``fsync`` every path (files and directories) concurrently; returns when all are durable.

    Raises the first ``OSError`` met (after every call has finished).
    """
    global _pool
    if len(paths) <= 1:
        for p in paths:
            fsync_path(p)
        return
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(WORKERS, thread_name_prefix="ivm-fsync"))
        pool = _pool[1]
    # the calling thread does the first fsync itself instead of waiting idle: one fewer
    # hand-off to the pool and back (a checkpoint's barrier has 3-5 paths)
    futures = [pool.submit(fsync_path, p) for p in paths[1:]]
    first: OSError | None = None
    try:
        fsync_path(paths[0])
    except OSError as exc:
        first = exc
    errors = [first, *(f.exception() for f in futures)]
    for e in errors:
        if e is not None:
            raise e
