"""How base tables' changes enter a group's dataflow, and what a Datalog ``.input`` accepts.

A :class:`Feed` sends one table's changes (Arrow, with a ``diff`` column) into one engine
input; a Datalog ``.input`` reads a table through its own feed, in the declared dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ivm
from catalog.changes import DIFF
from catalog.dtypes import ColumnMapping, column_mappings, storage_schema, to_engine_columns
from catalog.store import TableEntry


@dataclass
class Feed:
    """A base table's changes entering the dataflow through one engine input.

    ``datalog`` feeds carry a Datalog ``.input`` relation's declared dtypes (positional);
    rows with a NULL are no facts and are left out.
    """

    table: TableEntry
    input: ivm.InputCollection
    datalog: tuple[str, ...] | None = None
    _mapped: tuple[pa.Schema, tuple[ColumnMapping, ...]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def _mappings(self) -> tuple[ColumnMapping, ...]:
        """The table's column mappings, worked out once per schema (not on every send)."""
        schema = self.table.schema
        if self._mapped is None or self._mapped[0] is not schema:
            self._mapped = (schema, column_mappings(schema))
        return self._mapped[1]

    def send(self, changes: pa.Table) -> int:
        if changes.num_rows == 0:
            return 0
        diffs = changes.column(DIFF).to_numpy()
        if self.datalog is None:
            cols = to_engine_columns(changes, self._mappings())
            self.input.send(cols, diffs)
            return changes.num_rows
        names = self.table.schema.names
        mask = np.ones(changes.num_rows, dtype=bool)
        for n in names:
            col = changes.column(n)
            if col.null_count:
                nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
                mask = np.logical_and(mask, np.logical_not(nulls))
        kept = changes.filter(pa.array(mask)) if not mask.all() else changes
        out: dict[str, np.ndarray] = {}
        for n, dtype, target in zip(names, self.datalog, self.input.schema.names, strict=True):
            col = kept.column(n)
            if dtype == "str":
                out[target] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
            else:
                arrow = pa.int64() if dtype == "int64" else pa.float64()
                out[target] = np.asarray(pc.cast(col, arrow).to_numpy())
        self.input.send(out, diffs[mask])
        return kept.num_rows


def datalog_dtypes_ok(arrow_type: pa.DataType, dtype: str) -> bool:
    """Whether a table column of ``arrow_type`` can feed a Datalog column of ``dtype``."""
    if dtype == "int64":
        return bool(pa.types.is_integer(arrow_type))
    if dtype == "float64":
        return bool(pa.types.is_floating(arrow_type))
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def check_datalog_input(
    rel: str, schema: pa.Schema, decl: Sequence[tuple[str, str]], pos: Any
) -> None:
    """Raise ``DatalogTypeError`` unless table ``schema`` can feed ``.input rel`` (``decl``)."""
    from datalog.errors import DatalogTypeError

    line, column = getattr(pos, "line", None), getattr(pos, "column", None)
    if len(schema) != len(decl):
        raise DatalogTypeError(
            f".input {rel}: the table {rel!r} has {len(schema)} columns "
            f"({', '.join(schema.names)}), the .decl has {len(decl)}",
            line=line,
            column=column,
            construct=rel,
        )
    for f, (col, dtype) in zip(schema, decl, strict=True):
        if not datalog_dtypes_ok(storage_schema(pa.schema([f])).field(0).type, dtype):
            kind = {"int64": "number", "float64": "float", "str": "symbol"}[dtype]
            raise DatalogTypeError(
                f".input {rel}: column {f.name!r} of the table is {f.type}, but the .decl "
                f"declares {col}: {kind}",
                line=line,
                column=column,
                construct=rel,
            )


__all__ = ["Feed", "check_datalog_input", "datalog_dtypes_ok"]
