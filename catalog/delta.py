"""Delta Lake tables through ``deltalake`` (delta-rs): create, write, read, history.

Every function takes a table location (a local path) and returns plain Arrow / Python
values; delta-rs failures become :class:`DeltaOperationError` (or
:class:`NotADeltaTableError`) naming the table.  Tables this module creates have the change
data feed on (``delta.enableChangeDataFeed=true``), so deletes, updates and merges write
change files that :mod:`catalog.changes` reads back.

Commit metadata: writers may attach ``commit_metadata`` (string keys and values); it is stored
in the commit's ``commitInfo`` and returned by :func:`history` as :attr:`CommitInfo.metadata`
(only keys starting with ``ivm.``).  ``app_transaction=(app_id, version)`` additionally writes
a Delta ``txn`` action, read back with :func:`transaction_version` — Delta's own idempotency
marker, used by the refresh protocol (catalog.refresh).

>>> import pyarrow as pa, tempfile
>>> p = tempfile.mkdtemp() + "/t"
>>> create_table(p, pa.schema([("id", pa.int64())]))
0
>>> insert(p, pa.table({"id": [1, 2]})).version
1
>>> read_snapshot(p).column("id").to_pylist()
[1, 2]
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import pyarrow as pa
import pyarrow.fs as pfs
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import TableNotFoundError

from catalog import delta_cache, delta_features, storage, table_check
from catalog.delta_commit import layout_version, replay_known
from catalog.dtypes import conform, storage_schema
from catalog.errors import (
    CatalogError,
    DeltaOperationError,
    NotADeltaTableError,
    UnsupportedProtocolError,
    UnsupportedTypeError,
)

CDF_CONFIGURATION: dict[str, str | None] = {"delta.enableChangeDataFeed": "true"}
METADATA_PREFIX = "ivm."

T = TypeVar("T")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriteResult:
    """The table version a write created and delta-rs's operation metrics for it."""

    version: int
    metrics: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CommitInfo:
    """One entry of a table's history."""

    version: int
    operation: str
    metrics: Mapping[str, Any]
    metadata: Mapping[str, str]
    timestamp_ms: int


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN`` clause of a MERGE.

    ``when``: ``"matched"``, ``"not_matched"`` (source row without target) or
    ``"not_matched_by_source"`` (target row without source).  ``action``: ``"update"``
    (with ``assignments`` column -> SQL expression), ``"update_all"``, ``"delete"``,
    ``"insert"`` (with ``assignments``) or ``"insert_all"``.  ``condition`` is an optional
    extra SQL predicate over the aliases.
    """

    when: Literal["matched", "not_matched", "not_matched_by_source"]
    action: Literal["update", "update_all", "delete", "insert", "insert_all"]
    condition: str | None = None
    assignments: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        allowed = {
            "matched": {"update", "update_all", "delete"},
            "not_matched": {"insert", "insert_all"},
            "not_matched_by_source": {"update", "delete"},
        }
        if self.when not in allowed:
            raise ValueError(f"unknown MERGE clause kind {self.when!r}")
        if self.action not in allowed[self.when]:
            raise ValueError(f"WHEN {self.when} cannot {self.action}")
        if self.action in ("update", "insert") and not self.assignments:
            raise ValueError(f"MERGE {self.action} needs assignments")


_READS = frozenset({"open", "read", "history"})


def _guard(operation: str, path: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except CatalogError:
        delta_cache.forget(path)
        raise
    except TableNotFoundError:
        delta_cache.forget(path)
        raise NotADeltaTableError(path) from None
    except Exception as exc:  # delta-rs raises DeltaError and plain Exceptions alike
        delta_cache.forget(path)
        if table_check.protocol_refusal(exc):
            raise UnsupportedProtocolError(
                "read" if operation in _READS else "write",
                path,
                str(exc).strip(),
                protocol=table_check.declared_protocol(path),
            ) from exc
        raise DeltaOperationError(operation, path, str(exc).strip()) from exc


def _commit_properties(
    commit_metadata: Mapping[str, str] | None, app_transaction: tuple[str, int] | None
) -> CommitProperties | None:
    if not commit_metadata and app_transaction is None:
        return None
    meta = None
    if commit_metadata:
        meta = {str(k): str(v) for k, v in commit_metadata.items()}
    txns = None
    if app_transaction is not None:
        txns = [Transaction(app_id=app_transaction[0], version=int(app_transaction[1]))]
    return CommitProperties(custom_metadata=meta, app_transactions=txns)


# -- tables ------------------------------------------------------------------------------


def is_delta_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a Delta table."""
    p = os.fspath(path)
    log = storage.join(p, "_delta_log")
    if storage.is_object_store(p):
        if not storage.backend(p).listdir(log):
            return False
    elif not os.path.isdir(log):
        return False
    return (
        delta_cache.known(p)
        or replay_known(p)
        or DeltaTable.is_deltatable(p, storage_options=storage.delta_storage_options(p))
    )


