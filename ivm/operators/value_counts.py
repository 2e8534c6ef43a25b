"""MIN and MAX (with COUNT and SUM beside them) outside loops, over a value → count map.

Per key the operator keeps, as :class:`~ivm.operators.accumulate.AccumulateReduce` does, one
state row with the row count and, per aggregate, the non-null count and the SUM — or, for
MIN and MAX, the current extreme.  Beside it, per column that a MIN or MAX reads, one
arrangement of ``(key, value)`` with the value's multiplicity: the group's sorted multiset
(CIDR 2013 §3.4: the output is a function of the accumulated input ``A(t)``; the multiset is
``A(t)`` projected on the columns the function reads, so nothing else of the input rows is
kept).

A change updates the extreme from the change alone unless it deletes a value at or beyond
the current extreme (``<=`` the minimum, ``>=`` the maximum, or an incomparable one such as
NaN): an insert can only move the minimum down, and a delete of a value above it leaves it
where it is.  Only then is the key's multiset read back, once per key and epoch.  Deletes
that hit the extreme are rare under random changes (about 2 in a group's size per delete),
so the work follows the change; a workload that always deletes the extreme (a sliding window
over the MIN of its timestamps) re-reads its groups, where the hierarchical plan
(:mod:`ivm.hierarchy`) bounds the work by a bucket — the planner picks that one for large
groups (:func:`ivm.reduce_plan.plan_reduce`).

Like the accumulable plan it assumes one time per epoch (outside loops) and an input that
stays a multiset (a row is never deleted more often than it was inserted), as SQL tables do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ivm.aggregate_spec import AggFunction
from ivm.batch import Columns, take
from ivm.errors import SchemaError
from ivm.operators.accumulate import AccumulateReduce, GroupedBatch
from ivm.operators.aggregates import AggregateKernel, _not_null
from ivm.operators.reduce import consolidate_groups
from ivm.reduce_plan import ReducePlan, ReduceStrategy
from ivm.schema import DTYPES
from ivm.trace import Trace

EXTREMES = (AggFunction.MIN, AggFunction.MAX)


def _extreme(
    fn: AggFunction,
    group: np.ndarray,
    col: np.ndarray,
    use: np.ndarray,
    n: int,
    dtype: str,
    starts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per group ``0..n-1`` (rows sorted by ``group``; ``starts``: where each group begins,
    if every group has rows): the MIN or MAX of the values where ``use``, and whether
    there was one."""
    if starts is not None and len(col) and use.all():
        # every row counts (an initial load's inserts): one pass, no gathers
        ufunc = np.minimum if fn is AggFunction.MIN else np.maximum
        try:
            return ufunc.reduceat(col, starts), np.ones(n, dtype=bool)
        except TypeError as exc:
            raise SchemaError(f"{fn} over values that cannot be compared: {exc}") from None
    has = np.zeros(n, dtype=bool)
    has[group[use]] = True
    return AggregateKernel._extreme(fn, group, col, use, np.arange(n), dtype), has


