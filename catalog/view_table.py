"""A view's Delta table: one new version per refresh that changes the view.

Encoding (the choice, and why)
------------------------------
A view is a multiset of rows.  Its table stores **updates**: the row's columns plus an int64
``__diff__``; the view holds each distinct row ``sum(__diff__)`` times (never negative).  A
refresh *appends* its consolidated change batch — exactly the rows whose multiplicity changed,
with their signed diffs — as one Delta version.  So:

* work written per refresh is proportional to the change: one new Parquet file holding
  ``|change|`` rows, whatever the view's size (delta-rs cannot write deletion vectors, so any
  delete/merge-based scheme rewrites every file that holds a deleted row: for scattered
  deletes that is most of the table);
* duplicates are exact: a row present 3 times and retracted once gets a ``-1`` row; no row
  identity is needed and no copy is ever lost or doubled;
* a refresh never reads the view table.

Readers consolidate (:func:`read_view`; the Spark glue in :mod:`spark_exec` does the same with
a ``GROUP BY``), so Spark's ``SELECT * FROM v`` shows exactly the multiset.  To keep reads
proportional to the view rather than its history, :func:`compact_view` rewrites the table
consolidated (one ``(row, count)`` per distinct row) in a separate commit tagged
``ivm.operation=compact``; :func:`needs_compaction` asks for it once the retractions appended
since the last compaction reach a quarter of the table (and at least ``min_rows``), which
keeps the amortized write cost per changed row constant.

Commit metadata
---------------
Each refresh commit records, in ``commitInfo``: ``ivm.operation`` (``refresh``|``compact``),
``ivm.view``, ``ivm.epoch``, ``ivm.inputs`` (JSON ``{input name: Delta version}``) and the
compaction counter ``ivm.log_retractions``; and a Delta ``txn`` action
``(app_id="spark-ivm:<view>", version=epoch)`` that makes the commit idempotent
(catalog.refresh).  A compaction copies the epoch and inputs of the state it rewrites.
A refresh with nothing to change commits nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from catalog import delta
from catalog.changes import DIFF, consolidate, read_changes
from catalog.dtypes import conform, storage_schema
from catalog.errors import CatalogError, InvalidIdentifierError

MARKER = "spark-ivm view table: a row occurs sum(__diff__) times"


@dataclass(frozen=True)
class RefreshRecord:
    """What a view-table commit says about the refresh it belongs to."""

    version: int
    operation: str
    epoch: int
    input_versions: Mapping[str, int]
    log_retractions: int


def app_id(view: str) -> str:
    """The Delta ``txn`` application id of a view's refresh commits."""
    return f"spark-ivm:{view}"


def view_table_schema(row_schema: pa.Schema) -> pa.Schema:
    """Row columns plus the non-null int64 ``__diff__`` column."""
    if DIFF in row_schema.names:
        raise InvalidIdentifierError(DIFF, "reserved column name in a view")
    return storage_schema(row_schema).append(pa.field(DIFF, pa.int64(), False))


def row_schema_of(table_schema: pa.Schema) -> pa.Schema:
    return table_schema.remove(table_schema.get_field_index(DIFF))


def create_view_table(path: str | os.PathLike[str], row_schema: pa.Schema, *, view: str) -> int:
    """Create an empty view table (change data feed on); returns its version."""
    return delta.create_table(
        path,
        view_table_schema(row_schema),
        description=MARKER,
        commit_metadata={"ivm.operation": "create", "ivm.view": view},
    )


def is_view_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a table in this module's encoding."""
    if not delta.is_delta_table(path):
        return False
    dt = delta.open_table(path)
    schema = pa.schema(dt.schema().to_arrow())
    return (
        dt.metadata().description == MARKER
        and DIFF in schema.names
        and pa.types.is_int64(schema.field(DIFF).type)
    )


# -- writing -----------------------------------------------------------------------------


def committed_epoch(path: str | os.PathLike[str], view: str) -> int | None:
    """The epoch of the view's last refresh commit (Delta ``txn`` version), or ``None``."""
    return delta.transaction_version(path, app_id(view))


def commit_view_changes(
    path: str | os.PathLike[str],
    changes: pa.Table,
    *,
    view: str,
    epoch: int,
    input_versions: Mapping[str, int],
    extra_metadata: Mapping[str, str] | None = None,
) -> delta.WriteResult | None:
    """Append one refresh's change batch (row columns + ``__diff__``) as one Delta version.

    Returns ``None`` without writing when the consolidated batch is empty, or when the view
    already has a commit for ``epoch`` or later (so retrying after a crash is safe).
    """
    p = os.fspath(path)
    done = committed_epoch(p, view)
    if done is not None and done >= epoch:
        return None
    dt = delta.open_table(p)
    rows = row_schema_of(storage_schema(pa.schema(dt.schema().to_arrow())))
    batch = conform(changes, rows, name=view, extra=[DIFF])
    batch = batch.set_column(
        batch.num_columns - 1,
        pa.field(DIFF, pa.int64(), False),
        batch.column(DIFF).cast(pa.int64()),
    )
    batch = consolidate(batch)
    if batch.num_rows == 0:
        return None
    previous = last_refresh(p)
    retractions = int((batch.column(DIFF).to_numpy() < 0).sum())
    log_retractions = (previous.log_retractions if previous else 0) + retractions
    meta = {
        **(extra_metadata or {}),
        "ivm.operation": "refresh",
        "ivm.view": view,
        "ivm.epoch": str(int(epoch)),
        "ivm.inputs": json.dumps({k: int(v) for k, v in sorted(input_versions.items())}),
        "ivm.log_retractions": str(log_retractions),
    }
    return delta.insert(p, batch, commit_metadata=meta, app_transaction=(app_id(view), epoch))


