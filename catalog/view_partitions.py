"""Partitioned view tables: ``PARTITIONED BY (cols)`` on ``CREATE MATERIALIZED VIEW``.

A view table created with partition columns is a standard partitioned Delta table: the
columns are listed in its metadata (``partitionColumns``), every data file and change-data
file holds the rows of one partition, lives under ``col=value/`` directories (Hive style, as
delta-rs and delta-spark lay them out) and does **not** store the partition columns; its
``add`` / ``cdc`` action carries them as ``partitionValues`` (Delta protocol, "Partition
Value Serialization"). So delta-spark, delta-rs and any Delta reader see the partitions and
prune by them.

The view-table writer (catalog.view_table) goes through this module for every file it writes
or reads back:

* :func:`write_files` splits rows by partition and writes one file per partition (and per
  ``max_rows`` rows); an unpartitioned table gets plain files, as before.  Change-data files
  are split by partition too, but stay directly in ``_change_data/`` (their partition is in
  the ``cdc`` action only, which the protocol allows): deltalake 1.6's ``load_cdf`` does not
  decode the escaped path of a ``_change_data/col=a%20b/`` file and fails on its own
  tables' feeds (measured with a value holding a space or a ``/``);
* :func:`read_file` reads a data file's rows (all row groups, or some) and restores the
  partition columns from the action's ``partitionValues``, so a refresh that retracts rows
  (copy-on-write, deletion vectors) and compaction see whole rows.

A refresh's change ``Δ`` is applied exactly as for an unpartitioned table: inserted copies
are appended as new files (one per touched partition), retracted copies are found in the
files that can hold them and removed there. Partitioning changes where rows are stored, never
which rows are stored, so the table's rows and its change data feed are the view's rows and
``Δ``, as before.

Partition columns must be columns of the view of a type with an exact text form
(integers, strings, dates, booleans), and at least one column must stay a data column
(:func:`check_partition_columns`, :class:`PartitionColumnError`).

>>> [(v, t.num_rows) for v, t in split(pa.table({"r": ["n", "s", "n"], "x": [1, 2, 3]}), ["r"])]
[({'r': 'n'}, 2), ({'r': 's'}, 1)]
>>> partition_dir({"r": "a b", "d": None})
'r=a%20b/d=__HIVE_DEFAULT_PARTITION__'
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as _pc
import pyarrow.parquet as pq

from catalog import delta_commit, storage
from catalog.delta_commit import FileEntry
from catalog.dtypes import conform
from catalog.errors import CatalogError

pc: Any = _pc  # pyarrow's stubs lack most compute functions

#: a file's partition: column -> the value's Delta text form (``None``: NULL)
PartitionValues = dict[str, str | None]
NULL_DIR = "__HIVE_DEFAULT_PARTITION__"

__all__ = [
    "NULL_DIR",
    "LayoutColumnError",
    "PartitionColumnError",
    "PartitionValues",
    "check_layout_columns",
    "check_partition_columns",
    "file_bounds",
    "file_path",
    "partition_columns",
    "partition_dir",
    "read_file",
    "split",
    "write_files",
]


class LayoutColumnError(CatalogError, ValueError):
    """A layout clause (``clause``) names something a view table cannot be laid out by."""

    clause: ClassVar[str]

    def __init__(self, view: str, detail: str) -> None:
        self.view = view
        super().__init__(f"{self.clause} of materialized view {view}: {detail}")


class PartitionColumnError(LayoutColumnError):
    """``PARTITIONED BY`` names something a view table cannot be partitioned by."""

    clause = "PARTITIONED BY"


#: a test of a column type
TypeTest = Callable[[pa.DataType], bool]
#: the column types both layouts (partitions, clustering) accept: integers, strings, dates
LAYOUT_TYPES: tuple[TypeTest, ...] = (
    pa.types.is_integer,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_date32,
)
#: the column types a view table can be partitioned by
PARTITIONABLE = (*LAYOUT_TYPES, pa.types.is_boolean)


def check_layout_columns(
    schema: pa.Schema,
    columns: Sequence[str],
    *,
    view: str,
    error: type[LayoutColumnError],
    allowed: Sequence[TypeTest],
    instead: str,
) -> None:
    """Refuse layout columns (partition or clustering) the view lacks, repeats, or whose
    type none of ``allowed`` accepts (raising ``error``; ``instead`` says what to use)."""
    seen: set[str] = set()
    for c in columns:
        if c not in schema.names:
            raise error(
                view, f"{c!r} is not a column of the view (its columns: {', '.join(schema.names)})"
            )
        if c in seen:
            raise error(view, f"{c!r} is named twice")
        seen.add(c)
        t = schema.field(c).type
        if not any(accepts(t) for accepts in allowed):
            raise error(view, f"column {c!r} has type {t}; {instead}")


def check_partition_columns(schema: pa.Schema, columns: Sequence[str], *, view: str) -> None:
    """Refuse partition columns the view lacks, repeats, cannot partition by, or all columns."""
    check_layout_columns(
        schema,
        columns,
        view=view,
        error=PartitionColumnError,
        allowed=PARTITIONABLE,
        instead="partition by an integer, string, date or boolean column",
    )
    if len(set(columns)) == len(schema.names):
        raise PartitionColumnError(
            view, "every column would be a partition column; leave one or more out"
        )


def partition_columns(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The partition columns of the Delta table at ``path`` (empty: unpartitioned)."""
    from catalog import delta

    return tuple(delta.open_table(path).metadata().partition_columns)