def _as_int64(col: np.ndarray) -> np.ndarray | None:
    """An object column's values as int64 (NULL as 0: the caller masks it) when every
    value is a Python int within 64 bits (a nullable BIGINT), else None: extremes over it
    are then compared in numpy, not value by value."""
    if col.dtype != object or len(col) == 0:
        return None
    try:
        arr = pa.array(col, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    if arr.type != pa.int64():
        return None
    return np.asarray(arr.fill_null(0).to_numpy())


class ValueCountsReduce(AccumulateReduce):
    """COUNT, SUM, MIN and MAX per key: the linear ones from the change, MIN and MAX from
    the change and, when it deletes the extreme, the key's value → count map."""

    kind = "value_counts"
    plan = ReducePlan(ReduceStrategy.VALUE_COUNTS)

    def __init__(self, *args: Any, **kw: Any) -> None:
        """Arguments as :class:`AccumulateReduce`'s (``key_idx``, ``aggs``, ``in_dtypes``)."""
        super().__init__(*args, **kw)
        in_dtypes: tuple[str, ...] = kw["in_dtypes"]
        self.in_dtypes = in_dtypes
        aggs = self.aggs
        nkey = len(self.key_idx)
        key_dtypes = tuple(self.state_dtypes[:nkey])
        #: the columns a MIN or MAX reads, each with its (key, value) → count arrangement
        self.extreme_cols = sorted({c for fn, c in aggs if fn in EXTREMES and c is not None})
        self.values = {
            c: Trace((*key_dtypes, DTYPES[in_dtypes[c]]), tuple(range(nkey)), ())
            for c in self.extreme_cols
        }
        #: keys whose values were read back (a change deleted their extreme), in total
        self.keys_reread = 0

    @staticmethod
    def _slot_dtype(fn: AggFunction, col_dtype: str) -> np.dtype:
        if fn in EXTREMES:
            return DTYPES[col_dtype]
        return AccumulateReduce._slot_dtype(fn, col_dtype)

    def _settle(
        self, grouped: GroupedBatch, old_vals: list[np.ndarray], new_vals: list[np.ndarray]
    ) -> None:
        try:
            self._settle_extremes(grouped, old_vals, new_vals)
        except TypeError as exc:  # an ``any`` column holding values of several types
            raise SchemaError(f"min/max over values that cannot be compared: {exc}") from None

    def _settle_extremes(
        self, grouped: GroupedBatch, old_vals: list[np.ndarray], new_vals: list[np.ndarray]
    ) -> None:
        b, order, starts = grouped.batch, grouped.order, grouped.starts
        probe_h, probe_cols = grouped.probe_h, grouped.probe_cols
        n = len(starts)
        keys = tuple(b.cols[i] for i in self.key_idx)
        valid = {}
        compared = {}  # each column as its extremes are compared: int64 where it can be
        for vc in self.extreme_cols:
            ok = _not_null(b.cols[vc])
            valid[vc] = ok
            ints = _as_int64(b.cols[vc])
            compared[vc] = b.cols[vc] if ints is None else ints
            if ok.all():
                cols, vdiff = (*keys, b.cols[vc]), b.diff
            else:
                rows = np.flatnonzero(ok)
                cols, vdiff = (*take(keys, rows), b.cols[vc][rows]), b.diff[rows]
            self.values[vc].insert(cols, np.zeros((len(vdiff), 0), dtype=np.int64), vdiff)
        # the batch grouped by probe: row i of the sorted batch belongs to probe group[i]
        group = np.repeat(np.arange(n), np.diff(np.append(starts, len(order))))
        diff = b.diff[order]
        slot = 1
        for fn, c in self.aggs:
            if c is None:
                continue
            nn, ext = slot, slot + 1
            slot += 2
            if fn not in EXTREMES:
                continue
            dtype = self.in_dtypes[c]
            col = compared[c][order]
            ok = valid[c][order]
            ins, has_ins = _extreme(fn, group, col, ok & (diff > 0), n, dtype, starts)
            dele, has_del = _extreme(fn, group, col, ok & (diff < 0), n, dtype)
            old_ok = old_vals[nn] > 0
            out = new_vals[ext]
            if out.dtype != ins.dtype:
                ins = ins.astype(out.dtype)  # int64 compared, Python ints kept
            # an insert moves the extreme only outward
            both = np.flatnonzero(has_ins & old_ok)
            better = np.minimum if fn is AggFunction.MIN else np.maximum
            out[both] = better(out[both], ins[both])
            only = np.flatnonzero(has_ins & ~old_ok)
            out[only] = ins[only]
            # a delete at or beyond the extreme (or incomparable: NaN) re-reads the key
            hit = has_del & ~old_ok
            sel = np.flatnonzero(has_del & old_ok)
            inside = np.greater if fn is AggFunction.MIN else np.less
            hit[sel] = ~np.asarray(inside(dele[sel], old_vals[ext][sel]), dtype=bool)
            reread = np.flatnonzero(hit & (new_vals[nn] > 0))
            if len(reread):
                self.keys_reread += len(reread)
                out[reread] = self._reread(fn, c, probe_h[reread], take(probe_cols, reread))
            if out.dtype == object:
                out[new_vals[nn] <= 0] = None

    def _reread(
        self, fn: AggFunction, c: int, probe_h: np.ndarray, probe_cols: Columns
    ) -> np.ndarray:
        """The MIN or MAX of each probed key's values with a positive count."""
        acc = self.values[c].lookup(probe_h, probe_cols, None)
        pos, counts = consolidate_groups(acc)
        vals = acc.cols[len(self.key_idx)][pos]
        res, _ = _extreme(fn, acc.owner[pos], vals, counts > 0, len(probe_h), self.in_dtypes[c])
        return res

    def end_epoch(self) -> None:
        super().end_epoch()
        for t in self.values.values():
            t.compact()

    def snapshot(self) -> object:
        return (super().snapshot(), {c: t.snapshot() for c, t in self.values.items()})

    def restore(self, snap: object) -> None:
        assert isinstance(snap, tuple)
        totals, values = snap
        super().restore(totals)
        for c, s in values.items():
            self.values[c].restore(s)

    def state(self) -> dict[str, tuple]:
        out = super().state()
        for c, t in self.values.items():
            out[f"values{c}"] = t.all_updates()
        return out

    def checkpoint_dtypes(self, key: str) -> tuple[np.dtype, ...]:
        if key.startswith("values"):
            return self.values[int(key[len("values") :])].dtypes
        return super().checkpoint_dtypes(key)

    def load_state(self, state: dict[str, tuple]) -> None:
        super().load_state(state)
        for c, t in list(self.values.items()):
            fresh = Trace(t.dtypes, t.key_idx, ())
            cols, times, diff = state[f"values{c}"]
            fresh.insert(cols, times, diff)
            self.values[c] = fresh

    def describe(self) -> str:
        held = sum(t.rows_held() for t in self.values.values())
        return f"{super().describe()} value_rows={held} keys_reread={self.keys_reread}"
