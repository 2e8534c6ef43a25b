"""A cold ``ivm refresh`` of a 1-row change, in a new process (``python -m bench cold-refresh``).

Issue 15 asks for <= 2 s.  Setup (not timed): a warehouse with a table ``t`` of ``--rows``
rows (default 100,000), a SQL view (GROUP BY) and a Datalog view (reachability over a small
edge table), each refreshed once.  Then, ``--repeat`` times: one row is inserted into each
table (not timed), and the command ``ivm --warehouse WH refresh`` runs in a new process
(timed: wall clock from start to exit, so it includes interpreter start, imports, loading the
checkpoints, the refresh and its Delta commits; the CPU seconds it used are recorded too, since
on a shared machine the wall clock mostly measures the other processes).  One extra run with ``-X importtime`` tells
whether the process imported pyspark (it must not: a refresh needs no Spark).

``--repo DIR`` runs the code of another checkout (e.g. the main branch) for a before/after
comparison in the same run.  Results: ``bench/results/cold_refresh.json``.

Usage: ``python -m bench cold-refresh [--rows N] [--repeat R] [--repo DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "cold_refresh.json"

SETUP = """
import sys
import numpy as np, pyarrow as pa
from spark_exec.session import Session
wh, rows = sys.argv[1], int(sys.argv[2])
s = Session(warehouse=wh)
s.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
s.sql("CREATE TABLE e (a BIGINT, b BIGINT)")
rng = np.random.default_rng(0)
from catalog import delta
delta.insert(s.table_path("t"), pa.table({"k": rng.integers(0, 1000, rows), "v": rng.integers(0, 100, rows)}))
s.sql("INSERT INTO e VALUES " + ", ".join(f"({i}, {i + 1})" for i in range(200)))
s.sql("CREATE MATERIALIZED VIEW agg AS SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k")
s.datalog(".decl e(a: number, b: number)\\n.input e\\n.decl reach(a: number, b: number)\\n"
          ".output reach\\nreach(a, b) :- e(a, b).\\nreach(a, c) :- reach(a, b), e(b, c).\\n")
"""

CHANGE = """
import sys
from spark_exec.session import Session
s = Session(warehouse=sys.argv[1])
i = int(sys.argv[2])
s.sql(f"INSERT INTO t VALUES ({i % 1000}, {i})")
s.sql(f"INSERT INTO e VALUES ({1000 + i}, {i % 200})")
"""


def _python(code: str, repo: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], env=env, check=True, cwd=repo
    )


def _refresh(repo: Path, wh: str, *extra: str) -> tuple[float, float, str]:
    """Wall-clock and CPU seconds (user + system) of one ``ivm refresh`` process."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    ivm = Path(sys.executable).parent / "ivm"
    command = [str(ivm)] if not extra else [sys.executable, *extra, str(ivm)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*command, "--warehouse", wh, "refresh"],
        env=env,
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, proc.stderr


def measure(repo: Path, rows: int, repeat: int) -> dict[str, Any]:
    wh = tempfile.mkdtemp(prefix="cold-refresh-")
    _python(SETUP, repo, wh, str(rows))
    seconds, cpu = [], []
    for i in range(repeat):
        _python(CHANGE, repo, wh, str(i))
        wall, used, _ = _refresh(repo, wh)
        seconds.append(wall)
        cpu.append(used)
    _python(CHANGE, repo, wh, str(repeat))
    _, _, imports = _refresh(repo, wh, "-X", "importtime")
    return {
        "repo": str(repo),
        "rows": rows,
        "median_seconds": statistics.median(seconds),
        "seconds": seconds,
        "median_cpu_seconds": statistics.median(cpu),
        "cpu_seconds": cpu,
        "pyspark_imported": "pyspark" in imports,
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench cold-refresh")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--repo", action="append", type=Path, help="checkout(s) to measure")
    args = p.parse_args(argv)
    runs = [measure(r.resolve(), args.rows, args.repeat) for r in (args.repo or [REPO])]
    for r in runs:
        print(
            f"{r['repo']}: cold `ivm refresh` of a 1-row change, median "
            f"{r['median_seconds']:.2f} s wall, {r['median_cpu_seconds']:.2f} s CPU over "
            f"{len(r['seconds'])} runs; "
            f"pyspark imported: {r['pyspark_imported']}"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    doc = {"machine": platform.platform(), "cpus": os.cpu_count(), "runs": runs}
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")
    return 0
