"""A view's Delta table: exactly the view's current rows, one Delta commit per refresh.

Format
------
The table holds the view's rows with its SQL column names and types and nothing else: any
Delta reader sees the view (a multiset: a row present 3 times is stored 3 times).  The change
data feed is on.  A refresh applies the epoch's consolidated change ``Δ`` (rows + ``__diff__``)
in **one** Delta commit (catalog.delta_commit) that

* appends the rows with ``diff > 0`` (each repeated ``diff`` times, sorted by the view's
  columns so file and row-group statistics prune later searches) as a new data file;
* removes ``-diff`` stored copies of each row with ``diff < 0``: the copies are found by
  searching only the files, and inside them the row groups, whose min/max statistics can
  hold the row; then either
  - **copy-on-write** while the table is small: each touched file is rewritten without the
    removed rows (the table stays readable by every reader, ``DeltaTable.to_pyarrow_table``
    included), or
  - **deletion vectors** once a copy-on-write would rewrite more than
    :data:`COW_MAX_BYTES` or :data:`COW_MAX_ROWS`: the table is upgraded once
    (``delta.enableDeletionVectors``, a commit without data change) and each touched file
    gets a new deletion vector
    (catalog.deletion_vectors) — the commit writes bytes in proportion to the change only;
* writes a change-data file with one row per inserted or removed copy, so the commit's
  change data feed is exactly ``Δ``: for a view with a key (catalog.view_key), a key with
  one removed and one inserted copy is an ``update_preimage`` / ``update_postimage`` pair,
  every other copy an ``insert`` or ``delete`` (catalog.change_feed);
* on a clustered table (``CLUSTER BY``, catalog.view_clustering) sorts the new rows by the
  clustering columns first, and rewrites files (copy-on-write) in that order;
* carries a Delta ``txn`` action ``("spark-ivm:<view>", epoch)`` — the refresh protocol's
  idempotency marker (catalog.refresh) — and, in ``commitInfo``, ``ivm.operation``,
  ``ivm.view``, ``ivm.epoch`` and ``ivm.inputs`` (JSON ``{input: Delta version}``: the input
  versions the view state reflects), also as ``userMetadata`` for Spark's ``DESCRIBE
  HISTORY``.

Time travel to a version gives the view as of that refresh.  A refresh with nothing to change
commits nothing.

Maintenance (:func:`maintain`, run after every refresh commit; policy in
``docs/refresh-protocol.md``): compaction when the small files or the rows hidden by deletion
vectors pile up, a log checkpoint every :data:`CHECKPOINT_EVERY` commits, and a vacuum of
files unreferenced for longer than the retention.  Maintenance commits change no data (their
change data feed is empty).

Tables in the old format (change batches with a ``__diff__`` column) are refused with
:class:`LegacyViewTableError`: drop and recreate the view.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as _pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

from catalog import deletion_vectors as dvs
from catalog import delta, delta_commit, file_cache, row_index, sorted_merge, storage
from catalog import view_clustering as vc
from catalog import view_partitions as vp
from catalog.change_feed import FeedCounts, change_feed
from catalog.changes import DIFF, consolidate, read_changes
from catalog.delta_commit import FileEntry
from catalog.dtypes import conform, storage_schema
from catalog.errors import CatalogError, InvalidIdentifierError, NotADeltaTableError

pc: Any = _pc  # pyarrow's stubs lack most compute functions

MARKER = "spark-ivm view table: the view's rows"
LEGACY_MARKER = "spark-ivm view table: a row occurs sum(__diff__) times"
DV_PROPERTY = "delta.enableDeletionVectors"
COW_MAX_BYTES = 1 << 20
#: rows a copy-on-write rewrites at most (as :data:`COW_MAX_BYTES` bytes): the rewrite's cost
#: follows the rows, and delta-encoded integers (catalog.delta_commit) make bytes a loose
#: measure of them (a 200,000-row file of three narrow integer columns: ~0.5 MB)
COW_MAX_ROWS = 1 << 17
FILE_ROWS = 1 << 18
CHECKPOINT_EVERY = 16  # delta-rs writes one in ~10 ms (10,000-row view): 0.6 ms a refresh
VACUUM_EVERY = 64
COMPACT_SMALL_FILES = 3
SMALL_FILE_BYTES = 1 << 20
COMPACT_DELETED_FRACTION = 0.2
RETENTION_HOURS = 24
HISTORY_VERSIONS = 100
Hook = Callable[[str], None]


class LegacyViewTableError(CatalogError):
    """A view table in the change-batch format of earlier spark-ivm versions."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"the view table at {path!r} is in the old change-batch format (a __diff__ "
            "column); drop the view and create it again (DROP MATERIALIZED VIEW, then CREATE)"
        )


class ViewTableMismatchError(CatalogError):
    """The view table does not hold rows the engine's change retracts."""


@dataclass(frozen=True)
class RefreshRecord:
    """What a view-table commit says about the refresh it belongs to."""

    version: int
    operation: str
    epoch: int
    input_versions: Mapping[str, int]
    log_retractions: int = 0


def app_id(view: str) -> str:
    """The Delta ``txn`` application id of a view's refresh commits."""
    return f"spark-ivm:{view}"


def view_table_schema(row_schema: pa.Schema) -> pa.Schema:
    """The table's schema: the view's columns (``__diff__`` is reserved for change batches)."""
    if DIFF in row_schema.names:
        raise InvalidIdentifierError(DIFF, "reserved column name in a view")
    return storage_schema(row_schema)


def row_schema_of(table_schema: pa.Schema) -> pa.Schema:
    """The view's columns of a view table's schema (the same columns)."""
    return table_schema


def create_view_table(
    path: str | os.PathLike[str],
    row_schema: pa.Schema,
    *,
    view: str,
    partition_by: tuple[str, ...] = (),
    cluster_by: tuple[str, ...] = (),
    properties: Mapping[str, str] | None = None,
) -> int:
    """Create an empty view table (change data feed on; partitioned by ``partition_by``,
    catalog.view_partitions, or clustered by ``cluster_by``, catalog.view_clustering; with
    the table ``properties``); returns its version."""
    vp.check_partition_columns(row_schema, partition_by, view=view)
    vc.check_cluster_columns(row_schema, cluster_by, view=view, partitioned_by=partition_by)
    version = delta.create_table(
        path,
        view_table_schema(row_schema),
        description=MARKER,
        partition_by=partition_by,
        commit_metadata={"ivm.operation": "create", "ivm.view": view},
    )
    if properties:  # before clustering: delta-rs cannot commit to a clustered table
        dt = delta.open_table(path)
        dt.alter.set_table_properties(dict(properties), raise_if_not_exists=False)
        version = int(delta.open_table(path).version())
    if cluster_by:
        version = vc.enable(path, cluster_by, view=view)
    return version


