"""The workload of ``python -m bench shard-memory`` (bench.bench_shard_memory) and of its
``--phases`` profile (bench.shard_memory_phases): the edge views, their input batches and a
reading of this process's memory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EdgeViews:
    """The workload's dataflow over ``e(src, dst)`` (int64): the out-degree of each node,
    the least target of each node, and the distinct targets."""

    def __call__(self, g: Any) -> None:
        e = g.input("e", [("src", "int64"), ("dst", "int64")])
        g.output(e.count("src"), "deg")
        g.output(e.min("src", "dst"), "first_dst")
        g.output(e.project("dst").distinct(), "dsts")


WARM_UP = 1_000


def edges(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    nodes = max(n // 4, 10)
    return rng.integers(0, nodes, n, dtype=np.int64), rng.integers(0, nodes, n, dtype=np.int64)


def status_kb(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process (kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def edge_batch(n: int, seed: int) -> Any:
    from ivm.batch import Batch

    src, dst = edges(n, seed)
    return Batch((src, dst), np.ones(n, dtype=np.int64))
