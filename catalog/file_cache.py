"""Rows of the small view files this process just wrote, kept for its next refresh.

A view whose refreshes update rows keeps them in one small file that each refresh rewrites
(catalog.view_table, copy on write): the next refresh reads it back to find the rows it
removes.  Keeping the rows written saves that Parquet read and decode (a 10,000-row view
file: about 1 ms of CPU per refresh).

A data file of a Delta table is never changed once written (its name holds a random UUID),
so a kept table is the file's content as long as the file is the one written: local files
are checked by inode, size and modification time before use; a file on an object store is
not kept (its check would cost a request).  The cache is bounded in rows and files.  Beside a file's rows it may keep their
:class:`catalog.row_index.RowIndex` (the rows as sorted Python tuples), which a small
change searches instead of the rows (:func:`index`, :func:`attach_index`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from catalog import file_stamp, storage
from catalog.row_index import RowIndex

MAX_ROWS = 1 << 20
"""Rows kept in all (the oldest files are dropped first)."""
MAX_FILES = 16
INDEX_ROWS = 1 << 17
"""Rows whose index is kept, in all (an index costs ~250 bytes a row of four columns, seven
times the rows' Arrow bytes: the oldest files' indexes are dropped first, their rows kept)."""

#: how the kept rows are sorted: (sort key, order) pairs as the writer names them; () unknown
SortOrder = tuple[tuple[str, str], ...]
_lock = threading.Lock()
#: location -> (the file's stamp, its rows, how they are sorted, their index or None)
_kept: OrderedDict[str, tuple[file_stamp.Stamp, pa.Table, SortOrder, RowIndex | None]] = (
    OrderedDict()
)


def keep(
    location: str, rows: pa.Table, *, sorted_by: SortOrder = (), index: RowIndex | None = None
) -> None:
    """Remember ``rows`` as the content of the local data file at ``location`` (just
    written), in the schema a read of the file returns (catalog.view_partitions), sorted as
    ``sorted_by`` says (:func:`sorted_by`), with their ``index`` when the caller has it."""
    if storage.is_object_store(location) or rows.num_rows > MAX_ROWS:
        return
    stamp = file_stamp.stamp(location)
    if stamp is None:
        return
    with _lock:
        _kept[location] = (stamp, rows, tuple(sorted_by), index)
        _kept.move_to_end(location)
        while len(_kept) > MAX_FILES or sum(e[1].num_rows for e in _kept.values()) > MAX_ROWS:
            _kept.popitem(last=False)
        _bound_indexes()


def _bound_indexes() -> None:
    """Drop the oldest files' indexes until at most :data:`INDEX_ROWS` rows are indexed (the
    newest file's index stays, whatever its size; caller holds ``_lock``)."""
    indexed = sum(len(e[3]) for e in _kept.values() if e[3] is not None)
    for location, (st, rows_, order, index) in list(_kept.items())[:-1]:
        if indexed <= INDEX_ROWS:
            return
        if index is not None:
            _kept[location] = (st, rows_, order, None)
            indexed -= len(index)


def rows(location: str, schema: pa.Schema) -> pa.Table | None:
    """The kept rows of the file at ``location`` in ``schema``, or ``None`` (not kept, the
    file is not the one written, or kept in another schema)."""
    with _lock:
        hit = _kept.get(location)
    if hit is None or not hit[1].schema.equals(schema):
        return None
    if file_stamp.stamp(location) != hit[0]:
        with _lock:
            _kept.pop(location, None)
        return None
    return hit[1]


def sorted_by(location: str) -> SortOrder:
    """How the rows kept for ``location`` are sorted, as :func:`keep` was told (``()``: not
    kept, or unknown).  Ask after :func:`rows` found them."""
    with _lock:
        hit = _kept.get(location)
    return () if hit is None else hit[2]


def index(location: str, rows: pa.Table) -> RowIndex | None:
    """The index kept with ``rows`` (the table :func:`rows` returned) for ``location``, or
    ``None``."""
    with _lock:
        hit = _kept.get(location)
    return hit[3] if hit is not None and hit[1] is rows else None


def detach_index(location: str, rows: pa.Table) -> RowIndex | None:
    """The index kept with ``rows`` for ``location``, taken away from them (the caller
    changes it to describe a new file's rows: catalog.row_index ``merge``), or ``None``."""
    with _lock:
        hit = _kept.get(location)
        if hit is None or hit[1] is not rows or hit[3] is None:
            return None
        _kept[location] = (hit[0], hit[1], hit[2], None)
        return hit[3]


def attach_index(location: str, rows: pa.Table, found: RowIndex) -> None:
    """Keep ``found``, the index of ``rows`` (the table :func:`rows` returned), with them."""
    with _lock:
        hit = _kept.get(location)
        if hit is not None and hit[1] is rows and len(found) == rows.num_rows:
            _kept[location] = (hit[0], hit[1], hit[2], found)
            _kept.move_to_end(location)
            _bound_indexes()


def clear() -> None:
    with _lock:
        _kept.clear()
