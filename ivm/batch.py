"""Columnar batches of updates, hashing of rows and keys, and consolidation.

A :class:`Batch` holds the updates of one time: one numpy array per column and a signed
int64 ``diff`` array (a multiplicity change, ``|diff| <= 2**63 - 1``; sums of diffs are
checked and never wrap, see :mod:`ivm.difference`).  A batch is *consolidated* when every
row appears once and no diff is zero.  Rows are identified by a 64-bit hash of their
columns (splitmix64 mixing) and, where hashes are equal, by comparing the columns
themselves, so a hash collision never merges two different rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ivm.difference import segment_sums
from ivm.kernels import (
    group_hashes,
    hash_group_sums,
    mix_hashes,
    mix_int_hashes,
    mix_int_offset,
    mix_offset,
    radix_order,
)

Columns = tuple[np.ndarray, ...]

_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: the offset :func:`hash_rows` adds to a one-integer-column row's bits before mixing
HASH_OFFSET = _GOLDEN
_INT64 = np.dtype(np.int64)
#: ``_GOLDEN * _M2`` (mod 2**64): the first link of a row hash's chain, folded
_GOLDEN_M2 = np.uint64((0x9E3779B97F4A7C15 * 0x94D049BB133111EB) % (1 << 64))
#: from this many keys on, uint64 keys are sorted by :func:`ivm.kernels.radix_order`
_RADIX_SORT = 32768


def argsort_u64(h: np.ndarray, stable: bool = False) -> np.ndarray:
    """The order that sorts the uint64 keys ``h`` (stable when asked; the radix sort of
    large inputs always is)."""
    if len(h) >= _RADIX_SORT and h.dtype == np.uint64:
        return radix_order(h)
    return h.argsort(kind="stable" if stable else "quicksort")


class _Addresses:
    """The element pointers of an object array, seen as an unsigned integer array (numpy's
    array interface; the view keeps this object, and so the array, alive)."""

    def __init__(self, a: np.ndarray) -> None:
        self.array = a
        self.__array_interface__ = {
            "shape": a.shape,
            "typestr": np.dtype(np.uintp).str,
            "data": (a.ctypes.data, True),
            "strides": a.strides,
            "version": 3,
        }


_NAN_BITS = np.array([np.nan], dtype=np.float64).view(np.uint64)[0]


def hash_column(col: np.ndarray) -> np.ndarray:
    """A uint64 hash per value, equal for equal values (``1 == 1.0`` hash alike, ``-0.0``
    and ``0.0`` alike, every NaN alike: an exchange must send equal rows to one shard)."""
    kind = col.dtype.kind
    if kind == "i" or kind == "u":
        return col.astype(np.int64, copy=False).view(np.uint64)
    if kind == "b":
        return col.astype(np.uint64)
    if kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            asint = col.astype(np.int64)
        integral = asint == col
        out = np.where(integral, asint, (col + 0.0)).astype(np.float64)
        bits = out.view(np.uint64).copy()
        bits[integral] = asint[integral].view(np.uint64)
        bits[np.isnan(out)] = _NAN_BITS  # NaNs differ in sign and payload bits
        return bits
    if col.dtype == object and len(col) >= _DEDUP_SMALL:
        # one hash per distinct object: a column read from Arrow holds one string object
        # per distinct value (catalog.dtypes), and gathers (a join's output) repeat them
        addresses = np.ascontiguousarray(np.asarray(_Addresses(col)))
        if len(col) >= _DEDUP_ROWS or _repeats(addresses[:_SAMPLE]):
            gid, first, _ = group_hashes(
                mix_offset(addresses, _GOLDEN), np.zeros(len(col), np.int64)
            )
            if 2 * len(first) <= len(col):
                return _hash_objects(col[first])[gid]
    return _hash_objects(col)


#: from this many rows on, an object column is hashed once per distinct object
_DEDUP_ROWS = 4096
#: from this many rows on, also when its first ``_SAMPLE`` objects repeat: 1,200 rows of 4
#: distinct strings hashed in ~35 us instead of ~105; a column of distinct objects pays
#: only the look at the sample
_DEDUP_SMALL = 1024
_SAMPLE = 64


def _repeats(addresses: np.ndarray) -> bool:
    """Whether at most half of these object addresses are distinct."""
    return 2 * len(set(addresses.tolist())) <= len(addresses)


def _hash_objects(col: np.ndarray) -> np.ndarray:
    h = np.fromiter(map(hash, col), dtype=np.int64, count=len(col))
    # Python hashes each NaN object by identity: hash them as a float64 column's NaN
    nan = col != col
    if nan.any():
        h[nan.astype(bool)] = _NAN_BITS.view(np.int64)
    # CPython hashes -1 as -2; hash it as the int64 column would, so equal values in an
    # object column and an int64/float64 column always hash alike
    minus_one = h == -2
    if minus_one.any():
        idx = np.flatnonzero(minus_one)
        h[idx[col[idx] == -1]] = -1
    return h.view(np.uint64)


def hash_rows(cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Hash of each row of ``cols`` (``n`` rows; zero columns hash to a constant)."""
    if len(cols) == 1:
        c = cols[0]
        # the common key: hashed from its bits in one call (``==`` too: arrays a compiled
        # kernel returns carry an equal dtype object, not numpy's own)
        if c.dtype is _INT64 or c.dtype == _INT64:
            return mix_int_offset(c, _GOLDEN)
        return mix_offset(hash_column(c), _GOLDEN)
    if cols and _all_int64(cols):
        # the same chain from the columns' bits: the first link's constant folded in
        h = mix_int_offset(cols[0], _GOLDEN_M2)
        for c in cols[1:]:
            h = mix_int_hashes(h, c, _M2)
        return h
    h = np.full(n, _GOLDEN, dtype=np.uint64)
    for c in cols:
        h = mix_hashes(h, hash_column(c), _M2)
    return h


