"""The Delta transaction log, read and written directly, for commits delta-rs cannot make.

delta-rs writes appends, merges and optimizes, but no deletion vectors.  A view refresh
(catalog.view_table) needs one commit that marks rows deleted with deletion vectors, adds a
file of new rows and a change-data file, and records a ``txn``; this module provides the
pieces (Delta PROTOCOL.md, "Delta Log Entries", "Add File and Remove File", "Add CDC File",
"Per-file Statistics"):

* :func:`snapshot_files` replays the log (last checkpoint, then the JSON commits after it)
  into the table's active ``add`` actions, each with its deletion vector and raw statistics;
* :func:`write_data_file` writes a Parquet data (or change-data) file and returns its ``add``
  action with statistics (``numRecords``, ``nullCount``, ``minValues``/``maxValues`` for
  numbers, strings and dates), so readers skip files by key;
* :func:`commit` writes log entry ``version`` with put-if-absent (a hard link of a finished
  file locally, a conditional ``PutObject`` on S3: catalog.storage; the entry appears whole
  or not at all; an existing entry raises :class:`ConcurrentCommitError`).

Every file goes through :mod:`catalog.storage`, so a table may be a local directory or an
``s3://`` location.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as _pc
import pyarrow.parquet as pq

from catalog import storage
from catalog.deletion_vectors import Descriptor
from catalog.errors import DeltaOperationError

pc: Any = _pc  # pyarrow's stubs lack most compute functions

LOG_DIR = "_delta_log"
CDC_DIR = "_change_data"
ROW_GROUP_ROWS = 8192
_COMMIT = re.compile(r"^(\d{20})\.json$")
_MAX_STAT_STRING = 64


class ConcurrentCommitError(DeltaOperationError):
    """Another writer committed the version this writer meant to create."""


@dataclass(frozen=True)
class FileEntry:
    """An active data file: its ``add`` action, statistics and deletion vector."""

    path: str
    size: int
    num_records: int
    stats: Mapping[str, Any]
    deletion_vector: Descriptor | None
    action: Mapping[str, Any]

    @property
    def live_records(self) -> int:
        dv = self.deletion_vector
        return self.num_records - (dv.cardinality if dv is not None else 0)


def _log(table: str) -> str:
    return storage.join(table, LOG_DIR)


def _entry(action: Mapping[str, Any]) -> FileEntry:
    stats_text = action.get("stats")
    stats = json.loads(stats_text) if stats_text else {}
    dv = action.get("deletionVector")
    return FileEntry(
        path=str(action["path"]),
        size=int(action.get("size") or 0),
        num_records=int(stats.get("numRecords", -1)),
        stats=stats,
        deletion_vector=Descriptor.from_json(dv) if dv else None,
        action=action,
    )


def _clean(v: Any) -> Any:
    """A checkpoint row (pyarrow to_pylist) as the JSON action it stands for."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items() if x is not None}
    if isinstance(v, list) and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return {k: x for k, x in v}
    return v


@dataclass
class _Replay:
    """A table's log replayed up to ``latest``: its active ``add`` actions, the latest
    ``txn`` version of each application id (Delta PROTOCOL.md, "Transaction Identifiers") and
    the latest ``domainMetadata`` action of each domain ("Domain Metadata")."""

    latest: int
    files: dict[str, dict[str, Any]]
    txns: dict[str, int]
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the last version whose actions may have changed the schema, metadata or protocol
    #: (``metaData``/``protocol`` seen, or the log checkpoint the replay started from)
    layout: int = -1


_replayed: dict[str, tuple[tuple[int, int, int], _Replay]] = {}


def _commit_stamp(log: str, version: int) -> tuple[int, int, int] | None:
    entry = storage.join(log, f"{version:020d}.json")
    return storage.backend(entry).stamp(entry)


