"""Deletion vectors in Delta's format: the protocol's own example, run containers, files."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from catalog import deletion_vectors as dvs


def test_protocol_inline_example_decodes() -> None:
    """PROTOCOL.md, "JSON Example 3 — Inline": rows 3, 4, 7, 11, 18, 29."""
    d = dvs.Descriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    assert dvs.read_positions("/nowhere", d).tolist() == [3, 4, 7, 11, 18, 29]
    # the example uses the older native layout; ours is the portable one, same positions
    ours = dvs.roaring64_bytes(np.array([3, 4, 7, 11, 18, 29]))
    assert dvs.roaring64_positions(ours).tolist() == [3, 4, 7, 11, 18, 29]


def test_round_trip_across_containers_and_buckets() -> None:
    rng = np.random.default_rng(0)
    dense = np.arange(70_000, 80_000)  # a bitmap container (> 4096 values in one chunk)
    sparse = rng.choice(1 << 20, 500, replace=False)
    high = np.array([(1 << 33) + 5, (1 << 33) + 6])  # a second 32-bit bucket
    pos = np.unique(np.concatenate([dense, sparse, high]))
    assert dvs.roaring64_positions(dvs.roaring64_bytes(pos)).tolist() == pos.tolist()


def test_run_containers_are_read() -> None:
    """Bitmaps written by other writers may use run containers (cookie 12347)."""
    body = struct.pack("<I", dvs.RUN_COOKIE | (0 << 16))  # one container
    body += bytes([1])  # it is a run container
    body += struct.pack("<HH", 0, 9)  # key 0, cardinality 10
    body += struct.pack("<H", 2) + struct.pack("<HH", 5, 4) + struct.pack("<HH", 100, 4)
    data = struct.pack("<IQ", dvs.MAGIC, 1) + struct.pack("<I", 0) + body
    assert dvs.roaring64_positions(data).tolist() == [5, 6, 7, 8, 9, 100, 101, 102, 103, 104]


def test_files_checksums_and_descriptors(tmp_path: Path) -> None:
    path, size, (a, b) = dvs.write_file(str(tmp_path), [np.array([1, 2]), np.array([7])])
    assert a.file_path(str(tmp_path)) == path == b.file_path(str(tmp_path))
    assert Path(path).stat().st_size == size
    assert dvs.read_positions(str(tmp_path), b).tolist() == [7]
    raw = bytearray(Path(path).read_bytes())
    raw[-1] ^= 0xFF
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(dvs.DeletionVectorError, match="damaged"):
        dvs.read_positions(str(tmp_path), b)