def _all_int64(cols: Sequence[np.ndarray]) -> bool:
    return all([c.dtype is _INT64 or c.dtype == _INT64 for c in cols])


def hash_rows_after(
    prefix_h: np.ndarray, prefix: Sequence[np.ndarray], more: Columns
) -> np.ndarray:
    """:func:`hash_rows` of the rows ``prefix + more``, given ``prefix_h``, the hashes of the
    ``prefix`` rows: the row hash mixes the columns in order, so a known prefix's hash is
    carried on instead of hashing its columns again (an aggregate's output rows extend its
    keys, whose object columns are the costly ones to hash)."""
    n = len(prefix_h)
    if len(prefix) + len(more) < 2:
        return hash_rows((*prefix, *more), n)
    if len(prefix) >= 2:
        h = prefix_h
    else:  # one column hashes by its own rule (``mix_offset``): restart the chain
        h = np.full(n, _GOLDEN, dtype=np.uint64)
        if prefix:
            h = mix_hashes(h, hash_column(prefix[0]), _M2)
    for c in more:
        h = mix_hashes(h, hash_column(c), _M2)
    return h


def hash_times(h: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Fold inner time coordinates into row hashes."""
    for k in range(times.shape[1]):
        h = mix_hashes(h, times[:, k].astype(np.uint64), _M2)
    return h


def _eq(u: object, v: object) -> bool:
    return bool(u == v)


def take(cols: Columns, idx: np.ndarray) -> Columns:
    if len(cols) == 1:
        return (cols[0][idx],)
    return tuple([c[idx] for c in cols])


def concat_columns(parts: Sequence[Columns]) -> Columns:
    if len(parts) == 1:
        return parts[0]
    return tuple([np.concatenate(cs) for cs in zip(*parts, strict=True)])


def hash_is_injective(cols: Columns) -> bool:
    """Whether :func:`hash_rows` of these columns cannot collide: one integer column
    (an affine map and splitmix64's finalizer are both bijections of uint64)."""
    return len(cols) == 1 and cols[0].dtype.kind in "iub"


def _values_equal(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    e = x == y
    if not isinstance(e, np.ndarray) or e.dtype != np.bool_:
        e = np.fromiter(map(_eq, x, y), dtype=bool, count=len(x))
    return e


def _objects_equal(
    ca: np.ndarray, ia: np.ndarray | None, cb: np.ndarray, ib: np.ndarray
) -> np.ndarray:
    """:func:`rows_equal` of two object columns: the same object is equal to itself (as in
    Python's containers and SQL grouping: a NaN too), compared by pointer without gathering
    the objects; only the other pairs are compared by value.  The strings of a column read
    from Arrow are one object per distinct value (catalog.dtypes), so the rows of one group
    are nearly always the same objects."""
    pa, pb = np.asarray(_Addresses(ca)), np.asarray(_Addresses(cb))
    same = (pa if ia is None else pa[ia]) == pb[ib]
    rest = np.flatnonzero(~same)
    if len(rest):
        same[rest] = _values_equal(ca[rest if ia is None else ia[rest]], cb[ib[rest]])
    return same


def rows_equal(a: Columns, ia: np.ndarray | None, b: Columns, ib: np.ndarray) -> np.ndarray:
    """Row-wise equality of ``a[ia]`` and ``b[ib]`` (NULL equals NULL, as in grouping).

    ``ia=None`` means every row of ``a`` in order.
    """
    eq = np.ones(len(ib), dtype=bool)
    for ca, cb in zip(a, b, strict=True):
        if ca.dtype == object and cb.dtype == object:
            eq &= _objects_equal(ca, ia, cb, ib)
        else:
            eq &= _values_equal(ca if ia is None else ca[ia], cb[ib])
    return eq


def sort_groups(
    h: np.ndarray, cols: Columns, times: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Order rows so that equal rows are adjacent; return ``(order, group starts)``.

    Rows are sorted by hash; a group boundary is where the hash changes, or where the hash
    is equal but the row (or time) differs.  When different rows share a hash (a
    collision, e.g. CPython's ``hash(-1) == hash(-2)``) the rows of that hash are regrouped
    exactly, so equal rows are always adjacent and a consolidation never leaves a row twice.
    """
    order = argsort_u64(h)
    n = len(h)
    if n == 0:
        return order, np.zeros(0, dtype=np.int64)
    boundary = _run_starts(h[order])
    same = np.flatnonzero(~boundary[1:])
    if len(same) == 0:
        return order, np.flatnonzero(boundary)
    if hash_is_injective(cols) and (times is None or times.shape[1] == 0):
        return order, np.flatnonzero(boundary)
    prev, cur = order[same], order[same + 1]
    eq = rows_equal(cols, prev, cols, cur)
    if times is not None and times.shape[1]:
        eq &= np.all(times[prev] == times[cur], axis=1)
    if eq.all():
        return order, np.flatnonzero(boundary)
    # a collision: regroup each affected block of equal hashes exactly
    block_start = np.flatnonzero(boundary)
    block_end = np.append(block_start[1:], n)
    bad_blocks = distinct_ints(np.searchsorted(block_start, same[~eq] + 1, side="right") - 1)
    for b in bad_blocks:
        lo, hi = int(block_start[b]), int(block_end[b])
        idx = order[lo:hi]
        ids: dict[tuple, int] = {}
        gid = np.empty(hi - lo, dtype=np.int64)
        for j, r in enumerate(idx.tolist()):
            key = tuple(_hashable(c[r]) for c in cols)
            if times is not None and times.shape[1]:
                key += tuple(times[r].tolist())
            gid[j] = ids.setdefault(key, len(ids))
        sub = np.argsort(gid, kind="stable")
        order[lo:hi] = idx[sub]
        gs = gid[sub]
        boundary[lo + 1 : hi] = gs[1:] != gs[:-1]
    return order, np.flatnonzero(boundary)


def _hashable(v: object) -> object:
    # group NaN with NaN (as SQL grouping does); other values by equality
    if isinstance(v, float) and v != v:
        return ("nan",)
    return v


@dataclass(slots=True)
class Batch:
    """Updates at one time: columns and diffs (not necessarily consolidated).

    ``rowhash``, when set, is :func:`hash_rows` of ``cols`` and the batch is consolidated
    (an arrangement emits its batches so), which spares consumers keyed by the whole row
    hashing and deduplicating it again.  Every derived batch drops it.  A batch is never
    changed once built (not ``frozen``: a frozen dataclass's ``__init__`` costs twice as
    much, and batches are built on every small change).
    """

    cols: Columns
    diff: np.ndarray
    rowhash: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.diff)

    @staticmethod
    def empty(dtypes: Sequence[np.dtype]) -> Batch:
        return Batch(tuple(np.empty(0, dtype=d) for d in dtypes), np.zeros(0, dtype=np.int64))

    @staticmethod
    def concat(parts: Sequence[Batch]) -> Batch:
        if len(parts) == 1:
            return parts[0]
        return Batch(
            concat_columns([p.cols for p in parts]), np.concatenate([p.diff for p in parts])
        )

    @staticmethod
    def concat_consolidated(parts: Sequence[Batch]) -> Batch:
        """The parts' sum, consolidated (with its row hashes); parts that carry their row
        hashes are not hashed again."""
        if len(parts) == 1:
            return parts[0].consolidate()
        b = Batch.concat(parts)
        hashes = [p.rowhash for p in parts if p.rowhash is not None]
        if len(hashes) < len(parts):
            return b.consolidate()
        h = np.concatenate(hashes)
        keep, sums = consolidate_hashed(h, b.cols, b.diff)
        return Batch(take(b.cols, keep), sums, h[keep])

    def negate(self) -> Batch:
        return Batch(self.cols, -self.diff)

    def take(self, idx: np.ndarray) -> Batch:
        return Batch(take(self.cols, idx), self.diff[idx])

    def consolidate(self) -> Batch:
        """Sum the diffs of equal rows and drop rows whose diff is zero (a batch with its
        row hashes is consolidated already)."""
        if self.rowhash is not None:
            return self
        n = len(self.diff)
        if n <= 1:
            return self if n == 0 or self.diff[0] != 0 else self.take(_NONE)
        h = hash_rows(self.cols, n)
        keep, sums = consolidate_hashed(h, self.cols, self.diff)
        return Batch(take(self.cols, keep), sums, h[keep])


_NONE = np.zeros(0, dtype=np.int64)


def consolidate_hashed(
    h: np.ndarray, cols: Columns, diff: np.ndarray, times: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Group equal rows (hash ``h``, verified on ``cols`` and ``times``): a representative
    index of each group with a non-zero sum, and that sum.

    Representatives come in order of first occurrence (hash grouping,
    :func:`ivm.kernels.group_hashes`); if two different rows share a hash, the rows are
    grouped exactly by sorting instead.
    """
    if len(h) <= 1:
        nz = (diff != 0).nonzero()[0]
        return nz, diff[nz]
    if (times is None or times.shape[1] == 0) and hash_is_injective(cols):
        return hash_group_sums(h, diff)  # equal hashes are equal rows: one compiled pass
    gid, rep, sums = group_hashes(h, diff)
    if len(rep) < len(h) and not _groups_exact(cols, times, gid, rep):
        order, starts = sort_groups(h, cols, times)
        sums = segment_sums(diff[order], starts)
        nz = sums != 0
        return order[starts[nz]], sums[nz]
    nz = (sums != 0).nonzero()[0]
    return rep[nz], sums[nz]


def _groups_exact(
    cols: Columns, times: np.ndarray | None, gid: np.ndarray, rep: np.ndarray
) -> bool:
    """Whether every row equals the first row of its hash group."""
    has_times = times is not None and times.shape[1] > 0
    if hash_is_injective(cols) and not has_times:
        return True
    first = rep[gid]
    moved = (first != np.arange(len(gid))).nonzero()[0]
    if len(moved) == 0:
        return True
    if not rows_equal(cols, first[moved], cols, moved).all():
        return False
    return times is None or bool((times[first[moved]] == times[moved]).all())


def combine_hash(h: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Fold one more column into row hashes."""
    return mix_hashes(h, hash_column(col), _M2)


def unique_int_rows(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an int matrix (lexicographically sorted) and, per input row, the
    index of its distinct row."""
    n = mat.shape[0]
    if n == 0:
        return mat, _NONE
    order = np.lexsort(mat.T[::-1])
    srt = mat[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.any(srt[1:] != srt[:-1], axis=1, out=new[1:])
    gid = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = gid
    return srt[new], inverse


def distinct_ints(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-D integer array: ``np.unique(a)`` without its
    masked-array check (with numpy 2 that check imports ``numpy.ma`` on first use, ~15-20
    ms of CPU, which nothing else in the engine needs: :mod:`ivm.numba_typeof`)."""
    s = np.sort(a)
    return s[_run_starts(s)]


def distinct_int_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`distinct_ints` with how often each value occurs (``return_counts=True``)."""
    s = np.sort(a)
    starts = np.flatnonzero(_run_starts(s))
    counts = np.empty(len(starts), dtype=np.int64)
    counts[:-1] = starts[1:] - starts[:-1]
    counts[-1:] = len(s) - starts[-1:]
    return s[starts], counts


def _run_starts(s: np.ndarray) -> np.ndarray:
    """Which positions of the sorted ``s`` start a run of equal values."""
    first = np.empty(len(s), dtype=np.bool_)
    first[:1] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    return first
