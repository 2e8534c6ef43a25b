"""One Delta commit's actions, read from the table's log (``_delta_log/<version>.json``).

The change capture (catalog.capture) needs, per commit, what the writer *did* — which data
files it added and removed, whether it wrote change-data (``cdc``) files, the metrics it
claims (``commitInfo.operationMetrics``), and any new table metadata (``metaData``: the table
id and configuration) — not only the feed a reader derives from it.  delta-rs does not expose
a commit's actions, so this module reads the commit file itself (newline-delimited JSON, one
action per line, as the Delta protocol specifies).  Only the fields used are decoded.

A commit file can be gone (log clean-up after ``delta.logRetentionDuration``): then
:func:`read_commit` returns ``None`` and the caller falls back to comparing snapshots.

>>> import pyarrow as pa, tempfile
>>> from catalog import delta
>>> p = tempfile.mkdtemp() + "/t"
>>> _ = delta.create_table(p, pa.schema([("id", pa.int64())]))
>>> c = read_commit(p, delta.insert(p, pa.table({"id": [1, 2]})).version)
>>> (c.operation, len(c.adds), c.adds[0].num_records, c.data_changed)
('WRITE', 1, 2, True)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from catalog import storage
from catalog.errors import DeltaOperationError


@dataclass(frozen=True)
class FileAction:
    """An ``add`` or ``remove`` of one data file (``path`` relative to the table, decoded)."""

    path: str
    data_change: bool
    deletion_vector: bool
    num_records: int | None = None
    partitioned: bool = False  # the action carries partition values (not in the file)


@dataclass(frozen=True)
class Commit:
    """The actions of one table version that matter to change capture."""

    version: int
    operation: str
    metrics: Mapping[str, Any]
    adds: tuple[FileAction, ...]
    removes: tuple[FileAction, ...]
    table_id: str | None = None
    configuration: Mapping[str, str] | None = None
    cdcs: tuple[FileAction, ...] = ()  # the change-data files (``cdc`` actions)

    @property
    def data_changed(self) -> bool:
        """Whether the commit changed rows (``dataChange`` files or change-data files).

        OPTIMIZE, VACUUM and pure metadata commits change none: they contribute nothing.
        """
        return bool(self.cdcs) or any(a.data_change for a in (*self.adds, *self.removes))

    @property
    def uses_deletion_vectors(self) -> bool:
        return any(a.deletion_vector for a in (*self.adds, *self.removes))


def commit_file(path: str | os.PathLike[str], version: int) -> str:
    return storage.join(os.fspath(path), "_delta_log", f"{int(version):020d}.json")


def _file_action(d: Mapping[str, Any]) -> FileAction:
    records = None
    stats = d.get("stats")
    if isinstance(stats, str) and stats:
        try:
            n = json.loads(stats).get("numRecords")
            records = int(n) if n is not None else None
        except (ValueError, TypeError, AttributeError):
            records = None
    return FileAction(
        path=unquote(str(d["path"])),
        data_change=bool(d.get("dataChange", True)),
        deletion_vector=d.get("deletionVector") is not None,
        num_records=records,
        partitioned=bool(d.get("partitionValues")),
    )


def read_commit(path: str | os.PathLike[str], version: int) -> Commit | None:
    """The actions of ``version``, or ``None`` when its commit file no longer exists."""
    f = commit_file(path, version)
    try:
        lines = storage.backend(f).read_bytes(f).decode("utf-8").splitlines()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DeltaOperationError("read log", os.fspath(path), str(exc)) from exc
    operation, metrics = "", {}
    adds: list[FileAction] = []
    removes: list[FileAction] = []
    cdcs: list[FileAction] = []
    table_id: str | None = None
    conf: dict[str, str] | None = None
    try:
        for line in lines:
            if not line.strip():
                continue
            action = json.loads(line)
            if "add" in action:
                adds.append(_file_action(action["add"]))
            elif "remove" in action:
                removes.append(_file_action(action["remove"]))
            elif "cdc" in action:
                cdcs.append(_file_action(action["cdc"]))
            elif "commitInfo" in action:
                info = action["commitInfo"]
                operation = str(info.get("operation", ""))
                metrics = dict(info.get("operationMetrics") or {})
            elif "metaData" in action:
                meta = action["metaData"]
                table_id = meta.get("id")
                conf = {str(k): str(v) for k, v in (meta.get("configuration") or {}).items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise DeltaOperationError("read log", os.fspath(path), f"{f}: {exc}") from exc
    return Commit(
        version=int(version),
        operation=operation,
        metrics=metrics,
        adds=tuple(adds),
        removes=tuple(removes),
        table_id=table_id,
        configuration=conf,
        cdcs=tuple(cdcs),
    )
