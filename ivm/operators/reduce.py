"""Reduce: a function of each key's accumulated group, corrected at interesting times.

Correctness (CIDR 2013 §3.4; Foundations §3): the output must accumulate, at every time t,
to ``f(A(t))`` per key.  The difference to emit at t is therefore
``f(A(t)) − Σ_{s < t} out(s)``.  It can be non-zero only at times that are joins of the
times of the key's input updates ("interesting times").  When a key is processed at t we
join t with every time in the key's input and output history; each join greater than t is
scheduled for this key.  Because every processed time is joined with the history, the
schedule reaches the closure of the joins, so a change at an early loop iteration is
corrected at every later iteration where older history of the key exists — even one at
which the input did not change.

The accumulation ``A(t)`` is gathered from the shared input arrangement (every update whose
time is ``<= t``), and ``Σ out`` from this operator's own output trace.  Both are vectorized
over all keys processed at t; the per-key function is a :class:`~ivm.operators.aggregates.Kernel`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ivm.batch import (
    Batch,
    Columns,
    combine_hash,
    concat_columns,
    consolidate_hashed,
    hash_rows,
    rows_equal,
    take,
    unique_int_rows,
)
from ivm.lattice import Time, join_rows, less_equal_rows
from ivm.operators.aggregates import Kernel
from ivm.operators.arrange import Arrange
from ivm.operators.base import Operator
from ivm.operators.join import pad_times
from ivm.trace import NO_TIME, Gathered, Trace


def unique_keys(cols: Columns, n: int) -> tuple[np.ndarray, Columns]:
    """Distinct key rows (exact, even under hash collisions) and their hashes."""
    h = hash_rows(cols, n)
    if n <= 1:
        return h, cols
    uh, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if len(uh) == n:
        return h, cols
    rep = first[inverse.reshape(-1)]
    if not rows_equal(cols, None, cols, rep).all():  # a hash collision: group exactly
        b = Batch(cols, np.ones(n, dtype=np.int64)).consolidate()
        return hash_rows(b.cols, len(b)), b.cols
    return uh, take(cols, first)


_NO_TIMES = np.zeros((0, 0), dtype=np.int64)


def _cat(a: Gathered | None, b: Gathered) -> Gathered:
    """Cached accumulation rows followed by newly gathered ones (times dropped)."""
    if a is None or len(a.owner) == 0:
        return b
    return Gathered(
        np.concatenate([a.owner, b.owner]),
        tuple(np.concatenate([x, y]) for x, y in zip(a.cols, b.cols, strict=True)),
        _NO_TIMES,
        np.concatenate([a.diff, b.diff]),
        np.concatenate([a.rowhash, b.rowhash]),
    )


class AccumulationCache:
    """Accumulated input and output of some keys as of an iteration of this epoch.

    Inside one loop the times of an epoch are processed in increasing iteration, and no
    update at an iteration ``<= i`` arrives after a key was evaluated at ``i``; so the
    accumulation at a later ``j`` is the one cached at ``i`` plus the updates in ``(i, j]``.
    Keys with a long history (high-degree nodes) are cached, so that re-evaluating them at
    every later interesting time reads only what changed since.  Cleared every epoch.
    """

    #: cache a key once its accumulation has this many rows
    MIN_ROWS = 16

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.keyhash = np.zeros(0, dtype=np.uint64)
        self.asof = np.zeros(0, dtype=np.int64)
        self.keycols: Columns = ()
        self.inp: Gathered | None = None
        self.out: Gathered | None = None

    def get(
        self, probe_h: np.ndarray, probe_cols: Columns
    ) -> tuple[np.ndarray, Gathered | None, Gathered | None]:
        after = np.full(len(probe_h), -1, dtype=np.int64)
        if len(self.keyhash) == 0 or self.inp is None or self.out is None:
            return after, None, None
        idx = np.minimum(np.searchsorted(self.keyhash, probe_h), len(self.keyhash) - 1)
        hit = self.keyhash[idx] == probe_h
        if hit.any() and probe_cols:
            hit[hit] = rows_equal(self.keycols, idx[hit], probe_cols, np.flatnonzero(hit))
        probes = np.flatnonzero(hit)
        if len(probes) == 0:
            return after, None, None
        entries = idx[probes]
        after[probes] = self.asof[entries]
        to_probe = np.full(len(self.keyhash), -1, dtype=np.int64)
        to_probe[entries] = probes
        return after, self._rows(self.inp, to_probe), self._rows(self.out, to_probe)

    @staticmethod
    def _rows(g: Gathered, to_probe: np.ndarray) -> Gathered:
        owner = to_probe[g.owner]
        sel = np.flatnonzero(owner >= 0)
        return Gathered(owner[sel], take(g.cols, sel), _NO_TIMES, g.diff[sel], g.rowhash[sel])

    def put(
        self, probe_h: np.ndarray, probe_cols: Columns, asof: int, inp: Gathered, out: Gathered
    ) -> None:
        """Replace the entries of every probe; cache those with long accumulations."""
        n = len(probe_h)
        sizes = np.bincount(inp.owner, minlength=n)
        chosen = np.flatnonzero(sizes >= self.MIN_ROWS)
        keep_old = np.ones(len(self.keyhash), dtype=bool)
        if len(self.keyhash):
            idx = np.minimum(np.searchsorted(self.keyhash, probe_h), len(self.keyhash) - 1)
            keep_old[idx[self.keyhash[idx] == probe_h]] = False
        if len(chosen) == 0 and keep_old.all():
            return
        old_entries = np.flatnonzero(keep_old)
        # new entry list: surviving old entries, then the chosen probes; sorted by hash
        kh = np.concatenate([self.keyhash[old_entries], probe_h[chosen]])
        asof_all = np.concatenate(
            [self.asof[old_entries], np.full(len(chosen), asof, dtype=np.int64)]
        )
        keycols = tuple(
            np.concatenate([a[old_entries], b[chosen]])
            for a, b in zip(
                self.keycols or tuple(c[:0] for c in probe_cols), probe_cols, strict=True
            )
        )
        order = np.argsort(kh)
        rank = np.empty(len(kh), dtype=np.int64)
        rank[order] = np.arange(len(kh))
        old_map = np.full(len(self.keyhash), -1, dtype=np.int64)
        old_map[old_entries] = rank[: len(old_entries)]
        new_map = np.full(n, -1, dtype=np.int64)
        new_map[chosen] = rank[len(old_entries) :]
        self.inp = _remap(self.inp, old_map, inp, new_map)
        self.out = _remap(self.out, old_map, out, new_map)
        self.keyhash, self.asof = kh[order], asof_all[order]
        self.keycols = tuple(c[order] for c in keycols)


def _remap(
    old: Gathered | None, old_map: np.ndarray, new: Gathered, new_map: np.ndarray
) -> Gathered:
    parts = []
    if old is not None and len(old.owner):
        parts.append((old_map[old.owner], old))
    parts.append((new_map[new.owner], new))
    owners = np.concatenate([o for o, _ in parts])
    sel = np.flatnonzero(owners >= 0)
    cols = tuple(np.concatenate([g.cols[i] for _, g in parts])[sel] for i in range(len(new.cols)))
    return Gathered(
        owners[sel],
        cols,
        _NO_TIMES,
        np.concatenate([g.diff for _, g in parts])[sel],
        np.concatenate([g.rowhash for _, g in parts])[sel],
    )


class Reduce(Operator):
    kind = "reduce"

    def __init__(self, *args: Any, source: Arrange, kernel: Kernel, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.source = source
        source.users += 1
        self.kernel = kernel
        self.key_idx = source.key_idx
        self.kinds = self.scope.kinds
        self.depth = len(self.kinds)
        nkey = len(self.key_idx)
        self.out = Trace(self.dtypes, tuple(range(nkey)), self.kinds)
        self.scheduled: dict[Time, list[Columns]] = {}
        self.cache = AccumulationCache()

    def pending_times(self) -> list[Time]:
        return [*self.inbox, *self.scheduled]

    def has_work(self, time: Time) -> bool:
        return time in self.inbox or time in self.scheduled

    def _accumulate(self, found: Gathered, t_inner: tuple[int, ...]) -> Gathered:
        if self.depth == 0:
            return found
        times = pad_times(found.times, self.depth)
        m = less_equal_rows(times, t_inner, self.kinds)
        if m.all():
            return Gathered(found.owner, found.cols, times, found.diff, found.rowhash)
        idx = np.flatnonzero(m)
        return Gathered(
            found.owner[idx], take(found.cols, idx), times[idx], found.diff[idx], found.rowhash[idx]
        )

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        delta = inputs[0]
        parts: list[Columns] = self.scheduled.pop(time, [])
        if delta is not None:
            parts = [*parts, tuple(delta.cols[i] for i in self.key_idx)]
        if not parts:
            return
        keys: Columns = concat_columns(parts)
        nkeys = len(keys[0]) if keys else max(len(delta) if delta is not None else 0, 1)
        probe_cols: Columns
        if not keys:
            probe_h, probe_cols = hash_rows((), 1), ()
        else:
            probe_h, probe_cols = unique_keys(keys, nkeys)
        t_inner = time[1:]

        hist: list[tuple[np.ndarray, np.ndarray]] | None = None
        nxt: np.ndarray | None = None
        src = self.source.trace
        use_cache = self.depth == 1 and src.by_time and self.out.by_time
        if use_cache:
            # traces ordered by iteration: binary search for "<= t" and the next time;
            # keys cached earlier in this epoch only need the updates since then
            nxt = np.full(len(probe_h), NO_TIME, dtype=np.int64)
            after, c_in, c_out = self.cache.get(probe_h, probe_cols)
            acc = _cat(
                c_in,
                src.lookup(probe_h, probe_cols, None, upto=t_inner[0], next_time=nxt, after=after),
            )
            old_acc = _cat(
                c_out,
                self.out.lookup(
                    probe_h, probe_cols, None, upto=t_inner[0], next_time=nxt, after=after
                ),
            )
        else:
            hist = [] if self.depth else None
            tf = self._time_filter(t_inner)
            acc = self._accumulate(src.lookup(probe_h, probe_cols, None, tf, hist), t_inner)
            old_acc = self._accumulate(
                self.out.lookup(probe_h, probe_cols, None, tf, hist), t_inner
            )
        # consolidate the accumulation per (key, row) and sort by key
        keep_in, counts = consolidate_hashed(
            combine_hash(acc.rowhash, acc.owner), (acc.owner, *acc.cols), acc.diff
        )
        owner = acc.owner[keep_in]
        order = np.argsort(owner)
        group = owner[order]
        rows = take(acc.cols, keep_in[order])
        counts = counts[order]
        g_out, extra, mult = self.kernel.evaluate(group, rows, counts)
        new_out = Batch(take(probe_cols, g_out) + extra, mult)
        new_h = hash_rows(new_out.cols, len(new_out))

        if len(old_acc.diff) == 0:
            keep, sums = consolidate_hashed(new_h, new_out.cols, new_out.diff)
        else:
            both = Batch.concat([new_out, Batch(old_acc.cols, -old_acc.diff)])
            h = np.concatenate([new_h, old_acc.rowhash])
            keep, sums = consolidate_hashed(h, both.cols, both.diff)
            new_out_all = both
        diff = Batch(take((new_out if len(old_acc.diff) == 0 else new_out_all).cols, keep), sums)
        if use_cache:
            self.cache.put(
                probe_h,
                probe_cols,
                t_inner[0],
                Gathered(group, rows, _NO_TIMES, counts, acc.rowhash[keep_in[order]]),
                Gathered(g_out, new_out.cols, _NO_TIMES, new_out.diff, new_h),
            )
        if len(diff):
            times = np.tile(np.asarray(t_inner, dtype=np.int64), (len(diff), 1)).reshape(
                len(diff), self.depth
            )
            self.out.insert(diff.cols, times, diff.diff)
            self.emit(time, diff)

        if nxt is not None:
            has = np.flatnonzero(nxt != NO_TIME)
            if len(has):
                self._schedule_next(time, probe_cols, has, nxt[has])
        elif hist:
            self._schedule(time, probe_cols, hist)

    def _time_filter(self, t_inner: tuple[int, ...]) -> Any:
        if self.depth == 0:
            return None
        kinds = self.kinds
        depth = self.depth

        def keep(times: np.ndarray) -> np.ndarray:
            return less_equal_rows(pad_times(times, depth), t_inner, kinds)

        return keep

    def _schedule_next(
        self, time: Time, probe_cols: Columns, probes: np.ndarray, when: np.ndarray
    ) -> None:
        """Schedule each probe at its next interesting iteration (single loop)."""
        for it in np.unique(when):
            sel = probes[when == it]
            self.scheduled.setdefault((time[0], int(it)), []).append(take(probe_cols, sel))

    def _schedule(
        self, time: Time, probe_cols: Columns, hist: list[tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """Schedule every key at each join of ``time`` with a time in its history.

        In a single loop (depth 1) the times of an epoch are totally ordered, so it is enough
        to schedule each key at its *next* later history time: processing it there joins
        that time with the history again and schedules the one after.
        """
        t_inner = time[1:]
        owners = np.concatenate([o for o, _ in hist])
        if len(owners) == 0:
            return
        times = np.concatenate([pad_times(t, self.depth) for _, t in hist])
        if self.depth == 1:
            it = times[:, 0]
            later = np.flatnonzero(it > t_inner[0])
            if len(later) == 0:
                return
            o, it = owners[later], it[later]
            order = np.lexsort((it, o))
            o, it = o[order], it[order]
            first = np.ones(len(o), dtype=bool)
            first[1:] = o[1:] != o[:-1]
            o, it = o[first], it[first]
            for when_it in np.unique(it):
                sel = o[it == when_it]
                self.scheduled.setdefault((time[0], int(when_it)), []).append(take(probe_cols, sel))
            return
        joined = join_rows(times, t_inner, self.kinds)
        later = np.flatnonzero(np.any(joined != np.asarray(t_inner), axis=1))
        if len(later) == 0:
            return
        pairs, _ = unique_int_rows(np.column_stack([joined[later], owners[later]]))
        uniq_t, inv = unique_int_rows(pairs[:, : self.depth])
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(len(uniq_t) + 1))
        for j in range(len(uniq_t)):
            sel = pairs[order[bounds[j] : bounds[j + 1]], self.depth]
            when = (time[0], *(int(x) for x in uniq_t[j]))
            self.scheduled.setdefault(when, []).append(take(probe_cols, sel))

    def end_epoch(self) -> None:
        assert not self.scheduled, f"{self.name}: work scheduled past the end of the epoch"
        self.cache.clear()

    def snapshot(self) -> object:
        return self.out.snapshot()

    def restore(self, snap: object) -> None:
        assert isinstance(snap, tuple)
        self.out.restore(snap)
        self.scheduled.clear()
        self.cache.clear()
        self.out.compact()

    def state(self) -> dict[str, tuple]:
        return {"out": self.out.all_updates()}

    def load_state(self, state: dict[str, tuple]) -> None:
        self.out = Trace(self.dtypes, tuple(range(len(self.key_idx))), self.kinds)
        cols, times, diff = state["out"]
        self.out.insert(cols, times, diff)

    def describe(self) -> str:
        keys = [self.source.schema.names[i] for i in self.key_idx]
        return (
            f"{self.name} {type(self.kernel).__name__} by {keys} over {self.source.name} "
            f"out_rows={self.out.rows_held()}"
        )
