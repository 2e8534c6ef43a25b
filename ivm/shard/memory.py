"""Give freed memory back to the operating system between a shard's phases.

A shard's large transient copies (an input part read, an exchange round's batches) are
freed as soon as they are consumed, but the allocators keep the pages: Arrow's pool
(mimalloc or jemalloc) caches them, and glibc's ``malloc`` keeps freed heap chunks once its
dynamic mmap threshold has grown past the size of a batch's columns.  Those pages still
count in the worker's resident memory and raise its peak when the next phase allocates
again.  :func:`release_free_memory` returns both to the system; it costs milliseconds, so
the shard calls it after phases that moved whole batches, not per operator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

import pyarrow as pa


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> None:
    """Return the free pages of Arrow's memory pool and of ``malloc`` to the system."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
