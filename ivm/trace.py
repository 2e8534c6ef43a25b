"""Traces: the indexed, compacted history of a collection, arranged by key.

A trace holds updates ``(row, inner time, diff)`` in immutable *runs*, each sorted by a key
hash, so "every update for these keys" is a vectorized binary search per run
(``np.searchsorted``) whose cost follows the size of the answer, not of the state.  Runs
are merged geometrically, as differential dataflow's spines are: a new run is merged with
the previous one while that one is not much larger (at most twice; eight times inside a
loop, whose traces are read far more often than written), so there are O(log n) runs.  Merging
consolidates: equal ``(row, time)`` updates are summed and cancelled ones dropped.

In a trace inside one loop (one inner coordinate) the sort key is the key hash with its
low bits replaced by the loop counter, so each key's updates are ordered by iteration:
"updates of these keys at iterations ``<= i``" is a prefix found by binary search, and the
first update after it gives the key's next interesting time without scanning its history.

Times kept here omit the epoch: at the end of every epoch each time is advanced to the next
epoch's frontier (:func:`ivm.lattice.advance_rows`), so every kept time belongs to the
current epoch — the compaction of CIDR 2013 §3.3.  State is then proportional to the
distinct ``(row, loop counters)`` that are live, not to the history of changes.

The updates of the time an operator is processing are *staged* apart from the committed
runs: a consumer asks for the trace "as of strictly before" its time, which includes the
staged updates unless they are at exactly that time.  This is what lets a join see each pair
of updates exactly once (CIDR 2013 §3.2) and what the delta-query "nudge" uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np

from ivm import kernel_entries as entries
from ivm.batch import (
    HASH_OFFSET,
    Batch,
    Columns,
    argsort_u64,
    consolidate_hashed,
    hash_is_injective,
    hash_rows,
    hash_times,
    rows_equal,
    take,
)
from ivm.difference import DIFF_MAX, abs_max, add_at
from ivm.kernels import (
    RADIX_ROWS,
    consolidate_sorted,
    merge_int_runs,
    merge_key_runs,
    probe_run,
    push_key_run,
    sort_key_run,
    sort_run,
    stage_int_rows,
    stage_key_batch,
    sum_run,
    take_concat,
)
from ivm.lattice import ALTNEU, Kinds, advance_rows

#: runs smaller than this are merged eagerly, so lookups visit few runs
SMALL_RUN = 256

#: a new run is merged with the one before it while that one is at most this many times
#: larger: O(log n) runs, each update merged O(log n) times
MERGE_RATIO = 2
#: the same in traces read more often than written: single-loop traces, which every
#: iteration of a small change reads run by run (a reduce's key sums, a join's probes), and
#: traces read more than once between two pushes (an arrangement outside a loop that a join
#: inside it probes at every iteration).  Fewer, larger runs — ~3 where ``MERGE_RATIO``
#: keeps ~5 — cost more merging and less reading (W2's step −5 to −7%, W1's −7%;
#: ``bench/README.md``, tenth pass)
LOOP_MERGE_RATIO = 8

#: batches from this size on are consolidated by sorting them (:meth:`Trace.stage_batch`)
BULK_ROWS = 4096

#: bits of the sort key that hold the loop counter in single-loop traces
ITER_BITS = 20
_LOW = np.uint64((1 << ITER_BITS) - 1)
_HIGH = ~_LOW
#: "no later time" in next-time answers
NO_TIME = np.iinfo(np.int64).max

_EMPTY = np.zeros(0, dtype=np.int64)
_INT64 = np.dtype(np.int64)
_EMPTY_HASHES = np.zeros(0, dtype=np.uint64)
#: runs up to this size are sorted by one compiled call (fewer numpy calls); larger ones
#: by numpy, whose vectorized sort beats numba's, and whose stable sort (timsort) merges
#: the already-sorted pieces of a merged run in near linear time
_KERNEL_SORT = 4096
#: batches of several int64 columns up to this size are staged by one compiled call
#: (:meth:`Trace.stage_int_batch`); larger ones, whose rows repeat keys, are consolidated
#: by hash and sorted by numpy faster (1,000 rows of 20 keys: 35 against 32 µs); from
#: ``RADIX_ROWS`` on (an initial load's batches) the call sorts by a radix sort and is
#: again the faster way: one compiled pass instead of sorting, gathering the hashes and
#: diffs, consolidating, checking the pairs summed and gathering the columns apart
_INT_STAGE = 512


class RunHints(TypedDict, total=False):
    """What a caller already knows of the updates it makes a run of: their row hashes, their
    key hashes, and whether they are sorted runs one after the other (``merged``)."""

    rowhash: np.ndarray | None
    keyhash: np.ndarray | None
    merged: bool


@dataclass(slots=True)
class Run:
    """Updates sorted by ``sortkey``; never changed once built (not ``frozen``: a frozen
    dataclass's ``__init__`` costs 4× more, and runs are built on every small change)."""

    sortkey: np.ndarray  # uint64, sorted
    keyhash: np.ndarray  # uint64 hash of the key columns
    rowhash: np.ndarray  # uint64 hash of the whole row (times excluded)
    cols: Columns
    times: np.ndarray  # (n, depth) int64 inner coordinates
    diff: np.ndarray  # int64
    #: the largest ``|diff|`` (bounds every row's sum over runs; see :meth:`Trace.compact`)
    bound: int

    def __len__(self) -> int:
        return len(self.diff)


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges [lo, hi): (index of the range, position) of every element."""
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    if counts.max() == 1:
        owner = np.flatnonzero(counts)
        return owner, lo[owner]
    owner = np.repeat(np.arange(len(lo)), counts)
    ends = np.cumsum(counts)
    pos = np.arange(total) + np.repeat(lo - (ends - counts), counts)
    return owner, pos


def constant_times(inner: tuple[int, ...], n: int) -> np.ndarray:
    """``n`` copies of the inner time ``inner`` as an ``(n, depth)`` array."""
    out = np.empty((n, len(inner)), dtype=np.int64)
    if len(inner) == 1:
        out.fill(inner[0])  # a tuple assigned to a slice is converted first: slower
    elif inner:
        out[:] = inner
    return out


def _sorting_permutation(h: np.ndarray) -> np.ndarray | None:
    """The order that sorts ``h``, or None when it is short or already sorted."""
    if len(h) < 32 or (h[1:] >= h[:-1]).all():
        return None
    return argsort_u64(h)


@dataclass(slots=True)
class Gathered:
    """Updates found for a set of probes: ``owner[j]`` is the probe that row j matched."""

    owner: np.ndarray
    cols: Columns
    times: np.ndarray
    diff: np.ndarray
    rowhash: np.ndarray


class Trace:
    """An arrangement's state: runs of updates indexed by key (see the module docstring)."""

    def __init__(
        self, dtypes: tuple[np.dtype, ...], key_idx: tuple[int, ...], kinds: Kinds
    ) -> None:
        self.dtypes = dtypes
        self.key_idx = key_idx
        self.kinds = kinds
        self.depth = len(kinds)
        self.by_time = self.depth == 1
        #: the key is the whole row (key hash = row hash)
        self.whole_key = key_idx == tuple(range(len(dtypes)))
        #: the whole row is one int64 column (its hash is the key hash, and cannot collide)
        self.int_row = self.whole_key and len(dtypes) == 1 and dtypes[0] == np.dtype(np.int64)
        #: rows of several int64 columns (merged with their columns in one compiled call)
        self.int_cols = len(dtypes) > 1 and all(d == _INT64 for d in dtypes)
        self.runs: list[Run] = []
        self.staged: Run | None = None
        self.staged_time: tuple[int, ...] | None = None
        #: reads since the last run was pushed (see :meth:`_settle`)
        self.reads = 0

    # -- building runs -------------------------------------------------------------------
    def _sortkey(self, keyhash: np.ndarray, times: np.ndarray) -> np.ndarray:
        if not self.by_time:
            return keyhash
        it = np.minimum(times[:, 0], int(_LOW)).astype(np.uint64)
        return (keyhash & _HIGH) | it

    def make_run(
        self,
        cols: Columns,
        times: np.ndarray,
        diff: np.ndarray,
        rowhash: np.ndarray | None = None,
        keyhash: np.ndarray | None = None,
        merged: bool = False,
    ) -> Run:
        """A run of (already consolidated) updates, sorted.  ``merged``: the updates are
        sorted runs one after the other, which a stable sort (timsort) merges in near
        linear time."""
        n = len(diff)
        if keyhash is not None:
            kh = keyhash
        elif rowhash is not None and self.whole_key:
            kh = rowhash  # the key is the whole row
        else:
            kh = hash_rows([cols[i] for i in self.key_idx], n)
            if rowhash is None and self.whole_key:
                rowhash = kh  # the whole row is the key: one hash, computed once
        rh = hash_rows(cols, n) if rowhash is None else rowhash
        if 1 < n <= _KERNEL_SORT:
            if self.int_row:
                # the row is its one int64 column: sorted with it, one array fewer back
                sk, kh, times, diff, col, big = sort_key_run(
                    kh, times, diff, cols[0], self.by_time, ITER_BITS
                )
                return Run(sk, kh, kh, (col,), times, diff, big)
            order, sk, kh, rh, times, diff, big = sort_run(
                kh, rh, times, diff, self.by_time, ITER_BITS
            )
            return Run(sk, kh, rh, take(cols, order), times, diff, big)
        sk = self._sortkey(kh, times)
        if n > 1:
            # merged: sorted pieces one after the other, which timsort merges in near
            # linear time; otherwise a radix sort for large runs (an initial load's)
            order = sk.argsort(kind="stable") if merged else argsort_u64(sk)
            # runs are immutable, so equal hash arrays are gathered once and shared: outside
            # loops the sort key is the key hash, and when the key is the whole row the key
            # hash is the row hash (8 bytes per arranged row each, not stored twice)
            sk_o = sk[order]
            kh_o = sk_o if kh is sk else kh[order]
            rh_o = kh_o if rh is kh else rh[order]
            return Run(
                sk_o,
                kh_o,
                rh_o,
                take(cols, order),
                times[order],
                diff[order],
                abs_max(diff),
            )
        return Run(sk, kh, rh, cols, times, diff, abs(int(diff[0])) if n else 0)

    def consolidated_run(
        self, cols: Columns, times: np.ndarray, diff: np.ndarray, **known: Unpack[RunHints]
    ) -> Run:
        """Sum equal ``(row, time)`` updates, drop zeros, and sort."""
        n = len(diff)
        rowhash, keyhash = known.get("rowhash"), known.get("keyhash")
        rowh = hash_rows(cols, n) if rowhash is None else rowhash
        if n > 1:
            h = hash_times(rowh, times) if times.shape[1] else rowh
            keep, diff = consolidate_hashed(h, cols, diff, times)
            # all rows kept may still be reordered: on a hash collision (CPython hashes
            # 2**62 like 2) consolidate_hashed groups by sorting, and ``diff`` follows it
            if len(keep) < n or (keep[1:] < keep[:-1]).any():
                same = keyhash is rowh
                cols, times, rowh = take(cols, keep), times[keep], rowh[keep]
                if keyhash is not None:
                    keyhash = rowh if same else keyhash[keep]
        elif n == 1 and diff[0] == 0:
            keep = _EMPTY
            cols, times, diff, rowh = take(cols, keep), times[:0], diff[:0], rowh[:0]
            keyhash = None if keyhash is None else keyhash[:0]
        return self.make_run(cols, times, diff, rowh, keyhash, known.get("merged", False))

    # -- writing -------------------------------------------------------------------------
    def stage(self, batch: Batch, time: tuple[int, ...], rowhash: np.ndarray | None = None) -> None:
        """Stage the (consolidated) updates of ``time``, the time now being processed."""
        self.commit()
        n = batch.diff.shape[0]
        if n == 0:
            return
        times = constant_times(time[1:], n)
        self.staged = self.make_run(batch.cols, times, batch.diff, rowhash)
        self.staged_time = time

    def stage_batch(self, batch: Batch, time: tuple[int, ...], rowhash: np.ndarray) -> Batch:
        """Consolidate the updates of ``time`` (row hashes ``rowhash``), stage them, and
        return them consolidated (with their row hashes: an arrangement's output batch).

        Large batches (an initial load's) are consolidated in bulk: sorted once by sort
        key (a radix sort) and summed within blocks of equal sort keys
        (:func:`ivm.kernels.consolidate_sorted`) — the sort the run needs anyway, with no
        hash table and one gather of the columns.  Small ones are grouped by hash.  Both
        give the same updates (tests/engine/test_bulk_paths.py).
        """
        n = batch.diff.shape[0]
        if n >= BULK_ROWS:
            staged = self._stage_sorted(batch, time, rowhash)
            if staged is not None:
                return staged
        keep, sums = consolidate_hashed(rowhash, batch.cols, batch.diff)
        h = rowhash[keep]
        out = Batch(take(batch.cols, keep), sums, h)
        self.stage(out, time, h)
        return out

    def stage_key_batch(self, batch: Batch, time: tuple[int, ...]) -> Batch:
        """:meth:`stage_batch` of a batch of one int64 column in a trace of such rows (its
        row hashes not computed yet): hashed, consolidated and sorted by one compiled call
        (:func:`ivm.kernels.stage_key_batch`).  The consolidated batch returned holds its
        rows in the run's order (by key hash), not in their first occurrence's."""
        n = batch.diff.shape[0]
        col = batch.cols[0]
        if not 0 < n <= _KERNEL_SORT or len(time) > 2 or col.dtype != _INT64:
            return self.stage_batch(batch, time, hash_rows(batch.cols, n))
        self.commit()
        it = time[1] if len(time) == 2 else 0
        sk, kh, times, diff, col, big = stage_key_batch(
            col, batch.diff, HASH_OFFSET, it, len(time) - 1, self.by_time, ITER_BITS
        )
        if diff.shape[0]:
            self.staged = Run(sk, kh, kh, (col,), times, diff, big)
            self.staged_time = time
        return Batch((col,), diff, kh)

    def stage_int_batch(self, batch: Batch, time: tuple[int, ...], rowhash: np.ndarray) -> Batch:
        """:meth:`stage_batch` of a batch of rows of several int64 columns: sorted,
        consolidated and gathered by one compiled call (:func:`ivm.kernels.stage_int_rows`;
        the general way on a row-hash collision).  The consolidated batch returned holds its
        rows in the run's order, not in their first occurrence's."""
        n = batch.diff.shape[0]
        cols = batch.cols
        if (
            not (0 < n <= _INT_STAGE or n >= RADIX_ROWS)
            or len(time) > 2
            or not all([c.dtype == _INT64 and c.flags.c_contiguous for c in cols])
        ):
            return self.stage_batch(batch, time, rowhash)
        kh = rowhash if self.whole_key else hash_rows([cols[i] for i in self.key_idx], n)
        it = time[1] if len(time) == 2 else 0
        sk, kh, rh, times, diff, mat, big = stage_int_rows(
            kh, rowhash, cols, batch.diff, it, len(time) - 1, self.by_time, ITER_BITS
        )
        if big < 0:
            return self.stage_batch(batch, time, rowhash)
        self.commit()
        out_cols = tuple(mat)
        if diff.shape[0]:
            self.staged = Run(sk, kh, rh, out_cols, times, diff, big)
            self.staged_time = time
        return Batch(out_cols, diff, rh)

    def _stage_sorted(
        self, batch: Batch, time: tuple[int, ...], rowhash: np.ndarray
    ) -> Batch | None:
        """:meth:`stage_batch` by one sort; None on a hash collision (two different rows
        with one row hash), for the caller to consolidate by comparing rows."""
        cols = batch.cols
        n = len(batch)
        whole = self.whole_key
        kh = rowhash if whole else hash_rows([cols[i] for i in self.key_idx], n)
        # one time for the whole batch: its loop counter is one constant in the sort key
        sk = (kh & _HIGH) | np.uint64(min(time[1], int(_LOW))) if self.by_time else kh
        order = argsort_u64(sk)
        sk_o = sk[order]
        rh_o = rowhash[order]
        keep, sums, pa, pb = consolidate_sorted(sk_o, rh_o, batch.diff[order])
        if (
            len(pa)
            and not hash_is_injective(cols)
            and not rows_equal(cols, order[pa], cols, order[pb]).all()
        ):
            return None
        self.commit()
        idx = order[keep]
        out_cols = take(cols, idx)
        sk_k = sk_o[keep]
        kh_k = sk_k if kh is sk else kh[idx]
        rh_k = kh_k if whole else rh_o[keep]
        if len(keep):
            self.staged = Run(
                sk_k, kh_k, rh_k, out_cols, constant_times(time[1:], len(keep)), sums,
                abs_max(sums),
            )  # fmt: skip
            self.staged_time = time
        return Batch(out_cols, sums, rh_k)

    def insert(
        self, cols: Columns, times: np.ndarray, diff: np.ndarray, **known: Unpack[RunHints]
    ) -> None:
        """Add committed updates at arbitrary inner times (``known``: their hashes, if the
        caller has them)."""
        if len(diff):
            self._push(self.consolidated_run(cols, times, diff, **known))

    def insert_consolidated(
        self, cols: Columns, times: np.ndarray, diff: np.ndarray, rowhash: np.ndarray
    ) -> None:
        """Add updates already consolidated (no row twice at one time) whose row hashes
        are known: no hashing or grouping, only sorting."""
        n = diff.shape[0]
        if n == 0:
            return
        runs = self.runs
        if self.int_row and runs and runs[-1].diff.shape[0] + n <= SMALL_RUN:
            # sorted and merged into the last small run by one compiled call (what
            # make_run and _push do in two)
            last = runs[-1]
            sk, kh, t, d, col, big = push_key_run(
                last.sortkey, last.keyhash, last.times, last.diff, last.cols[0],
                rowhash, times, diff, cols[0], self.by_time, ITER_BITS,
            )  # fmt: skip
            if big >= 0:
                self._settle([*runs[:-1], Run(sk, kh, kh, (col,), t, d, big)])
                return
        self._push(self.make_run(cols, times, diff, rowhash))

    def commit(self) -> None:
        if self.staged is not None:
            self._push(self.staged)
            self.staged = None
            self.staged_time = None

    def _push(self, run: Run) -> None:
        self._settle([*self.runs, run])

    def _settle(self, runs: list[Run]) -> None:
        """Merge the last of ``runs`` with the ones before it while they are not much
        larger, and keep the result as the trace's runs."""
        # built aside and swapped in: a merge that raises (an overflow) changes nothing
        ratio = LOOP_MERGE_RATIO if self.by_time or self.reads > 1 else MERGE_RATIO
        self.reads = 0
        while len(runs) >= 2:
            # sizes read from the arrays (``len(run)`` is a Python call, on every push)
            ra, rb = runs[-2], runs[-1]
            a, b = ra.diff.shape[0], rb.diff.shape[0]
            if a > ratio * b and a + b > SMALL_RUN:
                break
            # two small runs: one compiled pass (what :meth:`_merge` does first)
            merged = self._merged(ra, rb, share=False) if a + b <= SMALL_RUN else None
            runs[-2:] = [merged if merged is not None else self._merge([ra, rb])]
        self.runs = runs

    def _merge(self, parts: list[Run], sorted_keys: bool = True) -> Run:
        """One run holding the consolidated sum of ``parts``.  ``sorted_keys``: each part
        is sorted by its (valid) sort keys, so sorted runs are merged pairwise by linear
        passes (:func:`ivm.kernels.merge_runs`), the smallest first; otherwise (times
        advanced by a compaction) the concatenation is consolidated and sorted again."""
        if len(parts) == 2 and len(parts[0]) + len(parts[1]) <= SMALL_RUN:
            merged = self._merge_pair(parts[0], parts[1])
            if merged is not None:
                return merged
        if sorted_keys and len(parts) >= 2:
            acc: Run | None = parts[-1]
            for part in reversed(parts[:-1]):
                assert acc is not None
                acc = self._merge_sorted(part, acc)
                if acc is None:
                    break
            if acc is not None:
                return acc
        cols = tuple(np.concatenate([p.cols[i] for p in parts]) for i in range(len(self.dtypes)))
        rowhash = np.concatenate([p.rowhash for p in parts])
        shared = all(p.keyhash is p.rowhash for p in parts)
        return self.consolidated_run(
            cols,
            np.concatenate([p.times for p in parts]),
            np.concatenate([p.diff for p in parts]),
            rowhash=rowhash,
            keyhash=rowhash if shared else np.concatenate([p.keyhash for p in parts]),
            merged=True,
        )

    def _merge_sorted(self, a: Run, b: Run) -> Run | None:
        """Two sorted runs merged by one linear compiled pass (:func:`ivm.kernels.merge_runs`);
        None if two summed updates turn out to be different rows (a hash collision: the
        caller consolidates by comparing rows instead)."""
        if len(a) == 0 or len(b) == 0:
            return b if len(a) == 0 else a
        return self._merged(a, b, share=True)

    def _merged(self, a: Run, b: Run, *, share: bool) -> Run | None:
        """:func:`_merged` of two runs of this trace; rows of int64 columns are merged with
        their columns by one compiled call: one column by :func:`ivm.kernels.merge_key_runs`,
        several by :func:`_merged_int`."""
        if self.int_cols:
            return _merged_int(a, b, share=share)
        if not self.int_row:
            return _merged(a, b, share=share)
        sk, kh, times, diff, col, big = merge_key_runs(
            a.sortkey, a.keyhash, a.times, a.diff, a.cols[0],
            b.sortkey, b.keyhash, b.times, b.diff, b.cols[0],
        )  # fmt: skip
        if share and a.keyhash is a.sortkey and b.keyhash is b.sortkey:
            kh = sk
        return Run(sk, kh, kh, (col,), times, diff, big)

    def _merge_pair(self, a: Run, b: Run) -> Run | None:
        """Two small runs merged by one compiled pass (:func:`ivm.kernels.merge_runs`), their
        arrays not shared; None if two summed updates turn out to be different rows (a hash
        collision)."""
        return self._merged(a, b, share=False)

    def compact(self) -> None:
        """End of epoch: advance times to the next epoch's frontier and consolidate.

        Outside loops a row's multiplicity is the sum of its diffs over the runs, which are
        merged lazily; if the runs' largest diffs add up past 64 bits, some row's sum might
        not fit, so the runs are merged now, which sums (checked) every row.  A multiplicity
        that overflows is thus found in the epoch that causes it, not when it is read.
        """
        self.commit()
        if not self.runs:
            return
        if self.depth == 0 and len(self.runs) > 1 and sum(r.bound for r in self.runs) > DIFF_MAX:
            self.runs = [self._merge(self.runs)]
        if ALTNEU in self.kinds:
            advanced = [
                Run(
                    r.sortkey,
                    r.keyhash,
                    r.rowhash,
                    r.cols,
                    advance_rows(r.times, self.kinds),
                    r.diff,
                    r.bound,
                )
                for r in self.runs
            ]
            self.runs = [self._merge(advanced, sorted_keys=False)]
        elif len(self.runs) > 1:
            small = sum([r.diff.shape[0] for r in self.runs[1:]])
            if small * 2 > len(self.runs[0]):
                self.runs = [self._merge(self.runs)]
        self.runs = [r for r in self.runs if len(r)]

    def snapshot(self) -> tuple:
        return (list(self.runs), self.staged, self.staged_time)

    def restore(self, snap: tuple) -> None:
        runs, self.staged, self.staged_time = snap
        self.runs = list(runs)

    # -- reading -------------------------------------------------------------------------
    def _visible(self, query_time: tuple[int, ...] | None) -> list[Run]:
        """The runs a read at ``query_time`` sees (not to be changed by the caller)."""
        if self.staged is None:
            return self.runs
        runs = list(self.runs)
        if self.staged is not None:
            st = self.staged_time
            assert st is not None
            if query_time is None:
                runs.append(self.staged)
            else:
                padded = st + (0,) * (len(query_time) - len(st))
                if padded != query_time:
                    runs.append(self.staged)
        return runs

    # Kept whole (its docstring is a third of it): the hot probe loop over the runs; the
    # gather of the hits is :meth:`_gathered`.
    def lookup(
        self,
        probe_hash: np.ndarray,
        probe_cols: Columns,
        before: tuple[int, ...] | None = None,
        time_filter: Callable[[np.ndarray], np.ndarray] | None = None,
        all_times: list[tuple[np.ndarray, np.ndarray]] | None = None,
        upto: int | None = None,
        next_time: np.ndarray | None = None,
        after: np.ndarray | None = None,
        with_hashes: bool = True,
    ) -> Gathered:
        """Every update whose key equals a probe's key.

        ``probe_cols`` are the probes' key columns (used to reject hash collisions).
        With ``before=t`` updates staged at exactly ``t`` are left out ("strictly before t"
        for the time being processed); with ``None`` everything is included.
        ``time_filter(times) -> mask`` keeps only some updates before their columns are
        gathered; ``all_times`` then receives ``(owner, times)`` of every match.
        In a single-loop trace ``upto=i`` keeps the updates at iterations ``<= i`` by binary
        search, and ``next_time`` (one slot per probe) is lowered to the first later
        iteration found (a hash-bucket neighbour may make it early: that only costs a
        re-evaluation that changes nothing).  ``after`` (one iteration per probe, -1 for
        none) further keeps only the updates at iterations after it.
        ``with_hashes=False``: the updates' row hashes are not gathered (a join pairs rows
        and never reads them; ``Gathered.rowhash`` is then empty).
        """
        if upto is not None and not self.by_time:
            raise ValueError("upto= needs a single-loop trace")
        if after is not None and (upto is None or upto >= int(_LOW) - 1):
            raise ValueError("after= needs upto= below the sort key's counter range")
        if upto is not None and upto >= int(_LOW) - 1:
            # counters beyond the sort key's bits: scan the times instead
            hist: list[tuple[np.ndarray, np.ndarray]] = []
            found = self.lookup(probe_hash, probe_cols, before, lambda t: t[:, 0] <= upto, hist)
            if next_time is not None:
                for o, t in hist:
                    later = t[:, 0] > upto
                    np.minimum.at(next_time, o[later], t[later, 0])
            return found
        self.reads += 1
        owners, runs_hit, positions = [], [], []
        # binary searches with sorted needles reuse each search's bounds for the next
        # one and walk the run in memory order: ~3x fewer cache misses on large runs
        perm = _sorting_permutation(probe_hash)
        if perm is not None:
            probe_hash = probe_hash[perm]
            if after is not None:
                after = after[perm]
            if next_time is not None:
                caller_next, next_time = next_time, next_time[perm]
        want_next = next_time is not None
        nxt = next_time if next_time is not None else _EMPTY
        aft = _EMPTY if after is None else after
        up = -1 if upto is None else upto
        by_time = self.by_time
        # runs' arrays are the engine's own: the entry point, if the caller's are plain
        probed = entries.probe_run if entries.plain(probe_hash, aft, nxt) else probe_run
        for run in self._visible(before):
            if len(run.diff) == 0:
                continue
            owner, pos = probed(
                run.sortkey, run.keyhash, run.times, probe_hash, aft, by_time, up, ITER_BITS,
                nxt, want_next,
            )  # fmt: skip
            if len(pos) == 0:
                continue
            if time_filter is not None:
                times = run.times[pos]
                if all_times is not None:
                    all_times.append((owner if perm is None else perm[owner], times))
                m = time_filter(times)
                if not m.all():
                    owner, pos = owner[m], pos[m]
                    if len(pos) == 0:
                        continue
            owners.append(owner if perm is None else perm[owner])
            runs_hit.append(run)
            positions.append(pos)
        if perm is not None and next_time is not None:
            caller_next[perm] = next_time
        return self._gathered(owners, runs_hit, positions, probe_cols, with_hashes)

    def _gathered(
        self,
        owners: list[np.ndarray],
        runs_hit: list[Run],
        positions: list[np.ndarray],
        probe_cols: Columns,
        with_hashes: bool = True,
    ) -> Gathered:
        """The updates at ``positions`` of ``runs_hit`` (matched by key hash for probes
        ``owners``), gathered, with hash collisions rejected; their row hashes only
        ``with_hashes`` (else an empty array).  Times outside loops have no coordinates,
        so they are made, not gathered."""
        if not owners:
            return Gathered(
                _EMPTY,
                tuple(np.empty(0, dtype=d) for d in self.dtypes),
                np.zeros((0, self.depth), dtype=np.int64),
                _EMPTY,
                np.zeros(0, dtype=np.uint64),
            )
        timed = self.depth > 0
        rowh = _EMPTY_HASHES
        if len(owners) == 1:
            run, pos, owner = runs_hit[0], positions[0], owners[0]
            cols = take(run.cols, pos)
            diff = run.diff[pos]
            if with_hashes:
                rowh = run.rowhash[pos]
            times = run.times[pos] if timed else np.empty((len(pos), 0), dtype=np.int64)
        else:
            pairs = list(zip(runs_hit, positions, strict=True))
            owner = np.concatenate(owners)
            cols = tuple(
                [np.concatenate([r.cols[i][p] for r, p in pairs]) for i in range(len(self.dtypes))]
            )
            diff = np.concatenate([r.diff[p] for r, p in pairs])
            if with_hashes:
                rowh = np.concatenate([r.rowhash[p] for r, p in pairs])
            if timed:
                times = np.concatenate([r.times[p] for r, p in pairs])
            else:
                times = np.empty((len(owner), 0), dtype=np.int64)
        # reject hash collisions: the key columns must really be equal (the kernel has
        # already matched the whole 64-bit key hash)
        key_cols = tuple([cols[i] for i in self.key_idx])
        if hash_is_injective(key_cols):
            return Gathered(owner, cols, times, diff, rowh)
        ok = rows_equal(key_cols, None, probe_cols, owner)
        if not ok.all():
            owner, cols, times, diff = owner[ok], take(cols, ok), times[ok], diff[ok]
            if with_hashes:
                rowh = rowh[ok]
        return Gathered(owner, cols, times, diff, rowh)

    def key_sums(
        self,
        probe_hash: np.ndarray,
        probe_cols: Columns,
        upto: int | None = None,
        next_time: np.ndarray | None = None,
    ) -> np.ndarray:
        """Each probe's sum of diffs over the updates of its key (in a single-loop trace,
        at iterations ``<= upto``; ``next_time`` as in :meth:`lookup`).

        When the key is the whole row this is the key's accumulated multiplicity, read
        without gathering a single row.  Keys whose hash may collide (anything but one
        integer column) are read with :meth:`lookup`, which compares the columns.
        """
        n = len(probe_hash)
        sums = np.zeros(n, dtype=np.int64)
        if upto is not None and not self.by_time:
            raise ValueError("upto= needs a single-loop trace")
        if not hash_is_injective(probe_cols) or (upto is not None and upto >= int(_LOW) - 1):
            found = self.lookup(probe_hash, probe_cols, upto=upto, next_time=next_time)
            add_at(sums, found.owner, found.diff)
            return sums
        perm = _sorting_permutation(probe_hash)
        nxt = _EMPTY if next_time is None else next_time
        if perm is not None:
            probe_hash = probe_hash[perm]
            if next_time is not None:
                nxt = next_time[perm]
        out = sums if perm is None else np.zeros(n, dtype=np.int64)
        self.add_key_sums(probe_hash, -1 if upto is None else upto, out, nxt)
        if perm is not None:
            sums[perm] = out
            if next_time is not None:
                next_time[perm] = nxt
        return sums

    def add_key_sums(
        self,
        probe_hash: np.ndarray,
        upto: int,
        sums: np.ndarray,
        next_time: np.ndarray,
        plain: bool | None = None,
    ) -> None:
        """:meth:`key_sums`' compiled part alone, for a caller that has checked its
        conditions once (keys that cannot collide, ``upto`` a counter below the sort key's
        range or -1 for none): add each probe's sum to ``sums``, lower ``next_time`` (empty:
        not asked for).  The probes' order is the caller's.  ``plain``: what
        :func:`ivm.kernel_entries.plain` says of the three arrays (None: asked here)."""
        self.reads += 1
        want_next = next_time.shape[0] > 0
        by_time = self.by_time
        # runs' arrays are the engine's own: the entry point, if the caller's are plain
        if plain is None:
            plain = entries.plain(probe_hash, sums, next_time)
        summed = entries.sum_run if plain else sum_run
        for run in self.runs:
            if run.diff.shape[0]:
                summed(
                    run.sortkey, run.keyhash, run.times, run.diff, probe_hash, by_time, upto,
                    ITER_BITS, sums, next_time, want_next,
                )  # fmt: skip
        st = self.staged
        if st is not None and st.diff.shape[0]:
            summed(
                st.sortkey, st.keyhash, st.times, st.diff, probe_hash, by_time, upto,
                ITER_BITS, sums, next_time, want_next,
            )  # fmt: skip

    def all_updates(self) -> tuple[Columns, np.ndarray, np.ndarray]:
        """Every committed and staged update (for checkpoints and reading contents)."""
        runs = self._visible(None)
        if not runs:
            return (
                tuple(np.empty(0, dtype=d) for d in self.dtypes),
                np.zeros((0, self.depth), dtype=np.int64),
                np.zeros(0, dtype=np.int64),
            )
        merged = self._merge(runs) if len(runs) > 1 else runs[0]
        return merged.cols, merged.times, merged.diff

    def rows_held(self) -> int:
        n = sum(len(r) for r in self.runs)
        return n + (len(self.staged) if self.staged is not None else 0)


def _merged(a: Run, b: Run, *, share: bool) -> Run | None:
    """The run :func:`ivm.kernels.merge_runs` merges from ``a`` and ``b`` (its entry point:
    runs' arrays are the engine's own); None on a hash collision (two summed updates that
    are different rows).  With ``share``, arrays the inputs share (sort key = key hash
    outside loops, key hash = row hash when the key is the whole row) stay shared."""
    src, sk, kh, rh, times, diff, ia, ib, big = entries.merge_runs(
        a.sortkey, a.keyhash, a.rowhash, a.times, a.diff,
        b.sortkey, b.keyhash, b.rowhash, b.times, b.diff,
    )  # fmt: skip
    if len(ia) and not hash_is_injective(a.cols) and not rows_equal(a.cols, ia, b.cols, ib).all():
        return None
    if share and a.keyhash is a.sortkey and b.keyhash is b.sortkey:
        kh = sk
    if share and a.rowhash is a.keyhash and b.rowhash is b.keyhash:
        rh = kh
    if len(a.cols) == 1:
        cols: Columns = (_take_concat(a.cols[0], b.cols[0], src),)
    else:
        cols = tuple([_take_concat(x, y, src) for x, y in zip(a.cols, b.cols, strict=True)])
    return Run(sk, kh, rh, cols, times, diff, big)


def _merged_int(a: Run, b: Run, *, share: bool) -> Run | None:
    """:func:`_merged` of runs of several int64 columns: the summed pairs' rows compared
    and the columns gathered by the same compiled call (:func:`ivm.kernels.merge_int_runs`),
    when every column is a contiguous int64 array (a tuple of one array type)."""
    if not all([c.flags.c_contiguous and c.dtype == _INT64 for c in (*a.cols, *b.cols)]):
        return _merged(a, b, share=share)
    sk, kh, rh, times, diff, cols, big = merge_int_runs(
        a.sortkey, a.keyhash, a.rowhash, a.times, a.diff, a.cols,
        b.sortkey, b.keyhash, b.rowhash, b.times, b.diff, b.cols,
    )  # fmt: skip
    if big < 0:
        return None
    if share and a.keyhash is a.sortkey and b.keyhash is b.sortkey:
        kh = sk
    if share and a.rowhash is a.keyhash and b.rowhash is b.keyhash:
        rh = kh
    return Run(sk, kh, rh, tuple(cols), times, diff, big)


def _take_concat(x: np.ndarray, y: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``concatenate([x, y])[src]``: compiled for numeric columns of one dtype."""
    if x.dtype == y.dtype and x.dtype.kind in "iuf" and len(src) >= 1024:
        return take_concat(x, y, src)
    return np.concatenate([x, y])[src]
