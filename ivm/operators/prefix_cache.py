"""Accumulations of long-history keys at chosen iterations, kept across epochs.

A reduce inside one loop evaluates a key at iteration ``i`` from the key's input
accumulated up to ``i`` (CIDR 2013 §3.4).  A trace keeps each key's history as differences
per iteration, so a high-degree node (a hub) whose neighbours changed label at several
iterations has a history far longer than its accumulation: reading ``<= i`` every time the
hub is touched costs its whole degree times the label changes of its neighbours.

This cache keeps, for such keys, the consolidated accumulation *as of* some iterations
``c`` (an *entry* ``(key, c)``), for the input and for the reduce's own output.  Reading
``<= i`` is then the entry with the largest ``c <= i`` plus the trace's slice ``(c, i]``.
Entries stay exact across epochs because every update of the input reaches the reduce as
its input batch, and every update of the output is emitted by it: each is added to the
key's entries at iterations ``>= `` its own (:meth:`PrefixCache.patch_input`, :meth:`PrefixCache.patch_output`).  Entries are built
only where they at least halve the rows read; they are derived state (dropped on rollback,
rebuilt lazily) and counted in the reduce's rows held.
"""

from __future__ import annotations

import numpy as np

from ivm.batch import Batch, Columns, hash_is_injective, hash_rows, rows_equal, take
from ivm.trace import Gathered, Trace, expand_ranges

_NO_TIMES = np.zeros((0, 0), dtype=np.int64)
_EMPTY = np.zeros(0, dtype=np.int64)


class _Side:
    """The rows of every entry for one side (input or output), in a trace keyed by entry
    id whose columns are ``(entry id, row hash, *row columns)``."""

    def __init__(self, dtypes: tuple[np.dtype, ...]) -> None:
        self.trace = Trace((np.dtype(np.int64), np.dtype(np.uint64), *dtypes), (0,), ())

    def insert(self, ids: np.ndarray, rowhash: np.ndarray, cols: Columns, diff: np.ndarray) -> None:
        if len(diff):
            n = len(diff)
            self.trace.insert((ids, rowhash, *cols), np.zeros((n, 0), dtype=np.int64), diff)

    def read(self, ids: np.ndarray, owner_of: np.ndarray) -> Gathered:
        """Rows of entries ``ids``; ``owner_of[j]`` is the owner given to entry ``ids[j]``."""
        found = self.trace.lookup(hash_rows((ids,), len(ids)), (ids,))
        return Gathered(
            owner_of[found.owner],
            found.cols[2:],
            _NO_TIMES,
            found.diff,
            found.cols[1],
        )

    def rows(self) -> int:
        return self.trace.rows_held()