def open_table(path: str | os.PathLike[str], version: int | None = None) -> DeltaTable:
    """Open the table at ``path`` (at ``version`` if given).

    Opened tables are kept and brought up to date (catalog.delta_cache): do not move the
    returned table to another version.
    """
    p = os.fspath(path)
    if not is_delta_table(p):
        raise NotADeltaTableError(p)
    if version is None:
        return _guard("open", p, lambda: delta_cache.latest(p))
    return _guard("open", p, lambda: delta_cache.at_version(p, version))


def open_layout(path: str | os.PathLike[str]) -> DeltaTable:
    """The table for its current schema, metadata and protocol only: the kept table as it
    is when no commit since its version changed them (catalog.delta_commit
    ``layout_version``), so a table that only received data commits is not brought forward
    (``update_incremental``, ~7 ms a view refresh); its files and version may be behind."""
    p = os.fspath(path)
    dt = delta_cache.kept(p)
    if dt is not None and int(dt.version()) >= _guard("read log", p, lambda: layout_version(p)):
        return dt
    return open_table(p)


def arrow_filesystem(path: str | os.PathLike[str]) -> pfs.FileSystem | None:
    """A native Arrow filesystem rooted at a local table, for deltalake's pyarrow scans.

    Left to itself, deltalake scans through a filesystem implemented in Python (pyarrow's
    ``PyFileSystem``).  An Arrow scan finishes its read-ahead on Arrow's own threads; when
    such a thread drops the last reference to that filesystem while the interpreter is
    exiting, it must take the GIL, the thread is unwound, and the process aborts with
    "terminate called without an active exception" (delta-io/delta-rs#2184).  Measured:
    14 of 20 runs of a small refresh script aborted at exit that way; 0 of 40 with this.
    ``None`` (deltalake's default) for URIs, where no local root exists.
    """
    p = os.fspath(path)
    if "://" in p:
        return None
    return pfs.SubTreeFileSystem(os.path.abspath(p), pfs.LocalFileSystem())


def check_storable(schema: pa.Schema) -> None:
    """Refuse, naming the column, a schema Delta Lake cannot store (a duration, an interval,
    a time of day, a half float, a timestamp not in microseconds with a time zone, a decimal
    past 38 digits, at any depth), as delta-rs converts it: before anything is written."""
    for f in schema:
        try:
            DeltaSchema.from_arrow(pa.schema([f]))
        except Exception:  # delta-rs raises a bare Exception for a type it cannot convert
            raise UnsupportedTypeError(
                f.name, f"{f.type} (Delta Lake has no such type: cast the column first)"
            ) from None


def create_table(
    path: str | os.PathLike[str],
    schema: pa.Schema,
    *,
    description: str | None = None,
    partition_by: Sequence[str] | None = None,
    commit_metadata: Mapping[str, str] | None = None,
    auto_compact: bool = False,
) -> int:
    """Create an empty Delta table with the change data feed on; returns its version (0).

    ``auto_compact``: set ``delta.autoOptimize.autoCompact=true`` (the catalog's managed tables), so that
    writes through this module bin-pack small files (:func:`auto_compact`).
    """
    p = os.fspath(path)
    if is_delta_table(p):
        raise DeltaOperationError("create", p, "a Delta table already exists there")
    dt = _guard(
        "create",
        p,
        lambda: DeltaTable.create(
            p,
            storage_schema(schema),
            mode="error",
            storage_options=storage.delta_storage_options(p),
            partition_by=list(partition_by) if partition_by else None,
            description=description,
            configuration={**CDF_CONFIGURATION, **({AUTO_COMPACT: "true"} if auto_compact else {})},
            commit_properties=_commit_properties(commit_metadata, None),
        ),
    )
    return int(dt.version())