def _replayed_log(table: str) -> _Replay:
    """The table's log replayed to its latest version.

    The last replay of each table is kept: when the log entry of its version is the same
    file, only the JSON entries after it are read (a table recreated at the same path has
    another file there, and is replayed afresh).  The result is shared: do not change it.
    """
    log = _log(table)
    key = storage.normalize(table)
    kept = _replayed.get(key)
    if kept is not None and _commit_stamp(log, kept[1].latest) == kept[0]:
        r = kept[1]
        v = r.latest + 1
        text = _entry_text(storage.join(log, f"{v:020d}.json"))
        if text is not None:
            r = _Replay(r.latest, dict(r.files), dict(r.txns), dict(r.domains), r.layout)
            while text is not None:
                r.latest = v
                _apply(text, r)
                v += 1
                text = _entry_text(storage.join(log, f"{v:020d}.json"))
    else:
        r = _replay(table)
    stamp = _commit_stamp(log, r.latest)
    if stamp is not None:
        _replayed.pop(key, None)
        _replayed[key] = (stamp, r)
        if len(_replayed) > 64:
            _replayed.pop(next(iter(_replayed)))
    return r


def replay_known(table: str) -> bool:
    """Whether a kept log replay of ``table`` is still current at its version (its log entry
    the same file: one ``stat``), so ``table`` is a Delta table — without asking deltalake
    (``DeltaTable.is_deltatable``: ~0.2 ms a call)."""
    kept = _replayed.get(storage.normalize(table))
    return kept is not None and _commit_stamp(_log(table), kept[1].latest) == kept[0]


def snapshot_files(table: str) -> tuple[int, dict[str, FileEntry]]:
    """The latest version and its active files (path -> entry), by log replay."""
    r = _replayed_log(table)
    return r.latest, {p: _entry(a) for p, a in r.files.items()}


def transaction_version(table: str, app_id: str) -> int | None:
    """The version of the latest ``txn`` action of ``app_id`` in the table's log, or ``None``.

    Read from the kept log replay (only the commits since the last call are read), where
    ``deltalake``'s ``transaction_version`` replays the log from its checkpoint every call.
    """
    return _replayed_log(table).txns.get(app_id)


def latest_version(table: str) -> int:
    """The table's latest version, from the kept log replay."""
    return _replayed_log(table).latest


def layout_version(table: str) -> int:
    """The last version of the table that may have changed its schema, metadata or
    protocol, from the kept log replay: a ``DeltaTable`` opened at or after it has the
    current ones, however many data commits came since."""
    return _replayed_log(table).layout


def _entry_text(path: str) -> str | None:
    """Log entry ``path``'s text, ``None`` if there is no such entry."""
    try:
        return storage.backend(path).read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return None


def _apply(text: str, r: _Replay) -> None:
    """Apply one log entry's actions to ``r``."""
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            r.files[action["add"]["path"]] = action["add"]
        elif "remove" in action:
            r.files.pop(action["remove"]["path"], None)
        elif "txn" in action:
            r.txns[str(action["txn"]["appId"])] = int(action["txn"]["version"])
        elif "domainMetadata" in action:
            r.domains[str(action["domainMetadata"]["domain"])] = action["domainMetadata"]
        elif "metaData" in action or "protocol" in action:
            r.layout = r.latest


