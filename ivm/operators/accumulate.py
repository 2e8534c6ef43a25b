"""Accumulable aggregates: COUNT and SUM per key, updated from the change alone.

Correctness: ``count`` and ``sum`` are linear, ``f(A + δ) = f(A) + f(δ)``, so the new
value of a group is its old value plus the aggregate of the group's changes.  Outside loops
every update of an epoch is at the same time, so "old" is simply the state before this
epoch.  The operator keeps, per key, one state row ``(key, rows, [non-null count, sum]...)``
and emits the retraction of the old output row and the new one — work proportional to the
change, not to the size of the groups it touches (the general :class:`Reduce` re-reads the
accumulated group).  Materialize calls these accumulable reductions.  Counts and integer
sums are added checked (:mod:`ivm.difference`): past 64 bits they raise, never wrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ivm.aggregate_spec import Agg, AggFunction
from ivm.batch import (
    Batch,
    Columns,
    combine_hash,
    consolidate_hashed,
    hash_rows,
    hash_rows_after,
    sort_groups,
    take,
)
from ivm.difference import add_arrays, mul_arrays, segment_sums
from ivm.errors import MultiplicityOverflowError, SumOverflowError
from ivm.lattice import Time
from ivm.operators.aggregates import _not_null, int_sum, ordered_float_sums, ordered_object_sum
from ivm.operators.base import KeepsTrace
from ivm.reduce_plan import ReducePlan, ReduceStrategy
from ivm.schema import DTYPES
from ivm.trace import Trace

LINEAR_AGGREGATES = (AggFunction.COUNT, AggFunction.SUM)


def _segment_sum(values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per-group sums of ``values`` (groups given by ``order``/``starts``; float64 or
    object: integer sums go through :func:`int_sum`)."""
    v = values[order]
    if v.dtype.kind == "f":
        return ordered_float_sums(v, starts)
    if v.dtype != object:
        return np.add.reduceat(v, starts)
    out = np.empty(len(starts), dtype=object)
    bounds = [*starts.tolist(), len(v)]
    for g in range(len(starts)):
        out[g] = ordered_object_sum(v[bounds[g] : bounds[g + 1]])
    return out


