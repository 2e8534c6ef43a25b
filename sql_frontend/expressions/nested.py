"""ARRAY, MAP and STRUCT values: their constructors, accessors and casts.

Engine values (see :mod:`sql_frontend.sql_types`): an array is a tuple of its elements, a map
a tuple of ``(key, value)`` pairs in Spark's order, a struct a tuple of its field values, NULL
is ``None`` at every level. Operations on elements work on whole columns: the elements of
every row are flattened into one column (:func:`flatten`), the scalar operation runs once over
it, and the rows are rebuilt from the offsets (:func:`rebuild`), as Arrow's list kernels do.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np

from sql_frontend.expressions.evaluate import OPS, op, runtime_error
from sql_frontend.expressions.vec import Vec, from_objects, objects
from sql_frontend.sql_types import STRING, SqlType

Cast = Callable[[Vec, SqlType, bool], Vec]


def column(values: Iterable[object], n: int) -> np.ndarray:
    """An object column of ``n`` values (tuples stay single cells, never a second axis)."""
    return np.fromiter(values, dtype=object, count=n)


def flatten(v: Vec) -> tuple[np.ndarray, np.ndarray]:
    """The elements of every row of an array (or map: its pairs) column, in one object column,
    and the ``len + 1`` offsets of each row's elements in it (a NULL row has none)."""
    rows = objects(v)
    lengths = np.fromiter(
        (0 if r is None else len(r) for r in rows), dtype=np.int64, count=len(rows)
    )
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    flat = column(itertools.chain.from_iterable(r for r in rows if r is not None), total)
    return flat, offsets


def rebuild(flat: np.ndarray, offsets: np.ndarray, null: np.ndarray, t: SqlType) -> Vec:
    """A column of tuples, row ``i`` holding ``flat[offsets[i]:offsets[i+1]]`` (NULL where
    ``null``)."""
    items = flat.tolist()
    bounds = offsets.tolist()
    n = len(null)
    values = column(
        (None if null[i] else tuple(items[bounds[i] : bounds[i + 1]]) for i in range(n)), n
    )
    return from_objects(values, t)


def parts(v: Vec, count: int) -> list[np.ndarray]:
    """The ``count`` columns of a tuple-valued column (struct fields, map pairs): part ``j`` of
    each row, None where the row is NULL."""
    rows = objects(v)
    return [column((None if r is None else r[j] for r in rows), len(rows)) for j in range(count)]


def zipped(cols: list[np.ndarray], null: np.ndarray, t: SqlType) -> Vec:
    """Row ``i`` is the tuple of ``cols[j][i]`` (NULL where ``null``)."""
    n = len(null)
    rows = column(
        (None if z else r for z, r in zip(null.tolist(), zip(*cols, strict=False), strict=True)), n
    )
    return from_objects(rows, t)


# ---------------------------------------------------------------- constructors


@op("array", "struct")
def _tuple_of(args: list[Vec], t: SqlType) -> Vec:
    """``array(a, b, ...)`` / ``struct(a, b, ...)``: never NULL themselves (``array()`` is a
    constant)."""
    n = len(args[0])
    return zipped([objects(a) for a in args], np.zeros(n, dtype=bool), t)


def check_keys(pairs: tuple[tuple[object, object], ...]) -> None:
    """Spark's map rules: no NULL key (``NULL_MAP_KEY``), no key twice
    (``DUPLICATED_MAP_KEY``, the default ``spark.sql.mapKeyDedupPolicy=EXCEPTION``)."""
    seen: set[object] = set()
    for k, _ in pairs:
        if k is None:
            raise runtime_error("[NULL_MAP_KEY] Cannot use null as map key.")
        if k in seen:
            raise runtime_error(
                f"[DUPLICATED_MAP_KEY] Duplicate map key {k!r} was found, please check the "
                "input data; or set spark.sql.mapKeyDedupPolicy to LAST_WIN"
            )
        seen.add(k)


@op("map")
def _map(args: list[Vec], t: SqlType) -> Vec:
    """``map(k1, v1, k2, v2, ...)``."""
    n = len(args[0])
    cols = [objects(a) for a in args]
    rows = []
    for i in range(n):
        pairs = tuple((cols[j][i], cols[j + 1][i]) for j in range(0, len(cols), 2))
        check_keys(pairs)
        rows.append(pairs)
    return from_objects(column(rows, n), t)


# ---------------------------------------------------------------- accessors