def _text(v: object) -> str | None:
    """A partition value's Delta text form."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


def split(rows: pa.Table, columns: Sequence[str]) -> list[tuple[PartitionValues, pa.Table]]:
    """``rows`` per partition (first-appearance order, row order kept), without ``columns``."""
    if not columns:
        return [({}, rows)]
    if rows.num_rows == 0:
        return []
    keys = list(zip(*(rows.column(c).to_pylist() for c in columns), strict=True))
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    data = rows.drop_columns(list(columns))
    return [
        (
            {c: _text(v) for c, v in zip(columns, k, strict=True)},
            data.take(pa.array(np.asarray(idx, np.int64))),
        )
        for k, idx in groups.items()
    ]


def partition_dir(values: Mapping[str, str | None]) -> str:
    """The Hive-style directory of a partition (each value percent-encoded, as delta-rs does)."""
    return "/".join(
        f"{quote(c, safe='')}={NULL_DIR if v is None else quote(v, safe='')}"
        for c, v in values.items()
    )


def _write(table: str, data: pa.Table, values: PartitionValues, *, cdc: bool) -> dict[str, Any]:
    return delta_commit.write_data_file(
        table,
        data,
        cdc=cdc,
        directory="" if cdc else partition_dir(values),
        partition_values=values,
    )


def write_files(
    table: str,
    rows: pa.Table,
    columns: Sequence[str],
    *,
    cdc: bool = False,
    max_rows: int | None = None,
) -> list[dict[str, Any]]:
    """Write ``rows`` as data files (or change-data files) of ``table``; their actions.

    Partitioned (``columns``): one file per partition (and per ``max_rows`` rows), the
    partition columns in ``partitionValues`` only.  Unpartitioned: plain files
    (catalog.delta_commit).  A change-data file of an unpartitioned table is written even
    when ``rows`` is empty (the commit's feed is then empty, as before).
    """
    if not columns:
        if cdc:
            return [delta_commit.write_data_file(table, rows, cdc=True)]
        step = max_rows or max(rows.num_rows, 1)
        return [
            delta_commit.write_data_file(table, rows.slice(start, step))
            for start in range(0, rows.num_rows, step)
        ]
    out = []
    for values, part in split(rows, columns):
        step = max_rows or part.num_rows
        for start in range(0, part.num_rows, step):
            out.append(_write(table, part.slice(start, step), values, cdc=cdc))
    return out


def file_path(table: str, f: FileEntry) -> str:
    """The location of a data file (its action's path is a URI relative to the table)."""
    return delta_commit.file_location(table, f.action)


def _with_partition_values(data: pa.Table, f: FileEntry, schema: pa.Schema) -> pa.Table:
    values = f.action.get("partitionValues") or {}
    for c, v in values.items():
        if c not in schema.names or c in data.column_names:
            continue
        t = schema.field(c).type
        col = pa.nulls(data.num_rows, t) if v is None else pa.array([v] * data.num_rows)
        data = data.append_column(c, col if v is None else pc.cast(col, t))
    return data


def read_file(
    table: str, f: FileEntry, schema: pa.Schema, *, row_groups: Sequence[int] | None = None
) -> pa.Table:
    """The rows of data file ``f`` in ``schema`` (partition columns from its action).

    ``row_groups``: only those row groups (positions in the file stay as Parquet counts them).
    """
    fs, full = storage.backend(table).arrow(file_path(table, f))
    stored = [c for c in schema.names if c not in (f.action.get("partitionValues") or {})]
    if row_groups is None:
        data = pq.read_table(full, columns=stored, filesystem=fs)
    else:
        data = pq.ParquetFile(full, filesystem=fs).read_row_groups(list(row_groups), columns=stored)
    return conform(_with_partition_values(data, f, schema), schema, name=table)


def file_bounds(
    f: FileEntry, schema: pa.Schema
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A data file's ``(min, max, null count)`` per column: its statistics, and for each
    partition column its one value (so a search for rows skips other partitions' files)."""
    st = f.stats
    lo = dict(st.get("minValues", {}))
    hi = dict(st.get("maxValues", {}))
    nulls = dict(st.get("nullCount", {}))
    for c, v in (f.action.get("partitionValues") or {}).items():
        if c not in schema.names:
            continue
        if v is None:
            lo[c] = hi[c] = None
            nulls[c] = 1
        else:
            lo[c] = hi[c] = pc.cast(pa.array([v]), schema.field(c).type)[0].as_py()
            nulls[c] = 0
    return lo, hi, nulls
