"""Tables, views, Delta I/O, change feeds, state checkpoints and atomic refresh commits.

Modules, one job each:

* :mod:`catalog.errors` — the typed errors (``CatalogError`` and subclasses);
* :mod:`catalog.names` — identifiers (``name`` / ``db.name``), validated and normalized;
* :mod:`catalog.paths` — the warehouse layout; nothing is written outside it;
* :mod:`catalog.dtypes` — Delta/Arrow types <-> engine dtypes;
* :mod:`catalog.delta` — Delta tables through delta-rs: create, insert/delete/update/merge,
  snapshots, history, commit metadata;
* :mod:`catalog.changes` — a table's changes between versions as ``(row, __diff__)`` batches;
* :mod:`catalog.delta_log` — one commit's actions, read from the Delta log;
* :mod:`catalog.table_check` — what a location holds when it is no Delta table spark-ivm can
  use (for the typed errors);
* :mod:`catalog.capture` — change capture verified per commit (feed vs metrics, file diffs);
* :mod:`catalog.view_table` — a view stored as its rows, one Delta commit per refresh
  (:mod:`catalog.delta_commit` writes data files and log entries, :mod:`catalog.deletion_vectors`;
  :mod:`catalog.change_feed` its change data, updates of keyed views as pre/post-images,
  the key read off the view's SQL by :mod:`catalog.view_key`);
* :mod:`catalog.checkpoint` — atomic state checkpoints;
* :mod:`catalog.refresh` — the atomic refresh protocol (checkpoint, then idempotent commits);
* :mod:`catalog.locks` — one writer per view group across processes;
* :mod:`catalog.store` — the persisted list of tables and views;
* :mod:`catalog.manager` — :class:`Catalog`, the facade the Session uses.
"""

from __future__ import annotations

from catalog.errors import (
    CatalogError,
    ChangesUnavailableError,
    CheckpointError,
    DeltaOperationError,
    DependencyError,
    DroppedInputError,
    InvalidIdentifierError,
    InvalidPathError,
    NameClashError,
    NotADeltaTableError,
    RecoveryError,
    RefreshBusyError,
    SchemaChangeError,
    TableReplacedError,
    UnknownTableError,
    UnknownViewError,
    UnsupportedProtocolError,
    UnsupportedTypeError,
)
from catalog.manager import Catalog
from catalog.names import Identifier, parse_identifier
from catalog.paths import Warehouse

__all__ = [
    "Catalog",
    "CatalogError",
    "ChangesUnavailableError",
    "CheckpointError",
    "DeltaOperationError",
    "DependencyError",
    "DroppedInputError",
    "Identifier",
    "InvalidIdentifierError",
    "InvalidPathError",
    "NameClashError",
    "NotADeltaTableError",
    "RecoveryError",
    "RefreshBusyError",
    "SchemaChangeError",
    "TableReplacedError",
    "UnknownTableError",
    "UnknownViewError",
    "UnsupportedProtocolError",
    "UnsupportedTypeError",
    "Warehouse",
    "parse_identifier",
]
