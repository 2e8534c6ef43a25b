"""A kept view file's rows as a sorted list of Python tuples, searched by bisection.

A view whose refreshes update a few rows keeps them in one file sorted by all its columns
(catalog.view_table), and its rows in memory (catalog.file_cache).  Each refresh finds the
rows it removes there and places the rows it inserts: with Arrow, a hash join (~0.3 ms) and
two sorts of a few hundred rows (catalog.sorted_merge, ~0.5 ms with the take), each paying
Arrow's fixed cost per call for ten rows.  Kept beside the rows, their keys as a sorted Python
list answer both by binary search in microseconds; the list is updated with the file, in
place (the removed rows deleted and the inserted ones put in: no Arrow call, no copy) and built once,
the first time a small change meets the file (10,000 rows of 4 columns: ~1.6 ms).

Only for rows Python orders exactly as :func:`pyarrow.compute.sort_indices` does: integers,
strings (UTF-8 byte order is code point order), booleans and dates, without NULLs (Arrow
sorts NULLs last, Python cannot compare them) — :func:`indexable`.  Rows of these types that
compare equal are the same row, so the order among equal rows does not matter.

>>> t = pa.table({"k": ["a", "b", "b", "d"], "x": [1, 1, 1, 5]})
>>> ix = RowIndex.of(t)
>>> ix.locate([("b", 1), ("d", 5)], [2, 1]).tolist()
[1, 2, 3]
>>> take = ix.merge(np.array([1, 2]), [("c", 0)])
>>> take.tolist(), ix.keys
([0, 4, 3], [('a', 1), ('c', 0), ('d', 5)])
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

Key = tuple[Any, ...]

_EXACT = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_boolean,
    pa.types.is_date32,
)


def indexable(rows: pa.Table) -> bool:
    """Whether Python orders and compares the rows of ``rows`` exactly as Arrow's sort does:
    only integer, string, boolean and date columns, and no NULLs."""
    return rows.num_columns > 0 and all(
        c.null_count == 0 and any(f(c.type) for f in _EXACT) for c in rows.columns
    )


def row_keys(rows: pa.Table) -> list[Key]:
    """The rows of ``rows`` as Python tuples (the caller checked :func:`indexable`)."""
    cols = [
        c.to_numpy().tolist() if pa.types.is_integer(c.type) else c.to_pylist()
        for c in rows.columns
    ]
    return list(zip(*cols, strict=True))


@dataclass(frozen=True)
class RowIndex:
    """The rows of a table sorted by all its columns, in its order (only :meth:`merge`
    changes ``keys``)."""

    keys: list[Key]

    @classmethod
    def of(cls, rows: pa.Table) -> RowIndex:
        return cls(row_keys(rows))

    def __len__(self) -> int:
        return len(self.keys)

    def locate(self, rows: Sequence[Key], counts: Sequence[int]) -> np.ndarray | None:
        """The positions of ``counts[i]`` copies of each of the distinct ``rows`` (each
        row's first copies), ascending; ``None`` when the table holds fewer copies of one."""
        out: list[int] = []
        keys = self.keys
        for k, c in zip(rows, counts, strict=True):
            i = bisect.bisect_left(keys, k)
            end = i + int(c)
            if end > len(keys) or keys[end - 1] != k:
                return None  # sorted: copies i .. end-1 are all k exactly when the last is
            out.extend(range(i, end))
        return np.sort(np.asarray(out, np.int64))

    def merge(self, removed: np.ndarray, new: Sequence[Key]) -> np.ndarray:
        """Cut out the rows at the ascending positions ``removed`` and put in the sorted rows
        ``new``, in place (this index then describes the result; the caller took it away
        from the old rows: catalog.file_cache ``detach_index``); returns the positions to
        take from the table followed by ``new`` (new row ``j`` is ``n + j``, ``n`` the rows
        before) for the result."""
        keys = self.keys
        n = len(keys)
        for r in reversed(removed.tolist()):  # each a move of pointers, no copy of the list
            del keys[r]
        at = []
        for j, k in enumerate(new):  # after equal rows, as catalog.sorted_merge places them
            i = bisect.bisect_right(keys, k)
            keys.insert(i, k)
            at.append(i - j)  # the place among the kept rows
        keep = np.delete(np.arange(n, dtype=np.int64), removed)
        return np.insert(keep, at, n + np.arange(len(new), dtype=np.int64))
