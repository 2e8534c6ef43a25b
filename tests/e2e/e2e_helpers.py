"""Helpers of the end-to-end tests: multiset comparison and child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spark_exec import Session
from spark_exec.demo import bag

REPO = Path(__file__).resolve().parents[2]

__all__ = [
    "CRASH_CHILD",
    "REPO",
    "bag",
    "child_json",
    "run_child",
    "session_fixture",
    "session_with",
    "spark_bag",
]


# A refresh process that SIGKILLs itself at the protocol step $IVM_CRASH_AT (docs/refresh-protocol.md)
CRASH_CHILD = """
import json, os, signal, sys
from spark_exec import Session
point = os.environ["IVM_CRASH_AT"]
def hook(step):
    if step == point:
        os.kill(os.getpid(), signal.SIGKILL)
s = Session(warehouse=os.environ["IVM_WAREHOUSE"], refresh_hook=hook)
reports = s.refresh()
print(json.dumps({"completed": True, "epochs": [r.epoch for r in reports]}))
"""


def session_with(tmp_path: Path, *statements: str, **options: Any) -> Session:
    """A session (``options`` passed on) over a new warehouse ``tmp_path / "wh"``, after
    running ``statements``."""
    s = Session(warehouse=tmp_path / "wh", **options)
    for statement in statements:
        s.sql(statement)
    return s


def session_fixture(*statements: str) -> Any:
    """A pytest fixture giving each test :func:`session_with` ``statements`` of its own;
    bind it to the name the tests ask for (``s = session_fixture(...)``)."""

    @pytest.fixture
    def session(tmp_path: Path) -> Session:
        return session_with(tmp_path, *statements)

    return session


def spark_bag(spark: Any, query: str) -> Counter[tuple[Any, ...]]:
    return bag(tuple(r) for r in spark.sql(query).collect())


def run_child(
    code: str, *, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python process (the project importable, no Spark needed)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def child_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(last)
