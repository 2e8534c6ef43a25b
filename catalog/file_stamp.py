"""A local file's identity stamp: what a process checks before trusting what it kept of a
file it wrote or read (a file replaced by ``os.replace`` has another inode; one rewritten in
place another size or change time).  Used by the checkpoint manifest cache
(catalog.checkpoint), the kept view files (catalog.file_cache) and the status records
(spark_exec.status)."""

from __future__ import annotations

import os

#: inode, size, modification and change times (ns)
Stamp = tuple[int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamp(path: str | os.PathLike[str]) -> Stamp | None:
    """``path``'s stamp, or ``None`` when there is no such file."""
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None