def _object_sum(
    c: np.ndarray, valid: np.ndarray, diff: np.ndarray, order: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Per-group ``Σ value·diff`` of an object column (e.g. a nullable BIGINT): Python
    values, ``None`` for a group without a value.

    When every value is a Python int within 64 bits (Arrow infers ``int64`` for them), the
    sums are computed by the checked int64 kernels, else (floats, decimals, larger ints, or
    sums past 64 bits) value by value in Python, as exactly."""
    rows = np.flatnonzero(valid)
    try:
        ints = pa.array(c[rows], from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        ints = None
    if ints is not None and ints.type == pa.int64():
        vals = np.zeros(len(c), dtype=np.int64)
        vals[rows] = ints.to_numpy()
        counts = np.where(valid, diff, 0)[order]
        try:
            sums = segment_sums(mul_arrays(vals[order], counts), starts)
        except MultiplicityOverflowError:
            sums = None
        if sums is not None:
            out = sums.astype(object)
            out[segment_sums(valid[order].astype(np.int64), starts) == 0] = None
            return out
    prod = np.empty(len(c), dtype=object)
    for row in rows.tolist():
        prod[row] = c[row] * int(diff[row])
    return _segment_sum(prod, order, starts)


def _add(a: np.ndarray, b: np.ndarray, column: str | None) -> np.ndarray:
    """Element-wise ``a + b`` where None (in object arrays) means "no value yet"; int64
    sums are checked (``column``: the SUM's output column, None for a count)."""
    if a.dtype == np.int64 and b.dtype == np.int64:
        if column is None:
            return add_arrays(a, b)
        try:
            return add_arrays(a, b)
        except MultiplicityOverflowError:
            raise SumOverflowError("an integer SUM", column=column) from None
    if a.dtype != object and b.dtype != object:
        return a + b
    return np.array(
        [y if x is None else (x if y is None else x + y) for x, y in zip(a, b, strict=True)],
        dtype=object,
    )


def _retract_insert(
    keys: tuple[np.ndarray, Columns],
    old: tuple[Columns, np.ndarray],
    new: tuple[Columns, np.ndarray],
) -> tuple[Batch, np.ndarray]:
    """The rows ``key + old values`` of the keys ``old[1]`` retracted and ``key + new
    values`` of the keys ``new[1]`` inserted, consolidated (a key whose values did not
    change cancels), with their row hashes carried on from the keys' hashes ``keys[0]``;
    and each row's key hash."""
    key_h, key_cols = keys
    cols: list[Columns] = []
    hashes: list[np.ndarray] = []
    for vals, sel in (old, new):
        kc, vc = take(key_cols, sel), take(vals, sel)
        cols.append(kc + vc)
        hashes.append(hash_rows_after(key_h[sel], kc, vc))
    diff = np.concatenate(
        [np.full(len(old[1]), -1, dtype=np.int64), np.ones(len(new[1]), dtype=np.int64)]
    )
    h = np.concatenate(hashes)
    all_cols = tuple(np.concatenate(cs) for cs in zip(*cols, strict=True))
    keep, sums = consolidate_hashed(h, all_cols, diff)
    key_hashes = np.concatenate([key_h[old[1]], key_h[new[1]]])
    return Batch(take(all_cols, keep), sums, h[keep]), key_hashes[keep]


@dataclass(frozen=True)
class GroupedBatch:
    """A batch grouped by key: ``order`` puts each key's rows together, the key ``g``'s
    from ``starts[g]``; ``probe_h``/``probe_cols``: each key's hash and columns."""

    batch: Batch
    order: np.ndarray
    starts: np.ndarray
    probe_h: np.ndarray
    probe_cols: Columns


class AccumulateReduce(KeepsTrace):
    """COUNT(*), COUNT(col) and SUM(col) per key, maintained from the changes alone."""

    kind = "accumulate"
    state_key = "totals"
    plan = ReducePlan(ReduceStrategy.ACCUMULABLE)

    def __init__(
        self,
        *args: Any,
        key_idx: tuple[int, ...],
        aggs: list[Agg],
        in_dtypes: tuple[str, ...],
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.key_idx = key_idx
        self.aggs = aggs
        nkey = len(key_idx)
        # the state row: key..., rows, then per aggregate over a column: (non-null, sum)
        state_dtypes = [self.dtypes[i] for i in range(nkey)] + [np.dtype(np.int64)]
        self.value_cols: list[int] = []
        for fn, col in aggs:
            if col is not None:
                self.value_cols.append(col)
                state_dtypes.append(np.dtype(np.int64))
                state_dtypes.append(self._slot_dtype(fn, in_dtypes[col]))
        self.state_dtypes = tuple(state_dtypes)
        self.totals = self.new_trace()

    # Kept whole: one pass per batch (group the changes by key, sum them, add them to the
    # totals, emit old and new rows); every step reads the groups the first one computed.
    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is None or len(b) == 0:
            return
        nkey = len(self.key_idx)
        keys = tuple(b.cols[i] for i in self.key_idx)
        h = hash_rows(keys, len(b))
        order, starts = sort_groups(h, keys)
        first = order[starts]
        probe_cols = take(keys, first)
        probe_h = h[first]
        n = len(starts)
        d_rows = segment_sums(b.diff[order], starts)
        deltas: list[np.ndarray | None] = []
        # per delta: None for a count, else the SUM's output column (named in errors)
        sum_names: list[str | None] = []
        for j, (fn, col) in enumerate(self.aggs):
            if col is None:
                continue
            c = b.cols[col]
            valid = _not_null(c)
            deltas.append(segment_sums(np.where(valid, b.diff, 0)[order], starts))
            sum_names.append(None)
            name = self.schema.names[nkey + j]
            sum_names.append(name if fn is AggFunction.SUM else None)
            if fn is AggFunction.SUM:
                if c.dtype == np.int64:
                    deltas.append(
                        int_sum(c[order], np.where(valid, b.diff, 0)[order], starts, name)
                    )
                elif c.dtype == object:
                    deltas.append(_object_sum(c, valid, b.diff, order, starts))
                else:
                    deltas.append(_segment_sum(np.where(valid, c * b.diff, 0), order, starts))
            elif fn is AggFunction.COUNT:
                deltas.append(np.zeros(n, dtype=np.int64))
            else:  # a slot of a subclass's own (see _settle)
                deltas.append(None)

        # the old state rows of these keys (at most one live row per key)
        found = self.totals.lookup(probe_h, probe_cols, None)
        old_present = np.zeros(n, dtype=bool)
        old_vals: list[np.ndarray] = [np.zeros(n, dtype=np.int64)]
        for d in self.state_dtypes[nkey + 1 :]:
            arr = np.empty(n, dtype=d)
            arr[:] = None if d == np.dtype(object) else 0
            old_vals.append(arr)
        if len(found.owner):
            # one live state row per key once summed: the trace's runs are not merged into
            # one, so a key's retracted old row (+1 in one run, -1 in a later one) comes back
            # beside its new row, and must cancel before the live row is chosen
            # (grouped by (probe, row): the state rows' hashes, with the probe mixed in)
            owner = found.owner.astype(np.int64)
            keep, sums = consolidate_hashed(
                combine_hash(found.rowhash, owner), (owner, *found.cols), found.diff
            )
            live = keep[sums > 0]
            owners = owner[live]
            old_present[owners] = True
            for j in range(len(old_vals)):
                old_vals[j][owners] = found.cols[nkey + j][live]
        new_vals = [add_arrays(old_vals[0], d_rows)]
        for j, delta in enumerate(deltas):
            old = old_vals[j + 1]
            new_vals.append(old.copy() if delta is None else _add(old, delta, sum_names[j]))
        self._settle(GroupedBatch(b, order, starts, probe_h, probe_cols), old_vals, new_vals)
        new_present = new_vals[0] > 0
        # keep a state row while the key has any rows (even a negative count: it is the
        # accumulated input, not the output)
        keep_state = new_vals[0] != 0

        grouped = (probe_h, probe_cols)
        old_sel, new_sel = np.flatnonzero(old_present), np.flatnonzero(new_present)
        if len(old_sel) or len(new_sel):
            # output rows extend the keys: their hashes extend the keys' hashes
            out, _ = _retract_insert(
                grouped,
                (self._output_rows(probe_cols, old_vals)[nkey:], old_sel),
                (self._output_rows(probe_cols, new_vals)[nkey:], new_sel),
            )
            self.emit(time, out)
        live_new = np.flatnonzero(keep_state)
        if len(old_sel) or len(live_new):
            s, keyhash = _retract_insert(
                grouped, (tuple(old_vals), old_sel), (tuple(new_vals), live_new)
            )
            self.totals.insert(
                s.cols,
                np.zeros((len(s), 0), dtype=np.int64),
                s.diff,
                rowhash=s.rowhash,
                keyhash=keyhash,
            )

    @staticmethod
    def _slot_dtype(fn: AggFunction, col_dtype: str) -> np.dtype:
        """The dtype of an aggregate's second state slot (after its non-null count)."""
        if fn is AggFunction.SUM:
            return DTYPES["any" if col_dtype == "str" else col_dtype]
        return np.dtype(np.int64)

    def _settle(
        self, grouped: GroupedBatch, old_vals: list[np.ndarray], new_vals: list[np.ndarray]
    ) -> None:
        """Fill the slots this class leaves alone (``new_vals``, in place); none here."""

    def _output_rows(self, probe_cols: Columns, vals: list[np.ndarray]) -> Columns:
        out: list[np.ndarray] = list(probe_cols)
        k = 1
        for fn, col in self.aggs:
            if col is None:
                out.append(vals[0].astype(np.int64))
                continue
            nn, total = vals[k], vals[k + 1]
            k += 2
            if fn is AggFunction.COUNT:
                out.append(nn.astype(np.int64))
            else:
                want = self.dtypes[len(out)]
                if want == np.dtype(object):
                    res = np.empty(len(nn), dtype=object)
                    res[:] = [t if c > 0 else None for t, c in zip(total, nn, strict=True)]
                    out.append(res)
                else:
                    out.append(total.astype(want))
        return tuple(out)

    def new_trace(self) -> Trace:
        return Trace(self.state_dtypes, tuple(range(len(self.key_idx))), ())

    def checkpoint_dtypes(self, key: str) -> tuple[np.dtype, ...]:
        return self.state_dtypes

    def describe(self) -> str:
        aggs = ", ".join(
            fn if c is None else f"{fn}({self.inputs[0].schema.names[c]})" for fn, c in self.aggs
        )
        return f"{self.name} accumulate [{aggs}] plan={self.plan} rows={self.totals.rows_held()}"
