"""Large epochs on Spark: one barrier stage per epoch hosts N shard engines.

(Design and measurements: ``docs/design/2026-11-23-sharded-execution.md`` and the design
note it builds on.)  :class:`SparkShardedExecutor` runs a dataflow — built on every shard by
the same picklable ``build`` (:class:`SqlViews`, :class:`DatalogProgram`) — epoch by epoch:

1. The driver writes each input's changes under ``<root>/epochs/<e>-<a>/`` as Arrow IPC, split
   across the shards (any split: the exchanges fix placement).
2. One barrier stage of N tasks (``sc.parallelize(range(N), N).barrier().mapPartitions``):
   task ``p`` builds shard ``p of N`` (or takes it from the worker's cache when the cached
   checkpoint id is ``CURRENT``'s), loads its checkpoint, reads its input part, runs the
   epoch with the file transport (:mod:`ivm.shard.files`) under
   ``<root>/exchange/<e>-<a>/``, writes its new state and its part of every output's
   changes into ``<root>/checkpoints/.tmp-<e>-<a>/``, and returns its statistics.
3. The driver renames the directory to ``checkpoints/<e>-<a>`` and replaces ``CURRENT``: the
   epoch is committed.  Any failure (a task, a lost executor) fails the stage — Spark does not
   retry a barrier result stage — and the driver re-runs the epoch as attempt ``a+1`` from
   the checkpoint ``CURRENT`` names; a shard's worker memory is only a cache of that.

The engine's string hash is Python's, so shards in different processes agree on string
keys only under one ``PYTHONHASHSEED``; PySpark gives every worker ``0`` unless set (checked
at each task).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import time as _clock
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import ivm
from ivm import sharding
from ivm.batch import Batch
from ivm.dataflow import _from_arrow, _to_arrow
from ivm.errors import IvmError
from ivm.operators.exchange import Exchange, route
from ivm.operators.io import coerce_diffs, rows_to_columns
from ivm.shard.files import FileTransport
from ivm.shard.memory import release_free_memory
from ivm.shard.scheduler import ShardScheduler
from ivm.shard.state_files import dataflow_state, read_tables, write_tables
from ivm.shard.transport import run_shard
from spark_exec.config import (
    DEFAULT_BYTES_PER_ROW,
    DEFAULT_EXECUTOR_MEMORY_BUDGET,
    DEFAULT_LARGE_CHANGE_ROWS,
    Settings,
)


class ShardedEpochError(IvmError):
    """A sharded epoch failed on every attempt."""


class SimulatedDriverCrash(IvmError):
    """Fault injection for tests: the driver stops between the shards' writes and the
    commit (the state a killed driver leaves)."""


@dataclass(frozen=True)
class SqlViews:
    """Builds SQL views over input tables (``tables``: name -> [(column, SQL type)])."""

    tables: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    views: tuple[tuple[str, str], ...]

    @staticmethod
    def of(tables: Mapping[str, list[tuple[str, str]]], views: Mapping[str, str]) -> SqlViews:
        return SqlViews(tuple((n, tuple(cols)) for n, cols in tables.items()), tuple(views.items()))

    def __call__(self, g: ivm.Dataflow) -> None:
        from sql_frontend.compile import compile_view

        catalog = {n: list(cols) for n, cols in self.tables}
        inputs: dict[str, Any] = {
            n: g.input(n, [(c, "str" if t == "string" else "any") for c, t in cols])
            for n, cols in self.tables
        }
        for name, sql in self.views:
            g.output(compile_view(sql, catalog, g, inputs).collection, name)


@dataclass(frozen=True)
class DatalogProgram:
    """Builds a Datalog program (its ``.input`` relations are the inputs)."""

    text: str

    def __call__(self, g: ivm.Dataflow) -> None:
        from datalog import compile_program

        compile_program(self.text, g)


@dataclass
class ShardReport:
    """What one shard task did in one epoch."""

    shard: int
    pid: int
    cache_hit: bool
    arranged_rows: int
    rounds: int
    loop_rounds: int
    bytes_exchanged: int
    wait_seconds: float
    seconds: float
    max_rss_kb: int
    start_rss_kb: int


@dataclass
class EpochResult:
    """A committed sharded epoch: where it ran, its changes, its figures."""

    epoch: int
    attempt: int
    executor: str
    changes: dict[str, pa.Table]
    shards: list[ShardReport]
    seconds: float
    attempts_failed: list[str] = field(default_factory=list)
    batches: dict[str, Batch] = field(default_factory=dict)  # ``changes`` as engine batches

    @property
    def balance(self) -> list[int]:
        return [s.arranged_rows for s in self.shards]

    @property
    def rounds(self) -> int:
        return self.shards[0].rounds

    @property
    def bytes_exchanged(self) -> int:
        return sum(s.bytes_exchanged for s in self.shards)

    def explain(self) -> str:
        total = sum(self.balance) or 1
        shares = ", ".join(f"{100 * r / total:.0f}%" for r in self.balance)
        return (
            f"epoch {self.epoch} ran on {self.executor} (attempt {self.attempt}), "
            f"{len(self.shards)} shards; arranged rows per shard {self.balance} ({shares}); "
            f"{self.rounds} exchange rounds; {self.bytes_exchanged} bytes exchanged; "
            f"{self.seconds:.2f} s"
        )


# -- the policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecutorPolicy:
    """Where an epoch runs: ``"local"`` (in-process) or ``"spark"`` (sharded).

    Measured on this machine (design notes): a Spark barrier stage costs about 1 s and more
    per epoch (0.15 s per job at best, 6–40 ms per exchange round, dozens of rounds for a
    recursive view), while the engine finishes a small change in milliseconds; but one
    process holds about 850 bytes of state per row (a 2M-row GROUP BY view: 1.7 GB) and
    processes an initial load at roughly 50k–500k rows/s.  So:

    1. a per-view override (``executor = 'local' | 'spark'``) wins;
    2. when the state after the epoch (``state_rows + change_rows``, times
       ``bytes_per_row``) exceeds ``memory_budget_bytes``: sharded — one process cannot
       hold it;
    3. when the change itself is large (``change_rows >= large_change_rows``: initial
       loads, backfills): sharded — N processes share the work;
    4. otherwise in-process.
    """

    memory_budget_bytes: int = DEFAULT_EXECUTOR_MEMORY_BUDGET
    bytes_per_row: int = DEFAULT_BYTES_PER_ROW
    large_change_rows: int = DEFAULT_LARGE_CHANGE_ROWS

    @classmethod
    def of(cls, settings: Settings) -> ExecutorPolicy:
        """The ``'auto'`` policy with the thresholds of ``settings`` (spark_exec.config)."""
        return cls(
            memory_budget_bytes=settings.executor_memory_budget,
            bytes_per_row=settings.executor_bytes_per_row,
            large_change_rows=settings.executor_large_change_rows,
        )

    def choose(self, state_rows: int, change_rows: int, override: str = "auto") -> str:
        if override not in ("auto", "local", "spark"):
            raise ShardedEpochError(
                f"executor must be 'auto', 'local' or 'spark', not {override!r}"
            )
        if override != "auto":
            return override
        if (state_rows + change_rows) * self.bytes_per_row > self.memory_budget_bytes:
            return "spark"
        if change_rows >= self.large_change_rows:
            return "spark"
        return "local"


# -- the shard task (runs in a Spark Python worker) ---------------------------------------

_CACHE: dict[tuple[str, int, int], tuple[str, ivm.Dataflow, ShardScheduler]] = {}


def _load_shard(
    root: Path, build: Callable[[ivm.Dataflow], Any], n: int, p: int, current: str | None
) -> tuple[ivm.Dataflow, ShardScheduler, bool]:
    key = (str(root), n, p)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == (current or ""):
        return hit[1], hit[2], True
    _CACHE.pop(key, None)
    with sharding.building(p, n) as spec:
        g = ivm.Dataflow("sharded", shard=spec)
        build(g)
    if current is not None:
        g.load_state(read_tables(root / "checkpoints" / current / f"shard-{p}.arrow"))
    return g, ShardScheduler(g), False


def shard_task(
    root: str,
    build: Callable[[ivm.Dataflow], Any],
    n: int,
    p: int,
    epoch: int,
    attempt: str,
    current: str | None,
    fault: str | None = None,
    in_driver: bool = False,
) -> dict[str, Any]:
    """Run shard ``p``'s part of one epoch (see the module docstring); its report.
    ``in_driver``: a thread of the driver, which shares its string hash with the others."""
    started = _clock.perf_counter()
    start_rss = _rss_kb()
    if not in_driver and os.environ.get("PYTHONHASHSEED") in (None, "random"):
        raise ShardedEpochError(
            "shard workers need one PYTHONHASHSEED (string keys are routed by Python's "
            "hash); set spark.executorEnv.PYTHONHASHSEED"
        )
    base = Path(root)
    g, sched, hit = _load_shard(base, build, n, p, current)
    key = (str(base), n, p)
    _CACHE.pop(key, None)  # in use: valid again only once this epoch is written
    _send_input_part(g, base / "epochs" / attempt / f"input-{p}.arrow")
    release_free_memory()
    transport = FileTransport(base / "exchange" / attempt, p, n, g)
    if fault == f"kill:{p}":
        _kill_after_rounds(transport, 5)
    run_shard(sched, transport, epoch)
    out_dir = base / "checkpoints" / f".tmp-{attempt}"
    write_tables(out_dir / f"shard-{p}.arrow", dataflow_state(g))
    write_tables(
        out_dir / f"changes-{p}.arrow",
        {
            name: _to_arrow(
                o.last_changes.cols, np.zeros((len(o.last_changes), 0)), o.last_changes.diff
            )
            for name, o in g.outputs.items()
        },
    )
    _CACHE[key] = (attempt, g, sched)
    st = sched.stats
    return {
        "shard": p,
        "pid": os.getpid(),
        "cache_hit": hit,
        "arranged_rows": int(sum(g.arrangement_rows().values())),
        "rounds": st.per_epoch[-1]["rounds"],
        "loop_rounds": st.per_epoch[-1]["loop_rounds"],
        "bytes_exchanged": transport.bytes_written,
        "wait_seconds": transport.wait_seconds,
        "seconds": _clock.perf_counter() - started,
        "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "start_rss_kb": start_rss,
    }


def _send_input_part(g: ivm.Dataflow, part: Path) -> None:
    """Send the shard's part of the epoch's input (a function of its own, so that no
    reference to the file's tables outlives the epoch's first operators)."""
    if part.exists():
        for name, table in read_tables(part).items():
            op = g.inputs[name]
            cols, _t, diff = _from_arrow(table, op, "input")
            op.pending.append(Batch(cols, diff))


def _rss_kb() -> int:
    """This process's resident set now (kB; 0 where /proc is missing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _kill_after_rounds(transport: FileTransport, rounds: int) -> None:
    """Fault injection for tests: SIGKILL this worker's executor JVM in round ``rounds``."""
    import signal

    barrier = transport._barrier

    def killing(value: object) -> list[object]:
        if transport.round == rounds:
            os.kill(_executor_jvm_pid(), signal.SIGKILL)
            os._exit(1)
        return barrier(value)

    transport._barrier = killing  # type: ignore[method-assign]