def table_schema(path: str | os.PathLike[str], version: int | None = None) -> pa.Schema:
    """The table's Arrow schema as declared in Delta (nullability included).

    Converted once per opened table and version (a refresh asks for each input's schema
    four times): the kept table (catalog.delta_cache) is the same object while valid."""
    return arrow_schema(open_table(path, version), path)


def arrow_schema(dt: DeltaTable, path: str | os.PathLike[str]) -> pa.Schema:
    """The Arrow schema of ``dt``, the table at ``path`` as opened (:func:`table_schema`)."""
    key = os.fspath(path)
    at = int(dt.version())
    kept = _schemas.get(key)
    if kept is not None and kept[0] is dt and kept[1] == at:
        return kept[2]
    schema = pa.schema(dt.schema().to_arrow())
    if len(_schemas) >= delta_cache.MAX_TABLES:
        _schemas.clear()
    _schemas[key] = (dt, at, schema)
    return schema


_schemas: dict[str, tuple[DeltaTable, int, pa.Schema]] = {}  # table_schema's, by path


def current_version(path: str | os.PathLike[str]) -> int:
    """The table's latest committed version."""
    return int(open_table(path).version())


def change_feed_enabled(path: str | os.PathLike[str]) -> bool:
    conf = open_table(path).metadata().configuration
    return str(conf.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def transaction_version(path: str | os.PathLike[str], app_id: str) -> int | None:
    """The latest version recorded by ``app_id``'s ``txn`` actions, or ``None``."""
    dt = open_table(path)
    v = _guard("read", os.fspath(path), lambda: dt.transaction_version(app_id))
    return None if v is None else int(v)


def read_snapshot(
    path: str | os.PathLike[str],
    version: int | None = None,
    columns: Sequence[str] | None = None,
    *,
    on_rows: Callable[[int], None] | None = None,
) -> pa.Table:
    """The table's rows at ``version`` (latest if ``None``), typed as its Delta schema.

    ``on_rows(n)`` is called as rows are read (per Arrow batch of the scan; a progress
    display's feed), ``n`` rows each time."""
    p = os.fspath(path)
    dt = open_table(p, version)
    schema = pa.schema(dt.schema().to_arrow())
    cols = list(columns) if columns is not None else None
    if delta_features.needs_scan(dt):  # deletion vectors, column mapping (delta-spark writes)
        table = _guard("read", p, lambda: delta_features.read_rows(dt, cols))
        if on_rows is not None:
            on_rows(table.num_rows)
    elif on_rows is not None:  # what to_pyarrow_table does, batch by batch
        table = _guard("read", p, lambda: _scan_counting(dt, p, cols, on_rows))
    else:
        table = _guard(
            "read", p, lambda: dt.to_pyarrow_table(columns=cols, filesystem=arrow_filesystem(p))
        )
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    return conform(table, storage_schema(schema), name=p)


def _scan_counting(
    dt: DeltaTable, p: str, columns: list[str] | None, on_rows: Callable[[int], None]
) -> pa.Table:
    """``dt.to_pyarrow_table(columns)`` (a thin wrapper of this dataset's ``to_table``), read
    batch by batch, calling ``on_rows`` with each batch's rows."""
    ds = dt.to_pyarrow_dataset(filesystem=arrow_filesystem(p))
    schema = ds.schema if columns is None else pa.schema([ds.schema.field(c) for c in columns])
    batches = []
    for batch in ds.to_batches(columns=columns):
        batches.append(batch)
        on_rows(batch.num_rows)
    return pa.Table.from_batches(batches, schema=schema)


# -- writes ------------------------------------------------------------------------------

CHECKPOINT_INTERVAL = 10  # Delta's default ``delta.checkpointInterval``, as delta-spark uses
AUTO_COMPACT = "delta.autoOptimize.autoCompact"  # Delta's table property: compact after writes
COMPACT_SMALL_FILES = 32
SMALL_FILE_BYTES = 1 << 20


def checkpoint_interval(dt: DeltaTable) -> int:
    """The table's ``delta.checkpointInterval`` (default 10, as delta-spark writes them)."""
    raw = dt.metadata().configuration.get("delta.checkpointInterval")
    try:
        n = int(raw) if raw is not None else CHECKPOINT_INTERVAL
    except ValueError:
        n = CHECKPOINT_INTERVAL
    return max(n, 1)


def _written(p: str, dt: DeltaTable, metrics: Mapping[str, Any]) -> WriteResult:
    """The result of a write; every ``delta.checkpointInterval`` versions, a log checkpoint.

    delta-spark checkpoints the log every 10 commits; delta-rs does not, so without this a
    table written in many small commits is opened by replaying its whole JSON log (measured:
    the change read of a refresh grew from 20 to 737 ms over 1,000 commits).  A checkpoint
    adds no version and changes no data; one that fails (e.g. a full disk) leaves the write
    as it is, and the next interval tries again.
    """
    version = int(dt.version())
    if version > 0 and version % checkpoint_interval(dt) == 0:
        try:
            auto_compact(p, dt)
            dt.create_checkpoint()
        except Exception as exc:  # the write itself succeeded
            _log.warning("maintenance of %s at version %d failed: %s", p, version, exc)
    return WriteResult(version, metrics)


def auto_compacted(dt: DeltaTable) -> bool:
    """Whether the table asks for :func:`auto_compact` (``delta.autoOptimize.autoCompact=true``)."""
    return str(dt.metadata().configuration.get(AUTO_COMPACT, "false")).lower() == "true"


def auto_compact(p: str, dt: DeltaTable) -> dict[str, Any] | None:
    """Bin-pack the small files of a table that asks for it; ``None`` when nothing is done.

    Only tables with Delta's ``delta.autoOptimize.autoCompact=true`` — the ones the catalog creates (managed input
    tables), or a table whose owner set it — are ever rewritten: a foreign table is left as
    its writers made it.  Runs when at least :data:`COMPACT_SMALL_FILES` files are smaller
    than :data:`SMALL_FILE_BYTES` (checked every checkpoint interval), as one ``OPTIMIZE``
    commit with ``dataChange=false`` (no row changes: change capture skips it).
    """
    if not auto_compacted(dt):
        return None
    sizes = dt.get_add_actions(flatten=True).column("size_bytes").to_pylist()
    if sum(1 for b in sizes if b < SMALL_FILE_BYTES) < COMPACT_SMALL_FILES:
        return None
    return dict(
        dt.optimize.compact(
            target_size=SMALL_FILE_BYTES,
            commit_properties=_commit_properties({"ivm.operation": "compact"}, None),
        )
    )


def insert(
    path: str | os.PathLike[str],
    rows: pa.Table,
    *,
    commit_metadata: Mapping[str, str] | None = None,
    app_transaction: tuple[str, int] | None = None,
    target_file_size: int | None = None,
) -> WriteResult:
    """Append ``rows`` (cast to the table's schema) as one new version."""
    p = os.fspath(path)
    dt = open_table(p)
    schema = storage_schema(pa.schema(dt.schema().to_arrow()))
    data = conform(rows, schema, name=p)
    if len(data.column_names) != len(rows.column_names):
        unknown = sorted(set(rows.column_names) - set(schema.names))
        raise DeltaOperationError("insert", p, f"unknown column(s) {unknown}")
    _guard(
        "insert",
        p,
        lambda: write_deltalake(
            dt,
            data,
            mode="append",
            target_file_size=target_file_size,
            commit_properties=_commit_properties(commit_metadata, app_transaction),
        ),
    )
    return _written(p, dt, _last_metrics(dt))


def overwrite(
    path: str | os.PathLike[str],
    rows: pa.Table,
    *,
    commit_metadata: Mapping[str, str] | None = None,
    app_transaction: tuple[str, int] | None = None,
) -> WriteResult:
    """Replace the table's contents by ``rows`` in one version."""
    p = os.fspath(path)
    dt = open_table(p)
    schema = storage_schema(pa.schema(dt.schema().to_arrow()))
    data = conform(rows, schema, name=p)
    _guard(
        "overwrite",
        p,
        lambda: write_deltalake(
            dt,
            data,
            mode="overwrite",
            commit_properties=_commit_properties(commit_metadata, app_transaction),
        ),
    )
    return _written(p, dt, _last_metrics(dt))


def delete(
    path: str | os.PathLike[str],
    predicate: str | None = None,
    *,
    commit_metadata: Mapping[str, str] | None = None,
) -> WriteResult:
    """Delete the rows matching the SQL ``predicate`` (all rows if ``None``)."""
    p = os.fspath(path)
    dt = open_table(p)
    metrics = _guard(
        "delete",
        p,
        lambda: dt.delete(predicate, commit_properties=_commit_properties(commit_metadata, None)),
    )
    return _written(p, dt, dict(metrics))


UPDATE_SOURCE = "__ivm_update__"


def update(
    path: str | os.PathLike[str],
    assignments: Mapping[str, str],
    predicate: str | None = None,
    *,
    commit_metadata: Mapping[str, str] | None = None,
) -> WriteResult:
    """``UPDATE t SET col = <sql expr>, ... WHERE predicate``, written as a MERGE.

    delta-rs 1.x's own UPDATE writes an incomplete change data feed (measured: 40 rows
    updated, 5 pre-images in the feed; tests/catalog/test_capture.py), so the update runs as
    ``MERGE INTO t USING (one row) ON <predicate> WHEN MATCHED THEN UPDATE SET ...``, whose
    feed is complete.  Columns in ``assignments`` and ``predicate`` are the table's
    (unqualified); the metrics are the MERGE's (``num_target_rows_updated``, ...).
    """
    p = os.fspath(path)
    dt = open_table(p)
    source = pa.table({UPDATE_SOURCE: pa.array([1], pa.int64())})

    def run() -> dict[str, Any]:
        m = dt.merge(
            source,
            predicate or "TRUE",
            source_alias="__ivm_s",
            target_alias="__ivm_t",
            commit_properties=_commit_properties(commit_metadata, None),
        )
        return dict(m.when_matched_update(dict(assignments)).execute())

    metrics = _guard("update", p, run)
    return _written(p, dt, metrics)


def merge(
    path: str | os.PathLike[str],
    source: pa.Table,
    on: str,
    clauses: Sequence[MergeClause],
    *,
    source_alias: str = "s",
    target_alias: str = "t",
    commit_metadata: Mapping[str, str] | None = None,
) -> WriteResult:
    """``MERGE INTO t USING source s ON <on> WHEN ...`` with ``clauses`` applied in order."""
    p = os.fspath(path)
    if not clauses:
        raise DeltaOperationError("merge", p, "MERGE needs at least one WHEN clause")
    dt = open_table(p)

    def run() -> dict[str, Any]:
        m = dt.merge(
            source,
            on,
            source_alias=source_alias,
            target_alias=target_alias,
            commit_properties=_commit_properties(commit_metadata, None),
        )
        for c in clauses:
            kw: dict[str, Any] = {"predicate": c.condition}
            match (c.when, c.action):
                case ("matched", "update"):
                    m = m.when_matched_update(dict(c.assignments or {}), **kw)
                case ("matched", "update_all"):
                    m = m.when_matched_update_all(**kw)
                case ("matched", "delete"):
                    m = m.when_matched_delete(**kw)
                case ("not_matched", "insert"):
                    m = m.when_not_matched_insert(dict(c.assignments or {}), **kw)
                case ("not_matched", "insert_all"):
                    m = m.when_not_matched_insert_all(**kw)
                case ("not_matched_by_source", "update"):
                    m = m.when_not_matched_by_source_update(dict(c.assignments or {}), **kw)
                case ("not_matched_by_source", "delete"):
                    m = m.when_not_matched_by_source_delete(**kw)
                case _:  # pragma: no cover - MergeClause validates
                    raise ValueError(f"bad MERGE clause {c}")
        return dict(m.execute())

    metrics = _guard("merge", p, run)
    return _written(p, dt, metrics)


# -- history -----------------------------------------------------------------------------


def _commit_info(entry: Mapping[str, Any]) -> CommitInfo:
    meta = {k: str(v) for k, v in entry.items() if k.startswith(METADATA_PREFIX)}
    return CommitInfo(
        version=int(entry.get("version", -1)),
        operation=str(entry.get("operation", "")),
        metrics=dict(entry.get("operationMetrics") or {}),
        metadata=meta,
        timestamp_ms=int(entry.get("timestamp", 0)),
    )


def history(path: str | os.PathLike[str], limit: int | None = None) -> list[CommitInfo]:
    """Commits, newest first (at most ``limit``)."""
    p = os.fspath(path)
    dt = open_table(p)
    return [_commit_info(e) for e in _guard("history", p, lambda: dt.history(limit))]


def commit_at(path: str | os.PathLike[str], version: int) -> CommitInfo:
    """The commit that created ``version``."""
    latest = current_version(path)
    for c in history(path, max(1, latest - version + 1)):
        if c.version == version:
            return c
    raise DeltaOperationError("history", os.fspath(path), f"no commit for version {version}")


def _last_metrics(dt: DeltaTable) -> dict[str, Any]:
    h = dt.history(1)
    return dict(h[0].get("operationMetrics") or {}) if h else {}
