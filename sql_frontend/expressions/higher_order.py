"""Spark's higher-order functions: ``transform``, ``filter``, ``exists``, ``forall``,
``aggregate``/``reduce``, ``zip_with``, ``array_sort`` with a comparator, ``map_filter``,
``transform_keys``, ``transform_values``, ``map_zip_with``.

A lambda's body is an ordinary expression; its variables are ``lambda_var`` calls that read
the last columns of the batch it is evaluated over. A function evaluates the body once over
ALL the elements of all its rows: every element becomes a row of a flattened batch — the row's
own columns (repeated, so the body may read them, as Spark allows) followed by the lambda's
variables — and the results are regrouped per row (:mod:`.nested`'s ``flatten``/``rebuild``).
So the body runs vectorized, per element; ``aggregate`` runs it once per element position
(the accumulator is sequential), ``array_sort`` once over every pair of a row's elements, and
``map_zip_with`` matches keys per row in Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from sql_frontend.expressions.evaluate import LAZY, OPS, Evaluator, lazy_only, runtime_error
from sql_frontend.expressions.generators import elements
from sql_frontend.expressions.nested import check_keys, column, flatten, parts, rebuild
from sql_frontend.expressions.vec import Vec, from_column, from_objects, objects, to_column
from sql_frontend.sql_types import BOOLEAN, SqlType

Cols = Sequence[np.ndarray]


def _expand(cols: Cols, parent: np.ndarray, *extra: np.ndarray) -> list[np.ndarray]:
    """The batch a lambda body sees: each row's columns once per element, then the lambda's
    variables."""
    return [np.asarray(c)[parent] for c in cols] + list(extra)


def _ints(values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values.tolist()
    return out


def _lambda_args(params: int, flat: np.ndarray, position: np.ndarray) -> list[np.ndarray]:
    """The variable columns of a one-or-two-parameter lambda over elements: the element, and
    its index (INT) when asked for."""
    return [flat, _ints(position)][:params]


def _params(subs: list[Evaluator], i: int) -> int:
    return int(subs[i]([], 1).data[0])


def _transform(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``transform(a, x -> f)`` / ``(x, i) -> f``."""
    arr = subs[0](cols, n)
    flat, offsets, parent, pos = elements(arr)
    body = subs[2](_expand(cols, parent, *_lambda_args(_params(subs, 1), flat, pos)), len(flat))
    return rebuild(to_column(body), offsets, arr.null, t)