def _replay(table: str) -> _Replay:
    """The latest version, its active ``add`` actions and ``txn`` versions, from the
    checkpoint and the JSON commits after it."""
    log = _log(table)
    start = -1
    r = _Replay(-1, {}, {})
    store = storage.backend(table)
    names = store.listdir(log)
    if "_last_checkpoint" in names:
        cp = json.loads(store.read_bytes(storage.join(log, "_last_checkpoint")))
        start = int(cp["version"])
        parts = int(cp.get("parts") or 0)
        if parts:
            cp_files = [
                storage.join(log, f"{start:020d}.checkpoint.{i:010d}.{parts:010d}.parquet")
                for i in range(1, parts + 1)
            ]
        else:
            cp_files = [storage.join(log, f"{start:020d}.checkpoint.parquet")]
        for path in cp_files:
            fs, where = store.arrow(path)
            kinds = ("add", "txn", "domainMetadata")
            cols = [c for c in kinds if c in pq.read_schema(where, filesystem=fs).names]
            part = pq.read_table(where, columns=cols, filesystem=fs)
            for a in part.column("add").drop_null().to_pylist() if "add" in cols else []:
                a = _clean(a)
                r.files[a["path"]] = a
            for t in part.column("txn").drop_null().to_pylist() if "txn" in cols else []:
                r.txns[str(t["appId"])] = int(t["version"])
            if "domainMetadata" in cols:
                for d in part.column("domainMetadata").drop_null().to_pylist():
                    r.domains[str(d["domain"])] = d
    versions = sorted(int(m.group(1)) for n in names if (m := _COMMIT.match(n)))
    r.latest = r.layout = start
    for v in versions:
        if v <= start:
            continue
        text = _entry_text(storage.join(log, f"{v:020d}.json"))
        if text is not None:
            r.latest = v
            _apply(text, r)
    if r.latest < 0:
        raise DeltaOperationError("read log", table, "the Delta log has no commit")
    return r


def domain_configuration(table: str, domain: str) -> str | None:
    """The ``configuration`` of the table's latest ``domainMetadata`` action for ``domain``
    (``None``: none, or removed), from the kept log replay."""
    found = _replayed_log(table).domains.get(domain)
    if found is None or found.get("removed"):
        return None
    return str(found.get("configuration") or "")


# -- data files ----------------------------------------------------------------------------


_COMPACT = json.JSONEncoder(separators=(",", ":"))


def compact_json(obj: Any) -> str:
    """``obj`` as JSON without spaces: what ``json.dumps(obj, separators=(",", ":"))`` gives,
    from one kept encoder (``json.dumps`` with options builds a new one per call: ~3 µs,
    and a view commit encodes ~8 objects)."""
    return _COMPACT.encode(obj)


def _stat_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, str) and len(v) > _MAX_STAT_STRING:
        return None
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, (bool, dt.datetime)):
        return None
    if isinstance(v, (int, float, str)):
        return v
    return None