class PrefixCache:
    """Entries ``(key, iteration) -> accumulated input and output`` (see the module doc)."""

    #: consider caching a key once reading its accumulation took this many rows
    MIN_ROWS = 128

    def __init__(self, in_dtypes: tuple[np.dtype, ...], out_dtypes: tuple[np.dtype, ...]) -> None:
        self.in_dtypes = in_dtypes
        self.out_dtypes = out_dtypes
        self.clear()

    def clear(self) -> None:
        # the entry table, sorted by (key hash, iteration)
        self.hash = np.zeros(0, dtype=np.uint64)
        self.asof = _EMPTY
        self.ids = _EMPTY
        self.keycols: Columns = ()
        self.next_id = 0
        self.inp = _Side(self.in_dtypes)
        self.out = _Side(self.out_dtypes)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self) -> int:
        return self.inp.rows() + self.out.rows()

    # -- finding entries -----------------------------------------------------------------
    def _pairs(self, h: np.ndarray, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
        """Every (row, entry) with the same key, entries of a row in increasing iteration."""
        if len(self.ids) == 0 or len(h) == 0:
            return _EMPTY, _EMPTY
        lo = self.hash.searchsorted(h, side="left")
        hi = self.hash.searchsorted(h, side="right")
        row, entry = expand_ranges(lo, hi)
        if len(row) and not hash_is_injective(cols):
            ok = rows_equal(self.keycols, entry, cols, row)
            row, entry = row[ok], entry[ok]
        return row, entry

    def best(self, h: np.ndarray, cols: Columns, at: int) -> tuple[np.ndarray, np.ndarray]:
        """Per probe key: the entry with the largest iteration ``<= at`` (-1 if none) and
        that iteration (-1 if none)."""
        entry = np.full(len(h), -1, dtype=np.int64)
        asof = np.full(len(h), -1, dtype=np.int64)
        row, ent = self._pairs(h, cols)
        if len(row):
            ok = (self.asof[ent] <= at).nonzero()[0]
            row, ent = row[ok], ent[ok]
            # pairs come by row, then by increasing iteration: keep each row's last
            last = np.ones(len(row), dtype=bool)
            last[:-1] = row[1:] != row[:-1]
            row, ent = row[last], ent[last]
            entry[row] = ent
            asof[row] = self.asof[ent]
        return entry, asof

    # -- reading and maintaining entries ---------------------------------------------------
    def read(self, entry: np.ndarray) -> tuple[Gathered | None, Gathered | None]:
        """The input and output accumulations of the probes' entries (owner = probe)."""
        probes = (entry >= 0).nonzero()[0]
        if len(probes) == 0:
            return None, None
        ids = self.ids[entry[probes]]
        return self.inp.read(ids, probes), self.out.read(ids, probes)

    def patch_input(self, batch: Batch, key_idx: tuple[int, ...], at: int) -> None:
        """Add the reduce's input updates at iteration ``at`` (key columns ``key_idx``)."""
        self._patch(self.inp, batch, tuple(batch.cols[i] for i in key_idx), at)

    def patch_output(self, batch: Batch, nkey: int, at: int) -> None:
        """Add the reduce's output diffs at iteration ``at`` (keys are the first columns)."""
        self._patch(self.out, batch, batch.cols[:nkey], at)

    def _patch(self, side: _Side, batch: Batch, key_cols: Columns, at: int) -> None:
        """Add updates at iteration ``at`` to their key's entries at iterations ``>= at``."""
        row, ent = self._pairs(hash_rows(key_cols, len(batch)), key_cols)
        if len(row) == 0:
            return
        later = (self.asof[ent] >= at).nonzero()[0]
        if len(later) == 0:
            return
        row, ent = row[later], ent[later]
        sel = take(batch.cols, row)
        side.insert(self.ids[ent], hash_rows(sel, len(row)), sel, batch.diff[row])

    def add(
        self,
        probe_h: np.ndarray,
        probe_cols: Columns,
        at: int,
        new: np.ndarray,
        inp: Gathered,
        out: Gathered,
    ) -> None:
        """New entries at iteration ``at`` for probes ``new`` (owner-indexed accumulations)."""
        if len(new) == 0:
            return
        ids = np.arange(self.next_id, self.next_id + len(new), dtype=np.int64)
        self.next_id += len(new)
        id_of = np.full(len(probe_h), -1, dtype=np.int64)
        id_of[new] = ids
        for side, g in ((self.inp, inp), (self.out, out)):
            sel = (id_of[g.owner] >= 0).nonzero()[0]
            side.insert(id_of[g.owner[sel]], g.rowhash[sel], take(g.cols, sel), g.diff[sel])
        h = np.concatenate([self.hash, probe_h[new]])
        asof = np.concatenate([self.asof, np.full(len(new), at, dtype=np.int64)])
        order = np.lexsort((asof, h))
        self.hash, self.asof = h[order], asof[order]
        self.ids = np.concatenate([self.ids, ids])[order]
        keycols = take(probe_cols, new)
        if self.keycols:
            keycols = tuple(np.concatenate(p) for p in zip(self.keycols, keycols, strict=True))
        self.keycols = take(keycols, order)

    def compact(self) -> None:
        self.inp.trace.compact()
        self.out.trace.compact()
