"""Shard state and batches in framed Arrow IPC files (checkpoints, input parts, outputs).

A file is a sequence of Arrow IPC streams, each prefixed by its length, each table named in
its schema metadata (``name``).  Writes are atomic (a temporary file renamed into place).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pyarrow as pa

_LEN = struct.Struct("<Q")


def write_tables(path: str | os.PathLike[str], tables: dict[str, pa.Table]) -> int:
    """Write ``tables`` into one file at ``path``; returns its size in bytes."""
    parts = []
    for name, table in tables.items():
        meta = dict(table.schema.metadata or {})
        meta[b"name"] = name.encode()
        t = table.replace_schema_metadata(meta)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        buf = sink.getvalue().to_pybytes()
        parts.append(_LEN.pack(len(buf)) + buf)
    data = b"".join(parts)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, p)
    return len(data)


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