def file_stats(data: pa.Table, written: Any = None) -> dict[str, Any]:
    """Delta per-file statistics of ``data`` (columns whose bounds are unsafe are left out).

    ``written``: the ``pyarrow.parquet.FileMetaData`` of ``data`` just written — the bounds
    of its integer, string and date columns are then the writer's row-group statistics
    (:func:`_written_bounds`) instead of another pass over the rows (a 10,000-row view file:
    0.02 ms instead of ~0.15)."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for j, (name, col) in enumerate(zip(data.column_names, data.columns, strict=True)):
        t = col.type
        nulls[name] = int(col.null_count)
        simple = (
            pa.types.is_integer(t)
            or pa.types.is_floating(t)
            or pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_date(t)
        )
        if not simple or col.null_count == len(col):
            continue
        bounds = _written_bounds(written, j, name, t)
        if bounds is None:
            if pa.types.is_floating(t) and pc.any(pc.is_nan(col)).as_py():
                continue
            mm = pc.min_max(col).as_py()
            bounds = (mm["min"], mm["max"])
        lo, hi = _stat_value(bounds[0]), _stat_value(bounds[1])
        if lo is not None and hi is not None:
            mins[name], maxs[name] = lo, hi
    return {
        "numRecords": data.num_rows,
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": nulls,
    }


def _written_bounds(written: Any, j: int, name: str, t: pa.DataType) -> tuple[Any, Any] | None:
    """Column ``j``'s (min, max) over the row groups of the Parquet metadata ``written``, for
    the types whose statistics Parquet orders as Arrow does (signed integers; strings by
    their bytes; dates); ``None`` when it cannot tell (no metadata, another type, a nested
    schema, a row group with values but no bounds).  The caller checked that ``j`` holds a
    value that is not NULL."""
    exact = pa.types.is_signed_integer(t) or pa.types.is_date32(t)
    if written is None or not (exact or pa.types.is_string(t) or pa.types.is_large_string(t)):
        return None
    if written.num_columns <= j or written.num_row_groups == 0:
        return None
    lo: Any = None
    hi: Any = None
    for g in range(written.num_row_groups):
        chunk = written.row_group(g).column(j)
        if chunk.path_in_schema != name:
            return None
        st = chunk.statistics
        if st is None:
            return None
        if not st.has_min_max:
            if st.has_null_count and st.null_count == chunk.num_values:
                continue  # only NULLs in this row group
            return None
        lo = st.min if lo is None else min(lo, st.min)
        hi = st.max if hi is None else max(hi, st.max)
    return None if lo is None else (lo, hi)


@dataclass(frozen=True)
class Encoded:
    """A local data (or change-data) file encoded in memory, not yet written: ``full`` its
    location, ``action`` its ``add`` / ``cdc`` action (size and statistics included)."""

    full: str
    data: pa.Buffer
    action: dict[str, Any]


def write_data_file(
    table: str,
    data: pa.Table,
    *,
    cdc: bool = False,
    directory: str = "",
    partition_values: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """Write ``data`` as one Parquet file of the table; returns its ``add`` (or ``cdc``) action.

    ``cdc`` files go under ``_change_data/`` and carry no statistics; data files go under
    ``directory`` (a partition's, with its ``partition_values``) or the table's root.  A
    local file is encoded in memory and written with one call (:func:`encode_data_file`,
    :func:`write_encoded`; Arrow's local file writes it piece by piece, then is asked its
    size: ~0.1 ms more for a small file); made durable by the commit that names it
    (:func:`commit`).
    """
    if not storage.is_object_store(table):
        return write_encoded(
            encode_data_file(
                table, data, cdc=cdc, directory=directory, partition_values=partition_values
            )
        )
    rel = _file_name(cdc, directory)
    full = storage.join(table, rel)
    fs, where = storage.backend(table).arrow(full)
    collected: list[Any] = []
    pq.write_table(data, where, filesystem=fs, **_options(data.schema, collected))
    size = int(fs.get_file_info(where).size)
    return _action(rel, data, size, collected[0] if collected else None, cdc, partition_values)


def encode_data_file(
    table: str,
    data: pa.Table,
    *,
    cdc: bool = False,
    directory: str = "",
    partition_values: Mapping[str, str | None] | None = None,
) -> Encoded:
    """:func:`write_data_file`'s file of a local table, encoded in memory only."""
    rel = _file_name(cdc, directory)
    collected: list[Any] = []
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, **_options(data.schema, collected))
    encoded = sink.getvalue()
    written = collected[0] if collected else None
    action = _action(rel, data, int(encoded.size), written, cdc, partition_values)
    return Encoded(storage.join(table, rel), encoded, action)


def write_encoded(e: Encoded) -> dict[str, Any]:
    """Write the encoded file ``e`` (a new file: its name holds a random UUID); its action."""
    os.makedirs(os.path.dirname(e.full), exist_ok=True)
    with open(e.full, "wb") as f:
        f.write(memoryview(e.data))
    return e.action


def _file_name(cdc: bool, directory: str) -> str:
    """A new data file's path relative to the table."""
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    if cdc:
        return f"{CDC_DIR}/cdc-{name[len('part-') :]}"
    return f"{directory}/{name}" if directory else name


