"""Opened Delta tables kept across calls, brought up to date instead of reopened.

Opening a ``DeltaTable`` replays its log from the last checkpoint; a refresh used to open each
input and view table about ten times (measured: 107 opens in 10 refreshes, 37 ms each after
200 one-row refreshes, most of the refresh's time).  This module keeps one opened table per
path for the latest version (brought forward with ``update_incremental()``, which reads only
the new commits, and only when the log entry after its version exists) and a few per
``(path, version)``.

A kept table is used only while the log entry of the version it was opened at is the same
file (inode, size, modification and status-change times; one ``stat``, no read): a table
dropped and recreated at the same path, or a copied or restored warehouse, has other files
there (a new file, even one given the old inode, its times and its size, has a new status
change time, which no one can set), so it is opened afresh.  An object's stamp is its
modification time, size and ETag.  Callers must not move a
handed-out table to another version (``load_as_version``); writes through it are fine (it
then stands at the version it wrote).  A failed operation calls :func:`forget`.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from deltalake import DeltaTable

from catalog import storage

MAX_TABLES = 64
_Stamp = tuple[int, int, int, int, int]  # version, inode, mtime_ns, size, ctime_ns

_lock = threading.Lock()
_latest: OrderedDict[str, tuple[DeltaTable, _Stamp]] = OrderedDict()
_versions: OrderedDict[tuple[str, int], tuple[DeltaTable, _Stamp]] = OrderedDict()
stats = {"opens": 0, "reuses": 0}


def _key(path: str | os.PathLike[str]) -> str:
    return storage.normalize(path)


def _commit_path(path: str, version: int) -> str:
    return storage.join(path, "_delta_log", f"{int(version):020d}.json")


def _stamp(path: str, version: int) -> _Stamp | None:
    f = _commit_path(path, version)
    if storage.is_object_store(f):  # an object is replaced whole: time and size tell
        got = storage.backend(f).stamp(f)
        return None if got is None else (int(version), got[2], got[0], got[1], 0)
    try:
        st = os.stat(f)
    except OSError:
        return None
    return (int(version), st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)


def _valid(path: str, stamp: _Stamp) -> bool:
    return _stamp(path, stamp[0]) == stamp


def _remember(
    cache: OrderedDict[object, tuple[DeltaTable, _Stamp]], key: object, path: str, dt: DeltaTable
) -> None:
    st = _stamp(path, int(dt.version()))
    if st is None:  # e.g. version opened from a checkpoint whose JSON is gone: do not keep
        cache.pop(key, None)
        return
    cache[key] = (dt, st)
    cache.move_to_end(key)
    while len(cache) > MAX_TABLES:
        cache.popitem(last=False)


def latest(path: str | os.PathLike[str]) -> DeltaTable:
    """The table at its latest version (raises what ``DeltaTable`` raises)."""
    key = _key(path)
    with _lock:
        hit = _latest.get(key)
    if hit is not None and _valid(key, hit[1]):
        kept = hit[0]
        if not storage.backend(key).exists(_commit_path(key, int(kept.version()) + 1)):
            # commits are numbered without gaps: no next entry, no newer version (and no
            # listing of the whole log, which update_incremental() does: 5.7 ms at 900 entries)
            stats["reuses"] += 1
            return kept
        try:
            kept.update_incremental()
            fresh = True
        except Exception:  # e.g. the log was cleaned up under it: open afresh
            fresh = False
        if fresh:
            stats["reuses"] += 1
            with _lock:
                _remember(_latest, key, key, kept)  # type: ignore[arg-type]
            return kept
    stats["opens"] += 1
    dt = DeltaTable(key, storage_options=storage.delta_storage_options(key))
    with _lock:
        _remember(_latest, key, key, dt)  # type: ignore[arg-type]
    return dt


def kept(path: str | os.PathLike[str]) -> DeltaTable | None:
    """The kept latest table of ``path`` as it is (possibly behind the newest version), while
    its log entry is unchanged; ``None`` when none is kept."""
    key = _key(path)
    with _lock:
        hit = _latest.get(key)
    return hit[0] if hit is not None and _valid(key, hit[1]) else None


def at_version(path: str | os.PathLike[str], version: int) -> DeltaTable:
    """The table at ``version`` (a kept one when its log entry is unchanged)."""
    key = _key(path)
    ck = (key, int(version))
    with _lock:
        hit = _versions.get(ck)
    if hit is not None and _valid(key, hit[1]) and int(hit[0].version()) == int(version):
        stats["reuses"] += 1
        return hit[0]
    stats["opens"] += 1
    dt = DeltaTable(key, version=int(version), storage_options=storage.delta_storage_options(key))
    with _lock:
        _remember(_versions, ck, key, dt)  # type: ignore[arg-type]
    return dt


def known(path: str | os.PathLike[str]) -> bool:
    """Whether a kept latest table for ``path`` is still valid (so it is a Delta table)."""
    key = _key(path)
    with _lock:
        hit = _latest.get(key)
    return hit is not None and _valid(key, hit[1])


def forget(path: str | os.PathLike[str]) -> None:
    """Drop every kept table of ``path`` (after a failed operation, a drop, a rewrite)."""
    key = _key(path)
    with _lock:
        _latest.pop(key, None)
        for k in [k for k in _versions if k[0] == key]:
            del _versions[k]


def clear() -> None:
    with _lock:
        _latest.clear()
        _versions.clear()
