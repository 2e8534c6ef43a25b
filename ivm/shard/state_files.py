"""Shard state and batches in framed Arrow IPC files (checkpoints, input parts, outputs).

A file is a sequence of Arrow IPC streams, each prefixed by its length, each table named in
its schema metadata (``name``).  Writes are atomic (a temporary file renamed into place).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pyarrow as pa

from ivm.dataflow import Dataflow, _to_arrow

_LEN = struct.Struct("<Q")


def ipc_bytes(table: pa.Table) -> pa.Buffer:
    """``table`` as one Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def framed(buf: pa.Buffer | bytes) -> bytes:
    """``buf`` prefixed with its length (the frames :func:`read_framed` reads back)."""
    return _LEN.pack(len(buf)) + bytes(buf)


def read_framed(data: bytes) -> Iterator[pa.Table]:
    """The Arrow tables of a byte string of length-prefixed IPC streams, in order."""
    pos = 0
    while pos < len(data):
        (n,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        yield pa.ipc.open_stream(pa.py_buffer(data[pos : pos + n])).read_all()
        pos += n


def write_tables(
    path: str | os.PathLike[str], tables: Mapping[str, pa.Table] | Iterable[tuple[str, pa.Table]]
) -> int:
    """Write ``tables`` (a mapping, or ``(name, table)`` pairs produced one at a time, so
    that a large checkpoint is never all in memory twice) into one file at ``path``;
    returns its size in bytes."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    size = 0
    items = tables.items() if isinstance(tables, Mapping) else tables
    with open(tmp, "wb") as f:
        for name, table in items:
            meta = dict(table.schema.metadata or {})
            meta[b"name"] = name.encode()
            frame = framed(ipc_bytes(table.replace_schema_metadata(meta)))
            f.write(frame)
            size += len(frame)
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
    for t in read_framed(Path(path).read_bytes()):
        meta = dict(t.schema.metadata or {})
        name = meta.pop(b"name").decode()
        out[name] = t.replace_schema_metadata(meta or None)
    return out
