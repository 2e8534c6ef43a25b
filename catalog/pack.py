"""Several Arrow tables in one file: Arrow IPC files back to back, each found by its byte range.

A checkpoint save writes all its new tables into one *pack* (catalog.checkpoint), so a save
creates and fsyncs one data file however many state entries it has.  Each table is a
complete Arrow IPC file (magic, schema, batches, footer) starting at a 64-byte aligned offset,
written in place, so its footer gives its blocks' offsets in the pack (Arrow's "file embedded
in a larger file", read with ``footer_offset``).  The caller records ``(offset, length)`` per
table and reads a table back from the memory-mapped pack without a copy.

Tables from :data:`COMPRESS_ROWS` rows (a base's traces) are LZ4-compressed: sorted keys,
repeated keys and multiplicities of 1 shrink several-fold; smaller ones (a refresh's deltas)
stay uncompressed and are read without a copy.  LZ4 rather than zstd (format 1's codec, still
read): the 1M-row join-aggregate's base (33 MB of traces) is written in 26 ms instead of
65 ms, 9.2 MB instead of 6.5 MB on disk, and a base is written every ~20 refreshes of a
1,200-row change (``python -m bench refresh-cpu``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from catalog.object_path import is_object_path

COMPRESS_ROWS = 65_536
CODEC = "lz4"
ALIGN = 64
Range = tuple[int, int]  # (offset, length) of one table in its pack


def write_pack(path: Path, tables: Sequence[pa.Table]) -> list[Range]:
    """Write ``tables`` into the new file ``path`` (not yet durable locally: the caller
    fsyncs it); returns each table's byte range, in order.  An object store gets one PUT;
    a local pack of few rows is encoded in memory and written by one call (Arrow's file
    writes each IPC message: 0.15 ms instead of 0.19 for three 10-row tables, CPU)."""
    if is_object_path(path):
        buf = pa.BufferOutputStream()
        ranges = _write_all(buf, tables)
        path.write_bytes(buf.getvalue().to_pybytes())
        return ranges
    if sum(t.num_rows for t in tables) < COMPRESS_ROWS:  # a refresh's few rows: one write
        buf = pa.BufferOutputStream()
        ranges = _write_all(buf, tables)
        with open(path, "wb") as f:
            f.write(memoryview(buf.getvalue()))
        return ranges
    with pa.OSFile(str(path), "wb") as sink:  # a base: streamed, not held twice
        return _write_all(sink, tables)


def _write_all(sink: pa.NativeFile, tables: Sequence[pa.Table]) -> list[Range]:
    ranges: list[Range] = []
    for table in tables:
        start = sink.tell()
        options = pa.ipc.IpcWriteOptions(
            compression=CODEC if table.num_rows >= COMPRESS_ROWS else None
        )
        with pa.ipc.new_file(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        end = sink.tell()
        ranges.append((start, end - start))
        if end % ALIGN:
            sink.write(b"\0" * (ALIGN - end % ALIGN))
    return ranges


class PackReader:
    """Reads tables out of packs (and whole IPC files), each file opened once: memory-mapped
    locally, fetched with one GET from an object store."""

    def __init__(self) -> None:
        self._open: dict[str, pa.Buffer] = {}

    def read(self, path: Path, offset: int = 0, length: int | None = None) -> pa.Table:
        """The table at ``offset`` (``length`` bytes; ``None``: the whole file) of ``path``."""
        whole = self._buffer(path)
        if length is None:
            return pa.ipc.open_file(whole).read_all()
        if offset < 0 or length <= 0 or offset + length > whole.size:
            raise pa.ArrowInvalid(f"{path}: bytes {offset}+{length} past its end ({whole.size})")
        # an embedded IPC file: its footer ends at ``offset + length`` and gives its blocks'
        # offsets in the whole file (they were written at their place in the pack)
        return pa.ipc.open_file(whole, footer_offset=offset + length).read_all()

    def _buffer(self, path: Path) -> pa.Buffer:
        key = str(path)
        buf = self._open.get(key)
        if buf is None:
            if is_object_path(path):
                buf = pa.py_buffer(path.read_bytes())
            else:
                with pa.memory_map(key, "r") as source:
                    buf = source.read_buffer()
            self._open[key] = buf
        return buf