def _index_at(args: list[Vec], t: SqlType, base: int, fail: str | None) -> Vec:
    """Element ``i`` of each array, ``i`` counted from ``base`` (0: ``a[i]``; 1:
    ``element_at``, negative from the end); out of range: the error ``fail``, or NULL."""
    arr, idx = args
    rows = objects(arr)
    pos = idx.data.astype(np.int64)
    null = arr.null | idx.null
    out: list[object] = [None] * len(rows)
    for i in np.flatnonzero(~null):
        r = rows[i]
        k = int(pos[i])
        if base == 1:
            if k == 0:  # an error under try_element_at too
                raise runtime_error("[INVALID_INDEX_OF_ZERO] The index 0 is invalid.")
            k = k - 1 if k > 0 else len(r) + k
        if 0 <= k < len(r):
            out[i] = r[k]
        elif fail is not None:
            instead = "the SQL function `get()`" if base == 0 else "`try_element_at`"
            raise runtime_error(
                f"[{fail}] The index {int(pos[i])} is out of bounds. The array has {len(r)} "
                f"elements. Use {instead} to tolerate accessing element at invalid index and "
                "return NULL instead."
            )
    return from_objects(out, t)


OPS["array_index"] = lambda args, t: _index_at(args, t, 0, "INVALID_ARRAY_INDEX")
OPS["element_at"] = lambda args, t: _index_at(args, t, 1, "INVALID_ARRAY_INDEX_IN_ELEMENT_AT")
OPS["try_element_at"] = lambda args, t: _index_at(args, t, 1, None)


@op("map_value")
def _map_value(args: list[Vec], t: SqlType) -> Vec:
    """``m[k]`` / ``element_at(m, k)``: the value of key ``k``, NULL when absent."""
    m, key = args
    rows, keys = objects(m), objects(key)
    out: list[object] = [None] * len(rows)
    for i in np.flatnonzero(~(m.null | key.null)):
        for k, v in rows[i]:
            if k == keys[i]:
                out[i] = v
                break
    return from_objects(out, t)


@op("struct_field")
def _struct_field(args: list[Vec], t: SqlType) -> Vec:
    """``s.field``: the field at the constant position ``args[1]``."""
    s, at = args
    (pos,) = {int(p) for p in at.data[:1]} or {0}
    return from_objects(parts(s, pos + 1)[pos], t)


@op("size")
def _size(args: list[Vec], t: SqlType) -> Vec:
    """``size`` / ``cardinality`` / ``array_size``: NULL for NULL (ANSI mode)."""
    (a,) = args
    rows = objects(a)
    sizes = np.fromiter((0 if r is None else len(r) for r in rows), dtype=np.int64, count=len(rows))
    return Vec(sizes, a.null.copy(), t)


# ---------------------------------------------------------------- casts


def cast_nested(a: Vec, t: SqlType, safe: bool, cast: Cast) -> Vec:
    """CAST of arrays, maps and structs, part by part with the scalar ``cast``; to STRING
    as Spark prints them (``[1, null]``, ``{a -> 1}``, ``{1, x}``)."""
    src = a.type
    if t == STRING:
        return _to_text(a, cast)
    if src.name == "ARRAY":
        flat, offsets = flatten(a)
        elems = cast(from_objects(flat, src.element), t.element, safe)
        return rebuild(objects(elems), offsets, a.null, t)
    if src.name == "MAP":
        flat, offsets = flatten(a)
        pairs = Vec(flat, np.zeros(len(flat), dtype=bool), src)
        k, v = parts(pairs, 2)
        keys = cast(from_objects(k, src.key), t.key, safe)
        if keys.null.any():
            raise runtime_error("[NULL_MAP_KEY] Cannot use null as map key.")
        values = cast(from_objects(v, src.value), t.value, safe)
        joined = zipped([objects(keys), objects(values)], np.zeros(len(flat), dtype=bool), t)
        return rebuild(joined.data, offsets, a.null, t)
    fields = [
        objects(cast(from_objects(c, s), d, safe))
        for c, s, d in zip(parts(a, len(src.children)), src.children, t.children, strict=True)
    ]
    return zipped(fields, a.null, t)


def _texts(values: np.ndarray, t: SqlType, cast: Cast) -> list[str]:
    """Each value as CAST(... AS STRING) prints it inside a nested value (NULL: ``null``)."""
    texts = objects(cast(from_objects(values, t), STRING, False))
    return ["null" if s is None else s for s in texts]


def _to_text(a: Vec, cast: Cast) -> Vec:
    src = a.type
    n = len(a)
    if src.name == "STRUCT":
        cols = [
            _texts(c, s, cast)
            for c, s in zip(parts(a, len(src.children)), src.children, strict=True)
        ]

        def text(i: int) -> str:
            return "{" + ", ".join(c[i] for c in cols) + "}"

    else:
        flat, offsets = flatten(a)
        b = offsets.tolist()
        if src.name == "ARRAY":
            items = _texts(flat, src.element, cast)

            def text(i: int) -> str:
                return "[" + ", ".join(items[b[i] : b[i + 1]]) + "]"

        else:
            k, v = parts(Vec(flat, np.zeros(len(flat), dtype=bool), src), 2)
            keys, values = _texts(k, src.key, cast), _texts(v, src.value, cast)

            def text(i: int) -> str:
                pairs = (f"{keys[j]} -> {values[j]}" for j in range(b[i], b[i + 1]))
                return "{" + ", ".join(pairs) + "}"

    out: list[object] = [None if a.null[i] else text(i) for i in range(n)]
    return from_objects(out, STRING)
