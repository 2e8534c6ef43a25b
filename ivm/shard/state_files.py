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


def ipc_bytes(table: pa.Table) -> pa.Buffer:
    """``table`` as one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


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


def read_framed(data: pa.Buffer | bytes) -> Iterator[pa.Table]:
    """The Arrow tables of length-prefixed IPC streams, in order.  The tables' columns are
    zero-copy views of ``data`` (slices of one buffer, not copies)."""
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    view = memoryview(buf)
    pos = 0
    while pos < buf.size:
        (n,) = _LEN.unpack_from(view, pos)
        pos += _LEN.size
        yield pa.ipc.open_stream(buf.slice(pos, n)).read_all()
        pos += n


def read_buffer(path: str | os.PathLike[str], offset: int = 0, size: int = -1) -> pa.Buffer:
    """``size`` bytes of the file at ``path`` from ``offset`` (-1: to its end), read once
    into one Arrow buffer (tables read from it share it)."""
    with pa.OSFile(os.fspath(path)) as f:
        f.seek(offset)
        return f.read_buffer(None if size < 0 else size)


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
    for t in read_framed(read_buffer(path)):
        meta = dict(t.schema.metadata or {})
        name = meta.pop(b"name").decode()
        out[name] = t.replace_schema_metadata(meta or None)
    return out
