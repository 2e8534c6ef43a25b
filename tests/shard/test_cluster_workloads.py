"""The issue-17 workloads on ``local-cluster[2,1,1024]``: WCC, SCC, a 20-iteration
``WITH RECURSIVE`` and the peers' W1–W3, each epoch one barrier stage of 2 shard engines.

Every epoch's changes equal the in-process executor's (``bench.shard_workloads.run_epochs``
compares them), and each shard holds 50% ± 10% of the arranged rows (the executor's report).
One cluster serves the whole module (``cluster_workloads.py``, its own process: its start
takes 15–75 s here).  The 20-iteration recursion and W3 run by default; the rest, and the
70 s idle gap, under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


class Cluster:
    """The serving process: one request line in, one ``RESULT`` line out."""

    def __init__(self, log: IO[str]) -> None:
        env = dict(
            os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, PYTHONHASHSEED="0"
        )
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "cluster_workloads.py")],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        self.start_seconds = float(self._line("READY"))

    def _line(self, tag: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(tag + " "):
                return line[len(tag) + 1 :]
        self.log.flush()
        self.log.seek(0)
        raise AssertionError(f"the cluster process ended: {self.log.read()[-4000:]}")

    def run(self, workload: str, **req: Any) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"workload": workload, **req}) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self._line("RESULT"))
        assert out["ok"], out["error"]
        return out["epochs"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with tempfile.TemporaryFile("w+") as log:
        c = Cluster(log)
        try:
            yield c
        finally:
            c.close()


def check_epochs(epochs: list[dict[str, Any]], n: int) -> None:
    """``n`` epochs, each a barrier stage of 2 shards on the cluster holding 50% ± 10% of the
    arranged rows each (their equality with in-process is checked by the server)."""
    assert [e["epoch"] for e in epochs] == list(range(1, n + 1))
    for e in epochs:
        assert e["executor"] == "spark local-cluster[2,1,1024]" and e["attempt"] == 0, e
        assert len(e["shares"]) == 2 and all(0.4 <= s <= 0.6 for s in e["shares"]), e
        assert e["rounds"] > 0 and e["bytes"] > 0, e
    assert epochs[0]["changed_rows"] > 0


def test_twenty_iteration_recursion_on_the_cluster(cluster: Cluster) -> None:
    epochs = cluster.run("depth20", steps=3)
    check_epochs(epochs, 4)
    # 20 iterations of the loop, each at least one exchange round
    assert epochs[0]["loop_rounds"] >= 20


def test_w3_join_agg_on_the_cluster(cluster: Cluster) -> None:
    check_epochs(cluster.run("w3", steps=3), 4)


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["wcc", "scc", "w1", "w2"])
def test_graph_workloads_on_the_cluster(cluster: Cluster, workload: str) -> None:
    check_epochs(cluster.run(workload, steps=3), 4)


@pytest.mark.slow
def test_an_idle_gap_of_70_seconds(cluster: Cluster) -> None:
    """An epoch, 70 s with no job, then the next epoch is exact.  Spark stops a Python
    worker idle for 60 s (``PythonWorkerFactory``), so the shard engines cached in the
    workers are gone: the epoch after the gap reloads the shards' checkpoint (a cache miss),
    in new worker processes."""
    epochs = cluster.run("depth20", steps=2, idle={"2": 70})
    check_epochs(epochs, 3)
    before, after = epochs[1], epochs[2]
    assert after["cache_hits"] == [False, False], after
    assert not set(after["pids"]) & set(before["pids"]), (before, after)
