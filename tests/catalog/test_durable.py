"""catalog.durable: several fsyncs at once, errors raised, safe after a fork."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalog import durable


def test_fsync_all_syncs_files_and_directories_and_raises_what_fails(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i}" for i in range(5)]
    for f in files:
        f.write_bytes(b"x" * 100)
    durable.fsync_all([*files, tmp_path])  # files and a directory together
    durable.fsync_all([files[0]])
    durable.fsync_all([])
    with pytest.raises(FileNotFoundError):
        durable.fsync_all([files[0], tmp_path / "missing", files[1]])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_uses_a_pool_of_its_own(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    durable.fsync_all([f, tmp_path])  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            durable.fsync_all([f, tmp_path])
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