def _record(c: delta.CommitInfo) -> RefreshRecord | None:
    m = c.metadata
    if "ivm.epoch" not in m or m.get("ivm.operation") not in ("refresh", "compact"):
        return None
    return RefreshRecord(
        version=c.version,
        operation=m["ivm.operation"],
        epoch=int(m["ivm.epoch"]),
        input_versions={k: int(v) for k, v in json.loads(m.get("ivm.inputs", "{}")).items()},
        log_retractions=int(m.get("ivm.log_retractions", "0")),
    )


def last_refresh(path: str | os.PathLike[str]) -> RefreshRecord | None:
    """The newest refresh (or compaction) commit's record, or ``None`` before the first."""
    limit = 4
    while True:
        commits = delta.history(path, limit)
        for c in commits:
            r = _record(c)
            if r is not None:
                return r
        if len(commits) < limit:
            return None
        limit *= 8


# -- reading -----------------------------------------------------------------------------


def decode_multiset(table: pa.Table) -> pa.Table:
    """Rows of an encoded view table, each repeated ``sum(__diff__)`` times.

    >>> decode_multiset(pa.table({"a": [1, 2, 1], "__diff__": [2, 1, -1]})).to_pylist()
    [{'a': 1}, {'a': 2}]
    """
    counts = consolidate(table)
    diffs = counts.column(DIFF).to_numpy()
    if (diffs < 0).any():
        bad = counts.filter(pa.array(diffs < 0)).slice(0, 3).to_pylist()
        raise CatalogError(f"view table holds negative multiplicities, e.g. {bad}")
    idx = np.repeat(np.arange(counts.num_rows), diffs)
    return counts.drop_columns([DIFF]).take(pa.array(idx, pa.int64()))


def read_view_counts(path: str | os.PathLike[str], version: int | None = None) -> pa.Table:
    """The view at ``version`` as one row per distinct row with its count in ``__diff__``."""
    return consolidate(delta.read_snapshot(path, version))


def read_view(path: str | os.PathLike[str], version: int | None = None) -> pa.Table:
    """The view's rows at ``version`` (latest if ``None``), duplicates repeated."""
    return decode_multiset(delta.read_snapshot(path, version))


def read_view_changes(
    path: str | os.PathLike[str], after: int | None, upto: int, *, name: str | None = None
) -> pa.Table:
    """The view's changes in versions ``(after, upto]`` as rows + ``__diff__``.

    A downstream view reads an upstream view through this (compactions cancel out).
    """
    return read_changes(path, after, upto, name=name, multiplicity=DIFF)


# -- compaction --------------------------------------------------------------------------


def table_rows(path: str | os.PathLike[str]) -> int:
    """Stored rows (from the Delta log's file statistics, no data read)."""
    actions = pa.table(delta.open_table(path).get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return 0
    return sum(int(n or 0) for n in actions.column("num_records").to_pylist())


def needs_compaction(path: str | os.PathLike[str], *, min_rows: int = 10_000) -> bool:
    """Whether retractions since the last compaction reach ``max(min_rows, rows / 4)``."""
    rec = last_refresh(path)
    if rec is None or rec.log_retractions == 0:
        return False
    return rec.log_retractions >= max(min_rows, table_rows(path) // 4)


def compact_view(path: str | os.PathLike[str]) -> delta.WriteResult | None:
    """Rewrite the table consolidated, in one commit that keeps the last refresh record."""
    p = os.fspath(path)
    dt = delta.open_table(p)
    version = int(dt.version())
    rec = last_refresh(p)
    counts = read_view_counts(p, version)
    if (counts.column(DIFF).to_numpy() < 0).any():
        raise CatalogError(f"view table {p!r} holds negative multiplicities; not compacting")
    meta: dict[str, Any] = {
        "ivm.operation": "compact",
        "ivm.log_retractions": "0",
        "ivm.compacted_from": str(version),
    }
    if rec is not None:
        meta["ivm.epoch"] = str(rec.epoch)
        meta["ivm.inputs"] = json.dumps(dict(sorted(rec.input_versions.items())))
        view = delta.commit_at(p, rec.version).metadata.get("ivm.view")
        if view:
            meta["ivm.view"] = view
    return delta.overwrite(p, counts, commit_metadata=meta)
