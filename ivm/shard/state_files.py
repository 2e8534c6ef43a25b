"""Shard state and batches in framed Arrow IPC files (checkpoints, input parts, outputs).

A file is a sequence of Arrow IPC streams, each prefixed by its length, each table named in
its schema metadata (``name``).  Writes are atomic (a temporary file renamed into place).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from ivm.dataflow import Dataflow, _to_arrow

_LEN = struct.Struct("<Q")


def write_framed(f: BinaryIO, table: pa.Table) -> int:
    """Write ``table`` to ``f`` as one IPC stream prefixed by its length, streamed (no
    serialized copy of the table is made: the length is written once the stream is); the
    bytes written.  ``f`` must be seekable."""
    start = f.tell()
    f.write(_LEN.pack(0))
    with pa.ipc.new_stream(pa.PythonFile(f, mode="w"), table.schema) as w:
        w.write_table(table)
    end = f.tell()
    f.seek(start)
    f.write(_LEN.pack(end - start - _LEN.size))
    f.seek(end)
    return end - start


def read_framed(
    path: str | os.PathLike[str], offset: int = 0, size: int = -1
) -> Iterator[pa.Table]:
    """The Arrow tables of the length-prefixed IPC streams in ``size`` bytes of the file at
    ``path`` from ``offset`` (-1: to its end), in order.  Each stream is read once into a
    buffer of its own, which its table's columns view (no further copy; a table kept
    alive keeps only its own bytes)."""
    with pa.OSFile(os.fspath(path)) as f:
        end = f.size() if size < 0 else offset + size
        pos = offset
        f.seek(pos)
        while pos < end:
            (n,) = _LEN.unpack(f.read(_LEN.size))
            yield pa.ipc.open_stream(f.read_buffer(n)).read_all()
            pos += _LEN.size + n


def write_tables(
    path: str | os.PathLike[str], tables: Mapping[str, pa.Table] | Iterable[tuple[str, pa.Table]]
) -> int:
    """Write ``tables`` (a mapping, or ``(name, table)`` pairs produced one at a time, so
    that a large checkpoint is never all in memory twice) into one file at ``path``, each
    streamed straight into the file; returns its size in bytes."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    size = 0
    items = tables.items() if isinstance(tables, Mapping) else tables
    with open(tmp, "wb") as f:
        for name, table in items:
            meta = dict(table.schema.metadata or {})
            meta[b"name"] = name.encode()
            size += write_framed(f, table.replace_schema_metadata(meta))
            del table
    os.replace(tmp, p)
    return size


def dataflow_state(g: Dataflow) -> Iterator[tuple[str, pa.Table]]:
    """:meth:`Dataflow.state <ivm.dataflow.Dataflow.state>` one trace at a time."""
    yield "__meta__", g.state_meta()
    for op in g.ops:
        for key, (cols, times, diff) in op.state().items():
            yield f"{op.id}.{key}", _to_arrow(cols, times, diff)


def read_tables(path: str | os.PathLike[str]) -> dict[str, pa.Table]:
    """The tables written by :func:`write_tables`, by name."""
    out: dict[str, pa.Table] = {}
    for t in read_framed(path):
        meta = dict(t.schema.metadata or {})
        name = meta.pop(b"name").decode()
        out[name] = t.replace_schema_metadata(meta or None)
    return out
