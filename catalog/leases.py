"""A lock on any storage, object stores included: a lease object created with put-if-absent.

``flock`` (catalog.locks) has no object-store equivalent.  A lease is an object holding its
owner and expiry time, created with :meth:`catalog.storage.Storage.put_if_absent` (a
conditional ``PutObject`` on S3), so one owner at a time holds it; it is released by deleting
it; an expired lease may be broken by anyone.  On an object store, renewing and breaking are
one conditional ``PutObject`` with ``If-Match`` the version just read
(:meth:`~catalog.storage.Storage.replace_if`): of two breakers, or a late renewal and a
breaker, only one write succeeds.  (Locally, where warehouses use ``flock`` instead, a break
is a delete and a put-if-absent.)  A holder that outlives its lease without renewing it
(:func:`try_lease` again) can lose the lock: leases suit writers that finish, or renew,
within the lease time.

:func:`hold_lease` is the group lock of a warehouse on an object store (catalog.locks): it
waits for the lease, renews it from a background thread every third of its time while the
holder works, and gives it up at the end.  Fencing: a holder calls :meth:`Lease.check` right
before its commit point (catalog.checkpoint writes ``CURRENT``); if its lease was broken (it
stalled past the expiry, e.g. a long GC pause or a lost network) the check raises instead of
committing over the new holder's work.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from catalog.storage import backend, is_object_store

__all__ = ["LEASE_SECONDS", "Lease", "LostLeaseError", "hold_lease", "release_lease", "try_lease"]

LEASE_SECONDS = 60.0
"""How long a lease lasts without renewal (``IVM_LEASE_SECONDS`` overrides it)."""
POLL_SECONDS = 0.1


class LostLeaseError(RuntimeError):
    """Internal: the lease a holder relied on is no longer its own (see :meth:`Lease.check`)."""


def try_lease(location: str, owner: str, seconds: float) -> bool:
    """Take the lease object at ``location`` for ``seconds``; ``False`` if another owner
    holds an unexpired one.  Taking a lease one already holds renews it."""
    store = backend(location)
    body = json.dumps({"owner": owner, "expires": time.time() + seconds}).encode()
    if store.put_if_absent(location, body):
        return True
    remote = is_object_store(location)
    tag = store.version_tag(location) if remote else None  # read before the contents
    try:
        held: dict[str, Any] = json.loads(store.read_bytes(location))
    except FileNotFoundError:  # released meanwhile: try once more
        return store.put_if_absent(location, body)
    except ValueError:  # a torn lease cannot be: objects are written whole; treat as held
        return False
    mine = held.get("owner") == owner
    if not mine and float(held.get("expires", 0)) > time.time():
        return False
    if remote:  # renew or break: only if nobody wrote it since it was read
        return tag is not None and store.replace_if(location, body, tag)
    if mine:
        store.write_bytes(location, body)
        return True
    store.delete(location)  # expired: break it; put-if-absent decides between breakers
    return store.put_if_absent(location, body)


def release_lease(location: str, owner: str) -> None:
    """Give the lease up if ``owner`` holds it."""
    store = backend(location)
    try:
        held = json.loads(store.read_bytes(location))
    except (FileNotFoundError, ValueError):
        return
    if held.get("owner") == owner:
        store.delete(location)


def lease_seconds() -> float:
    """``IVM_LEASE_SECONDS`` if set, else :data:`LEASE_SECONDS`."""
    try:
        return max(1.0, float(os.environ.get("IVM_LEASE_SECONDS") or LEASE_SECONDS))
    except ValueError:
        return LEASE_SECONDS


def holder_of(location: str) -> dict[str, Any]:
    """What the lease object says (``{}`` if none or unreadable)."""
    try:
        held = json.loads(backend(location).read_bytes(location))
    except (FileNotFoundError, ValueError):
        return {}
    return dict(held) if isinstance(held, dict) else {}


class Lease:
    """A held lease: renewed in the background until released."""

    def __init__(self, location: str, seconds: float) -> None:
        self.location = location
        self.seconds = seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self._stop = threading.Event()
        self._lost = False
        self._thread: threading.Thread | None = None

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            if holder_of(self.location).get("owner") != self.owner or not try_lease(
                self.location, self.owner, self.seconds
            ):
                self._lost = True
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._renew, name="ivm-lease", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise :class:`LostLeaseError` unless this holder still holds an unexpired lease."""
        held = holder_of(self.location)
        if (
            self._lost
            or held.get("owner") != self.owner
            or float(held.get("expires", 0)) <= time.time()
        ):
            raise LostLeaseError(f"the lease {self.location} is no longer held by this process")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        release_lease(self.location, self.owner)


@contextlib.contextmanager
def hold_lease(
    location: str,
    *,
    timeout: float,
    on_timeout: Callable[[dict[str, Any]], BaseException],
    on_wait: Callable[[], None] | None = None,
    seconds: float | None = None,
) -> Iterator[Lease]:
    """Hold the lease at ``location``: wait up to ``timeout`` s for it (then raise
    ``on_timeout(holder)``), renew it while the body runs, release it after."""
    lease = Lease(location, lease_seconds() if seconds is None else seconds)
    deadline = time.monotonic() + timeout
    while not try_lease(location, lease.owner, lease.seconds):
        if on_wait is not None:
            on_wait()
            on_wait = None
        if time.monotonic() >= deadline:
            raise on_timeout(holder_of(location))
        time.sleep(POLL_SECONDS)
    lease.start()
    try:
        yield lease
    finally:
        lease.release()
