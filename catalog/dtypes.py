"""Mapping between Delta/Arrow column types and the engine's dtypes.

The engine knows five dtypes (docs/engine-api.md): ``int64``, ``float64``, ``bool`` (numpy
arrays without NULLs) and ``str``, ``any`` (numpy object arrays, ``None`` is NULL).  A column
keeps its Arrow type in a :class:`ColumnMapping`, so values travel into the engine in the
engine's form and are written back to Delta with exactly the table's type.

=====================================  ===========  ======================================
Arrow / Delta type                     non-null     nullable (SQL default)
=====================================  ===========  ======================================
int8, int16, int32, int64, uint8-32    ``int64``    ``any`` (Python int or None)
uint64                                 ``any``      ``any``
float16, float32, float64              ``float64``  ``any`` (Python float or None)
bool                                   ``bool``     ``any`` (Python bool or None)
string, large_string, string_view      ``str``      ``str``
decimal128/256                         ``any``      ``any`` (decimal.Decimal)
date32/64                              ``any``      ``any`` (datetime.date)
timestamp (with or without zone)       ``any``      ``any`` (datetime.datetime)
time32/64, duration                    ``any``      ``any`` (datetime.time / timedelta)
binary, large_binary, fixed binary     ``any``      ``any`` (bytes)
list, large_list, fixed_size_list      ``any``      ``any`` (tuple: hashable)
map                                    ``any``      ``any`` (tuple of (key, value) tuples)
struct                                 ``any``      ``any`` (tuple of the field values)
dictionary<value>                      as value     as value
union                                  refused: :class:`UnsupportedTypeError`
=====================================  ===========  ======================================

Nullability comes from the Delta schema (``CREATE TABLE t (a BIGINT NOT NULL)``); SQL columns
are nullable unless declared otherwise, so most columns arrive as ``any``.

>>> import pyarrow as pa
>>> [m.dtype for m in column_mappings(pa.schema([pa.field("a", pa.int32(), False),
...                                               pa.field("b", pa.int32())]))]
['int64', 'any']
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.errors import SchemaChangeError, UnsupportedTypeError, ValueOutOfRangeError

ENGINE_DTYPES = ("int64", "float64", "bool", "str", "any")


@dataclass(frozen=True)
class ColumnMapping:
    """One column: its name, Arrow type and nullability in Delta, and its engine dtype."""

    name: str
    arrow_type: pa.DataType
    nullable: bool
    dtype: str

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.arrow_type, self.nullable)


def normalize_arrow_type(t: pa.DataType) -> pa.DataType:
    """The canonical Arrow type for storage: views and large variants become plain ones."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return normalize_arrow_type(t.value_type)
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(normalize_arrow_type(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(
            pa.field(t.value_field.name, normalize_arrow_type(t.value_type), t.value_field.nullable)
        )
    if pa.types.is_map(t):
        return pa.map_(normalize_arrow_type(t.key_type), normalize_arrow_type(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, normalize_arrow_type(f.type), f.nullable) for f in t])
    return t


def engine_dtype(name: str, arrow_type: pa.DataType, nullable: bool) -> str:
    """The engine dtype that carries a column of this Arrow type (see the module table)."""
    t = normalize_arrow_type(arrow_type)
    if pa.types.is_integer(t):
        if pa.types.is_uint64(t):
            return "any"
        return "any" if nullable else "int64"
    if pa.types.is_floating(t):
        return "any" if nullable else "float64"
    if pa.types.is_boolean(t):
        return "any" if nullable else "bool"
    if pa.types.is_string(t):
        return "str"
    if (
        pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
        or pa.types.is_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_null(t)
    ):
        return "any"
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        engine_dtype(name, t.value_type, True)  # refuses unsupported element types
        return "any"
    if pa.types.is_map(t):
        engine_dtype(name, t.key_type, True)
        engine_dtype(name, t.item_type, True)
        return "any"
    if pa.types.is_struct(t):
        for f in t:
            engine_dtype(name, f.type, True)
        return "any"
    raise UnsupportedTypeError(name, str(arrow_type))


def column_mappings(schema: pa.Schema) -> tuple[ColumnMapping, ...]:
    """One :class:`ColumnMapping` per column of an Arrow schema."""
    return tuple(
        ColumnMapping(
            f.name,
            normalize_arrow_type(f.type),
            f.nullable,
            engine_dtype(f.name, f.type, f.nullable),
        )
        for f in schema
    )


def engine_schema(schema: pa.Schema) -> list[tuple[str, str]]:
    """``[(name, dtype), ...]`` as ``ivm.Dataflow.input`` expects."""
    return [(m.name, m.dtype) for m in column_mappings(schema)]


def storage_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every type normalized (see :func:`normalize_arrow_type`)."""
    return pa.schema([pa.field(f.name, normalize_arrow_type(f.type), f.nullable) for f in schema])


# -- values ------------------------------------------------------------------------------


def engine_value(v: Any) -> Any:
    """A value of Arrow's ``to_pylist`` as the engine holds it: lists and maps (lists of
    ``(key, value)`` tuples) become tuples, structs (dicts) the tuple of their field values."""
    if isinstance(v, list | tuple):
        return tuple(engine_value(x) for x in v)
    if isinstance(v, dict):
        return tuple(engine_value(x) for x in v.values())
    return v


def _arrow_value(v: Any, t: pa.DataType) -> Any:
    """An engine value as ``pa.array`` reads it for type ``t`` (tuples back to lists, pairs
    and dicts)."""
    if v is None:
        return None
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return [_arrow_value(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        return [(_arrow_value(k, t.key_type), _arrow_value(x, t.item_type)) for k, x in v]
    if pa.types.is_struct(t):
        return {f.name: _arrow_value(x, f.type) for f, x in zip(t, v, strict=True)}
    return v


def _nested(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_map(t)
        or pa.types.is_struct(t)
    )


def to_engine_columns(table: pa.Table, mappings: Sequence[ColumnMapping]) -> dict[str, np.ndarray]:
    """Columns of ``table`` as the numpy arrays the engine expects, in mapping order."""
    out: dict[str, np.ndarray] = {}
    for m in mappings:
        col = table.column(m.name)
        if m.dtype in ("int64", "float64", "bool"):
            if col.null_count:
                raise SchemaChangeError(m.name, "NULL in a column declared NOT NULL")
            np_type = {"int64": np.int64, "float64": np.float64, "bool": np.bool_}[m.dtype]
            out[m.name] = np.asarray(col.to_numpy(), dtype=np_type)
        else:
            out[m.name] = _object_column(col, m.arrow_type)
    return out


def _object_column(col: pa.ChunkedArray | pa.Array, arrow_type: pa.DataType) -> np.ndarray:
    """A column as a numpy object array of Python values (``None`` for NULL).

    Integers, floats, booleans and strings take a vectorized path (numpy's ``astype(object)``
    yields Python ``int``/``float``/``bool``; Arrow hands strings over as Python ``str``),
    about 50x faster than ``to_pylist`` on a million rows; other types go through Python.
    """
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        if col.null_count:
            filled = pc.fill_null(col, False if pa.types.is_boolean(t) else 0)
            arr = np.asarray(filled.to_numpy()).astype(object)
            arr[np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)] = None
            return arr
        return np.asarray(col.to_numpy()).astype(object)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        parts = [_string_chunk(c) for c in chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=object)
    values = col.to_pylist()
    if _nested(arrow_type):
        values = [engine_value(v) for v in values]
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


#: a string chunk with at most one distinct value per this many rows shares its strings
SHARED_STRINGS_RATIO = 4


def _string_chunk(chunk: pa.Array) -> np.ndarray:
    """A string chunk as Python ``str`` objects; a column of few distinct values (a tag, a
    status) holds one object per distinct value instead of one per row (2M rows of 50 tags:
    16 MB of pointers instead of ~130 MB of strings)."""
    if len(chunk) >= 1024:
        enc = pc.dictionary_encode(chunk)
        if len(enc.dictionary) * SHARED_STRINGS_RATIO <= len(chunk):
            values = np.empty(len(enc.dictionary) + 1, dtype=object)
            values[:-1] = enc.dictionary.to_numpy(zero_copy_only=False)
            idx = pc.fill_null(enc.indices, len(enc.dictionary)).to_numpy()
            return values[idx]
    return np.asarray(chunk.to_numpy(zero_copy_only=False), dtype=object)


def from_engine_columns(
    columns: Mapping[str, Any], schema: pa.Schema, *, name: str | None = None
) -> pa.Table:
    """Build an Arrow table of ``schema`` from engine columns (numpy arrays or sequences).

    A value the column's type cannot hold (an integer past 64 bits, a decimal with more
    digits than its precision: a SUM that overflowed) raises :class:`ValueOutOfRangeError`
    naming ``name`` (the view) and the column, as Spark's ANSI mode fails the query.

    >>> from_engine_columns({"s": [2**63]}, pa.schema([("s", pa.int64())]), name="v")
    Traceback (most recent call last):
    catalog.errors.ValueOutOfRangeError: [ARITHMETIC_OVERFLOW] view 'v', column 's': 9223372036854775808 does not fit int64...
    """
    arrays = []
    for f in schema:
        values = columns[f.name]
        try:
            if isinstance(values, np.ndarray) and values.dtype != object:
                arr = pa.array(values)  # a cast to the type it has costs ~6 us a column
                arrays.append(arr if arr.type == f.type else arr.cast(f.type))
            elif isinstance(values, np.ndarray) and not _nested(f.type):
                # an object array is read by Arrow directly (None is NULL), without a
                # list of it first (2,400 strings: ~83 us CPU instead of ~95)
                arrays.append(pa.array(values, type=f.type))
            else:
                seq = list(values)
                if _nested(f.type):
                    seq = [_arrow_value(v, f.type) for v in seq]
                arrays.append(pa.array(seq, type=f.type))
        except (OverflowError, pa.ArrowInvalid) as exc:
            raise ValueOutOfRangeError(
                name, f.name, str(f.type), _first_misfit(values, f.type), str(exc)
            ) from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _first_misfit(values: Any, arrow_type: pa.DataType) -> Any:
    """The first value of ``values`` that ``arrow_type`` cannot hold (for the message)."""
    for v in values:
        try:
            pa.array([v], type=arrow_type)
        except (OverflowError, pa.ArrowException, TypeError):
            return v
    return None


def conform(
    table: pa.Table, schema: pa.Schema, *, name: str, extra: Sequence[str] = ()
) -> pa.Table:
    """Select ``schema``'s columns from ``table`` by name and cast them to its types.

    ``extra`` names further columns to keep after them unchanged (e.g. ``"__diff__"``).
    Raises :class:`SchemaChangeError` naming the table when a column is missing or cannot be
    cast safely.
    """
    arrays: list[pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    present = set(table.column_names)
    for f in schema:
        if f.name not in present:
            raise SchemaChangeError(name, f"missing column {f.name!r}")
        col = table.column(f.name)
        if not col.type.equals(f.type):
            try:
                col = pc.cast(col, f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaChangeError(
                    name, f"column {f.name!r}: cannot cast {col.type} to {f.type}: {exc}"
                ) from None
        arrays.append(col)
        fields.append(f)
    for e in extra:
        if e not in present:
            raise SchemaChangeError(name, f"missing column {e!r}")
        arrays.append(table.column(e))
        fields.append(table.schema.field(e))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def check_compatible(expected: pa.Schema, actual: pa.Schema, *, name: str) -> None:
    """Raise :class:`SchemaChangeError` unless ``actual`` still carries ``expected``.

    Compatible means: every expected column is present with the same (normalized) Arrow type
    and the same engine dtype.  Added columns are fine (readers project them away); dropped,
    retyped, or newly nullable NOT NULL columns are not.
    """
    have = {f.name: f for f in actual}
    for f in expected:
        g = have.get(f.name)
        if g is None:
            raise SchemaChangeError(name, f"column {f.name!r} was dropped")
        ft, gt = normalize_arrow_type(f.type), normalize_arrow_type(g.type)
        if not ft.equals(gt):
            raise SchemaChangeError(name, f"column {f.name!r} changed type from {ft} to {gt}")
        if engine_dtype(f.name, ft, f.nullable) != engine_dtype(g.name, gt, g.nullable):
            raise SchemaChangeError(name, f"column {f.name!r} became nullable")


# -- serialization (catalog store) --------------------------------------------------------


def schema_to_text(schema: pa.Schema) -> str:
    """Lossless text form of an Arrow schema (base64 of its IPC encoding)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def describe_schema(schema: pa.Schema) -> list[list[Any]]:
    """Human-readable ``[[name, type, nullable], ...]`` (informational only)."""
    return [[f.name, str(f.type), f.nullable] for f in schema]
