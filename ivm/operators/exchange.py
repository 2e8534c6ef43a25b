"""Exchange: routes each update to the shard that owns its key (sharded execution only).

In a dataflow sharded N ways (:mod:`ivm.sharding`) an ``Exchange(key)`` stands in front of
every operator that needs all updates of a key in one place: every arrangement (so every
join, reduce, distinct, top-k and delta-join lookup), accumulable reduces, the streams of
delta-join rules and the outputs (keyed by the whole row, so that each shard's output is a
disjoint part of the view).  A row goes to shard ``splitmix64(hash_rows(key)) mod N``: the
engine's row hash, mixed once more so the shard does not correlate with the hash bits that
traces and hierarchical reduces use inside a shard.  The local part is emitted at once; the
other parts wait in the dataflow's outbox until the scheduler's next exchange round
(:mod:`ivm.shard.scheduler`) delivers them to the same operator on their shard, which
emits them at the same time.  Exchange is linear and keeps no state, so a failed epoch has
nothing to undo here.  With one shard no exchange is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ivm.batch import Batch, hash_rows
from ivm.kernels import mix_offset
from ivm.lattice import Time
from ivm.operators.base import Operator

_SHARD_SALT = np.uint64(0x5851F42D4C957F2D)


def shard_of(h: np.ndarray, n: int) -> np.ndarray:
    """The shard (``0..n-1``) of each row hash."""
    if n == 1:
        return np.zeros(len(h), dtype=np.intp)
    return (mix_offset(h, _SHARD_SALT) % np.uint64(n)).astype(np.intp)


def route(batch: Batch, key_idx: tuple[int, ...], n: int) -> np.ndarray:
    """The shard of each row of ``batch`` by the columns ``key_idx``."""
    if batch.rowhash is not None and key_idx == tuple(range(len(batch.cols))):
        h = batch.rowhash
    else:
        h = hash_rows(tuple(batch.cols[i] for i in key_idx), len(batch))
    return shard_of(h, n)


class Exchange(Operator):
    """Sends each update to the shard owning ``hash(key_idx columns)``."""

    kind = "exchange"

    def __init__(self, *args: Any, key_idx: tuple[int, ...], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.key_idx = key_idx
        spec = self.graph.shard
        self.me = spec.index
        self.n = spec.count
        #: this round's local part and the parts received, by time, until :meth:`flush`
        self.held: dict[Time, list[Batch]] = {}

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is None:
            return
        dest = route(b, self.key_idx, self.n)
        counts = np.bincount(dest, minlength=self.n)
        if counts[self.me] == len(b):
            self.held.setdefault(time, []).append(b)
            return
        order = np.argsort(dest, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(counts)])
        outbox = self.graph.outbox
        for j in range(self.n):
            if counts[j] == 0:
                continue
            part = b.take(order[bounds[j] : bounds[j + 1]])
            if j == self.me:
                self.held.setdefault(time, []).append(part)
            else:
                outbox.append((j, self.id, time, part))

    def deliver(self, time: Time, batch: Batch) -> None:
        """Updates another shard routed here (after the local part, by source shard)."""
        self.held.setdefault(time, []).append(batch)

    def flush(self) -> None:
        """After an exchange round: emit, per time, the local part and the parts received
        as one batch."""
        held, self.held = self.held, {}
        for time in sorted(held):
            parts = held.pop(time)
            self.emit(time, Batch.concat(parts))
            del parts

    def restore(self, snap: object) -> None:
        self.held = {}

    def describe(self) -> str:
        keys = [self.schema.names[i] for i in self.key_idx]
        return f"{self.name} by {keys} ({self.graph.shard})"


def partitioning(op: Operator, memo: dict[int, tuple[int, ...] | None]) -> tuple[int, ...] | None:
    """The columns by whose hash ``op``'s updates are already placed (None: unknown).

    Placed by key ``K`` means every update lives on ``shard_of(hash(row[K]))``.  An exchange
    places by its key; an arrangement passes its (exchanged) input on; a reduce's output
    lives where its key does (its leading columns hold the key's values, which hash alike);
    a join's output where its left key does; filters, negation, consolidation, loop
    ingress and egress keep placement; a projection keeps it if it keeps the columns; a
    concatenation if all its inputs agree.  Maps and everything else: unknown.
    """
    if op.id in memo:
        return memo[op.id]
    from ivm.operators.accumulate import AccumulateReduce
    from ivm.operators.arrange import Arrange
    from ivm.operators.delta_join import HalfJoin
    from ivm.operators.iterate import Enter, Leave
    from ivm.operators.join import Join
    from ivm.operators.linear import Concat, Consolidate, Filter, Negate, Project
    from ivm.operators.reduce import Reduce

    got: tuple[int, ...] | None = None
    if isinstance(op, Exchange):
        got = op.key_idx
    elif isinstance(op, Reduce | AccumulateReduce):
        got = tuple(range(len(op.key_idx)))
    elif isinstance(op, Join):
        got = op.left.key_idx
        if op.select is not None:
            # where the kept columns hold either side's key (equal values, equal hashes)
            width = len(op.left.dtypes)
            got = None
            for key in (op.left.key_idx, tuple(width + k for k in op.right.key_idx)):
                if all(k in op.select for k in key):
                    got = tuple(op.select.index(k) for k in key)
                    break
    elif isinstance(op, HalfJoin):
        got = op.stream_key
    elif isinstance(op, Arrange | Filter | Negate | Consolidate | Enter | Leave):
        got = partitioning(op.inputs[0], memo)
    elif isinstance(op, Project):
        inner = partitioning(op.inputs[0], memo)
        if inner is not None and all(c in op.idx for c in inner):
            got = tuple(op.idx.index(c) for c in inner)
    elif isinstance(op, Concat):
        parts = {partitioning(i, memo) for i in op.inputs}
        if len(parts) == 1:
            got = parts.pop()
    memo[op.id] = got
    return got
