"""Per-group writer locks: one refresh of a view group at a time, across processes.

A refresh reads the group's checkpoint, computes the next epoch and writes it (checkpoint
directory, ``CURRENT``, view-table commits).  Two processes doing that at once would both
compute "the next epoch" from the same checkpoint, and one's garbage collection would delete
the other's half-written directory.  So every writer of a group holds its lock file,
``_ivm/locks/<db>/<group>.lock``, with ``fcntl.flock(LOCK_EX)`` for the whole refresh:

* a second refresh **waits** for the lock (polling, up to ``timeout`` seconds) and then finds
  the checkpoint already advanced — it refreshes from there, or does nothing when the inputs
  did not move; past the timeout it raises :class:`RefreshBusyError` (nothing written);
* a lock holder that dies (SIGKILL, power loss of the process) loses the lock with its file
  descriptor — the kernel releases it — so a stale lock never blocks anyone; the next
  refresh recovers the group as after any crash (catalog.refresh);
* the file keeps the holder's pid, host and start time for the error message only; it is
  never deleted (deleting a lock file while another process waits on it would split the lock
  in two).

``flock`` is advisory and local to one machine (or a file system that implements it across
hosts, e.g. NFSv4 with ``local_lock=none``); see docs/reliability.md.

A warehouse on an object store has no ``flock``: its group lock (and the catalog's lock,
catalog.store) is a **lease** (catalog.leases.hold_lease: a lock object created with a
conditional put, renewed while held, broken by others once expired), and the checkpoint's
commit point checks that the lease is still this process's (:func:`check_fence`).

>>> import tempfile
>>> from catalog.paths import Warehouse
>>> wh = Warehouse(tempfile.mkdtemp())
>>> with group_lock(wh, "v", timeout=1):
...     holder(wh, "v")["pid"] == os.getpid()
True
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from catalog import leases
from catalog.errors import CheckpointError, RefreshBusyError
from catalog.paths import Warehouse
from catalog.small_files import open_making_directory, overwrite

_held: dict[str, leases.Lease] = {}
"""Leases this process holds, by lock location (object-store warehouses only)."""

DEFAULT_TIMEOUT = 300.0
POLL_SECONDS = 0.05


def lock_path(warehouse: Warehouse, group: str) -> Path:
    return warehouse.group_lock_file(group)


@contextlib.contextmanager
def _leased(
    location: str, group: str, limit: float, on_wait: Callable[[], None] | None
) -> Iterator[None]:
    """The lock as a lease (object-store warehouses), registered for :func:`check_fence`."""

    def busy(info: dict[str, Any]) -> BaseException:
        host, _, pid = str(info.get("owner", "")).partition(":")
        return RefreshBusyError(group, limit, {**info, "host": host, "pid": pid.split(":")[0]})

    with leases.hold_lease(location, timeout=limit, on_timeout=busy, on_wait=on_wait) as lease:
        _held[location] = lease
        try:
            yield
        finally:
            _held.pop(location, None)


def check_fence(warehouse: Warehouse, group: str) -> None:
    """Before a commit point on an object store: raise :class:`CheckpointError` if this
    process's lease on ``group`` was lost (another writer may have taken over), so a stalled
    holder never commits over a newer one.  Nothing to check locally (``flock`` is released
    only with the process) or where this process holds no lease."""
    if not warehouse.remote:
        return
    lease = _held.get(lock_path(warehouse, group).as_posix())
    if lease is None:
        return
    try:
        lease.check()
    except leases.LostLeaseError as exc:
        raise CheckpointError(
            f"view group {group!r}: {exc}; this refresh stopped before its commit point "
            "(nothing committed); run it again"
        ) from None


def holder(warehouse: Warehouse, group: str) -> dict[str, Any]:
    """What the lock file says about its last holder (``{}`` if nothing)."""
    try:
        text = lock_path(warehouse, group).read_text(encoding="utf-8")
        return dict(json.loads(text)) if text.strip() else {}
    except (OSError, ValueError):
        return {}


def timeout_from_env(default: float = DEFAULT_TIMEOUT) -> float:
    """``IVM_LOCK_TIMEOUT`` (seconds) if set, else ``default``."""
    text = os.environ.get("IVM_LOCK_TIMEOUT")
    if not text:
        return default
    try:
        return max(0.0, float(text))
    except ValueError:
        return default


#: the holder record is written padded with spaces to this many bytes, in place
HOLDER_BYTES = 256


def _write_holder(fd: int, record: bytes) -> None:
    """Overwrite the lock file's holder record in place, padded with spaces (JSON allows
    them) so that no earlier record's bytes remain, and truncated only when the file is
    longer.  Not truncated to zero first: on ext4 a file truncated to zero and written
    again is flushed at its close (``auto_da_alloc``), 0.3 ms a refresh, 3 ms at p90."""
    overwrite(fd, record.ljust(HOLDER_BYTES))


def _open_lock_file(path: Path) -> int:
    """The lock file opened for writing; its directory made when the open finds none."""
    return open_making_directory(path, os.O_RDWR | os.O_CREAT, 0o644)


def _holder_record() -> bytes:
    """This process's holder record: pid, host, since when (ms)."""
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since_ms": time.time_ns() // 1_000_000,
    }
    return json.dumps(info).encode()


@contextlib.contextmanager
def group_lock(
    warehouse: Warehouse,
    group: str,
    *,
    timeout: float | None = None,
    on_wait: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Hold ``group``'s writer lock; wait up to ``timeout`` s (default ``IVM_LOCK_TIMEOUT``
    or :data:`DEFAULT_TIMEOUT`), then raise :class:`RefreshBusyError`.  ``on_wait`` is
    called once when the lock is found taken (tests use it to interleave processes)."""
    limit = timeout_from_env() if timeout is None else max(0.0, timeout)
    path = lock_path(warehouse, group)
    if warehouse.remote:
        with _leased(path.as_posix(), group, limit, on_wait):
            yield
        return
    try:
        fd = _open_lock_file(path)
    except OSError as exc:
        raise CheckpointError(
            f"cannot open the writer lock of view group {group!r} ({path}): "
            f"{exc.strerror or exc}; the warehouse must be writable to refresh"
        ) from exc
    try:
        deadline = time.monotonic() + limit
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                if time.monotonic() >= deadline:
                    raise RefreshBusyError(group, limit, holder(warehouse, group)) from None
                time.sleep(POLL_SECONDS)
        _write_holder(fd, _holder_record())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
