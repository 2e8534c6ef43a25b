"""Join: the bilinear operator on two arrangements (CIDR 2013 §3.2).

Correctness: the output must accumulate, at every time t, to ``A(t) ⋈ B(t)``.  Because
join is bilinear, each pair of updates ``(a, ta, da)``, ``(b, tb, db)`` contributes
``((a, b), ta ∨ tb, da·db)`` (the product checked: one that leaves 64 bits raises,
:mod:`ivm.difference`).  Times are processed in a linear extension of the partial
order, so when processing time t each pair is produced exactly once: by the later of its two
updates, as ``δA(t) ⋈ B(<t) + A(<t) ⋈ δB(t) + δA(t) ⋈ δB(t)``, where ``X(<t)`` is the trace
without the updates staged at t.  Output updates at ``ta ∨ tb > t`` (a new update meeting
history at a later loop counter) are sent to the consumers' inboxes at that later time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ivm.batch import Batch, Columns, distinct_ints, hash_rows, take, unique_int_rows
from ivm.difference import mul_gathered
from ivm.lattice import ITERATE, Time, join_rows
from ivm.operators.arrange import Arrange
from ivm.operators.base import Operator
from ivm.trace import Gathered, Trace


def pad_times(times: np.ndarray, depth: int) -> np.ndarray:
    """Inner coordinates of an outer trace, seen from a scope ``depth`` deep (zeros added)."""
    if times.shape[1] == depth:
        return times
    out = np.zeros((times.shape[0], depth), dtype=np.int64)
    out[:, : times.shape[1]] = times
    return out


def probe(trace: Trace, batch: Batch, key_idx: tuple[int, ...], before: Time | None) -> Gathered:
    """The updates of ``trace`` matching each row of ``batch`` on its key columns
    ``key_idx`` (before time ``before``), without their row hashes (pairs need none)."""
    cols = batch.cols
    keys = tuple([cols[i] for i in key_idx])
    if (
        batch.rowhash is not None
        and len(key_idx) == len(cols)
        and key_idx == tuple(range(len(cols)))
    ):
        return trace.lookup(batch.rowhash, keys, before, with_hashes=False)
    return trace.lookup(hash_rows(keys, batch.diff.shape[0]), keys, before, with_hashes=False)


def batch_trace(batch: Batch, key_idx: tuple[int, ...], depth: int) -> Trace:
    """A throw-away trace holding one batch (for ``δA ⋈ δB``)."""
    t = Trace(tuple(c.dtype for c in batch.cols), key_idx, (0,) * depth)
    t.runs.append(t.make_run(batch.cols, np.zeros((len(batch), depth), dtype=np.int64), batch.diff))
    return t


_ONE_LOOP = (ITERATE,)
#: batches up to this size are handled with Python ints rather than numpy calls
_SMALL = 32


class Join(Operator):
    kind = "join"

    def __init__(
        self,
        *args: Any,
        left: Arrange,
        right: Arrange,
        select: tuple[int, ...] | None = None,
        **kw: Any,
    ) -> None:
        """``select``: the output columns, as positions in the left's columns followed by
        the right's (None: all of them); a pair's other columns are never gathered."""
        super().__init__(*args, **kw)
        self.left = left
        self.right = right
        left.users += 1
        right.users += 1
        self.kinds = self.scope.kinds
        self.depth = len(self.kinds)
        self.select = select
        width = len(left.dtypes)
        #: per output column: (from the left side?, its position on that side)
        self._picks = (
            None if select is None else [(k < width, k if k < width else k - width) for k in select]
        )

    def _pair_columns(self, new: Batch, new_is_left: bool, found: Gathered) -> Columns:
        """The output columns of the pairs ``found`` for the rows of ``new``."""
        if self._picks is None:
            newcols = take(new.cols, found.owner)
            return newcols + found.cols if new_is_left else found.cols + newcols
        owner = found.owner
        return tuple(
            [
                new.cols[j][owner] if from_left == new_is_left else found.cols[j]
                for from_left, j in self._picks
            ]
        )

    def _emit_pairs(self, time: Time, new: Batch, new_is_left: bool, found: Gathered) -> None:
        if len(found.owner) == 0:
            return
        cols = self._pair_columns(new, new_is_left, found)
        diff = mul_gathered(new.diff, found.owner, found.diff)
        out = Batch(cols, diff)
        if self.depth == 0:
            self.emit(time, out)
            return
        if self.kinds == _ONE_LOOP:
            if found.times.shape[1] == 0:  # history from outside the loop: at iteration 0
                self.emit(time, out)
            else:
                self._emit_by_iteration(time, out, found.times[:, 0])
            return
        times = join_rows(pad_times(found.times, self.depth), time[1:], self.kinds)
        here = np.all(times == np.asarray(time[1:]), axis=1)
        if here.all():
            self.emit(time, out)
            return
        self.emit(time, out.take(here.nonzero()[0]))
        rest = (~here).nonzero()[0]
        uniq, inv = unique_int_rows(times[rest])
        for j in range(len(uniq)):
            sel = rest[inv == j]
            self.emit((time[0], *(int(x) for x in uniq[j])), out.take(sel))

    def _emit_by_iteration(self, time: Time, out: Batch, found_it: np.ndarray) -> None:
        """:meth:`_emit_pairs`'s emission inside one loop: a pair's time is the later of the
        two iterations, so pairs whose history update is not later than ``time`` are emitted
        now and the others at their history update's iteration."""
        now = time[1]
        if len(found_it) <= _SMALL:
            its = found_it.tolist()
            if max(its) <= now:
                self.emit(time, out)
                return
            at: dict[int, list[int]] = {}
            for j, it in enumerate(its):
                at.setdefault(it if it > now else now, []).append(j)
            for it in sorted(at):
                self.emit((time[0], it), out.take(np.array(at[it], dtype=np.int64)))
            return
        later = found_it > now
        if not later.any():
            self.emit(time, out)
            return
        self.emit(time, out.take((~later).nonzero()[0]))
        rest = later.nonzero()[0]
        its = found_it[rest]
        for it in distinct_ints(its):
            self.emit((time[0], int(it)), out.take(rest[its == it]))

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        da, db = inputs
        lk, rk = self.left.key_idx, self.right.key_idx
        if da is not None:
            self._emit_pairs(time, da, True, probe(self.right.trace, da, lk, time))
        if db is not None:
            self._emit_pairs(time, db, False, probe(self.left.trace, db, rk, time))
        if da is not None and db is not None:
            self._emit_pairs(time, da, True, probe(batch_trace(db, rk, self.depth), da, lk, None))

    def describe(self) -> str:
        kept = "" if self.select is None else f" keeping {list(self.schema.names)}"
        return (
            f"{self.name} {self.left.name} ⋈ {self.right.name} on "
            f"{[self.left.schema.names[i] for i in self.left.key_idx]} = "
            f"{[self.right.schema.names[i] for i in self.right.key_idx]}{kept}"
        )
