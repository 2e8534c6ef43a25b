"""The column representation used while evaluating: values plus a NULL mask.

A :class:`Vec` of an integral, floating or boolean type holds a typed numpy array (int64,
float64, bool; the value under a NULL is arbitrary); every other type holds an object array of
Python values (``int``/``Decimal``/``str``/``date``/``datetime``; ``None`` under a NULL).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sql_frontend.sql_types import SqlType

_TYPED = {
    "TINYINT": np.int64,
    "SMALLINT": np.int64,
    "INT": np.int64,
    "BIGINT": np.int64,
    "FLOAT": np.float64,
    "DOUBLE": np.float64,
    "BOOLEAN": np.bool_,
}


def numpy_kind(t: SqlType) -> type | None:
    """The numpy dtype of a typed Vec of ``t``, or None for object storage."""
    return _TYPED.get(t.name)


@dataclass
class Vec:
    data: np.ndarray
    null: np.ndarray  # bool
    type: SqlType

    def __len__(self) -> int:
        return len(self.null)

    @property
    def any_null(self) -> bool:
        return bool(self.null.any())


def null_mask(col: np.ndarray) -> np.ndarray:
    if col.dtype != object:
        if col.dtype.kind == "f":
            return np.zeros(len(col), dtype=bool)
        return np.zeros(len(col), dtype=bool)
    return np.fromiter((v is None for v in col), dtype=bool, count=len(col))


def from_column(col: np.ndarray, t: SqlType) -> Vec:
    """A Vec of SQL type ``t`` from an engine column (typed array or object array)."""
    col = np.asarray(col)
    kind = numpy_kind(t)
    null = null_mask(col)
    if kind is None:
        data = col if col.dtype == object else col.astype(object)
        return Vec(data, null, t)
    if col.dtype == object:
        filled = col.copy()
        if null.any():
            filled[null] = 0 if kind is not np.bool_ else False
        return Vec(filled.astype(kind), null, t)
    return Vec(col.astype(kind, copy=False), null, t)


def to_column(v: Vec) -> np.ndarray:
    """An engine ``any``/``str`` column (object array, None for NULL, Python values)."""
    if v.data.dtype == object:
        out = v.data.copy()
    else:
        out = np.empty(len(v), dtype=object)
        out[:] = v.data.tolist()
    if v.null.any():
        out[v.null] = None
    return out


def constant(value: object, t: SqlType, n: int) -> Vec:
    kind = numpy_kind(t)
    null = np.full(n, value is None, dtype=bool)
    if kind is None:
        data = np.empty(n, dtype=object)
        data.fill(value)  # a tuple (an array, map or struct) stays one value per row
        return Vec(data, null, t)
    fill = 0 if value is None else value
    return Vec(np.full(n, fill, dtype=kind), null, t)


def objects(v: Vec) -> np.ndarray:
    """The values of ``v`` as an object array (None under NULLs)."""
    return to_column(v)


def from_objects(values: list[object] | np.ndarray, t: SqlType) -> Vec:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return from_column(arr, t)


def value_order(v: object) -> tuple:
    """Spark's ordering of values of one type as a sort key: NULL first, NaN above every other
    double, arrays and structs element by element (a prefix first)."""
    if v is None:
        return (0,)
    if isinstance(v, tuple):
        return (1, tuple(value_order(x) for x in v))
    if isinstance(v, float) and v != v:
        return (2,)
    return (1, v)
