"""The change data feed of one view-table commit: the epoch's diff, updates as updates.

A refresh removes the stored copies ``removed`` and appends the copies ``added`` (one row per
copy).  Its feed (a ``_change_data/`` file, catalog.view_table) has one row per copy, with a
``_change_type``:

* for a view with a key (catalog.view_key), a key that has **exactly one** removed copy and
  **exactly one** added copy in the epoch is an update: its removed copy is an
  ``update_preimage``, its added copy the ``update_postimage``;
* every other removed copy is a ``delete``, every other added copy an ``insert``.

The feed's signed multiset (``insert`` / ``update_postimage`` +1, ``delete`` /
``update_preimage`` -1) is ``added - removed``, the epoch's diff, whatever the key: pairing
only relabels rows.  Keys are compared as SQL ``GROUP BY`` compares them (NULLs equal), by
Arrow's grouping; a key Arrow cannot group (nested types) pairs nothing.

>>> import pyarrow as pa
>>> old = pa.table({"k": [1, 2], "n": [10, 20]})
>>> new = pa.table({"k": [1, 3], "n": [11, 30]})
>>> feed, counts = change_feed(old, new, key=("k",))
>>> [(r["k"], r["n"], r["_change_type"]) for r in feed.to_pylist()]
[(2, 20, 'delete'), (1, 10, 'update_preimage'), (1, 11, 'update_postimage'), (3, 30, 'insert')]
>>> counts
FeedCounts(inserted=1, deleted=1, updated=1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from catalog.changes import small_exact, sort_codes

CHANGE_TYPE = "_change_type"
_SIDE = "__side__"
_ROW = "__row__"


@dataclass(frozen=True)
class FeedCounts:
    """How many feed rows of each kind a commit has (updates: pre/post-image pairs)."""

    inserted: int
    deleted: int
    updated: int


def update_pairs(
    removed: pa.Table, added: pa.Table, key: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(in removed, in added)`` of the copies that form updates (same order)."""
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if key is None or removed.num_rows == 0 or added.num_rows == 0:
        return none
    if not key:  # at most one row: a retraction and an insertion of it are one update
        one = np.zeros(1, np.int64)
        return (one, one) if removed.num_rows == added.num_rows == 1 else none
    names = list(key)
    if any(k not in removed.column_names or k not in added.column_names for k in names):
        return none
    n_rem, n_add = removed.num_rows, added.num_rows
    if small_exact(removed, names) and small_exact(added, names):
        return _pairs_small(removed.select(names), added.select(names))
    sorted_pairs = _pairs_sorted(removed, added, names)
    if sorted_pairs is not None:
        return sorted_pairs
    try:
        both = pa.concat_tables([removed.select(names), added.select(names)])
        both = both.append_column(
            _SIDE, pa.array(np.concatenate([np.zeros(n_rem, np.int8), np.ones(n_add, np.int8)]))
        ).append_column(_ROW, pa.array(np.arange(n_rem + n_add, dtype=np.int64)))
        grouped = both.group_by(names, use_threads=False).aggregate(
            [(_SIDE, "sum"), (_SIDE, "count"), (_ROW, "min"), (_ROW, "max")]
        )
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        return none
    adds = grouped.column(f"{_SIDE}_sum").to_numpy()
    copies = grouped.column(f"{_SIDE}_count").to_numpy()
    pair = (copies == 2) & (adds == 1)  # one removed copy, one added copy
    first = grouped.column(f"{_ROW}_min").to_numpy()[pair]
    last = grouped.column(f"{_ROW}_max").to_numpy()[pair]
    order = np.argsort(first, kind="stable")
    return first[order], last[order] - n_rem


def _pairs_sorted(
    removed: pa.Table, added: pa.Table, names: list[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`update_pairs` by sorting both sides' keys together, when every key column
    compares exactly without NULLs (catalog.changes ``sort_codes``; ``None`` otherwise):
    a key of one removed and one added copy is an update.  600 updates in ~0.1 ms, not
    Arrow's hash aggregation's ~0.4 ms."""
    n_rem = removed.num_rows
    codes = []
    for k in names:
        a, b = removed.column(k), added.column(k)
        if not a.type.equals(b.type):
            return None
        c = sort_codes(pa.chunked_array([*a.chunks, *b.chunks], a.type))
        if c is None:
            return None
        codes.append(c)
    at = np.lexsort(codes[::-1])  # stable: a key's removed copies before its added ones
    n = len(at)
    new_key = np.zeros(n, dtype=bool)
    new_key[0] = True
    for c in codes:
        ranked = c[at]
        new_key[1:] |= ranked[1:] != ranked[:-1]
    starts = np.flatnonzero(new_key)
    sizes = np.diff(np.append(starts, n))
    adds = np.add.reduceat((at >= n_rem).astype(np.int64), starts)
    first = starts[(sizes == 2) & (adds == 1)]
    pre, post = at[first], at[first + 1] - n_rem
    order = np.argsort(pre, kind="stable")
    return pre[order], post[order]


def _pairs_small(removed: pa.Table, added: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """:func:`update_pairs` of small tables, keys compared as Python tuples (the key types
    compare exactly, NULLs equal: catalog.changes ``small_exact``)."""
    sides: dict[tuple[object, ...], list[list[int]]] = {}
    for side, t in enumerate((removed, added)):
        for i, k in enumerate(zip(*(c.to_pylist() for c in t.columns), strict=True)):
            sides.setdefault(k, [[], []])[side].append(i)
    pairs = sorted((r[0], a[0]) for r, a in sides.values() if len(r) == 1 and len(a) == 1)
    pre = np.fromiter((p for p, _ in pairs), np.int64, len(pairs))
    return pre, np.fromiter((q for _, q in pairs), np.int64, len(pairs))


def change_feed(
    removed: pa.Table, added: pa.Table, *, key: Sequence[str] | None
) -> tuple[pa.Table, FeedCounts]:
    """The feed rows of a commit that removes ``removed`` and appends ``added`` (one row per
    copy, same schema) — deletes, update pre-images, post-images, inserts — and their counts."""
    pre, post = update_pairs(removed, added, key)
    deleted = np.ones(removed.num_rows, bool)
    deleted[pre] = False
    inserted = np.ones(added.num_rows, bool)
    inserted[post] = False
    parts = [
        (removed.filter(pa.array(deleted)), "delete"),
        (removed.take(pa.array(pre)), "update_preimage"),
        (added.take(pa.array(post)), "update_postimage"),
        (added.filter(pa.array(inserted)), "insert"),
    ]
    kinds = np.concatenate([np.full(t.num_rows, k, dtype=object) for t, k in parts])
    feed = pa.concat_tables([t for t, _ in parts]).append_column(
        CHANGE_TYPE, pa.array(kinds, pa.string())
    )
    counts = FeedCounts(inserted=int(inserted.sum()), deleted=int(deleted.sum()), updated=len(pre))
    return feed, counts
