"""Reading Delta tables that use table features delta-rs' Arrow reader gets wrong.

delta-spark writes tables that deltalake 1.6's ``DeltaTable.to_pyarrow_table`` cannot read
correctly (measured with delta-spark 4.4.0 and deltalake 1.6.6, tests/delta_spark):

* **deletion vectors** (``delta.enableDeletionVectors``, on by default in Databricks and used
  by DELETE / UPDATE / MERGE): ``to_pyarrow_table`` refuses the table
  (``DeltaProtocolError``: reader feature ``deletionVectors`` not supported).
* **column mapping** (``delta.columnMapping.mode`` = ``name`` or ``id``): the Parquet files
  name columns by their physical names, and ``to_pyarrow_table`` returns every value as NULL,
  silently.  ``load_cdf`` refuses such tables ("Column mapping is not supported for ... CHANGE
  DATA FEED scans").

deltalake's DataFusion scan (:class:`deltalake.QueryBuilder`) applies both, at any version, so
:func:`read_rows` uses it for tables with either feature; the change feed of a
column-mapping table falls back to a snapshot difference (catalog.changes).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

COLUMN_MAPPING = "delta.columnMapping.mode"
DELETION_VECTORS = "deletionVectors"


def column_mapping(dt: DeltaTable) -> bool:
    """Whether the table maps logical to physical column names."""
    mode = dt.metadata().configuration.get(COLUMN_MAPPING, "none")
    return str(mode).lower() not in ("none", "")


def needs_scan(dt: DeltaTable) -> bool:
    """Whether the table's rows must be read with the DataFusion scan, not the Arrow reader."""
    features = dt.protocol().reader_features or []
    return DELETION_VECTORS in features or column_mapping(dt)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_rows(dt: DeltaTable, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of ``dt`` (at its loaded version) through the DataFusion scan."""
    if columns is not None and not columns:  # only the row count
        counted = QueryBuilder().register("t", dt).execute("SELECT count(*) FROM t").read_all()
        n = pa.table(counted).column(0)[0].as_py()
        return pa.table([pa.nulls(n)], names=["_"]).drop_columns(["_"])
    select = "*" if columns is None else ", ".join(_ident(c) for c in columns)
    return pa.table(QueryBuilder().register("t", dt).execute(f"SELECT {select} FROM t").read_all())


def cdf_unsupported(message: str) -> bool:
    """Whether a ``load_cdf`` error means delta-rs cannot read this table's change feed."""
    return "Column mapping is not supported" in message
