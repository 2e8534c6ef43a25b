"""Property: after any sequence of statements — INSERT, UPDATE, DELETE, MERGE, OVERWRITE,
OPTIMIZE, VACUUM, a table dropped and recreated, by any writer — and refreshes, some of them
SIGKILLed at a random step in a child process, some racing another process's refresh, every view equals its recomputation from the
tables' current rows (a plain-Python oracle) after every refresh.

A seeded generator draws the statements; a failing seed is printed with the statement log,
so a counterexample replays exactly.  The default run is small; ``-m slow`` runs more seeds
and longer sequences.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from e2e_helpers import REPO
from reliability_writers import Writer, spark_writers, writers

from catalog import delta
from spark_exec import Session

T = pa.schema([("k", pa.int64()), ("v", pa.int64())])
U = pa.schema([("k", pa.int64()), ("w", pa.int64())])

VIEWS: dict[str, tuple[str, Callable[[dict[str, list[dict[str, Any]]]], Counter[tuple[Any, ...]]]]]
VIEWS = {
    "agg": (
        "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k",
        lambda db: Counter((k, len(vs), sum(vs)) for k, vs in _group(db["t"], "k", "v").items()),
    ),
    "dup": (
        "SELECT k, v FROM t WHERE v >= 3",
        lambda db: Counter((r["k"], r["v"]) for r in db["t"] if r["v"] is not None and r["v"] >= 3),
    ),
    "j": (
        "SELECT t.k, t.v, u.w FROM t JOIN u ON t.k = u.k",
        lambda db: Counter(
            (a["k"], a["v"], b["w"]) for a in db["t"] for b in db["u"] if a["k"] == b["k"]
        ),
    ),
}

CHILD = """
import os, signal
from spark_exec import Session
point = os.environ["IVM_CRASH_AT"]
def hook(step):
    if step == point:
        os.kill(os.getpid(), signal.SIGKILL)