def _action(
    rel: str,
    data: pa.Table,
    size: int,
    written: Any,
    cdc: bool,
    partition_values: Mapping[str, str | None] | None,
) -> dict[str, Any]:
    """The ``add`` (``cdc``) action of the file ``rel`` holding ``data`` (``written``: its
    Parquet metadata, for :func:`file_stats`)."""
    action: dict[str, Any] = {
        "path": quote(rel, safe="/="),  # a URI, as the protocol says (and delta-rs writes)
        "partitionValues": dict(partition_values or {}),
        "size": size,
    }
    if cdc:
        action["dataChange"] = False
        return action
    action.update(
        modificationTime=int(time.time() * 1000),
        dataChange=True,
        stats=compact_json(file_stats(data, written)),
    )
    return action


def _options(schema: pa.Schema, collected: list[Any]) -> dict[str, Any]:
    """The Parquet writer's options for a file of ``schema`` (its metadata, statistics
    included, appended to ``collected``)."""
    return {
        "compression": "snappy",
        "row_group_size": ROW_GROUP_ROWS,
        "use_dictionary": dictionary_columns(schema),
        "column_encoding": delta_columns(schema),
        "metadata_collector": collected,
    }


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns worth dictionary-encoding: strings and binaries (repeated values shrink
    several-fold).  Numbers stay plain: their dictionary costs more to build than it saves
    after snappy (a 10,000-row view file: written in 1.2 ms instead of 2.2 ms, and smaller)."""
    return [
        f.name
        for f in schema
        if pa.types.is_string(f.type)
        or pa.types.is_large_string(f.type)
        or pa.types.is_binary(f.type)
        or pa.types.is_large_binary(f.type)
        or pa.types.is_dictionary(f.type)
    ]


def delta_columns(schema: pa.Schema) -> dict[str, str]:
    """The integer columns, written ``DELTA_BINARY_PACKED`` (Parquet's delta encoding of
    INT32/INT64, read by Spark 3.3+, delta-rs and pyarrow): a sorted or narrow column packs to
    the bits its differences need.  The 10,000-row view file of ``bench refresh`` (a string
    and three integer columns): 32 KB instead of 103 KB, encoded in 0.53 ms instead of 0.66
    (CPU; plain encoding spent most of it compressing)."""
    return {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_integer(f.type)}


# -- commits -------------------------------------------------------------------------------


def commit(
    table: str,
    version: int,
    actions: Sequence[Mapping[str, Any]],
    *,
    durable: Sequence[str] = (),
    sync_entry: bool = True,
) -> None:
    """Create log entry ``version`` holding ``actions`` (one JSON object per line), atomically.

    ``durable``: the files this writer wrote for the entry (data, change-data, deletion-vector
    files), made durable together with the entry before it appears (catalog.storage
    ``put_if_absent``), so a durable entry never names a file a crash lost.
    ``sync_entry=False``: the entry's name in the log directory is made durable by the
    caller (:func:`log_directory`'s ``fsync``; catalog.refresh joins it to the next
    checkpoint's barrier).
    """
    final = storage.join(_log(table), f"{version:020d}.json")
    text = "".join([compact_json(a) + "\n" for a in actions])
    backend = storage.backend(table)
    if not backend.put_if_absent(final, text.encode("utf-8"), durable, sync_entry=sync_entry):
        raise ConcurrentCommitError(
            "commit", table, f"version {version} was committed by another writer; retry"
        )


def log_directory(table: str) -> str:
    """The table's ``_delta_log`` directory."""
    return _log(table)


def file_location(table: str, action: Mapping[str, Any]) -> str:
    """Where the file an ``add`` / ``cdc`` action names lives (its path is a relative URI)."""
    return storage.join(table, unquote(str(action["path"])))


def commit_info(operation: str, metadata: Mapping[str, str], **fields: Any) -> dict[str, Any]:
    """A ``commitInfo`` action; ``metadata`` keys become top-level fields (as delta-rs does)."""
    info: dict[str, Any] = {
        "timestamp": int(time.time() * 1000),
        "operation": operation,
        "operationParameters": {},
        "engineInfo": "spark-ivm",
        **fields,
    }
    info.update({str(k): str(v) for k, v in metadata.items()})
    return {"commitInfo": info}
