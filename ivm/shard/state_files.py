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
            t = table.replace_schema_metadata(meta)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            buf = sink.getvalue()
            f.write(_LEN.pack(buf.size))
            f.write(buf)
            size += _LEN.size + buf.size
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
    data = Path(path).read_bytes()
    out: dict[str, pa.Table] = {}
    pos = 0
    while pos < len(data):
        (n,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        t = pa.ipc.open_stream(pa.py_buffer(data[pos : pos + n])).read_all()
        pos += n
        meta = dict(t.schema.metadata or {})
        name = meta.pop(b"name").decode()
        out[name] = t.replace_schema_metadata(meta or None)
    return out