def _executor_jvm_pid() -> int:
    """The pid of the JVM that started this Python worker (through pyspark.daemon)."""
    pid = os.getppid()
    for _ in range(4):
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        if comm == "java":
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise ShardedEpochError("fault injection: no executor JVM above this worker")


# -- the driver ------------------------------------------------------------------------------


def input_routing(build: Callable[[ivm.Dataflow], Any], n: int) -> dict[str, tuple[int, ...]]:
    """Per input that feeds an exchange directly, that exchange's key (the first one
    built): splitting the input by it places its rows where that exchange sends them."""
    with sharding.building(0, n) as spec:
        g = ivm.Dataflow("routing", shard=spec)
        build(g)
    keys: dict[str, tuple[int, ...]] = {}
    for name, op in g.inputs.items():
        feeds = [c for c, _port in op.consumers if isinstance(c, Exchange)]
        if feeds:
            keys[name] = min(feeds, key=lambda c: c.id).key_idx
    return keys


class SparkShardedExecutor:
    """Runs each epoch of a dataflow as one Spark barrier stage of ``shards`` engines."""

    def __init__(
        self,
        spark: Any,
        build: Callable[[ivm.Dataflow], Any],
        shards: int,
        root: str | os.PathLike[str],
        max_attempts: int = 3,
    ) -> None:
        self.spark = spark
        self.build = build
        self.n = shards
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_attempts = max_attempts
        self.template = ivm.Dataflow("template")  # schemas of inputs and outputs
        build(self.template)
        self.pending: dict[str, list[Batch]] = {}
        # fault injection for tests, on an epoch's first attempt only: "kill:<p>" (shard p
        # kills its executor JVM in round 5), "crash-before-commit"
        self.fault: str | None = None
        cur = self.root / "CURRENT"
        self.current: str | None = cur.read_text().strip() if cur.exists() else None
        self.epoch = int(self.current.split("-")[0]) if self.current else 0
        self.policy = ExecutorPolicy()
        self._anchor: Any = None
        self._routing: dict[str, tuple[int, ...]] | None = None  # input -> exchange key
        #: keep the checkpoint an epoch started from (its caller's commit decides which is
        #: the truth: :meth:`step_from`); else it is removed when ``CURRENT`` moves
        self.keep_previous = False

    def send(self, name: str, rows: Any, diffs: Any) -> None:
        op = self.template.inputs[name]
        cols = rows_to_columns(op, rows)
        n = len(cols[0]) if cols else 0
        if n:
            self.pending.setdefault(name, []).append(Batch(cols, coerce_diffs(op, diffs, n)))

    def insert(self, name: str, rows: Any) -> None:
        self.send(name, rows, 1)

    def delete(self, name: str, rows: Any) -> None:
        self.send(name, rows, -1)

    def _write_inputs(self, attempt: str) -> None:
        """Each shard's part of the epoch's inputs, one file per shard written in turn.
        An input that feeds an exchange is split by that exchange's key, so the exchange
        finds every row already in place (nothing to route on, nor to hold twice); any
        split is exact, since the exchanges fix placement (a driver with another string
        hash only makes them route more)."""
        d = self.root / "epochs" / attempt
        if self._routing is None:
            self._routing = input_routing(self.build, self.n)
        split: dict[str, tuple[Batch, np.ndarray]] = {}
        for name, batches in self.pending.items():
            b = Batch.concat(batches)
            key = self._routing.get(name)
            which = np.arange(len(b)) % self.n if key is None else route(b, key, self.n)
            split[name] = (b, which)

        def part(p: int) -> Iterator[tuple[str, pa.Table]]:
            for name, (b, which) in split.items():
                sel = b.take(np.flatnonzero(which == p))
                if len(sel):
                    yield name, _to_arrow(sel.cols, np.zeros((len(sel), 0)), sel.diff)

        for p in range(self.n):
            if any(bool((which == p).any()) for _b, which in split.values()):
                write_tables(d / f"input-{p}.arrow", part(p))

    def step(self, epoch: int | None = None) -> EpochResult:
        """Run epoch ``epoch`` (default: the next one) on the cluster; retried from
        ``CURRENT`` up to ``max_attempts`` times."""
        e = self.epoch + 1 if epoch is None else epoch
        if e <= self.epoch:
            raise ShardedEpochError(f"epoch {e} is not after the checkpoint's epoch {self.epoch}")
        failures: list[str] = []
        for k in range(self.max_attempts):
            attempt = f"{e}-{k}"
            for d in ("exchange", "epochs"):  # files of an attempt of a crashed driver
                shutil.rmtree(self.root / d / attempt, ignore_errors=True)
            shutil.rmtree(self.root / "checkpoints" / f".tmp-{attempt}", ignore_errors=True)
            started = _clock.perf_counter()
            try:
                reports = self._run_stage(e, attempt, self.fault if k == 0 else None)
            except Exception as exc:  # a failed barrier stage: re-run the whole epoch
                failures.append(f"attempt {attempt}: {type(exc).__name__}: {str(exc)[:300]}")
                shutil.rmtree(self.root / "checkpoints" / f".tmp-{attempt}", ignore_errors=True)
                continue
            if self.fault == "crash-before-commit" and k == 0:
                # fault injection: the driver dies after the shards wrote, before CURRENT
                raise SimulatedDriverCrash(f"epoch {e}: stopped before the commit")
            changes, batches = self._commit(attempt)
            self.pending = {}
            self.epoch = e
            shutil.rmtree(self.root / "exchange" / attempt, ignore_errors=True)
            shutil.rmtree(self.root / "epochs" / attempt, ignore_errors=True)
            return EpochResult(
                e,
                k,
                self.where,
                changes,
                sorted(reports, key=lambda r: r.shard),
                _clock.perf_counter() - started,
                failures,
                batches,
            )
        raise ShardedEpochError(
            f"epoch {e} failed on {self.max_attempts} attempts: " + "; ".join(failures)
        )

    def _run_stage(self, e: int, attempt: str, fault: str | None) -> list[ShardReport]:
        self._write_inputs(attempt)
        root, build, n, current = str(self.root), self.build, self.n, self.current
        if self.spark is None:
            return run_in_threads(root, build, n, e, attempt, current, fault)

        def task(it: Iterator[int]) -> Iterator[str]:
            from pyspark import BarrierTaskContext

            ctx = BarrierTaskContext.get()
            for _ in it:  # drain the input: a worker that does not is never reused
                pass
            p = ctx.partitionId()
            yield json.dumps(shard_task(root, build, n, p, e, attempt, current, fault))

        if self._anchor is None:
            # a cached RDD of one element per shard: running each stage over it gives a
            # shard a locality preference for the executor that ran it last (cache hits)
            self._anchor = self.spark.sparkContext.parallelize(range(n), n).cache()
            self._anchor.count()
        rows = self._anchor.barrier().mapPartitions(task).collect()
        return [ShardReport(**json.loads(r)) for r in rows]

    @property
    def where(self) -> str:
        """Where the epochs run: ``spark <master>``, or ``threads`` (no SparkSession)."""
        return "threads" if self.spark is None else f"spark {self.spark.sparkContext.master}"

    # -- epochs whose checkpoint another commit names (a group checkpoint) ----------------
    def step_from(self, checkpoint: str | None, epoch: int) -> EpochResult:
        """Run epoch ``epoch`` from the shard checkpoint ``checkpoint`` (``None``: empty
        shards), whichever ``CURRENT`` says, and keep that checkpoint.

        The caller's own commit (a group checkpoint naming the result's
        ``checkpoint``) is the commit point: until it is durable, a crash leaves the
        caller's previous record naming ``checkpoint``, still on disk.  :meth:`collect`
        removes the checkpoints no record names any more."""
        self.keep_previous = True
        self.current = checkpoint
        self.epoch = epoch - 1
        return self.step(epoch)

    def collect(self, keep: set[str | None]) -> None:
        """Remove every shard checkpoint directory (and leftover ``.tmp-*``) but ``keep``."""
        ck = self.root / "checkpoints"
        if ck.is_dir():
            for d in ck.iterdir():
                if d.name not in keep:
                    shutil.rmtree(d, ignore_errors=True)

    # -- moving a view between executors -------------------------------------------------------
    def adopt(self, state: dict[str, pa.Table]) -> str:
        """Start from a single-process checkpoint (``Dataflow.state()`` of the same build):
        it is split into shard checkpoints and becomes ``CURRENT``; returns its name."""
        from ivm.shard.reshard import reshard, shard_graphs

        single = ivm.Dataflow("single")
        self.build(single)
        parts = reshard([state], [single], shard_graphs(self.build, self.n))
        epoch = int(state["__meta__"].column("epoch")[0].as_py())
        name = f"{epoch}-adopted"
        tmp = self.root / "checkpoints" / f".tmp-{name}"
        for p, st in enumerate(parts):
            write_tables(tmp / f"shard-{p}.arrow", st)
        self._publish(tmp, name)
        self.epoch = epoch
        return name

    def export_single(self) -> dict[str, pa.Table]:
        """``CURRENT``'s shard checkpoints merged into one single-process checkpoint."""
        from ivm.shard.reshard import merged_checkpoint

        if self.current is None:
            raise ShardedEpochError(f"no checkpoint under {self.root}")
        return merged_checkpoint(self.root / "checkpoints" / self.current, self.build, self.n)

    def _publish(self, tmp: Path, name: str) -> None:
        """Make the checkpoint directory ``tmp`` the current one (rename, then CURRENT)."""
        ck = self.root / "checkpoints"
        shutil.rmtree(ck / name, ignore_errors=True)
        os.replace(tmp, ck / name)
        tmp_cur = self.root / ".CURRENT.tmp"
        tmp_cur.write_text(name)
        os.replace(tmp_cur, self.root / "CURRENT")
        old, self.current = self.current, name
        if old is not None and old != name and not self.keep_previous:
            shutil.rmtree(ck / old, ignore_errors=True)

    def _commit(self, attempt: str) -> tuple[dict[str, pa.Table], dict[str, Batch]]:
        tmp = self.root / "checkpoints" / f".tmp-{attempt}"
        parts = [read_tables(tmp / f"changes-{p}.arrow") for p in range(self.n)]
        self._publish(tmp, attempt)
        out: dict[str, pa.Table] = {}
        merged: dict[str, Batch] = {}
        for name, o in self.template.outputs.items():
            batches = []
            for tables in parts:
                cols, _t, diff = _from_arrow(tables[name], o, "changes")
                if len(diff):
                    batches.append(Batch(cols, diff))
            b = Batch.concat(batches).consolidate() if batches else o.empty_batch()
            out[name] = o._table(b, "__diff__")
            merged[name] = b
        return out, merged


def run_in_threads(
    root: str,
    build: Callable[[ivm.Dataflow], Any],
    n: int,
    epoch: int,
    attempt: str,
    current: str | None,
    fault: str | None = None,
) -> list[ShardReport]:
    """One epoch's shard tasks as ``n`` threads of this process (no Spark): the same
    :func:`shard_task` over the same file transport, for tests and a machine without a
    cluster.  A failing shard fails the epoch (its transport aborts the others)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(n) as pool:
        futures = [
            pool.submit(shard_task, root, build, n, p, epoch, attempt, current, fault, True)
            for p in range(n)
        ]
        return [ShardReport(**f.result()) for f in futures]


def shard_spark(
    master: str = "local-cluster[2,1,1024]",
    app: str = "ivm-sharded",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A plain SparkSession for sharded epochs (no Delta needed): the UI off, quiet logs,
    executors running this interpreter with this project on their ``PYTHONPATH``.
    ``local-cluster[2,1,1024]`` starts 2 executor JVMs on this machine (the tests' cluster;
    about 15–60 s to start)."""
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[1])
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYTHONPATH", root)
    )
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
