"""Shard identity: which part of a sharded dataflow a :class:`~ivm.dataflow.Dataflow` is.

A sharded epoch runs N copies of the same dataflow, built by the same code, one per shard
(``shard = p of N``).  A builder that does not know about shards (the SQL and Datalog
compilers, the view-group builder) builds shard ``p`` inside ``with building(p, n):``;
:class:`~ivm.dataflow.Dataflow` takes its :class:`ShardSpec` from there unless one is given.
With one shard (the default) nothing changes: no exchange is built and the scheduler is the
single-process one.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

from ivm.errors import PlanError


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``index`` of ``count`` shards."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise PlanError(
                f"shard {self.index} of {self.count}: need 0 <= index < count and count >= 1"
            )

    def __str__(self) -> str:
        return f"shard {self.index} of {self.count}"


SINGLE = ShardSpec()

_current: contextvars.ContextVar[ShardSpec] = contextvars.ContextVar("ivm_shard", default=SINGLE)


def current() -> ShardSpec:
    """The shard that dataflows built now belong to (one shard of one outside ``building``)."""
    return _current.get()


@contextlib.contextmanager
def building(index: int, count: int) -> Iterator[ShardSpec]:
    """Dataflows created inside this block are shard ``index`` of ``count``."""
    spec = ShardSpec(index, count)
    token = _current.set(spec)
    try:
        yield spec
    finally:
        _current.reset(token)
