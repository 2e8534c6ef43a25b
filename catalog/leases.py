"""A lock on any storage, object stores included: a lease object created with put-if-absent.

``flock`` (catalog.locks) has no object-store equivalent.  A lease is an object holding its
owner and expiry time, created with :meth:`catalog.storage.Storage.put_if_absent` (a
conditional ``PutObject`` on S3), so one owner at a time holds it; it is released by deleting
it; an expired lease may be broken by anyone (delete, then create again with put-if-absent, so
two breakers cannot both win).  A holder that outlives its lease without renewing it
(:func:`try_lease` again) can lose the lock: leases suit writers that finish, or renew,
within the lease time.
"""

from __future__ import annotations

import json
import time
from typing import Any

from catalog.storage import backend

__all__ = ["release_lease", "try_lease"]


def try_lease(location: str, owner: str, seconds: float) -> bool:
    """Take the lease object at ``location`` for ``seconds``; ``False`` if another owner
    holds an unexpired one.  Taking a lease one already holds renews it."""
    store = backend(location)
    body = json.dumps({"owner": owner, "expires": time.time() + seconds}).encode()
    if store.put_if_absent(location, body):
        return True
    try:
        held: dict[str, Any] = json.loads(store.read_bytes(location))
    except FileNotFoundError:  # released meanwhile: try once more
        return store.put_if_absent(location, body)
    except ValueError:  # a torn lease cannot be: objects are written whole; treat as held
        return False
    if held.get("owner") == owner:
        store.write_bytes(location, body)
        return True
    if float(held.get("expires", 0)) > time.time():
        return False
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
