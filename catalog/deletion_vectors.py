"""Delta deletion vectors: the sets of deleted row positions of a data file, on disk.

A deletion vector (DV) marks rows of a Parquet data file as deleted without rewriting the
file (Delta PROTOCOL.md, "Deletion Vectors" and appendix "Deletion Vector Format").  This
module reads and writes them, with no dependency beyond numpy:

* a DV is a set of row positions (0-based, in file order), serialized as Delta's magic number
  ``1681511377`` followed by a 64-bit "portable" RoaringBitmap (the older "native" layout is
  read too): a count of 32-bit buckets,
  then per bucket its high 32 bits and a 32-bit RoaringBitmap in the standard portable format
  (array and bitmap containers written; array, bitmap and run containers read);
* a DV file holds a format byte ``1`` then, per DV, its size (big-endian int32), the bytes and
  their CRC-32 (big-endian); a :class:`Descriptor` points into it by ``offset``;
* files are named ``deletion_vector_<uuid>.bin`` in the table's root, and a descriptor names
  them by the Z85 text of the UUID's 16 bytes (storage type ``u``).

>>> d = roaring64_bytes(np.array([3, 4, 7, 11, 18, 29]))
>>> roaring64_positions(d).tolist()
[3, 4, 7, 11, 18, 29]
>>> z85_decode(z85_encode(bytes(range(16)))) == bytes(range(16))
True
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from catalog import storage
from catalog.errors import CatalogError

MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
FORMAT_VERSION = 1
NO_RUN_COOKIE = 12346
RUN_COOKIE = 12347
ARRAY_MAX = 4096
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(Z85)}


class DeletionVectorError(CatalogError):
    """A deletion vector that cannot be read (bad bytes, checksum, unsupported storage)."""


# -- Z85 ---------------------------------------------------------------------------------


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data`` (length a multiple of 4), as Delta descriptors use it."""
    if len(data) % 4:
        raise ValueError("Z85 encodes multiples of 4 bytes")
    out = []
    for (word,) in struct.iter_unpack(">I", data):
        chars = []
        for _ in range(5):
            word, r = divmod(word, 85)
            chars.append(Z85[r])
        out.append("".join(reversed(chars)))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text of length {len(text)} is not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        word = 0
        for c in text[i : i + 5]:
            word = word * 85 + _Z85_INDEX[c]
        out += struct.pack(">I", word)
    return bytes(out)


# -- RoaringBitmap -----------------------------------------------------------------------


def _roaring32_bytes(values: np.ndarray) -> bytes:
    """Portable 32-bit RoaringBitmap of sorted unique uint32 ``values`` (no run containers)."""
    highs = (values >> 16).astype(np.uint16)
    keys, starts = np.unique(highs, return_index=True)
    ends = [*starts[1:], len(values)]
    header = [struct.pack("<II", NO_RUN_COOKIE, len(keys))]
    bodies: list[bytes] = []
    for k, s, e in zip(keys, starts, ends, strict=True):
        lows = (values[s:e] & 0xFFFF).astype("<u2")
        header.append(struct.pack("<HH", int(k), len(lows) - 1))
        if len(lows) <= ARRAY_MAX:
            bodies.append(lows.tobytes())
        else:
            bits = np.zeros(1 << 16, dtype=bool)
            bits[lows] = True
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    offset = 8 + 4 * len(keys) + 4 * len(keys)
    offsets = []
    for b in bodies:
        offsets.append(struct.pack("<I", offset))
        offset += len(b)
    return b"".join([*header, *offsets, *bodies])


def _roaring32_read(buf: memoryview, pos: int) -> tuple[np.ndarray, int]:
    """Values of the 32-bit RoaringBitmap at ``buf[pos:]`` and the position after it."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie == NO_RUN_COOKIE:
        (n,) = struct.unpack_from("<I", buf, pos + 4)
        runs = np.zeros(n, dtype=bool)
        p = pos + 8
        has_offsets = True
    elif cookie & 0xFFFF == RUN_COOKIE:
        n = (cookie >> 16) + 1
        flags = np.frombuffer(buf, np.uint8, (n + 7) // 8, pos + 4)
        runs = np.unpackbits(flags, bitorder="little")[:n].astype(bool)
        p = pos + 4 + (n + 7) // 8
        has_offsets = n >= 4
    else:
        raise DeletionVectorError(f"not a RoaringBitmap (cookie {cookie})")
    desc = np.frombuffer(buf, "<u2", 2 * n, p).reshape(n, 2) if n else np.zeros((0, 2), "<u2")
    p += 4 * n
    if has_offsets:
        p += 4 * n
    parts = []
    for i in range(n):
        key, card = int(desc[i, 0]), int(desc[i, 1]) + 1
        if runs[i]:
            (nruns,) = struct.unpack_from("<H", buf, p)
            pairs = np.frombuffer(buf, "<u2", 2 * nruns, p + 2).reshape(nruns, 2).astype(np.int64)
            p += 2 + 4 * nruns
            runs_ = [np.arange(s, s + ln + 1) for s, ln in pairs]
            lows = np.concatenate(runs_) if runs_ else np.zeros(0, np.int64)
        elif card <= ARRAY_MAX:
            lows = np.frombuffer(buf, "<u2", card, p).astype(np.int64)
            p += 2 * card
        else:
            words = np.frombuffer(buf, np.uint8, 8192, p)
            lows = np.flatnonzero(np.unpackbits(words, bitorder="little"))
            p += 8192
        parts.append((key << 16) + np.asarray(lows, np.int64))
    vals = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return vals, p


def roaring64_bytes(positions: np.ndarray) -> bytes:
    """Delta's serialized DV (magic number + 64-bit portable RoaringBitmap) of ``positions``."""
    pos = np.unique(np.asarray(positions, dtype=np.int64))
    if len(pos) and pos[0] < 0:
        raise ValueError("row positions are non-negative")
    highs = pos >> 32
    keys, starts = np.unique(highs, return_index=True)
    ends = [*starts[1:], len(pos)]
    out = [struct.pack("<IQ", MAGIC, len(keys))]
    for k, s, e in zip(keys, starts, ends, strict=True):
        out.append(struct.pack("<I", int(k)))
        out.append(_roaring32_bytes((pos[s:e] & 0xFFFFFFFF).astype(np.uint32)))
    return b"".join(out)


