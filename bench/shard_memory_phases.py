"""Where a shard's memory peak happens: one 2-shard initial load, each shard in its own
process, its resident-memory high-water mark (``VmHWM``) read at every phase boundary.

``PYTHONHASHSEED=0 python -m bench shard-memory --phases [--edges N]``.  The driver runs a
1,000-edge warm-up epoch (threads), writes the N-edge epoch's input parts, then starts one
plain process per shard (no Spark: the same :func:`~spark_exec.sharded.shard_task` over the
same file transport).  Each shard warms its kernels on a 1,000-edge in-process epoch, takes
its baseline (``VmRSS``), and labels its work: reading the input part, each operator's
``run``, each exchange round's publish / barrier / read, and each checkpoint file written.
At every label change it reads ``VmHWM``; the rise of the high-water mark during a label is
charged to it.  The result lists, per shard, the labels that raised the peak, largest
first (``bench/results/shard_memory_phases.json``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "bench" / "results" / "shard_memory_phases.json"


class PeakLedger:
    """The rise of ``VmHWM`` charged to the label that was current when it happened."""

    def __init__(self, status_kb: Callable[[str], int]) -> None:
        self.status_kb = status_kb
        self.label = "start"
        self.hwm = status_kb("VmHWM")
        self.rises: dict[str, int] = {}
        self.opened_rss = status_kb("VmRSS")
        #: (label, resident kB when it opened, high-water mark kB when it closed) of every
        #: label that raised the high-water mark, in order
        self.timeline: list[tuple[str, int, int]] = []

    def mark(self, label: str) -> str:
        """Close the current label (charging its rise), open ``label``; the old label."""
        hwm = self.status_kb("VmHWM")
        if hwm > self.hwm:
            self.rises[self.label] = self.rises.get(self.label, 0) + hwm - self.hwm
            self.timeline.append((self.label, self.opened_rss, hwm))
            self.hwm = hwm
        old, self.label = self.label, label
        self.opened_rss = self.status_kb("VmRSS")
        return old

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        old = self.mark(label)
        try:
            yield
        finally:
            self.mark(old)

    def wrap(self, owner: Any, name: str, label: Callable[..., str]) -> None:
        """Run ``owner.name`` under ``label(*args)``."""
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def labelled(*args: Any, **kw: Any) -> Any:
            with self.phase(label(*args)):
                return inner(*args, **kw)

        setattr(owner, name, labelled)


def child_shard(root: str, n: int, p: int, epoch: int, attempt: str, current: str) -> dict:
    """Shard ``p`` of the epoch, in this (fresh) process, labelled."""
    import ivm
    from bench.shard_memory_workload import WARM_UP, EdgeViews, edge_batch, status_kb
    from ivm.operators.base import Operator
    from ivm.shard import files, state_files
    from spark_exec import sharded

    g = ivm.Dataflow("warm-up")
    EdgeViews()(g)
    g.inputs["e"].pending.append(edge_batch(WARM_UP, 1))
    g.step()
    del g
    base = status_kb("VmRSS")
    ledger = PeakLedger(status_kb)
    ledger.wrap(Operator, "run", lambda op, _t: f"run {op.kind} #{op.id}")
    ledger.wrap(sharded, "_load_shard", lambda *_: "load checkpoint")
    ledger.wrap(sharded, "_send_input_part", lambda *_: "read input part")
    ledger.wrap(files.FileTransport, "exchange", lambda *_: "exchange: read")
    ledger.wrap(files.FileTransport, "_publish", lambda *_: "exchange: encode + publish")
    ledger.wrap(files.FileTransport, "_decode", lambda *_: "exchange: decode")
    ledger.wrap(sharded, "write_tables", lambda path, *_: f"write {Path(path).name}")
    ledger.wrap(state_files, "write_tables", lambda path, *_: f"write {Path(path).name}")
    report = sharded.shard_task(root, EdgeViews(), n, p, epoch, attempt, current)
    ledger.mark("end")
    return {"shard": p, **_summary(ledger, base, status_kb("VmHWM"), report["arranged_rows"])}


def child_local(n: int) -> dict:
    """The in-process epoch, labelled the same way, in this (fresh) process."""
    import ivm
    from bench.shard_memory_workload import WARM_UP, EdgeViews, edge_batch, status_kb
    from ivm.operators.base import Operator

    g = ivm.Dataflow("in-process")
    EdgeViews()(g)
    g.inputs["e"].pending.append(edge_batch(WARM_UP, 1))
    g.step()
    base = status_kb("VmRSS")
    ledger = PeakLedger(status_kb)
    ledger.wrap(Operator, "run", lambda op, _t: f"run {op.kind} #{op.id}")
    with ledger.phase("make input batch"):
        g.inputs["e"].pending.append(edge_batch(n, 2))
    g.step()
    ledger.mark("end")
    return _summary(ledger, base, status_kb("VmHWM"), int(sum(g.arrangement_rows().values())))


def _summary(ledger: PeakLedger, base: int, peak: int, arranged: int) -> dict:
    rises = sorted(ledger.rises.items(), key=lambda kv: -kv[1])
    return {
        "baseline_kb": base,
        "peak_kb": peak,
        "above_kb": peak - base,
        "arranged_rows": arranged,
        "peak_rises_kb": dict(rises),
        "timeline_kb_above_baseline": [(lb, o - base, h - base) for lb, o, h in ledger.timeline],
    }


def phases(n: int) -> dict[str, Any]:
    """The driver: warm-up epoch, the epoch's input parts, one process per shard."""
    from bench.shard_memory_workload import WARM_UP, EdgeViews, edge_batch
    from spark_exec.sharded import SparkShardedExecutor

    with tempfile.TemporaryDirectory() as tmp:
        ex = SparkShardedExecutor(None, EdgeViews(), 2, tmp)
        ex.pending = {"e": [edge_batch(WARM_UP, 1)]}
        ex.step()
        ex.pending = {"e": [edge_batch(n, 2)]}
        attempt = "2-0"
        ex._write_inputs(attempt)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench",
                    "shard-memory",
                    "--child-shard",
                    str(p),
                    "--root",
                    tmp,
                    "--current",
                    str(ex.current),
                    "--attempt",
                    attempt,
                ],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for p in range(2)
        ]
        shards = []
        for proc in procs:
            out, _ = proc.communicate()
            if proc.returncode:
                raise RuntimeError(f"shard process failed ({proc.returncode})")
            shards.append(json.loads(out.strip().splitlines()[-1]))
    local = subprocess.run(
        [sys.executable, "-m", "bench", "shard-memory", "--child-local-phases", "--edges", str(n)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    result = {
        "edges": n,
        "in_process": json.loads(local.stdout.strip().splitlines()[-1]),
        "shards": shards,
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    return result
