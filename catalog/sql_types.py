"""Spark SQL types <-> the Arrow types of Delta tables (a type bridge; no Spark runs here).

Three uses:

* ``CREATE TABLE t (a BIGINT NOT NULL, s STRING)``: each SQL type becomes the Arrow field of
  the new Delta table (:func:`sql_to_arrow`);
* a view's columns (the front end's :class:`~sql_frontend.types.SqlType`) become its view
  table's Arrow fields, all nullable (:func:`view_schema`);
* the front end learns the columns of the tables and views a view reads
  (:func:`frontend_columns`): a column the engine carries as ``int64`` / ``float64`` /
  ``bool`` (declared NOT NULL) is given as that engine dtype (the front end reads it as a
  non-null BIGINT / DOUBLE / BOOLEAN); every other column by its SQL type name.

>>> import pyarrow as pa
>>> sql_to_arrow("decimal(10, 2)")
Decimal128Type(decimal128(10, 2))
>>> frontend_columns(pa.schema([pa.field("a", pa.int32(), False), ("b", pa.int32())]))
[('a', 'int64'), ('b', 'INT')]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from catalog.dtypes import engine_dtype, normalize_arrow_type
from catalog.errors import UnsupportedTypeError

_SIMPLE: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "DATE": pa.date32(),
    # Spark's TIMESTAMP values reach the engine as naive datetimes (UTC session time zone);
    # they are stored as Delta timestamp_ntz so that they read back the same way.
    "TIMESTAMP": pa.timestamp("us"),
    # A column that is NULL in every row (``SELECT NULL AS x``): Delta has no null type.
    "NULL": pa.string(),
}


def sql_to_arrow(sql_type: Any) -> pa.DataType:
    """The Arrow type of a Spark SQL type (a name, ``"decimal(p,s)"`` or a SqlType)."""
    from sql_frontend.sql_types import SqlType, parse_type

    t = sql_type if isinstance(sql_type, SqlType) else parse_type(str(sql_type))
    if t.name == "DECIMAL":
        assert t.precision is not None and t.scale is not None
        if not (1 <= t.precision <= 38 and 0 <= t.scale <= t.precision):
            from sql_frontend.errors import SqlAnalysisError

            raise SqlAnalysisError(
                f"[INVALID_PARAMETER_VALUE] {t}: the precision must be 1..38 and the scale "
                "0..precision",
                construct=str(t),
            )
        return pa.decimal128(t.precision, t.scale)
    if t.name in _SIMPLE:
        return _SIMPLE[t.name]
    if t.name == "ARRAY":
        return pa.list_(sql_to_arrow(t.element))
    if t.name == "MAP":
        return pa.map_(sql_to_arrow(t.key), sql_to_arrow(t.value))
    if t.name == "STRUCT":
        return pa.struct([(n, sql_to_arrow(c)) for n, c in zip(t.fields, t.children, strict=True)])
    raise UnsupportedTypeError("?", str(t))  # pragma: no cover - SqlType validates names


#: Arrow type tests in order, each with the Spark SQL type of the Arrow types it accepts
_FROM_ARROW: tuple[tuple[Callable[[pa.DataType], bool], str], ...] = (
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_int8, "TINYINT"),
    (lambda t: pa.types.is_int16(t) or pa.types.is_uint8(t), "SMALLINT"),
    (lambda t: pa.types.is_int32(t) or pa.types.is_uint16(t), "INT"),
    (lambda t: pa.types.is_int64(t) or pa.types.is_uint32(t), "BIGINT"),
    (pa.types.is_uint64, "DECIMAL(20,0)"),
    (lambda t: pa.types.is_float16(t) or pa.types.is_float32(t), "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_string, "STRING"),
    (lambda t: pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t), "BINARY"),
    (pa.types.is_date, "DATE"),
    (pa.types.is_timestamp, "TIMESTAMP"),
)


def arrow_to_sql(arrow_type: pa.DataType, column: str = "?") -> str:
    """The Spark SQL type name of an Arrow type."""
    t = normalize_arrow_type(arrow_type)
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return f"ARRAY<{arrow_to_sql(t.value_type, column)}>"
    if pa.types.is_map(t):
        return f"MAP<{arrow_to_sql(t.key_type, column)}, {arrow_to_sql(t.item_type, column)}>"
    if pa.types.is_struct(t):
        from sql_frontend.sql_types import parse_type

        inner = ", ".join(
            f"`{f.name.replace('`', '``')}`: {arrow_to_sql(f.type, column)}" for f in t
        )
        return str(parse_type(f"STRUCT<{inner}>"))
    for accepts, name in _FROM_ARROW:
        if accepts(t):
            return name
    raise UnsupportedTypeError(column, f"{arrow_type} (no Spark SQL type the views support)")


def frontend_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """``[(column, type)]`` of a table or view for ``sql_frontend.compile_view``'s catalog."""
    out: list[tuple[str, str]] = []
    for f in schema:
        dtype = engine_dtype(f.name, f.type, f.nullable)
        out.append(
            (
                f.name,
                dtype if dtype in ("int64", "float64", "bool") else arrow_to_sql(f.type, f.name),
            )
        )
    return out


def view_schema(columns: Sequence[tuple[str, Any]]) -> pa.Schema:
    """The Arrow row schema of a SQL view (every column nullable, as in Spark)."""
    return pa.schema([pa.field(name, sql_to_arrow(t), True) for name, t in columns])


def columns_schema(text: str) -> pa.Schema:
    """The Arrow schema of a Spark SQL column list ``"name TYPE, ..."`` (as in ``CREATE
    TABLE t (...)``), every column nullable: how fixed result tables declare their columns.

    >>> columns_schema("version BIGINT, price DECIMAL(10,2)").types
    [DataType(int64), Decimal128Type(decimal128(10, 2))]
    """
    columns = []
    for item in re.split(r",(?![^()]*\))", text):
        name, sql_type = item.split(None, 1)
        columns.append((name, sql_type))
    return view_schema(columns)