def roaring64_positions(data: bytes) -> np.ndarray:
    """The sorted row positions of a serialized DV (inverse of :func:`roaring64_bytes`)."""
    buf = memoryview(data)
    if len(buf) < 12:
        raise DeletionVectorError("deletion vector too short")
    if struct.unpack_from(">I", buf, 0)[0] == NATIVE_MAGIC:
        return _native_positions(buf)
    magic, n = struct.unpack_from("<IQ", buf, 0)
    if magic != MAGIC:
        raise DeletionVectorError(f"bad deletion vector magic number {magic}")
    p = 12
    bitmaps = []
    for _ in range(n):
        (key,) = struct.unpack_from("<I", buf, p)
        vals, p = _roaring32_read(buf, p + 4)
        bitmaps.append((key, vals))
    return _with_high_keys(bitmaps)


def _native_positions(buf: memoryview) -> np.ndarray:
    """The older "native" layout (magic 1681511376, as in PROTOCOL.md's inline example):
    a count of 32-bit bitmaps for high keys 0, 1, ..., each preceded by its byte size."""
    (n,) = struct.unpack_from(">I", buf, 4)
    p = 8
    bitmaps = []
    for key in range(n):
        (size,) = struct.unpack_from(">I", buf, p)
        bitmaps.append((key, _roaring32_read(buf, p + 4)[0]))
        p += 4 + size
    return _with_high_keys(bitmaps)


def _with_high_keys(bitmaps: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """The 64-bit positions of 32-bit bitmaps, each under its high key (in key order)."""
    parts = [(np.int64(key) << 32) + vals for key, vals in bitmaps]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


# -- descriptors and files ---------------------------------------------------------------


@dataclass(frozen=True)
class Descriptor:
    """A ``deletionVector`` field of an ``add`` / ``remove`` action."""

    storage_type: str
    path_or_inline: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
        }
        if self.offset is not None:
            d["offset"] = self.offset
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Descriptor:
        off = d.get("offset")
        return Descriptor(
            str(d["storageType"]),
            str(d["pathOrInlineDv"]),
            int(d["sizeInBytes"]),
            int(d["cardinality"]),
            None if off is None else int(off),
        )

    def file_path(self, table: str) -> str:
        """Where the DV's file lives (``u``: relative, with optional prefix; ``p``: absolute)."""
        if self.storage_type == "p":
            p = self.path_or_inline
            return p[len("file://") :] if p.startswith("file://") else p
        if self.storage_type != "u":
            raise DeletionVectorError(f"inline deletion vector has no file ({self})")
        prefix, code = self.path_or_inline[:-20], self.path_or_inline[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(code))}.bin"
        return storage.join(table, prefix, name) if prefix else storage.join(table, name)


def read_positions(table: str, dv: Descriptor) -> np.ndarray:
    """The deleted row positions that ``dv`` describes."""
    if dv.storage_type == "i":
        data = z85_decode(dv.path_or_inline)[: dv.size_in_bytes]
    else:
        path = dv.file_path(table)
        fs, where = storage.backend(path).arrow(path)
        with fs.open_input_file(where) as f:
            f.seek(dv.offset or 1)
            (size,) = struct.unpack(">i", f.read(4))
            data = f.read(size)
            (crc,) = struct.unpack(">I", f.read(4))
        if size != dv.size_in_bytes or zlib.crc32(data) != crc:
            raise DeletionVectorError(f"deletion vector in {path!r} is damaged (size or CRC)")
    pos = roaring64_positions(data)
    if len(pos) != dv.cardinality:
        raise DeletionVectorError(
            f"deletion vector holds {len(pos)} rows, its descriptor says {dv.cardinality}"
        )
    return pos


def write_file(table: str, vectors: Sequence[np.ndarray]) -> tuple[str, int, list[Descriptor]]:
    """Write one DV file holding ``vectors`` (not yet durable: the commit naming it makes it
    so); returns its location, its size and one descriptor per vector."""
    u = uuid.uuid4()
    code = z85_encode(u.bytes)
    path = storage.join(table, f"deletion_vector_{u}.bin")
    chunks = [bytes([FORMAT_VERSION])]
    descriptors = []
    offset = 1
    for positions in vectors:
        data = roaring64_bytes(positions)
        chunks.append(struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data)))
        descriptors.append(
            Descriptor("u", code, len(data), len(np.unique(positions)), offset=offset)
        )
        offset += 8 + len(data)
    blob = b"".join(chunks)
    # made durable with the commit that names it (delta_commit.commit's ``durable``)
    storage.backend(path).write_pending(path, blob)
    return path, len(blob), descriptors