def is_legacy(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a view table in the old change-batch format."""
    if not delta.is_delta_table(path):
        return False
    dt = delta.open_table(path)
    names = pa.schema(dt.schema().to_arrow()).names
    return dt.metadata().description == LEGACY_MARKER or DIFF in names


def is_view_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a view table in this module's format."""
    if not delta.is_delta_table(path):
        return False
    return bool(delta.open_table(path).metadata().description == MARKER)


def _check_format(path: str) -> None:
    if is_legacy(path):
        raise LegacyViewTableError(path)


def uses_deletion_vectors(path: str | os.PathLike[str]) -> bool:
    conf = delta.open_table(path).metadata().configuration
    return str(conf.get(DV_PROPERTY, "false")).lower() == "true"


# -- writing -----------------------------------------------------------------------------


def log_directory(path: str | os.PathLike[str]) -> str:
    """The view table's ``_delta_log`` directory."""
    return delta_commit.log_directory(os.fspath(path))


def committed_epoch(path: str | os.PathLike[str], view: str) -> int | None:
    """The epoch of the view's last refresh commit (Delta ``txn`` version), or ``None``.

    Read off the kept replay of the table's log (catalog.delta_commit): a refresh asks this
    three times, and deltalake's reader replays the log from its checkpoint on every call.
    """
    p = os.fspath(path)
    if not delta.is_delta_table(p):
        raise NotADeltaTableError(p)
    return delta_commit.transaction_version(p, app_id(view))


def _expand(rows: pa.Table, counts: np.ndarray) -> pa.Table:
    """Each row of ``rows`` repeated ``counts`` times."""
    if bool((counts == 1).all()):
        return rows
    return rows.take(pa.array(np.repeat(np.arange(rows.num_rows), counts), pa.int64()))


def _sorted(rows: pa.Table, clustering: tuple[str, ...] = ()) -> pa.Table:
    """``rows`` sorted by the clustering columns, then all other columns (unsortable types:
    left as they are)."""
    if rows.num_rows <= 1:
        return rows
    try:
        idx = pc.sort_indices(rows, sort_keys=vc.sort_keys(rows.column_names, clustering))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return rows
    return rows.take(idx)


def _sorted_by(rows: pa.Table) -> tuple[pa.Table, tuple[tuple[str, str], ...] | None]:
    """``rows`` sorted by all columns, and ``_ALL_COLUMNS`` when they are (``None``: a type
    Arrow cannot sort left them as they were)."""
    try:
        idx = pc.sort_indices(rows, sort_keys=vc.sort_keys(rows.column_names, ()))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return rows, None
    return rows.take(idx), _ALL_COLUMNS


def _row_key(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return ("nan",)
    if isinstance(v, list | tuple):  # arrays, and maps as (key, value) pairs
        return tuple(_row_key(x) for x in v)
    if isinstance(v, dict):  # structs: their field values in order
        return tuple(_row_key(x) for x in v.values())
    return v


def _keys(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c.to_pylist() for c in t.columns]
    return [tuple(_row_key(v) for v in r) for r in zip(*cols, strict=True)]


_PRUNABLE = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string)


def _prunable(t: pa.DataType) -> bool:
    return any(f(t) for f in _PRUNABLE) or pa.types.is_large_string(t)


def _may_hold(
    wanted: pa.Table, lo: Mapping[str, Any], hi: Mapping[str, Any], nulls: Mapping[str, Any]
) -> bool:
    """Whether a file (or row group) with these bounds can hold one of the ``wanted`` rows."""
    mask = np.ones(wanted.num_rows, dtype=bool)
    for name in wanted.column_names:
        col = wanted.column(name)
        if not _prunable(col.type) or name not in lo or name not in hi:
            continue
        if lo[name] is None or hi[name] is None:
            continue
        inside = pc.and_(pc.greater_equal(col, lo[name]), pc.less_equal(col, hi[name]))
        ok = np.asarray(inside.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        if nulls.get(name, 1):
            ok |= np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if pa.types.is_floating(col.type):  # NaN is outside every min/max statistic
            nan = pc.is_nan(col).fill_null(False)
            ok |= np.asarray(nan.to_numpy(zero_copy_only=False), dtype=bool)
        mask &= ok
        if not mask.any():
            return False
    return bool(mask.any())


def _kept_rows(table: str, f: FileEntry, schema: pa.Schema) -> pa.Table | None:
    """Every row of file ``f`` when this process wrote it and kept them (catalog.file_cache)."""
    kept = file_cache.rows(vp.file_path(table, f), schema)
    return kept if kept is not None and kept.num_rows == f.num_records else None


def _read_candidates(
    table: str, f: FileEntry, wanted: pa.Table, schema: pa.Schema
) -> tuple[pa.Table, np.ndarray]:
    """Rows of file ``f`` in row groups that may hold ``wanted`` rows, with their positions."""
    location = vp.file_path(table, f)
    fs, where = storage.backend(table).arrow(location)
    pf = pq.ParquetFile(where, filesystem=fs)
    md = pf.metadata
    names = [md.schema.column(i).name for i in range(md.num_columns)]
    groups, positions = [], []
    start = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        lo: dict[str, Any] = {}
        hi: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for i, name in enumerate(names):
            st = rg.column(i).statistics
            if st is not None and st.has_min_max and name in wanted.column_names:
                lo[name], hi[name] = st.min, st.max
                nulls[name] = st.null_count if st.has_null_count else 1
        if _may_hold(wanted, lo, hi, nulls):
            groups.append(g)
            positions.append(np.arange(start, start + rg.num_rows, dtype=np.int64))
        start += rg.num_rows
    if not groups:
        return schema.empty_table(), np.zeros(0, np.int64)
    return vp.read_file(table, f, schema, row_groups=groups), np.concatenate(positions)


def _may_match(data: pa.Table, wanted: pa.Table) -> np.ndarray:
    """Rows of ``data`` whose every column holds a value of that column of ``wanted``: a
    superset of the rows equal to a ``wanted`` row, found by vectorized membership tests so
    that only those few rows are compared one by one in Python (:func:`_keys`)."""
    mask = np.ones(data.num_rows, dtype=bool)
    for name in wanted.column_names:
        col = wanted.column(name).combine_chunks()
        if pa.types.is_floating(col.type):
            continue  # NaN and -0.0 match as in Python (_row_key), not as Arrow hashes them
        try:
            hit = pc.is_in(data.column(name), value_set=col, skip_nulls=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            continue  # a type without a membership kernel (nested): compared in Python
        mask &= np.asarray(hit.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        if not mask.any():
            break
    return mask


def _locate(
    table: str,
    files: Mapping[str, FileEntry],
    retract: pa.Table,
    counts: np.ndarray,
    whole: dict[str, pa.Table] | None = None,
) -> dict[str, np.ndarray]:
    """For each row of ``retract`` (distinct rows: a consolidated change), ``counts`` stored
    copies: file path -> positions (each row's first live copies, in file order).  ``whole``
    receives the files whose every row group was read (a copy-on-write reuses them).

    Rows are matched by a hash join when they are :func:`_joinable` (a 1,200-row change: 7 ms
    less than a Python tuple per row), else as Python tuples (:func:`_keys`)."""
    match = _join_matcher(retract) if _joinable(retract) else _key_matcher(retract)
    remaining = counts.astype(np.int64).copy()
    found: dict[str, np.ndarray] = {}
    for path, data, pos in _searched_files(table, files, retract, whole):
        ords, rids = match(data)
        order = np.lexsort((ords, rids))  # per retracted row, its copies in file order
        ords, rids = ords[order], rids[order]
        starts = np.flatnonzero(np.r_[True, rids[1:] != rids[:-1]])
        rank = np.arange(len(rids)) - np.repeat(starts, np.diff(np.r_[starts, len(rids)]))
        take = rank < remaining[rids]
        if take.any():
            remaining -= np.bincount(rids[take], minlength=len(remaining))
            found[path] = np.sort(pos[ords[take]])
        if not remaining.any():
            break
    if remaining.any():
        first = int(np.flatnonzero(remaining)[0])
        example = tuple(_row_key(v) for v in retract.slice(first, 1).to_pylist()[0].values())
        raise ViewTableMismatchError(
            f"the view table at {table!r} lacks {int(remaining.sum())} row(s) the refresh "
            f"retracts (e.g. {example!r}): it was changed by another writer or its engine "
            "state does not match; recompute the view (DROP and CREATE it)"
        )
    return found


_Matcher = Callable[[pa.Table], tuple[np.ndarray, np.ndarray]]
_ORD, _RID = "__ord__", "__rid__"


def _join_matcher(retract: pa.Table) -> _Matcher:
    """``rows -> (positions in rows, retract rows)`` of the equal pairs, by a hash join."""
    right = retract.append_column(_RID, pa.array(np.arange(retract.num_rows, dtype=np.int64)))

    def match(rows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        left = rows.append_column(_ORD, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        joined = left.join(right, keys=retract.column_names, join_type="inner", use_threads=False)
        return joined.column(_ORD).to_numpy(), joined.column(_RID).to_numpy()

    return match


def _key_matcher(retract: pa.Table) -> _Matcher:
    """The pairs of :func:`_join_matcher`, rows compared as Python tuples (any type: NaN,
    -0.0, NULLs, nested), after a vectorized membership test (:func:`_may_match`)."""
    index = {k: i for i, k in enumerate(_keys(retract))}

    def match(rows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        idx = np.flatnonzero(_may_match(rows, retract))
        pairs = [
            (int(i), index[k])
            for i, k in zip(idx, _keys(rows.take(pa.array(idx, pa.int64()))), strict=True)
            if k in index
        ]
        if not pairs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ords, rids = zip(*pairs, strict=True)
        return np.asarray(ords, np.int64), np.asarray(rids, np.int64)

    return match


def _joinable(rows: pa.Table) -> bool:
    """Whether Arrow's hash join matches rows of ``rows`` exactly when Python compares them
    equal (:func:`_keys`): no NULLs (a join never matches them), and only integers,
    strings, booleans, dates and timestamps (no floats: NaN and -0.0; no nested types)."""
    exact = (
        pa.types.is_integer,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_boolean,
        pa.types.is_date,
        pa.types.is_timestamp,
    )
    return rows.num_columns > 0 and all(
        c.null_count == 0 and any(f(c.type) for f in exact) for c in rows.columns
    )


def _searched_files(
    table: str,
    files: Mapping[str, FileEntry],
    retract: pa.Table,
    whole: dict[str, pa.Table] | None,
) -> Iterator[tuple[str, pa.Table, np.ndarray]]:
    """The files that may hold ``retract`` rows, in path order, each with its candidate rows
    and their positions, the rows its deletion vector removed left out (``whole``: see
    :func:`_locate`)."""
    schema = retract.schema
    for path in sorted(files):
        f = files[path]
        if f.num_records == 0 or f.live_records <= 0:
            continue
        kept = _kept_rows(table, f, schema)
        if kept is not None:  # in memory: searched whole, no bounds checked
            data, pos = kept, np.arange(kept.num_rows, dtype=np.int64)
        elif not _may_hold(retract, *vp.file_bounds(f, schema)):
            continue
        else:
            data, pos = _read_candidates(table, f, retract, schema)
        if data.num_rows == 0:
            continue
        if whole is not None and data.num_rows == f.num_records:
            whole[path] = data  # positions 0 .. n-1: every row group was a candidate
        if f.deletion_vector is not None:
            live = ~np.isin(pos, dvs.read_positions(table, f.deletion_vector))
            data, pos = data.filter(pa.array(live)), pos[live]
        yield path, data, pos


def _remove_action(f: FileEntry, now: int) -> dict[str, Any]:
    r: dict[str, Any] = {
        "path": f.path,
        "deletionTimestamp": now,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": dict(f.action.get("partitionValues") or {}),
        "size": f.size,
    }
    if f.deletion_vector is not None:
        r["deletionVector"] = f.deletion_vector.to_json()
    return r


def _enable_deletion_vectors(path: str) -> None:
    """Upgrade the table to deletion vectors (one commit, no data change)."""
    if vc.is_clustered(path):  # delta-rs cannot commit to a clustered table
        vc.set_properties(path, {DV_PROPERTY: "true"})
        return
    dt = delta.open_table(path)
    dt.alter.set_table_properties({DV_PROPERTY: "true"}, raise_if_not_exists=False)


def commit_view_changes(
    path: str | os.PathLike[str],
    changes: pa.Table,
    *,
    view: str,
    epoch: int,
    input_versions: Mapping[str, int],
    extra_metadata: Mapping[str, str] | None = None,
    hook: Hook | None = None,
    key: tuple[str, ...] | None = None,
    on_rows: Callable[[int], None] | None = None,
    sync_entry: bool = True,
    durable: Sequence[str] = (),
    consolidated: bool = False,
    staged: Staged | None = None,
) -> delta.WriteResult | None:
    """Apply one refresh's change (row columns + ``__diff__``) as one Delta commit.

    ``key``: output columns no two rows of the view share (catalog.view_key; ``None`` when
    none is known): the change data feed reports a key's one removed and one inserted copy as
    an update.

    Returns ``None`` without writing when the consolidated change is empty, or when the view
    already has a commit for ``epoch`` or later (so retrying after a crash is safe).
    ``hook("files_written:<view>")`` runs after the data files are written, before the
    commit (a crash point of the tests).  ``on_rows(n)``: the progress of the write, ``n``
    of the change's copies written (the removed ones once their files are handled, the
    inserted ones file by file), for progress reports.  ``sync_entry=False``: the new log
    entry's name is made durable by the caller (catalog.delta_commit ``commit``);
    ``durable``: other local files or directories fsynced with the commit's files, before
    its entry appears (catalog.refresh: the checkpoint's new ``CURRENT``).
    ``consolidated``: the caller consolidated ``changes`` (catalog.changes ``consolidate``);
    it is not consolidated again when it already has the view's columns and types.
    ``staged``: :func:`stage_view_changes`' work for this commit (``changes``, ``view``,
    ``epoch`` and ``key`` the same), used when the table is still at the version it saw.

    The phases: open the target, consolidate the change, locate the rows it removes (these
    three are the staging), write the removals (deletion vectors or rewritten files), the
    inserts and the change feed, and commit all of it as one version.
    """
    if staged is None or not staged.current(view, int(epoch)):
        staged = _stage(os.fspath(path), changes, view, int(epoch), key, consolidated, True)
    if staged is None:
        return None
    target, change, removal = staged.target, staged.change, staged.removal
    out = _Actions(now=int(time.time() * 1000))
    if staged.files is not None:  # the one small file rewritten, encoded ahead
        kinds = _write_staged(target, removal, staged.files, out)
        if on_rows is not None:
            on_rows(change.removed)
    else:
        kinds = _write_changes(target, change, removal, key, out, on_rows)
    if hook:
        hook(f"files_written:{view}")
    metrics = _metrics(change, removal, out, kinds)
    refresh = _RefreshCommit(view, int(epoch), input_versions, extra_metadata or {})
    version = removal.version + 1
    delta_commit.commit(
        target.path,
        version,
        [*refresh.header(metrics, blind=not removal.touched, now=out.now), *out.actions],
        durable=[*out.new_files, *durable],
        sync_entry=sync_entry,
    )
    return delta.WriteResult(version, metrics)


@dataclass(frozen=True)
class _Encoded:
    """A commit's files encoded in memory (the common path: the table's one small sorted
    file rewritten with the change merged in): the new file (its rows and their row index,
    kept once it is written) and the change-data file with its counts."""

    data: delta_commit.Encoded
    rows: pa.Table
    index: row_index.RowIndex | None
    feed: delta_commit.Encoded
    kinds: FeedCounts


@dataclass(frozen=True)
class Staged:
    """A view commit worked out before its turn, nothing written: the change split by sign,
    the rows it removes located in table ``removal.version`` and, on the common path, its
    files encoded (``files``)."""

    view: str
    epoch: int
    target: _Target
    change: _SignedChange
    removal: _Removal
    files: _Encoded | None

    def current(self, view: str, epoch: int) -> bool:
        """Whether this is ``view``'s commit of ``epoch`` and the table is still at the
        version it was staged at (one ``stat`` of the kept log replay)."""
        same = (self.view, self.epoch) == (view, epoch)
        return same and delta_commit.latest_version(self.target.path) == self.removal.version


def stage_view_changes(
    path: str | os.PathLike[str],
    changes: pa.Table,
    *,
    view: str,
    epoch: int,
    key: tuple[str, ...] | None = None,
    consolidated: bool = False,
) -> Staged | None:
    """The part of :func:`commit_view_changes` that writes nothing, done ahead (catalog.refresh
    stages a refresh's view commits while its checkpoint is saved).  ``None``: nothing to
    commit, or the table is to be upgraded to deletion vectors first (a commit: left to
    :func:`commit_view_changes`).  Pass the result to :func:`commit_view_changes`."""
    return _stage(os.fspath(path), changes, view, int(epoch), key, consolidated, False)


def _stage(
    p: str,
    changes: pa.Table,
    view: str,
    epoch: int,
    key: tuple[str, ...] | None,
    consolidated: bool,
    upgrade: bool,
) -> Staged | None:
    target = _open_target(p)
    done = committed_epoch(target.path, view)
    if done is not None and done >= epoch:
        return None
    change = _signed_change(changes, target.rows_schema, view, consolidated=consolidated)
    if change is None:
        return None
    removal = _locate_removal(target, change, upgrade=upgrade)
    if removal is None:
        return None
    files = _encode_rewrite(target, change, removal, key)
    return Staged(view, epoch, target, change, removal, files)


def _encode_rewrite(
    target: _Target, change: _SignedChange, removal: _Removal, key: tuple[str, ...] | None
) -> _Encoded | None:
    """The common path's files, encoded in memory: a local table whose one touched file
    (kept in memory, sorted) takes the change merged in (:func:`_merged_into_kept`) and
    keeps rows; ``None`` otherwise (:func:`_write_changes` writes the commit's files)."""
    p = target.path
    if storage.is_object_store(p) or len(removal.touched) != 1:
        return None
    if removal.use_dv or not _packs_inserts(target, removal, change):
        return None
    f = removal.touched[0]
    data = removal.read.get(f.path)
    if data is None:
        return None
    keep = np.ones(data.num_rows, dtype=bool)
    keep[removal.found[f.path]] = False
    merged = _merged_into_kept(p, f, data, keep, change.plus, removal.index.get(f.path))
    if merged is None or merged[0].num_rows == 0:
        return None
    rows, index = merged
    feed, kinds = change_feed(_expand(change.minus_rows, change.minus_counts), change.plus, key=key)
    return _Encoded(
        delta_commit.encode_data_file(p, rows),
        rows,
        index,
        delta_commit.encode_data_file(p, feed, cdc=True),
        kinds,
    )


def _write_staged(target: _Target, removal: _Removal, files: _Encoded, out: _Actions) -> FeedCounts:
    """Write the encoded files of the common path: the touched file replaced by the new one
    (its rows kept in memory with their index, catalog.file_cache), and the change data."""
    p = target.path
    out.actions.append({"remove": _remove_action(removal.touched[0], out.now)})
    out.add_files(p, [delta_commit.write_encoded(files.data)])
    file_cache.keep(files.data.full, files.rows, sorted_by=_ALL_COLUMNS, index=files.index)
    cdc = delta_commit.write_encoded(files.feed)
    out.written += int(cdc["size"])
    out.new_files.append(files.feed.full)
    out.actions.append({"cdc": cdc})
    return files.kinds


def _write_changes(
    target: _Target,
    change: _SignedChange,
    removal: _Removal,
    key: tuple[str, ...] | None,
    out: _Actions,
    on_rows: Callable[[int], None] | None,
) -> FeedCounts:
    """Write the commit's files on every other path: the removals (deletion vectors or
    rewritten files), the inserts and the change data; returns the feed's counts."""
    packed = _packs_inserts(target, removal, change)
    if removal.touched and removal.use_dv:
        _remove_by_vectors(target, removal, out)
    elif removal.touched:
        _remove_by_rewrite(target, removal, out, change.plus if packed else None)
    if on_rows is not None:
        on_rows(change.removed)
    if not packed:
        _write_inserts(target, change, out, on_rows)
    return _write_feed(target, change, key, out)


@dataclass(frozen=True)
class _Target:
    """The view table a commit writes: its row schema and its layout."""

    path: str
    table: DeltaTable
    rows_schema: pa.Schema
    parts: tuple[str, ...]
    clustering: tuple[str, ...]
    use_dv: bool = False  # deletion vectors are on


@dataclass(frozen=True)
class _Layout:
    """What a view commit reads off the opened table's metadata and protocol."""

    rows_schema: pa.Schema
    parts: tuple[str, ...]
    clustered: bool
    use_dv: bool


#: path -> (opened table, its version, its layout): the metadata and protocol of a kept table
#: at a version do not change, and reading them through deltalake costs ~0.1 ms a commit
_layouts: dict[str, tuple[DeltaTable, int, _Layout]] = {}


def _layout_of(p: str, dt: DeltaTable) -> _Layout:
    """The layout of the view table at ``p`` opened as ``dt`` (a legacy table is refused)."""
    at = int(dt.version())
    kept = _layouts.get(p)
    if kept is not None and kept[0] is dt and kept[1] == at:
        return kept[2]
    rows_schema = storage_schema(delta.arrow_schema(dt, p))
    meta = dt.metadata()
    if meta.description == LEGACY_MARKER or DIFF in rows_schema.names:
        raise LegacyViewTableError(p)
    found = _Layout(
        rows_schema,
        tuple(meta.partition_columns),
        "clustering" in (dt.protocol().writer_features or []),
        str(meta.configuration.get(DV_PROPERTY, "false")).lower() == "true",
    )
    if len(_layouts) >= 64:
        _layouts.clear()
    _layouts[p] = (dt, at, found)
    return found


def _open_target(p: str) -> _Target:
    """Open the view table at ``p`` for its layout (a legacy one is refused); the commit's
    files and version come from the kept log replay (:func:`_locate_removal`)."""
    dt = delta.open_layout(p)
    lay = _layout_of(p, dt)
    clustering = vc.clustering_columns(p) if lay.clustered else ()
    return _Target(p, dt, lay.rows_schema, lay.parts, clustering, lay.use_dv)


@dataclass(frozen=True)
class _SignedChange:
    """A consolidated change split by sign: the inserted copies (one row each) and the
    removed rows with their counts."""

    plus: pa.Table
    minus_rows: pa.Table
    minus_counts: np.ndarray

    @property
    def removed(self) -> int:
        return int(self.minus_counts.sum()) if self.minus_rows.num_rows else 0


def _signed_change(
    changes: pa.Table, rows_schema: pa.Schema, view: str, *, consolidated: bool = False
) -> _SignedChange | None:
    """``changes`` conformed to the view's rows and consolidated; None when it is empty.

    ``consolidated``: ``changes`` is :func:`consolidate`'s output; when conforming it casts
    and drops nothing (:func:`_conforms_as_is`), consolidating again would return the same
    rows (its grouping is an equivalence: a second pass finds no two rows to merge, NaN and
    -0.0 included), so it is skipped (~0.2 ms of Arrow's hash aggregation a refresh)."""
    batch = conform(changes, rows_schema, name=view, extra=[DIFF])
    batch = batch.set_column(
        batch.num_columns - 1,
        pa.field(DIFF, pa.int64(), False),
        batch.column(DIFF).cast(pa.int64()),
    )
    if not (consolidated and _conforms_as_is(changes.schema, rows_schema)):
        batch = consolidate(batch)
    if batch.num_rows == 0:
        return None
    diffs = batch.column(DIFF).to_numpy()
    rows = batch.drop_columns([DIFF])
    plus = _expand(rows.filter(pa.array(diffs > 0)), diffs[diffs > 0])
    return _SignedChange(plus, rows.filter(pa.array(diffs < 0)), -diffs[diffs < 0])


def _conforms_as_is(schema: pa.Schema, rows_schema: pa.Schema) -> bool:
    """Whether a change of ``schema`` holds exactly the view's columns with their types and
    an integer ``__diff__``: conforming it then drops no column and casts no value, so no
    two of its distinct rows can become equal."""
    if len(schema) != len(rows_schema) + 1 or schema.get_field_index(DIFF) < 0:
        return False
    if not pa.types.is_integer(schema.field(DIFF).type):
        return False
    for f in rows_schema:
        i = schema.get_field_index(f.name)
        if i < 0 or not schema.field(i).type.equals(f.type):
            return False
    return True


@dataclass(frozen=True)
class _Removal:
    """Where the removed rows are: the row positions per file (``found``), the files that
    hold them (``touched``) in table ``version``, and whether deletion vectors remove them."""

    version: int
    found: dict[str, np.ndarray]
    touched: list[FileEntry]
    use_dv: bool
    read: Mapping[str, pa.Table] = field(default_factory=dict)  # touched files read whole
    #: the row index (catalog.row_index) of a touched file kept in memory, when it has one
    index: Mapping[str, row_index.RowIndex] = field(default_factory=dict)


def _locate_removal(
    target: _Target, change: _SignedChange, *, upgrade: bool = True
) -> _Removal | None:
    """Locate the removed rows; a table that would rewrite more than ``COW_MAX_BYTES`` or
    ``COW_MAX_ROWS`` of files is first upgraded to deletion vectors (``upgrade=False``:
    ``None`` instead)."""
    p = target.path
    version, files = delta_commit.snapshot_files(p)
    minus = change.minus_rows
    whole: dict[str, pa.Table] = {}
    index: dict[str, row_index.RowIndex] = {}
    found = _locate_indexed(p, files, change, whole, index) if minus.num_rows else {}
    if found is None:
        found = _locate(p, files, minus, change.minus_counts, whole)
    touched = [files[f] for f in found]
    use_dv = target.use_dv
    if touched and not use_dv and _too_large_to_rewrite(touched):
        if not upgrade:
            return None
        _enable_deletion_vectors(p)
        version, files = delta_commit.snapshot_files(p)
        touched = [files[f] for f in found]
        use_dv = True
    read = {f.path: whole[f.path] for f in touched if f.path in whole}
    return _Removal(version, found, touched, use_dv, read, {} if use_dv else index)


def _too_large_to_rewrite(touched: Sequence[FileEntry]) -> bool:
    """Whether a copy-on-write of the ``touched`` files rewrites more than
    :data:`COW_MAX_BYTES` bytes or :data:`COW_MAX_ROWS` rows."""
    size = sum(f.size for f in touched)
    return size > COW_MAX_BYTES or sum(max(f.num_records, 0) for f in touched) > COW_MAX_ROWS


def _small(f: FileEntry) -> bool:
    """Whether compaction counts and packs file ``f`` as small: under
    :data:`SMALL_FILE_BYTES` and, when known, under half of :data:`FILE_ROWS` rows (a packed
    file of narrow delta-encoded columns can stay under the bytes: it is not packed again)."""
    return f.size < SMALL_FILE_BYTES and f.num_records < FILE_ROWS // 2


def _locate_indexed(
    p: str,
    files: Mapping[str, FileEntry],
    change: _SignedChange,
    whole: dict[str, pa.Table],
    index: dict[str, row_index.RowIndex],
) -> dict[str, np.ndarray] | None:
    """:func:`_locate` by the row index of the table's one file (catalog.row_index; built
    here the first time), when that file is kept in memory sorted by all its columns and
    the change is small (at most ``sorted_merge.MAX_NEW`` rows each way) with rows Python
    orders as Arrow does; else, or when a row is missing, ``None`` (the search by
    :func:`_locate` then answers, or says what is missing)."""
    minus = change.minus_rows
    small = max(minus.num_rows, change.plus.num_rows) <= sorted_merge.MAX_NEW
    if len(files) != 1 or not small:
        return None
    (f,) = files.values()
    kept = _kept_rows(p, f, minus.schema) if f.deletion_vector is None else None
    location = vp.file_path(p, f)
    if kept is None or file_cache.sorted_by(location) != _ALL_COLUMNS:
        return None
    if not row_index.indexable(minus):
        return None
    found = file_cache.index(location, kept)
    if found is None:
        if kept.num_rows > file_cache.INDEX_ROWS or not row_index.indexable(kept):
            return None
        found = row_index.RowIndex.of(kept)
        file_cache.attach_index(location, kept, found)
    positions = found.locate(row_index.row_keys(minus), change.minus_counts.tolist())
    if positions is None:
        return None
    whole[f.path] = kept
    index[f.path] = found
    return {f.path: positions}


@dataclass
class _Actions:
    """The actions of one view commit, the files written for them (made durable with the
    commit) and what they count."""

    now: int
    actions: list[dict[str, Any]] = field(default_factory=list)
    new_files: list[str] = field(default_factory=list)
    written: int = 0
    added_files: int = 0

    def add_files(self, p: str, adds: list[dict[str, Any]]) -> None:
        for add in adds:
            self.written += int(add["size"])
            self.added_files += 1
            self.actions.append({"add": add})
            self.new_files.append(delta_commit.file_location(p, add))


def _remove_by_vectors(target: _Target, removal: _Removal, out: _Actions) -> None:
    """Remove the rows by deletion vectors: each touched file is re-added with its old
    vector joined with the new positions (or removed, when no row of it is left)."""
    p = target.path
    vectors = []
    for f in removal.touched:
        old = (
            dvs.read_positions(p, f.deletion_vector)
            if f.deletion_vector is not None
            else np.zeros(0, np.int64)
        )
        vectors.append(np.union1d(old, removal.found[f.path]))
    dv_path, dv_bytes, descriptors = dvs.write_file(p, vectors)
    out.new_files.append(dv_path)
    out.written += dv_bytes
    for f, vec, d in zip(removal.touched, vectors, descriptors, strict=True):
        out.actions.append({"remove": _remove_action(f, out.now)})
        if len(vec) >= f.num_records:
            continue
        stats = {**f.stats, "tightBounds": False}
        add = {k: v for k, v in f.action.items() if v is not None}
        add.update(
            deletionVector=d.to_json(),
            stats=delta_commit.compact_json(stats),
            dataChange=True,
        )
        out.actions.append({"add": add})


def _packs_inserts(target: _Target, removal: _Removal, change: _SignedChange) -> bool:
    """Whether the copy-on-write also takes the inserted rows: an unpartitioned, unclustered
    table whose touched files are small, and whose rows fit one file together.  A view whose
    refreshes update rows then keeps one file, where a file per refresh piled up and was
    packed by a compaction commit every :data:`COMPACT_SMALL_FILES` refreshes."""
    if removal.use_dv or not removal.touched or target.parts or target.clustering:
        return False
    rows = change.plus.num_rows + sum(f.num_records for f in removal.touched)
    small = all(0 <= f.size < SMALL_FILE_BYTES for f in removal.touched)
    return small and all(f.num_records >= 0 for f in removal.touched) and rows <= FILE_ROWS


def _remove_by_rewrite(
    target: _Target, removal: _Removal, out: _Actions, inserts: pa.Table | None = None
) -> None:
    """Remove the rows by copy on write: each touched file is replaced by its other rows;
    with ``inserts`` (:func:`_packs_inserts`), all of them and the inserted rows, sorted,
    by one file."""
    p = target.path
    packed = [] if inserts is None else [inserts]
    merged: pa.Table | None = None
    merged_index: row_index.RowIndex | None = None
    for f in removal.touched:
        data = removal.read.get(f.path)
        if data is None:
            data = vp.read_file(p, f, target.rows_schema)
        keep = np.ones(data.num_rows, dtype=bool)
        keep[removal.found[f.path]] = False
        out.actions.append({"remove": _remove_action(f, out.now)})
        if inserts is not None and len(removal.touched) == 1:
            done = _merged_into_kept(p, f, data, keep, inserts, removal.index.get(f.path))
            if done is not None:
                merged, merged_index = done
                break
        if not keep.any():
            continue
        kept = data.filter(pa.array(keep))
        if inserts is not None:
            packed.append(kept)
            continue
        if target.clustering:  # the rest of the file, in the current clustering order
            kept = _sorted(kept, target.clustering)
        out.add_files(p, vp.write_files(p, kept, target.parts))
    rows = merged
    order: tuple[tuple[str, str], ...] | None = _ALL_COLUMNS if merged is not None else None
    if rows is None and packed:
        rows, order = _sorted_by(pa.concat_tables(packed))
    if rows is not None and rows.num_rows:
        adds = vp.write_files(p, rows, target.parts)
        out.add_files(p, adds)
        if inserts is not None and len(adds) == 1:  # the view's one file: read next refresh
            location = delta_commit.file_location(p, adds[0])
            file_cache.keep(location, rows, sorted_by=order or (), index=merged_index)


_ALL_COLUMNS = (("*", "ascending"),)
"""The order a kept file is tagged with when sorted by all its columns (:func:`_sorted`)."""


def _merged_into_kept(
    p: str,
    f: FileEntry,
    data: pa.Table,
    keep: np.ndarray,
    inserts: pa.Table,
    index: row_index.RowIndex | None = None,
) -> tuple[pa.Table, row_index.RowIndex | None] | None:
    """The rows of ``data`` that ``keep`` keeps with ``inserts``, sorted, without sorting them
    all — when ``data`` is the kept content of file ``f``, written sorted by all its columns,
    and the inserted rows are few; else ``None``.  With the kept rows' ``index``
    (catalog.row_index) the rows are placed by it, and it becomes the result's index (taken
    from the kept rows: should the commit fail, their next use builds it again); otherwise
    by catalog.sorted_merge (no index)."""
    if inserts.num_rows > sorted_merge.MAX_NEW or f.deletion_vector is not None:
        return None
    location = vp.file_path(p, f)
    kept = file_cache.rows(location, data.schema)
    if kept is None or kept is not data or file_cache.sorted_by(location) != _ALL_COLUMNS:
        return None
    new = inserts
    if not new.schema.equals(data.schema):
        new = new.select(data.column_names).cast(data.schema)
    if (
        index is not None
        and len(index) == data.num_rows
        and row_index.indexable(new)
        and file_cache.detach_index(location, kept) is index  # changed below: not kept's
    ):
        keys = row_index.row_keys(new)
        order = np.asarray(sorted(range(len(keys)), key=keys.__getitem__), np.int64)
        take = index.merge(np.flatnonzero(~keep), [keys[i] for i in order])
        n = data.num_rows  # new row j of the sorted ones is row order[j] of ``new``
        take[take >= n] = n + order
        return pa.concat_tables([data, new]).take(pa.array(take)), index
    keys = vc.sort_keys(data.column_names, ())
    return sorted_merge.merge(data, np.flatnonzero(keep), new, keys), None


def _write_inserts(
    target: _Target,
    change: _SignedChange,
    out: _Actions,
    on_rows: Callable[[int], None] | None,
) -> None:
    """Write the inserted copies, a file (per partition) at a time, in clustering order."""
    if not change.plus.num_rows:
        return
    ordered = _sorted(change.plus, target.clustering)
    for start in range(0, ordered.num_rows, FILE_ROWS):
        chunk = ordered.slice(start, FILE_ROWS)
        out.add_files(
            target.path, vp.write_files(target.path, chunk, target.parts, max_rows=FILE_ROWS)
        )
        if on_rows is not None:
            on_rows(change.removed + start + chunk.num_rows)


def _write_feed(
    target: _Target, change: _SignedChange, key: tuple[str, ...] | None, out: _Actions
) -> FeedCounts:
    """Write the change data feed of the change (``key``: a key's removed and inserted copy
    is an update); returns how many rows of each kind it holds."""
    removed_rows = _expand(change.minus_rows, change.minus_counts)
    feed, kinds = change_feed(removed_rows, change.plus, key=key)
    cdcs = vp.write_files(target.path, feed, target.parts, cdc=True)
    out.written += sum(int(c["size"]) for c in cdcs)
    out.new_files += [delta_commit.file_location(target.path, c) for c in cdcs]
    out.actions += [{"cdc": c} for c in cdcs]
    return kinds


def _metrics(
    change: _SignedChange, removal: _Removal, out: _Actions, kinds: FeedCounts
) -> dict[str, int]:
    """The commit's ``operationMetrics``."""
    dv = removal.use_dv
    return {
        "num_added_rows": change.plus.num_rows,
        "num_deleted_rows": change.removed,
        "num_added_files": out.added_files,
        "num_removed_files": 0 if dv else len(removal.touched),
        "num_deletion_vectors": len(removal.touched) if dv else 0,
        "num_bytes_written": out.written,
        # Delta's MERGE metrics: what the change data feed holds (catalog.capture checks them)
        "num_target_rows_inserted": kinds.inserted,
        "num_target_rows_updated": kinds.updated,
        "num_target_rows_deleted": kinds.deleted,
    }


@dataclass(frozen=True)
class _RefreshCommit:
    """What a view's refresh commit says about itself: the view, the epoch, the input
    versions it reflects (read back by :func:`last_refresh` and ``DESCRIBE HISTORY``)."""

    view: str
    epoch: int
    input_versions: Mapping[str, int]
    extra_metadata: Mapping[str, str]

    def header(self, metrics: Mapping[str, int], *, blind: bool, now: int) -> list[dict[str, Any]]:
        """The ``commitInfo`` and ``txn`` actions of the commit (``txn``: its epoch, so a
        retried refresh sees it is done)."""
        inputs = {k: int(v) for k, v in sorted(self.input_versions.items())}
        meta = {
            **self.extra_metadata,
            "ivm.operation": "refresh",
            "ivm.view": self.view,
            "ivm.epoch": str(self.epoch),
            "ivm.inputs": json.dumps(inputs),
        }
        info = delta_commit.commit_info(
            "MERGE",
            meta,
            operationMetrics=metrics,
            isBlindAppend=blind,
            userMetadata=json.dumps({"view": self.view, "epoch": self.epoch, "inputs": inputs}),
        )
        txn = {"txn": {"appId": app_id(self.view), "version": self.epoch, "lastUpdated": now}}
        return [info, txn]


def _record(c: delta.CommitInfo) -> RefreshRecord | None:
    m = c.metadata
    if "ivm.epoch" not in m or m.get("ivm.operation") != "refresh":
        return None
    return RefreshRecord(
        version=c.version,
        operation=m["ivm.operation"],
        epoch=int(m["ivm.epoch"]),
        input_versions={k: int(v) for k, v in json.loads(m.get("ivm.inputs", "{}")).items()},
    )


def last_refresh(path: str | os.PathLike[str]) -> RefreshRecord | None:
    """The newest refresh commit's record, or ``None`` before the first."""
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


def read_view(path: str | os.PathLike[str], version: int | None = None) -> pa.Table:
    """The view's rows at ``version`` (latest if ``None``), duplicates repeated."""
    p = os.fspath(path)
    _check_format(p)
    return delta.read_snapshot(p, version)


def read_view_counts(path: str | os.PathLike[str], version: int | None = None) -> pa.Table:
    """The view at ``version`` as one row per distinct row with its count in ``__diff__``."""
    rows = read_view(path, version)
    ones = pa.array(np.ones(rows.num_rows, np.int64))
    return consolidate(rows.append_column(pa.field(DIFF, pa.int64(), False), ones))


def read_view_changes(
    path: str | os.PathLike[str], after: int | None, upto: int, *, name: str | None = None
) -> pa.Table:
    """The view's changes in versions ``(after, upto]`` as rows + ``__diff__`` (its CDF)."""
    _check_format(os.fspath(path))
    return read_changes(path, after, upto, name=name)


# -- maintenance -------------------------------------------------------------------------


def table_rows(path: str | os.PathLike[str]) -> int:
    """Stored rows, deleted ones included (from the log's statistics, no data read)."""
    _, files = delta_commit.snapshot_files(os.fspath(path))
    return sum(max(f.num_records, 0) for f in files.values())


@dataclass(frozen=True)
class Layout:
    """What a reader of the view table's latest version has to open."""

    files: int
    bytes: int
    small_files: int
    records: int
    deleted_records: int
    heavy_files: int  # files whose deletion vector hides over COMPACT_DELETED_FRACTION
    commits_since_checkpoint: int
    version: int = 0


def layout(path: str | os.PathLike[str]) -> Layout:
    p = os.fspath(path)
    return _layout(p, *delta_commit.snapshot_files(p))


def _layout(p: str, version: int, files: Mapping[str, FileEntry]) -> Layout:
    last = storage.join(p, delta_commit.LOG_DIR, "_last_checkpoint")
    cp = -1
    with contextlib.suppress(FileNotFoundError):
        cp = int(json.loads(storage.backend(p).read_bytes(last))["version"])
    return Layout(
        files=len(files),
        bytes=sum(f.size for f in files.values()),
        small_files=sum(1 for f in files.values() if _small(f)),
        records=sum(max(f.num_records, 0) for f in files.values()),
        deleted_records=sum(
            f.deletion_vector.cardinality for f in files.values() if f.deletion_vector
        ),
        heavy_files=sum(
            1
            for f in files.values()
            if f.deletion_vector is not None
            and f.deletion_vector.cardinality > COMPACT_DELETED_FRACTION * f.num_records
        ),
        commits_since_checkpoint=version - cp if cp >= 0 else version + 1,
        version=version,
    )


def needs_compaction(path: str | os.PathLike[str]) -> bool:
    """Whether small files or rows hidden by deletion vectors have piled up (see docs)."""
    return _needs_compaction(layout(path))


def _needs_compaction(lay: Layout) -> bool:
    if lay.small_files >= COMPACT_SMALL_FILES:
        return True
    return lay.heavy_files > 0


def _heavy(f: FileEntry) -> bool:
    dv = f.deletion_vector
    return dv is not None and dv.cardinality > COMPACT_DELETED_FRACTION * f.num_records


def _rewrite(
    p: str, version: int, groups: list[list[FileEntry]], operation: str
) -> tuple[int, int]:
    """Replace each group of files by files of their live rows (one partition per group),
    as one commit with ``dataChange=false`` (no change data); (files removed, files added)."""
    schema = storage_schema(delta.table_schema(p))
    parts = vp.partition_columns(p)
    clustering = vc.clustering_columns(p)
    now = int(time.time() * 1000)
    actions: list[dict[str, Any]] = []
    added: list[str] = []
    for group in groups:
        live = []
        for f in group:
            data = vp.read_file(p, f, schema)
            if f.deletion_vector is not None:
                keep = np.ones(data.num_rows, dtype=bool)
                keep[dvs.read_positions(p, f.deletion_vector)] = False
                data = data.filter(pa.array(keep))
            live.append(data)
            actions.append({"remove": {**_remove_action(f, now), "dataChange": False}})
        # sorted (by the clustering columns first): tight bounds for _locate and readers
        rows = _sorted(pa.concat_tables(live), clustering)
        if rows.num_rows:
            for add in vp.write_files(p, rows, parts, max_rows=FILE_ROWS):
                actions.append({"add": {**add, "dataChange": False}})
                added.append(delta_commit.file_location(p, add))
    removed = sum(len(g) for g in groups)
    if not removed:
        return 0, 0
    info = delta_commit.commit_info(operation, {"ivm.operation": "compact"})
    delta_commit.commit(p, version + 1, [info, *actions], durable=added)
    return removed, len(added)


def purge_deleted(path: str | os.PathLike[str]) -> int:
    """Rewrite each file whose deletion vector hides over 20 % of its rows without them.

    One commit with ``dataChange=false`` (no change data); returns the files rewritten.
    """
    p = os.fspath(path)
    version, files = delta_commit.snapshot_files(p)
    return _rewrite(p, version, [[f] for f in files.values() if _heavy(f)], "OPTIMIZE")[0]


def compact_view(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """Purge heavily deleted files and pack each partition's small files into one (per
    :data:`FILE_ROWS` rows), in one commit with no data change.

    Written here (catalog.delta_commit) rather than by deltalake's ``optimize.compact``:
    a view refreshed by small changes adds a small file per refresh and is compacted every
    few refreshes, and deltalake's compaction cost ~20 ms a time (it re-reads the table's
    state), a third of such a refresh (``python -m bench refresh``).
    """
    p = os.fspath(path)
    version, files = delta_commit.snapshot_files(p)
    heavy = [f for f in files.values() if _heavy(f)]
    small: dict[str, list[FileEntry]] = {}
    for f in files.values():
        # a file clustered by a clustering implementation is left to it (vc.packable)
        if vc.packable(f, SMALL_FILE_BYTES) and _small(f) and not _heavy(f):
            values = json.dumps(f.action.get("partitionValues") or {}, sort_keys=True)
            small.setdefault(values, []).append(f)
    packs = [g for g in small.values() if len(g) > 1]
    removed, added = _rewrite(p, version, [[f] for f in heavy] + packs, "OPTIMIZE")
    return {
        "purged_files": len(heavy),
        "numFilesRemoved": removed,
        "numFilesAdded": added,
    }


def _log_version(name: str) -> int | None:
    """The version a ``_delta_log`` entry belongs to (``None`` for other files)."""
    head = name.split(".", 1)[0]
    if len(head) != 20 or not head.isdigit() or name == head:
        return None
    return int(head)


def trim_log(path: str | os.PathLike[str], *, keep_versions: int = HISTORY_VERSIONS) -> int:
    """Delete the view table's log entries that only versions before the last
    ``keep_versions`` need; returns how many files were deleted.

    Delta lets a writer remove log entries older than a checkpoint (that is how
    ``delta.logRetentionDuration`` expires them): readers start from the newest checkpoint
    and never look further back.  Keeping the newest checkpoint at or below
    ``version - keep_versions`` and everything after it leaves every version of the window
    readable (time travel, change feed) and every concurrent reader's starting checkpoint in
    place (``keep_versions`` spans several checkpoints).  Without it a view refreshed every
    few seconds keeps every entry for 30 days, and every fresh reader lists them all: 838
    entries after 500 one-row refreshes (issue 12's trickle).  Only view tables are trimmed;
    input tables belong to their writers.
    """
    p = os.fspath(path)
    log = storage.join(p, delta_commit.LOG_DIR)
    store = storage.backend(p)
    names = store.listdir(log)
    versions = {n: _log_version(n) for n in names}
    latest = max(
        (v for n, v in versions.items() if v is not None and n.endswith(".json")), default=-1
    )
    horizon = latest - keep_versions
    checkpoints = [
        v for n, v in versions.items() if v is not None and ".checkpoint." in n and v <= horizon
    ]
    if not checkpoints:
        return 0
    floor = max(checkpoints)
    removed = 0
    for n, v in versions.items():
        if v is not None and v < floor:
            store.delete(storage.join(log, n))  # gone already: a concurrent maintenance
            removed += 1
    return removed


def maintain(
    path: str | os.PathLike[str],
    *,
    retention_hours: int = RETENTION_HOURS,
    history_versions: int | None = None,
) -> dict[str, Any]:
    """The maintenance policy, run after a refresh commit; returns what it did.

    Compact when :func:`needs_compaction`; every :data:`CHECKPOINT_EVERY` commits, write a
    log checkpoint and drop the log of versions older than the last ``history_versions``
    (:func:`trim_log`; default :data:`HISTORY_VERSIONS`); every :data:`VACUUM_EVERY` commits, vacuum files unreferenced for
    ``retention_hours``.
    """
    p = os.fspath(path)
    done: dict[str, Any] = {}
    lay = layout(p)
    if _needs_compaction(lay):
        done["compact"] = compact_view(p)
        lay = layout(p)
    if lay.commits_since_checkpoint > CHECKPOINT_EVERY:
        dt = delta.open_table(p)
        dt.create_checkpoint()
        done["checkpoint"] = True
        keep = HISTORY_VERSIONS if history_versions is None else history_versions
        done["log_files_removed"] = trim_log(p, keep_versions=keep)
        if (
            lay.version // VACUUM_EVERY
            != (lay.version - lay.commits_since_checkpoint) // VACUUM_EVERY
        ):
            done["vacuum"] = len(
                dt.vacuum(
                    retention_hours=retention_hours,
                    enforce_retention_duration=False,
                    dry_run=False,
                )
            )
    return done
