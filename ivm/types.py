"""Named types of the engine's public API: what users pass in as rows, diffs, schemas and
functions (so no public signature says ``Any``; tests/architecture/test_public_types.py).

>>> import ivm
>>> g = ivm.Dataflow()
>>> schema: SchemaSpec = [("k", "int64"), ("name", "str")]
>>> rows: Rows = [(1, "a"), (2, None)]
>>> e = g.input("e", schema)
>>> e.send(rows, [1, 2])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ivm.schema import Schema

__all__ = [
    "AggSpec",
    "Column",
    "Diffs",
    "GroupFn",
    "Row",
    "RowFn",
    "Rows",
    "SchemaSpec",
    "Value",
]

#: one value of a column (``None`` is NULL in ``str`` and ``any`` columns)
Value = int | float | str | bool | None
#: one row: a value per column, in the schema's order
Row = tuple[Value, ...] | list[Value]
#: a column of values: a Python sequence or a numpy array
Column = Sequence[Value] | npt.NDArray[np.generic]
#: rows as users give them: a sequence of rows, a dict of columns by name, or Arrow data
Rows = Sequence[Row] | Mapping[str, Column] | pa.Table | pa.RecordBatch
#: multiplicity changes: one integer for every row, or one per row
Diffs = int | Sequence[int] | npt.NDArray[np.integer]
#: a schema as users give it: a Schema, ``[(name, dtype), ...]`` or ``{name: dtype}``
SchemaSpec = Schema | Iterable[tuple[str, str]] | dict[str, str]
#: a user function over columns (``map``, ``filter``, ``flat_map``, loop ``entry``); the engine
#: checks what it returns
RowFn = Callable[..., object]
#: one aggregate of ``reduce``: ``("count",)`` or ``(fn, column)`` (a name or a position)
AggSpec = tuple[str] | tuple[str, str | int | None]
#: ``reduce_group``'s function: ``fn(key, rows, counts) -> [(value_row, count), ...]``
GroupFn = Callable[
    [tuple[Value, ...], list[tuple[Value, ...]], list[int]],
    Iterable[tuple[tuple[Value, ...], int]],
]
