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

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from ivm import kernel_entries as entries
from ivm.batch import (
    Batch,
    Columns,
    combine_hash,
    concat_columns,
    consolidate_hashed,
    distinct_ints,
    hash_is_injective,
    hash_rows,
    rows_equal,
    take,
    unique_int_rows,
)
from ivm.kernels import (
    consolidate_by_owner,
    counting_order,
    distinct_changes,
    first_of_hashes,
)
from ivm.lattice import Time, join_rows, less_equal_rows
from ivm.operators.aggregates import DistinctKernel, Kernel
from ivm.operators.arrange import Arrange
from ivm.operators.base import KeepsTrace
from ivm.operators.join import pad_times
from ivm.operators.prefix_cache import PrefixCache
from ivm.reduce_plan import ReducePlan, general_plan
from ivm.trace import ITER_BITS, NO_TIME, Gathered, Trace, constant_times


def unique_keys(cols: Columns, n: int, h: np.ndarray | None = None) -> tuple[np.ndarray, Columns]:
    """Distinct key rows (exact, even under hash collisions) and their hashes (``h``: the
    rows' hashes, when known)."""
    if h is None:
        h = hash_rows(cols, n)
    if n <= 1:
        return h, cols
    keep, _ = consolidate_hashed(h, cols, np.ones(n, dtype=np.int64))
    if len(keep) == n:
        return h, cols
    return h[keep], take(cols, keep)


_NO_TIMES = np.zeros((0, 0), dtype=np.int64)
#: up to this many keys, schedules are grouped with Python ints rather than numpy calls
_SMALL = 32
#: "no next times asked for" (a reduce outside loops)
_NO_NEXT = np.zeros(0, dtype=np.int64)
#: loop counters below this are kept in the sort keys of single-loop traces
_FAST_UPTO = (1 << ITER_BITS) - 2


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


def group_order(owner: np.ndarray) -> np.ndarray:
    """An order that groups rows by their probe (``owner``, probe indices): a counting
    sort when the probes are not far more than the rows, else a comparison sort."""
    n = len(owner)
    if n < 64 or owner.dtype != np.int64:
        return np.argsort(owner)
    lo, hi = int(owner.min()), int(owner.max())
    if lo < 0 or hi >= 4 * n + 1024:
        return np.argsort(owner)
    return counting_order(owner, hi + 1)


def consolidate_groups(acc: Gathered) -> tuple[np.ndarray, np.ndarray]:
    """The accumulated rows consolidated per (probe, row) and grouped by probe: the
    positions in ``acc`` of one row per distinct (probe, row) with a non-zero sum, in
    probe order, and those sums.

    Ordered by probe with a counting sort, then each probe's rows summed by row hash in a
    table sized to the probe's rows (:func:`ivm.kernels.consolidate_by_owner`): the table
    stays in cache where one table over every gathered row (an initial load gathers
    millions) misses on nearly every row.  Rows summed on equal hashes are compared; on a
    collision, or probes far more than the rows, the rows are grouped by one hash table
    over (probe, row) and compared exactly (:func:`consolidate_hashed`)."""
    owner = acc.owner
    n = len(owner)
    if n >= 64 and owner.dtype == np.int64:
        lo, hi = int(owner.min()), int(owner.max())
        if lo >= 0 and hi < 4 * n + 1024:
            keep, sums, pa, pb = consolidate_by_owner(owner, acc.rowhash, acc.diff, hi + 1)
            if (
                len(pa) == 0
                or hash_is_injective(acc.cols)
                or rows_equal(acc.cols, pa, acc.cols, pb).all()
            ):
                return keep, sums
    keep_in, counts = consolidate_hashed(
        combine_hash(acc.rowhash, owner), (owner, *acc.cols), acc.diff
    )
    order = group_order(owner[keep_in])
    return keep_in[order], counts[order]