def _kept(mask: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """Offsets of each row's kept elements."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[mask], minlength=n), out=offsets[1:])
    return offsets


def _true(v: Vec) -> np.ndarray:
    return v.data.astype(bool) & ~v.null


def _filter(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``filter(a, x -> p)``: the elements for which ``p`` is TRUE."""
    arr = subs[0](cols, n)
    flat, _, parent, pos = elements(arr)
    body = subs[2](_expand(cols, parent, *_lambda_args(_params(subs, 1), flat, pos)), len(flat))
    mask = _true(body)
    return rebuild(flat[mask], _kept(mask, parent, n), arr.null, t)


def _quantifier(every: bool):
    def run(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
        """``exists`` / ``forall`` in three-valued logic: a NULL among the answers makes the
        result NULL unless some answer decides it (TRUE for exists, FALSE for forall)."""
        arr = subs[0](cols, n)
        flat, _, parent, _ = elements(arr)
        body = subs[2](_expand(cols, parent, flat), len(flat))
        deciding = (~body.data.astype(bool) if every else body.data.astype(bool)) & ~body.null
        decided = np.bincount(parent[deciding], minlength=n) > 0
        unknown = np.bincount(parent[body.null], minlength=n) > 0
        value = ~decided if every else decided
        return Vec(value, arr.null | (~decided & unknown), BOOLEAN)

    return run


def _aggregate(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``aggregate(a, zero, (acc, x) -> merge[, acc -> finish])``: the merge folds the
    elements in order, one element position at a time over all rows."""
    arr = subs[0](cols, n)
    flat, offsets, _, _ = elements(arr)
    acc = to_column(subs[1](cols, n))
    lengths = np.diff(offsets)
    for j in range(int(lengths.max()) if n else 0):
        rows = np.flatnonzero(lengths > j)
        step = subs[2](_expand(cols, rows, acc[rows], flat[offsets[rows] + j]), len(rows))
        acc[rows] = to_column(step)
    if len(subs) > 3:
        out = subs[3]([*cols, acc], n)
    else:
        out = from_column(acc, t)
    out.null = out.null | arr.null
    return from_column(to_column(out), t)


def _zip_with(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``zip_with(a, b, (x, y) -> f)``: the shorter array padded with NULLs."""
    a, b = subs[0](cols, n), subs[1](cols, n)
    fa, oa = flatten(a)
    fb, ob = flatten(b)
    la, lb = np.diff(oa), np.diff(ob)
    null = a.null | b.null
    longest = np.where(null, 0, np.maximum(la, lb))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(longest, out=offsets[1:])
    parent = np.repeat(np.arange(n, dtype=np.int64), longest)
    pos = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], longest)

    def side(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        out = np.full(len(pos), None, dtype=object)
        inside = pos < lengths[parent]
        out[inside] = flat[starts[parent[inside]] + pos[inside]]
        return out

    x, y = side(fa, oa[:-1], la), side(fb, ob[:-1], lb)
    body = subs[2](_expand(cols, parent, x, y), len(pos))
    return rebuild(to_column(body), offsets, null, t)


def _comparator(signs: np.ndarray) -> Callable[[int, int], int]:
    """Compare positions ``p`` and ``q`` of one row by the comparator's precomputed signs."""
    return lambda p, q: int(signs[p, q])


def _array_sort(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``array_sort(a, (l, r) -> c)``: a stable sort by the comparator's sign (Spark's
    TimSort is stable too); the comparator runs once over every pair of a row's elements."""
    arr = subs[0](cols, n)
    flat, offsets, _, _ = elements(arr)
    lengths = np.diff(offsets)
    pair_parent = np.repeat(np.arange(n, dtype=np.int64), lengths * lengths)
    starts = np.repeat(offsets[:-1], lengths * lengths)
    within = np.arange(len(pair_parent), dtype=np.int64) - np.repeat(
        np.concatenate([[0], np.cumsum(lengths * lengths)[:-1]]).astype(np.int64), lengths * lengths
    )
    width = lengths[pair_parent]
    left, right = starts + within // np.maximum(width, 1), starts + within % np.maximum(width, 1)
    cmp = subs[2](_expand(cols, pair_parent, flat[left], flat[right]), len(pair_parent))
    if cmp.null.any():
        raise runtime_error(
            "[COMPARATOR_RETURNS_NULL] The comparator has returned a NULL for a comparison; "
            "it should return a positive integer for greater than, 0 for equal and a "
            "negative integer for less than"
        )
    signs = np.sign(cmp.data.astype(np.int64))
    pair_start = np.concatenate([[0], np.cumsum(lengths * lengths)]).astype(np.int64)
    order = np.empty(len(flat), dtype=np.int64)
    for i in np.flatnonzero(lengths > 1):
        size, base = int(lengths[i]), int(pair_start[i])
        table = signs[base : base + size * size].reshape(size, size)
        ranked = sorted(range(size), key=functools.cmp_to_key(_comparator(table)))
        order[offsets[i] : offsets[i] + size] = offsets[i] + np.asarray(ranked, dtype=np.int64)
    for i in np.flatnonzero(lengths == 1):
        order[offsets[i]] = offsets[i]
    return rebuild(flat[order], offsets, arr.null, t)


def _array_sort_natural(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``array_sort(a)``: ascending, NaN after the numbers, NULLs last (per row in Python)."""
    arr = subs[0](cols, n)

    def key(v: object) -> tuple[int, object]:
        if v is None:
            return (2, 0)
        return (1, 0) if isinstance(v, float) and v != v else (0, v)

    rows = (None if r is None else tuple(sorted(r, key=key)) for r in objects(arr))
    return from_objects(column(rows, n), t)


def _entries(m: Vec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, values, offsets, parent, pairs)`` of a map column's entries."""
    flat, offsets, parent, _ = elements(m)
    keys, values = parts(from_objects(flat, SqlType("NULL")), 2) if len(flat) else (flat, flat)
    return keys, values, offsets, parent, flat


def _map_filter(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``map_filter(m, (k, v) -> p)``: the entries for which ``p`` is TRUE."""
    m = subs[0](cols, n)
    keys, values, _, parent, flat = _entries(m)
    mask = _true(subs[2](_expand(cols, parent, keys, values), len(flat)))
    return rebuild(flat[mask], _kept(mask, parent, n), m.null, t)


def _transform_map(of_keys: bool):
    def run(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
        """``transform_keys`` / ``transform_values``: the lambda ``(k, v) -> ...`` gives each
        entry's new key (checked: not NULL, not repeated) or new value."""
        m = subs[0](cols, n)
        keys, values, offsets, parent, flat = _entries(m)
        made = to_column(subs[2](_expand(cols, parent, keys, values), len(flat)))
        new = zip(made, values, strict=True) if of_keys else zip(keys, made, strict=True)
        out = rebuild(column(new, len(flat)), offsets, m.null, t)
        if of_keys:
            for row in objects(out):
                if row is not None:
                    check_keys(row)
        return out

    return run


def _map_zip_with(subs: list[Evaluator], cols: Cols, n: int, t: SqlType) -> Vec:
    """``map_zip_with(m1, m2, (k, v1, v2) -> f)``: every key of either map (``m1``'s in
    order, then ``m2``'s new ones), with NULL for a side that lacks it."""
    m1, m2 = objects(subs[0](cols, n)), objects(subs[1](cols, n))
    keys: list[object] = []
    left: list[object] = []
    right: list[object] = []
    counts = np.zeros(n, dtype=np.int64)
    null = np.zeros(n, dtype=bool)
    for i, (a, b) in enumerate(zip(m1, m2, strict=True)):
        if a is None or b is None:
            null[i] = True
            continue
        da, db = dict(a), dict(b)
        row_keys = [k for k, _ in a] + [k for k, _ in b if k not in da]
        keys += row_keys
        left += [da.get(k) for k in row_keys]
        right += [db.get(k) for k in row_keys]
        counts[i] = len(row_keys)
    parent = np.repeat(np.arange(n, dtype=np.int64), counts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    k_col, l_col, r_col = (column(x, len(keys)) for x in (keys, left, right))
    made = to_column(subs[2](_expand(cols, parent, k_col, l_col, r_col), len(keys)))
    pairs = column(zip(keys, made, strict=True), len(keys))
    return rebuild(pairs, offsets, null, t)


HIGHER_ORDER_OPS = {
    "transform": _transform,
    "filter": _filter,
    "exists_lambda": _quantifier(every=False),
    "forall": _quantifier(every=True),
    "aggregate": _aggregate,
    "zip_with": _zip_with,
    "array_sort_lambda": _array_sort,
    "array_sort_natural": _array_sort_natural,
    "map_filter": _map_filter,
    "transform_keys": _transform_map(of_keys=True),
    "transform_values": _transform_map(of_keys=False),
    "map_zip_with": _map_zip_with,
}
"""Engine operation → its evaluation (a LAZY operation: it evaluates its lambda itself)."""
LAZY.update(HIGHER_ORDER_OPS)
for _name in HIGHER_ORDER_OPS:
    OPS[_name] = lazy_only
