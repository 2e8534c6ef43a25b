"""Columnar batches of updates, hashing of rows and keys, and consolidation.

A :class:`Batch` holds the updates of one time: one numpy array per column and a signed
int64 ``diff`` array.  A batch is *consolidated* when every row appears once and no diff is
zero.  Rows are identified by a 64-bit hash of their columns (splitmix64 mixing) and, where
hashes are equal, by comparing the columns themselves, so a hash collision never merges two
different rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Columns = tuple[np.ndarray, ...]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a bijection of uint64 with good avalanche."""
    # integer array arithmetic wraps silently in numpy (no overflow checks on arrays)
    h = (h ^ (h >> _S30)) * _M1
    h = (h ^ (h >> _S27)) * _M2
    return h ^ (h >> _S31)


def hash_column(col: np.ndarray) -> np.ndarray:
    """A uint64 hash per value, equal for equal values (``1 == 1.0`` hash alike)."""
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
        return bits
    return np.fromiter(map(hash, col), dtype=np.int64, count=len(col)).view(np.uint64)


def hash_rows(cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Hash of each row of ``cols`` (``n`` rows; zero columns hash to a constant)."""
    if len(cols) == 1:
        return _mix(hash_column(cols[0]) + _GOLDEN)
    h = np.full(n, _GOLDEN, dtype=np.uint64)
    for c in cols:
        h = _mix(h * _M2 + hash_column(c))
    return h


def hash_times(h: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Fold inner time coordinates into row hashes."""
    for k in range(times.shape[1]):
        h = _mix(h * _M2 + times[:, k].astype(np.uint64))
    return h


def _eq(u: object, v: object) -> bool:
    return bool(u == v)


def take(cols: Columns, idx: np.ndarray) -> Columns:
    return tuple(c[idx] for c in cols)


def concat_columns(parts: Sequence[Columns]) -> Columns:
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(cs) for cs in zip(*parts, strict=True))


def hash_is_injective(cols: Columns) -> bool:
    """Whether :func:`hash_rows` of these columns cannot collide: one integer column
    (an affine map and splitmix64's finalizer are both bijections of uint64)."""
    return len(cols) == 1 and cols[0].dtype.kind in "iub"


def rows_equal(a: Columns, ia: np.ndarray | None, b: Columns, ib: np.ndarray) -> np.ndarray:
    """Row-wise equality of ``a[ia]`` and ``b[ib]`` (NULL equals NULL, as in grouping).

    ``ia=None`` means every row of ``a`` in order.
    """
    eq = np.ones(len(ib), dtype=bool)
    for ca, cb in zip(a, b, strict=True):
        x, y = (ca if ia is None else ca[ia]), cb[ib]
        e = x == y
        if not isinstance(e, np.ndarray) or e.dtype != np.bool_:
            e = np.fromiter(map(_eq, x, y), dtype=bool, count=len(x))
        eq &= e
    return eq


def group_sorted(
    h_sorted: np.ndarray, cols_sorted: Columns, times_sorted: np.ndarray | None = None
) -> np.ndarray:
    """Start index of each group of equal rows in data sorted by hash.

    Boundaries are where the hash changes, or (rarely) where the hash is equal but the
    columns or times differ: a collision splits a group, it never merges two rows.
    """
    n = len(h_sorted)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    np.not_equal(h_sorted[1:], h_sorted[:-1], out=boundary[1:])
    same = np.flatnonzero(~boundary[1:])
    if len(same) and not (
        hash_is_injective(cols_sorted) and (times_sorted is None or times_sorted.shape[1] == 0)
    ):
        prev, cur = same, same + 1
        eq = rows_equal(cols_sorted, prev, cols_sorted, cur)
        if times_sorted is not None and times_sorted.shape[1]:
            eq &= np.all(times_sorted[prev] == times_sorted[cur], axis=1)
        boundary[cur[~eq]] = True
    return np.flatnonzero(boundary)


@dataclass(frozen=True, slots=True)
class Batch:
    """Updates at one time: columns and diffs (not necessarily consolidated)."""

    cols: Columns
    diff: np.ndarray

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

    def negate(self) -> Batch:
        return Batch(self.cols, -self.diff)

    def take(self, idx: np.ndarray) -> Batch:
        return Batch(take(self.cols, idx), self.diff[idx])

    def consolidate(self) -> Batch:
        """Sum the diffs of equal rows and drop rows whose diff is zero."""
        n = len(self.diff)
        if n <= 1:
            return self if n == 0 or self.diff[0] != 0 else self.take(_NONE)
        keep, sums = consolidate_hashed(hash_rows(self.cols, n), self.cols, self.diff)
        return Batch(take(self.cols, keep), sums)


_NONE = np.zeros(0, dtype=np.int64)


def consolidate_hashed(
    h: np.ndarray, cols: Columns, diff: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Group equal rows (hash ``h``, verified on ``cols``): a representative index of each
    group with a non-zero sum, and that sum."""
    if len(h) <= 1:
        nz = np.flatnonzero(diff != 0)
        return nz, diff[nz]
    order = np.argsort(h)
    starts = group_sorted(h[order], take(cols, order))
    sums = np.add.reduceat(diff[order], starts)
    nz = sums != 0
    return order[starts[nz]], sums[nz]


def combine_hash(h: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Fold one more column into row hashes."""
    return _mix(h * _M2 + hash_column(col))


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