class Reduce(KeepsTrace):
    kind = "reduce"
    state_key = "out"

    def __init__(
        self,
        *args: Any,
        source: Arrange,
        kernel: Kernel,
        plan: ReducePlan | None = None,
        **kw: Any,
    ) -> None:
        """``plan``: how this reduce was planned (a stage of a hierarchical reduce carries
        the hierarchical plan); only its ``prefix_cache`` changes what this operator does."""
        super().__init__(*args, **kw)
        self.source = source
        source.users += 1
        self.kernel = kernel
        self.key_idx = source.key_idx
        self.kinds = self.scope.kinds
        self.depth = len(self.kinds)
        self.plan = plan if plan is not None else general_plan(self.depth)
        self.out = self.new_trace()
        #: keys to re-evaluate at later times: (key columns, their hashes) per time
        self.scheduled: dict[Time, list[tuple[Columns, np.ndarray]]] = {}
        self.cache = PrefixCache(source.dtypes, self.dtypes)
        # distinct (set semantics): the key is the whole row, so every accumulated group
        # is one row with a multiplicity
        self.whole_row = self.key_idx == tuple(range(len(source.dtypes)))
        self.by_multiplicity = (
            self.depth <= 1 and self.whole_row and isinstance(kernel, DistinctKernel)
        )
        #: the key's hashes cannot collide (one integer column)
        self.injective_key = hash_is_injective(
            tuple(np.empty(0, source.dtypes[i]) for i in self.key_idx)
        )
        #: the key is one integer column (whose hashes cannot collide) of a trace whose
        #: sort keys hold the loop counter exactly when this reduce is in a loop
        self.int_key = source.trace.by_time == (self.depth == 1) and self.injective_key

    def pending_times(self) -> Collection[Time]:
        if not self.scheduled:
            return self.inbox.keys()
        return [*self.inbox, *self.scheduled]

    def pending_maps(self) -> tuple[Mapping[Time, object], ...]:
        return (self.inbox, self.scheduled)

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

    # Kept whole: one pass per (operator, time) through the reduce's steps in the order of
    # the model (probe keys, accumulate input and output before t, evaluate, emit the
    # difference, schedule later times); the strategies' branches share its local state.
    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        delta = inputs[0]
        probes = self._probes(time, delta)
        if probes is None:
            return
        probe_h, probe_cols = probes
        if self.by_multiplicity:
            self._process_multiplicities(time, probe_h, probe_cols)
            return
        t_inner = time[1:]

        hist: list[tuple[np.ndarray, np.ndarray]] | None = None
        nxt: np.ndarray | None = None
        src = self.source.trace
        use_cache = self.plan.prefix_cache and self.depth == 1 and src.by_time and self.out.by_time
        cache = self.cache
        if use_cache:
            # traces ordered by iteration: binary search for "<= t" and the next time;
            # keys with a long history read a cached accumulation and the slice since
            it = t_inner[0]
            if delta is not None and len(cache):
                cache.patch_input(delta, self.key_idx, it)
            nxt = np.full(len(probe_h), NO_TIME, dtype=np.int64)
            entry, after = cache.best(probe_h, probe_cols, it)
            c_in, c_out = cache.read(entry)
            acc = _cat(
                c_in, src.lookup(probe_h, probe_cols, None, upto=it, next_time=nxt, after=after)
            )
            old_acc = _cat(
                c_out,
                self.out.lookup(probe_h, probe_cols, None, upto=it, next_time=nxt, after=after),
            )
        else:
            hist = [] if self.depth else None
            tf = self._time_filter(t_inner)
            acc = self._accumulate(src.lookup(probe_h, probe_cols, None, tf, hist), t_inner)
            old_acc = self._accumulate(
                self.out.lookup(probe_h, probe_cols, None, tf, hist), t_inner
            )
        # consolidate the accumulation per (key, row), grouped by key
        sel, counts = consolidate_groups(acc)
        group = acc.owner[sel]
        rows = take(acc.cols, sel)
        g_out, extra, mult = self.kernel.evaluate(group, rows, counts)
        new_out = Batch(take(probe_cols, g_out) + extra, mult)
        new_h = hash_rows(new_out.cols, len(new_out))

        if len(old_acc.diff) == 0:
            h = new_h
            keep, sums = consolidate_hashed(new_h, new_out.cols, new_out.diff)
        else:
            both = Batch.concat([new_out, Batch(old_acc.cols, -old_acc.diff)])
            h = np.concatenate([new_h, old_acc.rowhash])
            keep, sums = consolidate_hashed(h, both.cols, both.diff)
            new_out_all = both
        cols = take((new_out if len(old_acc.diff) == 0 else new_out_all).cols, keep)
        out_h = h[keep]
        diff = Batch(cols, sums, out_h)  # consolidated, with its rows' hashes
        if len(diff):
            times = constant_times(t_inner, len(diff))
            self.out.insert_consolidated(diff.cols, times, diff.diff, out_h)
            self.emit(time, diff)
            if use_cache and len(cache):
                cache.patch_output(diff, len(self.key_idx), it)
        if use_cache:
            self._cache_heavy(
                probe_h,
                probe_cols,
                it,
                after,
                np.bincount(acc.owner, minlength=len(probe_h)),
                Gathered(group, rows, _NO_TIMES, counts, acc.rowhash[sel]),
                Gathered(g_out, new_out.cols, _NO_TIMES, new_out.diff, new_h),
            )

        if nxt is not None:
            self._schedule_next(time, probe_h, probe_cols, nxt)
        elif hist:
            self._schedule(time, probe_h, probe_cols, hist)

    def _probes(self, time: Time, delta: Batch | None) -> tuple[np.ndarray, Columns] | None:
        """The distinct keys to evaluate at ``time`` (scheduled ones and the input's) and
        their hashes; None when there are none."""
        sched = self.scheduled.pop(time, None)
        parts: list[tuple[Columns, np.ndarray | None]] = [] if sched is None else list(sched)
        if delta is not None:
            # an arrangement's batch is consolidated: by the whole row, its keys are distinct
            known = delta.rowhash if self.whole_row else None
            keys_in = tuple([delta.cols[i] for i in self.key_idx])
            if sched is None and known is not None and self.key_idx:
                return known, keys_in  # the input's keys alone, with their hashes
            parts.append((keys_in, known))
        if not parts:
            return None
        first_h = parts[0][1]
        if len(parts) == 1 and first_h is not None and self.key_idx:
            # one set of distinct keys with their hashes: a schedule's, or an arrangement's
            return first_h, parts[0][0]
        keys: Columns = concat_columns([c for c, _ in parts])
        if not keys:
            return hash_rows((), 1), ()
        hashes = [h for _, h in parts if h is not None]
        known_h = np.concatenate(hashes) if len(hashes) == len(parts) else None
        if known_h is not None and self.injective_key:
            # keys whose hashes cannot collide: the distinct hashes are the distinct keys
            keep = first_of_hashes(known_h)
            if len(keep) == len(known_h):
                return known_h, keys
            return known_h[keep], take(keys, keep)
        return unique_keys(keys, len(keys[0]), known_h)

    def _process_multiplicities(self, time: Time, probe_h: np.ndarray, probe_cols: Columns) -> None:
        """:meth:`process` for distinct, where each group is one row with a multiplicity:
        the input's and the output's accumulations are per-key sums of diffs, read without
        gathering rows (:meth:`Trace.key_sums`), and the correction is ``[count > 0] − out``."""
        assert isinstance(self.kernel, DistinctKernel)
        n = len(probe_h)
        upto = time[1] if self.depth else None
        nxt = _NO_NEXT
        if self.depth:
            nxt = np.empty(n, dtype=np.int64)
            nxt.fill(NO_TIME)
        if self.int_key and n < _SMALL and (upto is None or upto < _FAST_UPTO):
            # few probes of one integer key column: both traces summed by their compiled
            # loops directly (no hash collision to reject, no probe order to sort)
            up = -1 if upto is None else upto
            count = np.zeros(n, dtype=np.int64)
            old = np.zeros(n, dtype=np.int64)
            # one check for both reads: ``old`` is made as ``count`` is
            plain = entries.plain(probe_h, count, nxt)
            self.source.trace.add_key_sums(probe_h, up, count, nxt, plain)
            self.out.add_key_sums(probe_h, up, old, nxt, plain)
        else:
            want = nxt if self.depth else None
            count = self.source.trace.key_sums(probe_h, probe_cols, upto, want)
            old = self.out.key_sums(probe_h, probe_cols, upto, want)
        # the change is [count > 0] − old: 0 or 1 minus the output's 0 or 1 (a checked
        # sum), which cannot wrap; with the probes to schedule, in one compiled pass
        sel, change, later, first, same = distinct_changes(count, old, nxt, NO_TIME)
        if len(sel):
            # the output rows are the keys: consolidated, and hashed as the probes
            out_h = probe_h[sel]
            diff = Batch(take(probe_cols, sel), change, out_h)
            times = constant_times(time[1:], len(sel))
            self.out.insert_consolidated(diff.cols, times, diff.diff, out_h)
            self.emit(time, diff)
        if len(later):
            if not same:
                self._schedule_next(time, probe_h, probe_cols, nxt)
            elif len(later) == n:
                # every probe at one iteration (the common case): their arrays as they are
                # (arrays are never changed once built)
                self.scheduled.setdefault((time[0], first), []).append((probe_cols, probe_h))
            else:
                self._add_schedule((time[0], first), probe_h, probe_cols, later)

    def _cache_heavy(
        self,
        probe_h: np.ndarray,
        probe_cols: Columns,
        it: int,
        after: np.ndarray,
        read: np.ndarray,
        inp: Gathered,
        out: Gathered,
    ) -> None:
        """Cache the accumulations at ``it`` of keys whose read was long and whose
        accumulation is at most half of it (and bound the cache by the input's size)."""
        size = np.bincount(inp.owner, minlength=len(probe_h))
        new = ((read >= PrefixCache.MIN_ROWS) & (2 * size <= read) & (after != it)).nonzero()[0]
        if len(new) == 0:
            return
        self.cache.add(probe_h, probe_cols, it, new, inp, out)
        if self.cache.rows() > max(1 << 16, self.source.trace.rows_held()):
            self.cache.clear()

    def _time_filter(self, t_inner: tuple[int, ...]) -> Any:
        if self.depth == 0:
            return None
        kinds = self.kinds
        depth = self.depth

        def keep(times: np.ndarray) -> np.ndarray:
            return less_equal_rows(pad_times(times, depth), t_inner, kinds)

        return keep

    def _schedule_next(
        self, time: Time, probe_h: np.ndarray, probe_cols: Columns, nxt: np.ndarray
    ) -> None:
        """Schedule each probe at its next interesting iteration ``nxt`` (single loop;
        ``NO_TIME``: none)."""
        probes = (nxt != NO_TIME).nonzero()[0]
        k = len(probes)
        if k == 0:
            return
        when = nxt[probes]
        if k <= _SMALL:
            # a few keys: grouped by iteration with Python ints
            its = when.tolist()
            if its.count(its[0]) == k:
                # one iteration (the common case); every probe: their arrays as they are
                # (arrays are never changed once built)
                if k == len(nxt):
                    self.scheduled.setdefault((time[0], its[0]), []).append((probe_cols, probe_h))
                else:
                    self._add_schedule((time[0], its[0]), probe_h, probe_cols, probes)
                return
            at: dict[int, list[int]] = {}
            for p, it in zip(probes.tolist(), its, strict=True):
                at.setdefault(it, []).append(p)
            groups = [(it, np.array(ps, dtype=np.int64)) for it, ps in at.items()]
            if len(groups) == 1:
                groups = [(groups[0][0], probes)]
        else:
            groups = [(int(it), probes[when == it]) for it in distinct_ints(when)]
        for it, sel in groups:
            self._add_schedule((time[0], it), probe_h, probe_cols, sel)

    def _add_schedule(
        self, when: Time, probe_h: np.ndarray, probe_cols: Columns, sel: np.ndarray
    ) -> None:
        """Re-evaluate the probes ``sel`` at ``when`` (their keys and hashes kept)."""
        self.scheduled.setdefault(when, []).append((take(probe_cols, sel), probe_h[sel]))

    def _schedule(
        self,
        time: Time,
        probe_h: np.ndarray,
        probe_cols: Columns,
        hist: list[tuple[np.ndarray, np.ndarray]],
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
            for when_it in distinct_ints(it):
                self._add_schedule((time[0], int(when_it)), probe_h, probe_cols, o[it == when_it])
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
            self._add_schedule(when, probe_h, probe_cols, sel)

    def end_epoch(self) -> None:
        assert not self.scheduled, f"{self.name}: work scheduled past the end of the epoch"
        self.cache.compact()

    def new_trace(self) -> Trace:
        return Trace(self.dtypes, tuple(range(len(self.key_idx))), self.kinds)

    def restore(self, snap: object) -> None:
        super().restore(snap)
        self.scheduled.clear()
        self.cache.clear()
        self.out.compact()

    def load_state(self, state: dict[str, tuple]) -> None:
        super().load_state(state)
        self.cache.clear()

    def describe(self) -> str:
        keys = [self.source.schema.names[i] for i in self.key_idx]
        return (
            f"{self.name} {type(self.kernel).__name__} by {keys} over {self.source.name} "
            f"plan={self.plan} out_rows={self.out.rows_held()}"
        )