Session(warehouse=os.environ["IVM_WAREHOUSE"], refresh_hook=hook).refresh()
"""
CRASH_POINTS = ["restored", "stepped", "files_written", "renamed", "checkpointed", "published"]


def _group(rows: list[dict[str, Any]], key: str, value: str) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r[value])
    return out


def _bag(t: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def _rows(rng: random.Random, schema: pa.Schema, n: int) -> pa.Table:
    return pa.table(
        {
            f.name: [rng.randrange(6) if f.name == "k" else rng.randrange(10) for _ in range(n)]
            for f in schema
        },
        schema=schema,
    )


class Scenario:
    """One seeded run: a warehouse, its tables and views, and the statement log."""

    def __init__(
        self, root: Path, seed: int, *, crashes: bool, pool: list[Writer] | None = None
    ) -> None:
        self.rng = random.Random(seed)
        self.writers = pool or writers()
        self.wh = root / "wh"
        self.crashes = crashes
        self.log: list[str] = [f"seed {seed}"]
        self.session = Session(warehouse=self.wh)
        self.session.sql("CREATE TABLE t (k BIGINT, v BIGINT)")
        self.session.sql("CREATE TABLE u (k BIGINT, w BIGINT)")
        self.paths = {"t": self.session.table_path("t"), "u": self.session.table_path("u")}
        self.schemas = {"t": T, "u": U}
        delta.insert(self.paths["t"], _rows(self.rng, T, 120))
        delta.insert(self.paths["u"], _rows(self.rng, U, 4))
        for name, (query, _) in VIEWS.items():
            self.session.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
        self.check("created")

    def check(self, when: str) -> None:
        s = Session(warehouse=self.wh)  # what any new process would read
        db = {n: delta.read_snapshot(p).to_pylist() for n, p in self.paths.items()}
        for name, (_, oracle) in VIEWS.items():
            got, want = _bag(s.read(name)), oracle(db)
            assert got == want, (
                f"view {name} differs from recomputation after {when}\n"
                + "\n".join(self.log[-30:])
                + f"\nextra: {got - want}\nmissing: {want - got}"
            )

    def statement(self) -> None:
        rng = self.rng
        table = rng.choice(["t", "t", "u"])
        path, schema = self.paths[table], self.schemas[table]
        col = schema.names[1]
        w: Writer = rng.choice(self.writers)
        kind = rng.choices(
            ["insert", "update", "delete", "merge", "overwrite", "optimize", "vacuum", "recreate"],
            weights=[5, 4, 3, 3, 1, 1, 1, 1],
        )[0]
        key = rng.randrange(6)
        self.log.append(f"{w.name} {kind} {table} key={key}")
        match kind:
            case "insert":
                w.insert(path, _rows(rng, schema, rng.randrange(1, 5)))
            case "update":
                w.update(path, {col: f"{col} + {rng.randrange(1, 3)}"}, f"k = {key}")
            case "delete":
                w.delete(path, f"k = {key}" if rng.random() < 0.9 else None)
            case "merge":
                src = _rows(rng, schema, 3)
                src = src.filter(pa.array(_first_of_key(src)))
                w.upsert(path, src, "k", col)
            case "overwrite":
                w.overwrite(path, _rows(rng, schema, rng.randrange(0, 6)))
            case "optimize":
                w.optimize(path)
            case "vacuum":
                w.vacuum(path)
            case "recreate":
                w.recreate(path, _rows(rng, schema, rng.randrange(0, 4)), feed=rng.random() < 0.5)
                for _ in range(rng.randrange(0, 6)):  # fewer or more versions than before
                    w.insert(path, _rows(rng, schema, 1))

    def refresh(self) -> None:
        draw = self.rng.random() if self.crashes else 1.0
        if draw < 0.3:  # a refresh killed at a random step
            point = self.rng.choice(CRASH_POINTS)
            self.log.append(f"refresh killed at {point}")
            proc = self.child(point).wait()
            assert proc in (0, -signal.SIGKILL)
        elif draw < 0.4:  # two processes refresh at once, one of them killed at a random step
            point = self.rng.choice([*CRASH_POINTS, "never"])
            self.log.append(f"two refreshes at once, one killed at {point}")
            first, second = self.child(point), self.child("never")
            assert first.wait() in (0, -signal.SIGKILL)
            assert second.wait() == 0
        self.log.append("refresh")
        self.session.refresh()
        self.check("refresh")

    def child(self, crash_at: str) -> subprocess.Popen[bytes]:
        """A refresh in another process, SIGKILLed at step ``crash_at``."""
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "IVM_CRASH_AT": crash_at,
            "IVM_WAREHOUSE": str(self.wh),
        }
        return subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CHILD)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def _first_of_key(t: pa.Table) -> list[bool]:
    seen: set[object] = set()
    out = []
    for k in t.column("k").to_pylist():
        out.append(k not in seen)
        seen.add(k)
    return out


def run(
    root: Path, seed: int, steps: int, *, crashes: bool, pool: list[Writer] | None = None
) -> None:
    sc = Scenario(root, seed, crashes=crashes, pool=pool)
    for _ in range(steps):
        for _ in range(sc.rng.randrange(1, 4)):
            sc.statement()
        sc.refresh()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_statements(tmp_path: Path, seed: int) -> None:
    run(tmp_path, seed, steps=6, crashes=seed != 1)


@pytest.mark.spark
@pytest.mark.parametrize("seed", [5, pytest.param(4, marks=pytest.mark.slow)])
def test_random_statements_with_delta_spark(tmp_path: Path, seed: int, spark: Any) -> None:
    """delta-spark (deletion vectors, its own change feed and metrics) joins the writers."""
    run(tmp_path, seed, steps=6, crashes=seed == 5, pool=spark_writers(spark))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 16))
def test_random_statements_long(tmp_path: Path, seed: int) -> None:
    run(tmp_path, seed, steps=20, crashes=True)
