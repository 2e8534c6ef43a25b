"""The README's quick start runs as written (issue 18, item 9): its Python blocks in order in one
process, then its shell blocks, all in one fresh directory with the repository's examples."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)

pytestmark = pytest.mark.spark


def quickstart_blocks() -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Quick start\n")
    end = text.index("\n## ", start + 1)
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text[start:end])]


def test_quickstart_has_every_front_door() -> None:
    code = "\n".join(body for _, body in quickstart_blocks())
    for needle in (
        "s.sql(",
        "s.datalog(",
        "s.spark.sql(",
        "create_view(",
        "pipelines run",
        "serve",
    ):
        assert needle in code, needle


def test_readme_quickstart_runs(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    def run(command: list[str], what: str) -> str:
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{what} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    blocks = quickstart_blocks()
    python = "\n".join(body for kind, body in blocks if kind == "python")
    run([sys.executable, "-c", python], "the python blocks")
    out = ""
    for kind, body in blocks:
        if kind == "bash":
            script = "set -euo pipefail\n" + textwrap.dedent(body)
            out = run(["bash", "-c", script], f"bash block\n{body}")
    assert "ivm_refreshes_total" in out
