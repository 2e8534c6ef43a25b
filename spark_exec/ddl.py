"""What the describing statements show: ``DESCRIBE [EXTENDED] MATERIALIZED VIEW``,
``SHOW CREATE TABLE`` and ``DESCRIBE HISTORY`` of catalog tables and views (no Spark).

The shapes follow Spark's: ``DESCRIBE`` gives ``col_name, data_type, comment`` rows (then, when
``EXTENDED``, a ``# Detailed Table Information`` block of key/value rows); ``SHOW CREATE
TABLE`` one ``createtab_stmt`` row whose text parses back to the same view; ``DESCRIBE
HISTORY`` one row per Delta commit, newest first.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa

from catalog import delta
from catalog.sql_types import arrow_to_sql, columns_schema
from catalog.store import TableEntry, ViewEntry
from catalog.view_options import ViewOptions

_DESCRIBE = columns_schema("col_name STRING, data_type STRING, comment STRING")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _type(t: pa.DataType) -> str:
    try:
        return arrow_to_sql(t)
    except Exception:  # an Arrow type without a Spark SQL name: show Arrow's
        return str(t)


def describe_view(v: ViewEntry, *, extended: bool, status: dict[str, str]) -> pa.Table:
    """``DESCRIBE [EXTENDED] MATERIALIZED VIEW v``; ``status`` adds freshness rows."""
    comments = dict(v.options.columns)
    rows = [(f.name, _type(f.type), comments.get(f.name)) for f in v.schema]
    if extended:
        o = v.options
        detail: list[tuple[str, str | None]] = [
            ("Name", v.name),
            ("Type", "MATERIALIZED_VIEW"),
            ("Language", v.language),
            ("View Text", o.query if o.query is not None else v.definition),
            ("Comment", o.comment),
            ("Location", v.path),
            ("Inputs", ", ".join(str(d) for d in v.dependencies)),
            ("Refresh Group", v.group),
            ("Schedule", o.schedule.sql() if o.schedule else None),
            ("Table Properties", "[" + ", ".join(f"{k}={x}" for k, x in o.properties) + "]"),
            ("Partition Columns", ", ".join(o.partitioned_by) or None),
            ("Clustering Columns", ", ".join(o.clustered_by) or None),
            ("Created", _time(v.created_ms)),
            *status.items(),
        ]
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        rows += [(k, x, "") for k, x in detail if x is not None]
    return pa.Table.from_pylist(
        [dict(zip(_DESCRIBE.names, r, strict=True)) for r in rows], schema=_DESCRIBE
    )


def create_statement(e: TableEntry | ViewEntry) -> str:
    """DDL that recreates ``e`` (a view: the DDL as written, options included)."""
    if isinstance(e, TableEntry):
        cols = ",\n".join(
            f"  {_quote(f.name)} {_type(f.type)}{'' if f.nullable else ' NOT NULL'}"
            for f in e.schema
        )
        where = "" if e.managed else f"\nLOCATION {_string(e.path)}"
        return f"CREATE TABLE {e.name} (\n{cols})\nUSING DELTA{where}"
    o: ViewOptions = e.options
    head = f"CREATE MATERIALIZED VIEW {e.name}"
    if o.columns:
        parts = [
            _quote(n) + (f" COMMENT {_string(c)}" if c is not None else "") for n, c in o.columns
        ]
        head += " (\n  " + ",\n  ".join(parts) + ")"
    clauses = []
    if o.partitioned_by:
        clauses.append(f"PARTITIONED BY ({', '.join(_quote(c) for c in o.partitioned_by)})")
    if o.clustered_by:
        clauses.append(f"CLUSTER BY ({', '.join(_quote(c) for c in o.clustered_by)})")
    if o.comment is not None:
        clauses.append(f"COMMENT {_string(o.comment)}")
    if o.properties:
        props = ", ".join(f"{_string(k)} = {_string(x)}" for k, x in o.properties)
        clauses.append(f"TBLPROPERTIES ({props})")
    if o.schedule is not None:
        clauses.append(o.schedule.sql())
    query = o.query if o.query is not None else e.definition
    return "\n".join([head, *clauses, f"AS {query}"])


_HISTORY = columns_schema(
    "version BIGINT, timestamp STRING, operation STRING, operationMetrics STRING, "
    "userMetadata STRING"
)


def history(e: TableEntry | ViewEntry) -> pa.Table:
    """``DESCRIBE HISTORY``: the Delta commits of ``e``'s table, newest first.

    For a view, ``userMetadata`` holds what each refresh commit records (``ivm.operation``,
    ``ivm.epoch``, ``ivm.inputs``: the input versions the view reflects).
    """
    rows = [
        {
            "version": c.version,
            "timestamp": _time(c.timestamp_ms),
            "operation": c.operation,
            "operationMetrics": json.dumps(dict(c.metrics), sort_keys=True, default=str),
            "userMetadata": json.dumps(dict(c.metadata), sort_keys=True) if c.metadata else None,
        }
        for c in delta.history(e.path)
    ]
    return pa.Table.from_pylist(rows, schema=_HISTORY)


def _time(ms: int) -> str | None:
    if not ms:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds")
