"""The oracle for a view table's change data feed: the diff of the view's rows before and
after a refresh, with each changed row of a keyed view as an update.

Rows are tuples; a feed is a multiset of ``(row, change type)``.  For a view with a key (the
key's column positions), the view holds at most one row per key before and after (checked);
a key whose row changed is an ``update_preimage`` of the old row and an ``update_postimage``
of the new one, a key that disappeared a ``delete``, a new key an ``insert``.  Without a key,
every removed copy is a ``delete`` and every added copy an ``insert``.  Import as ``from
feed_oracle import expected_feed`` (like ``spark_fixture``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

Row = tuple[Any, ...]
Feed = Counter[tuple[Row, str]]


def _by_key(rows: Counter[Row], key: Sequence[int]) -> dict[Row, Row]:
    out: dict[Row, Row] = {}
    for r, n in rows.items():
        k = tuple(r[i] for i in key)
        assert n == 1 and k not in out, f"key {k} is not unique in the view: {r}"
        out[k] = r
    return out


def expected_feed(old: Counter[Row], new: Counter[Row], key: Sequence[int] | None) -> Feed:
    """The feed of a commit that takes the view from ``old`` to ``new``."""
    out: Feed = Counter()
    if key is None:
        for r, n in (old - new).items():
            out[(r, "delete")] += n
        for r, n in (new - old).items():
            out[(r, "insert")] += n
        return out
    before, after = _by_key(old, key), _by_key(new, key)
    for k, r in before.items():
        if k not in after:
            out[(r, "delete")] += 1
        elif after[k] != r:
            out[(r, "update_preimage")] += 1
            out[(after[k], "update_postimage")] += 1
    for k, r in after.items():
        if k not in before:
            out[(r, "insert")] += 1
    return out


def feed_of(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Feed:
    """A read feed (dicts with the view's columns and ``_change_type``) as a multiset."""
    return Counter((tuple(r[c] for c in columns), r["_change_type"]) for r in rows)


def bag(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Counter[Row]:
    return Counter(tuple(r[c] for c in columns) for r in rows)
