"""The writer lock's holder record (catalog.locks): written in place, padded, it always
reads back as the last holder's — after a longer record, after a file of another format,
and while the lock is held."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalog import locks
from catalog.paths import Warehouse


@pytest.mark.parametrize("before", [b"", b"x" * 1000, b'{"pid": 1, "host": "h", "since_ms": 5}'])
def test_holder_is_the_last_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: bytes
) -> None:
    wh = Warehouse(tmp_path / "wh")
    wh.ensure()
    path = locks.lock_path(wh, "g")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(before)
    for host in ["a" * 600, "short", "b" * 200, "c"]:  # records longer and shorter than the pad
        monkeypatch.setattr(locks.socket, "gethostname", lambda host=host: host)
        with locks.group_lock(wh, "g", timeout=0):
            got = locks.holder(wh, "g")
            assert got["host"] == host and got["pid"] == os.getpid()
        assert locks.holder(wh, "g")["host"] == host
        assert path.stat().st_size == max(locks.HOLDER_BYTES, len(path.read_bytes().rstrip()))
