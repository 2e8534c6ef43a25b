"""W1/W2/W3 on the ``ivm`` engine (in-process, Python API), with a from-scratch baseline.

For each workload, in one process and on the same data:

* the engine: initial computation (push the initial data, ``g.step()``), then per step the
  time from pushing the change batch to ``g.step()`` returning with the output's changes
  read (``out.changes()``); counted work per step (differences processed, from
  ``g.metrics``) and rows held in arrangements;
* a from-scratch recomputation baseline, as in ``../shared/peers``: by default DuckDB for
  all three, with the peers' queries (DML on the base tables, then min-label rounds for W1,
  ``WITH RECURSIVE`` for W2, the view's SQL for W3); ``--baseline networkx`` uses networkx
  for W1 (``connected_components``) and W2 (multi-source BFS);
* a check that the engine's output equals the baseline's after the initial computation, at
  the middle step and at the last step (outside the timed regions).

As in the peers' harness, the engine's steps run back to back (the outputs needed by the
checks are copied out untimed), and the baseline replays the same steps afterwards in the
same process.  Interleaving the two would time the engine with its state evicted from the
CPU caches by the baseline's recomputation between steps (W2: ~1.5 ms more per step).

Results go to ``bench/results/engine_<scale>.json``; a markdown table (with the peers'
medians read from ``../shared/peers/results/RESULTS.md``) is printed.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import re
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import ivm
from bench import workloads as W
from ivm.library.graphs import connected_components, reachable

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
PEERS_RESULTS = ROOT.parent / "shared" / "peers" / "results" / "RESULTS.md"

EDGE = [("src", "int64"), ("dst", "int64")]
TARGET_MS = {"w1": 100.0, "w2": 5.0, "w3": 30.0}
TARGET_INITIAL_S = 5.0
PEER_NAMES = {"w1": "wcc-sliding", "w2": "reach", "w3": "join-agg"}
TITLES = {"w1": "W1 WCC sliding window", "w2": "W2 reachability", "w3": "W3 join-aggregate"}

clock = time.perf_counter
# Process CPU time (all threads): on a shared, overloaded machine the wall-clock step times
# include waiting for a core; CPU time is what the step would take with a core to itself.
cpu = time.process_time


def pct(xs: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (same rule as the peers' harness)."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def edge_cols(e: np.ndarray) -> dict[str, np.ndarray]:
    return {"src": np.ascontiguousarray(e[:, 0]), "dst": np.ascontiguousarray(e[:, 1])}


class Baseline(ABC):
    """A from-scratch recomputation replaying the workload's steps (see :meth:`Run.drive`)."""

    name = "baseline"

    @abstractmethod
    def initial(self) -> Any:
        """Load the initial data and compute the result (timed as the baseline's initial)."""

    @abstractmethod
    def apply(self, step: int) -> None:
        """Apply step ``step``'s changes to the baseline's tables or graph (timed)."""

    @abstractmethod
    def result(self) -> Any:
        """Recompute the result from scratch (timed)."""

    @abstractmethod
    def compare(self, engine: Any, ref: Any) -> tuple[bool, str]:
        """Is the engine's output snapshot equal to the baseline's result? (ok, message)"""


@dataclass
class EngineSetup:
    """A workload on the engine: the dataflow, its output, loading the initial data and
    pushing step ``i``'s changes."""

    g: ivm.Dataflow
    out: ivm.Output
    load: Callable[[], None]
    push: Callable[[int], None]


def measured_step(
    profiler: cProfile.Profile | None, g: ivm.Dataflow, out: ivm.Output, push: Callable[[], None]
) -> tuple[Any, float, float]:
    """Push changes, step and read the output's changes (under ``profiler`` if given):
    the step's report, wall seconds and CPU seconds."""
    if profiler is not None:
        profiler.enable()
    c, t = cpu(), clock()
    push()
    rep = g.step()
    out.changes()
    wall, used = clock() - t, cpu() - c
    if profiler is not None:
        profiler.disable()
    return rep, wall, used


@dataclass(frozen=True)
class Options:
    """What one workload run is asked for: scale, seed, steps, whether the recompute baseline
    is timed, whether the engine's steps are profiled, and the W1/W2 baseline peer."""

    scale: str
    seed: int
    n_steps: int
    baseline: bool
    profile: bool
    peer: str = "duckdb"


class Run:
    """Collects the measurements of one workload run."""

    def __init__(self, workload: str, o: Options) -> None:
        self.rec: dict[str, Any] = dict(
            workload=workload, peer_name=PEER_NAMES[workload], scale=o.scale, steps=o.n_steps
        )
        self.rec["checks"] = []
        self.step_s: list[float] = []
        self.step_cpu_s: list[float] = []
        self.base_step_s: list[float] = []
        self.base_step_cpu_s: list[float] = []
        self.diffs: list[int] = []
        self.iterations: list[int] = []
        self.per_op: list[dict[str, int]] = []
        self.checks = set(W.check_steps(o.n_steps))
        self.profiler = cProfile.Profile() if o.profile else None
        self.init_profiler = cProfile.Profile() if o.profile else None

    def timed_step(self, g: ivm.Dataflow, push: Callable[[], None], out: ivm.Output) -> None:
        """Push one change batch and step; the output's changes are read inside the timing."""
        rep, dt, dc = measured_step(self.profiler, g, out, push)
        self.step_s.append(dt)
        self.step_cpu_s.append(dc)
        self.diffs.append(rep.differences)
        self.iterations.append(len(g.metrics.by_iteration(rep.epoch)))
        self.per_op.append(per_operator(g, rep.epoch))

    def initial(self, g: ivm.Dataflow, out: ivm.Output, load: Callable[[], None]) -> None:
        """Push the initial data and compute the output (timed, optionally profiled)."""
        rep, self.rec["initial_s"], self.rec["initial_cpu_s"] = measured_step(
            self.init_profiler, g, out, load
        )
        self.rec["initial_differences"] = rep.differences
        self.rec["initial_iterations"] = len(g.metrics.by_iteration(rep.epoch))
        self.rec["initial_differences_by_op"] = per_operator(g, rep.epoch)
        self.rec["arrangement_rows_initial"] = int(sum(g.arrangement_rows().values()))
        print(
            f"  engine initial {self.rec['initial_s']:.3f}s, {rep.differences:,} differences",
            flush=True,
        )

    def drive(
        self,
        g: ivm.Dataflow,
        out: ivm.Output,
        push: Callable[[int], None],
        snapshot: Callable[[], Any],
        baseline: Baseline,
        timed_baseline: bool,
    ) -> None:
        """The steps: first the engine's, back to back (check outputs copied out untimed),
        then the baseline replaying them; check the copies against the baseline."""
        n = self.rec["steps"]
        snaps = {0: snapshot()}
        for i in range(1, n + 1):
            self.timed_step(g, lambda i=i: push(i), out)
            if i in self.checks:
                snaps[i] = snapshot()
            print(
                f"  step {i}: engine {self.step_s[-1] * 1e3:.2f} ms "
                f"(cpu {self.step_cpu_s[-1] * 1e3:.2f}) ({self.diffs[-1]:,} diffs)",
                flush=True,
            )
        c, t = cpu(), clock()
        ref = baseline.initial()
        self.rec["baseline_initial_s"] = clock() - t
        self.rec["baseline_initial_cpu_s"] = cpu() - c
        self.check(0, *baseline.compare(snaps[0], ref))
        for i in range(1, n + 1):
            c, t = cpu(), clock()
            baseline.apply(i)
            if timed_baseline:
                ref = baseline.result()
                self.base_step_s.append(clock() - t)
                self.base_step_cpu_s.append(cpu() - c)
                print(f"  step {i}: {baseline.name} {self.base_step_s[-1] * 1e3:.1f} ms")
            if i in self.checks:
                self.check(
                    i, *baseline.compare(snaps[i], ref if timed_baseline else baseline.result())
                )

    def check(self, step: int, ok: bool, msg: str) -> None:
        self.rec["checks"].append(dict(step=step, ok=bool(ok), msg=msg))
        print(f"  check step {step}: {'OK' if ok else 'WRONG'} ({msg})", flush=True)

    def finish(self, g: ivm.Dataflow, live_rows: int) -> dict[str, Any]:
        r = self.rec
        r["step_ms"] = [round(x * 1e3, 3) for x in self.step_s]
        r["median_ms"] = statistics.median(self.step_s) * 1e3 if self.step_s else None
        r["p90_ms"] = pct(self.step_s, 0.9) * 1e3 if self.step_s else None
        r["cpu_median_ms"] = statistics.median(self.step_cpu_s) * 1e3 if self.step_s else None
        r["cpu_p90_ms"] = pct(self.step_cpu_s, 0.9) * 1e3 if self.step_s else None
        r["baseline_cpu_median_ms"] = (
            statistics.median(self.base_step_cpu_s) * 1e3 if self.base_step_cpu_s else None
        )
        r["baseline_step_ms"] = [round(x * 1e3, 3) for x in self.base_step_s]
        r["baseline_median_ms"] = (
            statistics.median(self.base_step_s) * 1e3 if self.base_step_s else None
        )
        r["baseline_p90_ms"] = pct(self.base_step_s, 0.9) * 1e3 if self.base_step_s else None
        r["differences_per_step"] = self.diffs
        r["differences_median"] = statistics.median(self.diffs) if self.diffs else None
        r["iterations_per_step"] = self.iterations
        r["differences_by_op_per_step"] = self.per_op
        if r["median_ms"] and r["baseline_median_ms"]:
            r["speedup_vs_baseline"] = r["baseline_median_ms"] / r["median_ms"]
        if r.get("baseline_initial_s"):
            r["initial_vs_baseline"] = r["initial_s"] / r["baseline_initial_s"]
        if r["cpu_median_ms"] and r["baseline_cpu_median_ms"]:
            # process CPU time: DuckDB's two threads both count
            r["cpu_speedup_vs_baseline"] = r["baseline_cpu_median_ms"] / r["cpu_median_ms"]
        if r.get("baseline_initial_cpu_s"):
            r["initial_cpu_vs_baseline"] = r["initial_cpu_s"] / r["baseline_initial_cpu_s"]
        arr = g.arrangement_rows()
        r["arrangement_rows_final"] = int(sum(arr.values()))
        r["arrangement_rows_by_op"] = {k: int(v) for k, v in arr.items()}
        r["live_input_rows"] = int(live_rows)
        r.update(state_size(g))
        r["correct"] = all(c["ok"] for c in r["checks"]) if r["checks"] else None
        if self.profiler is not None and self.init_profiler is not None:
            r["profile"] = (
                "=== engine steps ===\n"
                + profile_text(self.profiler)
                + "\n=== initial computation ===\n"
                + profile_text(self.init_profiler)
            )
        return r


def state_size(g: ivm.Dataflow) -> dict[str, Any]:
    """Memory of the engine's traces and the size of ``Dataflow.state()`` (its checkpoint
    as Arrow tables): bytes per arranged row.  Trace bytes count each distinct numpy array
    once; object (string) columns count their 8-byte pointers, not the strings."""
    from ivm.trace import Trace

    arrays: dict[int, int] = {}
    rows = 0
    for op in g.ops:
        for v in vars(op).values():
            if isinstance(v, Trace):
                rows += v.rows_held()
                for r in v.runs:
                    for a in (r.sortkey, r.keyhash, r.rowhash, r.times, r.diff, *r.cols):
                        arrays[id(a)] = a.nbytes
    trace_bytes = sum(arrays.values())
    state = g.state()
    state_bytes = sum(t.nbytes for t in state.values())
    return dict(
        trace_rows=rows,
        trace_bytes=trace_bytes,
        trace_bytes_per_row=trace_bytes / rows if rows else None,
        state_bytes=state_bytes,
        state_bytes_per_row=state_bytes / rows if rows else None,
    )


def per_operator(g: ivm.Dataflow, epoch: int) -> dict[str, int]:
    """Differences processed per operator (``kind:name``, all loop iterations) in an epoch:
    the machine-independent work count stored with every step."""
    out: dict[str, int] = {}
    for d in g.metrics.differences(epoch):
        k = f"{d.kind}:{d.operator}"
        out[k] = out.get(k, 0) + d.rows
    return out


def profile_text(prof: cProfile.Profile, top: int = 30) -> str:
    s = io.StringIO()
    st = pstats.Stats(prof, stream=s)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    return s.getvalue()


# -- W1: WCC over a sliding window ----------------------------------------------------------


def nx_labels(graph: Any, n: int) -> np.ndarray:
    import networkx as nx

    lab = np.arange(n, dtype=np.int64)
    for comp in nx.connected_components(graph):
        members = np.fromiter(comp, dtype=np.int64, count=len(comp))
        lab[members] = members.min()
    return lab


def engine_labels(out: ivm.Output, n: int) -> np.ndarray:
    """node -> label for all nodes; nodes without edges are their own component."""
    t = out.contents()
    lab = np.arange(n, dtype=np.int64)
    nodes = t.column("node").to_numpy()
    lab[nodes] = t.column("label").to_numpy()
    if len(np.unique(nodes)) != len(nodes):
        raise AssertionError("a node has more than one label")
    return lab


class NxGraph(Baseline):
    """A networkx graph of the workload's nodes maintained in place; subclasses say how a
    step's ``(removed, added)`` edges are found (:meth:`changes`) and what is recomputed."""

    name = "networkx"
    directed = False

    def __init__(self, w: Any) -> None:
        import networkx as nx

        self.w = w
        self.graph = nx.DiGraph() if self.directed else nx.Graph()
        self.graph.add_nodes_from(range(w.n_nodes))

    def initial(self) -> Any:
        self.graph.add_edges_from(self.w.initial_edges.tolist())
        return self.result()

    def changes(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def apply(self, step: int) -> None:
        rem, add = self.changes(step)
        self.graph.remove_edges_from(rem.tolist())
        self.graph.add_edges_from(add.tolist())


class NxComponents(NxGraph):
    """W1 baseline: the window's graph maintained in place, components recomputed."""

    def changes(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        return self.w.step(step)

    def result(self) -> np.ndarray:
        return nx_labels(self.graph, self.w.n_nodes)

    def compare(self, engine: np.ndarray, ref: np.ndarray) -> tuple[bool, str]:
        bad = int(np.count_nonzero(engine != ref))
        return bad == 0, f"{bad} of {len(ref)} labels differ"


def edge_table(e: np.ndarray) -> Any:
    """An edge array as an Arrow table DuckDB scans by name (its replacement scan)."""
    import pyarrow as pa

    return pa.table(edge_cols(np.asarray(e, dtype=np.int64).reshape(-1, 2)))


def _duckdb() -> Any:
    import duckdb

    con = duckdb.connect(":memory:")
    con.execute("SET threads = 2")
    return con


class DuckDBComponents(Baseline):
    """W1 baseline as the peers' DuckDB runner computes it: the window's edges in a table
    (DML per step), then min-label propagation, one SQL statement per round until no label
    changes."""

    name = "duckdb"

    def __init__(self, w: W.WccWorkload) -> None:
        self.w = w
        self.con = _duckdb()
        self.con.execute("CREATE TABLE nodes AS SELECT range AS id FROM range(?)", [w.n_nodes])

    def initial(self) -> np.ndarray:

        ed = edge_table(self.w.initial_edges)  # noqa: F841
        self.con.execute("CREATE TABLE edges AS SELECT src, dst FROM ed")
        return self.result()

    def apply(self, step: int) -> None:

        rem, add = self.w.step(step)
        rm = edge_table(rem)  # noqa: F841
        ad = edge_table(add)  # noqa: F841
        self.con.execute("DELETE FROM edges e USING rm WHERE e.src = rm.src AND e.dst = rm.dst")
        self.con.execute("INSERT INTO edges SELECT src, dst FROM ad")

    def result(self) -> np.ndarray:
        con = self.con
        con.execute(
            "CREATE OR REPLACE TEMP TABLE und AS "
            "SELECT src, dst FROM edges UNION ALL SELECT dst, src FROM edges"
        )
        con.execute("CREATE OR REPLACE TEMP TABLE lab AS SELECT id AS node, id AS label FROM nodes")
        while True:
            con.execute(
                """CREATE OR REPLACE TEMP TABLE lab2 AS
                SELECT l.node, LEAST(l.label, COALESCE(m.ml, l.label)) AS label
                FROM lab l LEFT JOIN (
                    SELECT u.dst AS node, MIN(x.label) AS ml
                    FROM und u JOIN lab x ON x.node = u.src GROUP BY u.dst) m
                ON m.node = l.node"""
            )
            row = con.execute(
                "SELECT count(*) FROM lab JOIN lab2 USING (node) WHERE lab.label <> lab2.label"
            ).fetchone()
            con.execute("DROP TABLE lab")
            con.execute("ALTER TABLE lab2 RENAME TO lab")
            if row is None or row[0] == 0:
                break
        lab = con.execute("SELECT node, label FROM lab ORDER BY node").fetchnumpy()
        return np.asarray(lab["label"], dtype=np.int64)

    def compare(self, engine: np.ndarray, ref: np.ndarray) -> tuple[bool, str]:
        bad = int(np.count_nonzero(engine != ref))
        return bad == 0, f"{bad} of {len(ref)} labels differ"


def setup_w1(w: W.WccWorkload) -> EngineSetup:
    g = ivm.Dataflow("w1")
    edges = g.input("edges", EDGE)
    out = g.output(connected_components(edges), "wcc")

    def push(i: int) -> None:
        rem, add = w.step(i)
        edges.delete(edge_cols(rem))
        edges.insert(edge_cols(add))

    return EngineSetup(g, out, lambda: edges.insert(edge_cols(w.initial_edges)), push)


def run_w1(o: Options) -> dict:
    w = W.make_wcc(o.scale, o.seed, o.n_steps)
    n = w.n_nodes
    run = Run("w1", o)
    run.rec["size"] = dict(nodes=n, window=w.window, slide=W.SLIDE)
    e = setup_w1(w)
    run.initial(e.g, e.out, e.load)
    base: Baseline = DuckDBComponents(w) if o.peer == "duckdb" else NxComponents(w)
    run.drive(e.g, e.out, e.push, lambda: engine_labels(e.out, n), base, o.baseline)
    run.rec["baseline"] = (
        "duckdb recompute (min-label rounds, as ../shared/peers/run_duckdb.py), threads=2"
        if o.peer == "duckdb"
        else "networkx recompute (connected_components)"
    )
    return run.finish(e.g, w.window)


# -- W2: reachability -----------------------------------------------------------------------


def nx_reach(graph: Any, roots: list[int]) -> set[int]:
    seen = set(roots)
    frontier = list(roots)
    succ = graph._succ
    while frontier:
        nxt = []
        for x in frontier:
            for y in succ[x]:
                if y not in seen:
                    seen.add(y)
                    nxt.append(y)
        frontier = nxt
    return seen


class NxReach(NxGraph):
    """W2 baseline: the graph maintained in place, a multi-source BFS from the roots."""

    directed = True

    def changes(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        rem, add = self.w.steps[step - 1]
        return rem, add

    def result(self) -> set[int]:
        return nx_reach(self.graph, self.w.roots)

    def compare(self, engine: np.ndarray, ref: set[int]) -> tuple[bool, str]:
        got = set(engine.tolist())
        ok = got == ref and len(engine) == len(got)
        return ok, (
            f"|reach| {len(engine)} expected {len(ref)}, missing {len(ref - got)}, "
            f"extra {len(got - ref)}"
        )


class DuckDBReach(Baseline):
    """W2 baseline as the peers' DuckDB runner computes it: edges in a table (DML per step),
    then ``WITH RECURSIVE ... UNION`` from the roots."""

    name = "duckdb"
    QUERY = """WITH RECURSIVE reach(node) AS (
                   SELECT node FROM roots
                   UNION
                   SELECT e.dst FROM reach r JOIN edges e ON e.src = r.node)
               SELECT node FROM reach"""

    def __init__(self, w: W.ReachWorkload) -> None:
        import pyarrow as pa

        self.w = w
        self.con = _duckdb()
        rt = pa.table({"node": np.asarray(w.roots, dtype=np.int64)})  # noqa: F841
        self.con.execute("CREATE TABLE roots AS SELECT node::BIGINT AS node FROM rt")

    def initial(self) -> set[int]:

        ed = edge_table(self.w.initial_edges)  # noqa: F841
        self.con.execute("CREATE TABLE edges AS SELECT src, dst FROM ed")
        return self.result()

    def apply(self, step: int) -> None:

        rem, add = self.w.steps[step - 1]
        rm = edge_table(rem)  # noqa: F841
        ad = edge_table(add)  # noqa: F841
        self.con.execute("DELETE FROM edges e USING rm WHERE e.src = rm.src AND e.dst = rm.dst")
        self.con.execute("INSERT INTO edges SELECT src, dst FROM ad")

    def result(self) -> set[int]:
        return set(self.con.execute(self.QUERY).fetchnumpy()["node"].tolist())

    compare = NxReach.compare


def setup_w2(w: W.ReachWorkload) -> EngineSetup:
    g = ivm.Dataflow("w2")
    edges = g.input("edges", EDGE)
    roots = g.input("roots", [("node", "int64")])
    out = g.output(reachable(edges, roots), "reach")

    def load() -> None:
        edges.insert(edge_cols(w.initial_edges))
        roots.insert({"node": np.asarray(w.roots, dtype=np.int64)})

    def push(i: int) -> None:
        rem, add = w.steps[i - 1]
        edges.delete(edge_cols(rem))
        edges.insert(edge_cols(add))

    return EngineSetup(g, out, load, push)


def run_w2(o: Options) -> dict:
    w = W.make_reach(o.scale, o.seed, o.n_steps)
    run = Run("w2", o)
    run.rec["size"] = dict(
        nodes=w.n_nodes, edges=len(w.initial_edges), roots=len(w.roots), changes=2 * W.REACH_CHANGES
    )
    e = setup_w2(w)
    run.initial(e.g, e.out, e.load)

    def snapshot() -> np.ndarray:
        return e.out.contents().column("node").to_numpy()

    base: Baseline = DuckDBReach(w) if o.peer == "duckdb" else NxReach(w)
    run.drive(e.g, e.out, e.push, snapshot, base, o.baseline)
    run.rec["baseline"] = (
        "duckdb recompute (WITH RECURSIVE, as ../shared/peers/run_duckdb.py), threads=2"
        if o.peer == "duckdb"
        else "networkx recompute (multi-source BFS)"
    )
    return run.finish(e.g, len(w.initial_edges))


# -- W3: orders ⋈ customers, filtered, grouped ---------------------------------------------

VIEW_SQL = """SELECT c.id, c.region, COUNT(*) AS n, SUM(o.amount) AS total
              FROM orders o JOIN customers c ON o.cust = c.id
              WHERE o.status <> 'cancelled'
              GROUP BY c.id, c.region"""
ORDER = [("id", "int64"), ("cust", "int64"), ("amount", "int64"), ("status", "str")]
CUSTOMER = [("id", "int64"), ("name", "str"), ("region", "str")]


def build_w3(g: ivm.Dataflow) -> tuple[ivm.InputCollection, ivm.InputCollection, ivm.Output]:
    """The view on the engine: filter → join → reduce (count, sum) per (c.id, c.region)."""
    orders = g.input("orders", ORDER)
    customers = g.input("customers", CUSTOMER)
    live = orders.filter(lambda id, cust, amount, status: status != "cancelled")
    joined = live.project("cust", "amount").join(
        customers.project("id", "region"), on=[("cust", "id")]
    )
    view = joined.reduce(["id", "region"], [("count",), ("sum", "amount")], names=["n", "total"])
    return orders, customers, g.output(view, "customer_totals")


def rows_of(table: Any) -> dict[int, tuple[str, int, int]]:
    d = table.to_pydict() if hasattr(table, "to_pydict") else table
    cols = list(d.values())
    return {int(c): (str(r), int(n), int(t)) for c, r, n, t in zip(*cols, strict=True)}


class DuckDBJoin(Baseline):
    """W3 baseline: DML on DuckDB's base tables, then the view's SQL."""

    name = "duckdb"

    def __init__(self, w: W.JoinWorkload) -> None:
        import duckdb

        self.w = w
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET threads = 2")

    def initial(self) -> list[tuple]:
        import pyarrow as pa

        con = self.con
        cdf = pa.table(self.w.customers)  # noqa: F841  (read by DuckDB's replacement scan)
        odf = pa.table(self.w.orders)  # noqa: F841
        con.execute("CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, region VARCHAR)")
        con.execute("INSERT INTO customers SELECT id, name, region FROM cdf")
        con.execute(
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, cust BIGINT, amount BIGINT, status VARCHAR)"
        )
        con.execute("INSERT INTO orders SELECT id, cust, amount, status FROM odf")
        return self.result()

    def apply(self, step: int) -> None:
        import pyarrow as pa

        st = self.w.steps[step - 1]
        dl = pa.table({"id": st.delete["id"]})  # noqa: F841
        up = pa.table({"id": st.update_new["id"], "status": st.update_new["status"]})  # noqa: F841
        ins = pa.table(st.insert)  # noqa: F841
        self.con.execute("DELETE FROM orders WHERE id IN (SELECT id FROM dl)")
        self.con.execute("UPDATE orders SET status = up.status FROM up WHERE orders.id = up.id")
        self.con.execute("INSERT INTO orders SELECT id, cust, amount, status FROM ins")

    def result(self) -> list[tuple]:
        return self.con.execute(VIEW_SQL).fetchall()

    def compare(self, engine: Any, ref: list[tuple]) -> tuple[bool, str]:
        got = rows_of(engine)
        want = {int(c): (str(r), int(n), int(tt)) for c, r, n, tt in ref}
        bad = sum(1 for k in set(got) | set(want) if got.get(k) != want.get(k))
        return (
            bad == 0 and len(got) == engine.num_rows,
            f"{len(got)} groups, expected {len(want)}, {bad} differ",
        )


def setup_w3(w: W.JoinWorkload) -> EngineSetup:
    g = ivm.Dataflow("w3")
    orders, customers, out = build_w3(g)

    def load() -> None:
        customers.insert(w.customers)
        orders.insert(w.orders)

    def push(i: int) -> None:
        st = w.steps[i - 1]
        orders.delete(st.delete)
        orders.update(st.update_old, st.update_new)  # delete old row + insert new row
        orders.insert(st.insert)

    return EngineSetup(g, out, load, push)


def run_w3(o: Options) -> dict:
    w = W.make_join(o.scale, o.seed, o.n_steps)
    run = Run("w3", o)
    run.rec["size"] = dict(
        orders=len(w.orders["id"]),
        customers=len(w.customers["id"]),
        insert=W.N_INSERT,
        delete=W.N_DELETE,
        update=W.N_UPDATE,
    )
    e = setup_w3(w)
    run.initial(e.g, e.out, e.load)
    run.drive(e.g, e.out, e.push, e.out.contents, DuckDBJoin(w), o.baseline)
    run.rec["baseline"] = "DuckDB recompute (DML + view SQL + fetch), threads=2"
    live = len(w.orders["id"]) + o.n_steps * (W.N_INSERT - W.N_DELETE)
    return run.finish(e.g, live + len(w.customers["id"]))


def engine_setup(workload: str, scale: str, seed: int, n_steps: int) -> EngineSetup:
    """The engine side of a workload alone (no baseline): for profilers and counters."""
    if workload == "w1":
        return setup_w1(W.make_wcc(scale, seed, n_steps))
    if workload == "w2":
        return setup_w2(W.make_reach(scale, seed, n_steps))
    return setup_w3(W.make_join(scale, seed, n_steps))


def warm_up(workload: str, seed: int) -> float:
    """Run the workload once at the small scale (initial load and one step), untimed by
    the measurement: the engine's compiled kernels are loaded from numba's on-disk cache at
    their first call in a process (about 1 s on this machine, most of W2's cold initial),
    a fixed cost per process, not per view.  Returns the seconds it took."""
    t = clock()
    e = engine_setup(workload, "small", seed, 1)
    e.load()
    e.g.step()
    e.out.changes()
    e.push(1)
    e.g.step()
    e.out.changes()
    return clock() - t


RUNNERS = {"w1": run_w1, "w2": run_w2, "w3": run_w3}
ALIASES = {"wcc-sliding": "w1", "wcc": "w1", "reach": "w2", "join-agg": "w3", "join": "w3"}


# -- peers and reporting --------------------------------------------------------------------


def peer_medians(scale: str, path: Path = PEERS_RESULTS) -> dict[str, dict[str, float]]:
    """``{workload: {peer: median ms}}`` from the peers' RESULTS.md (its per-scale tables)."""
    out: dict[str, dict[str, float]] = {}
    if not path.exists():
        return out
    text = path.read_text()
    m = re.search(rf"^## Scale: {re.escape(scale)}\s*$(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return out
    for sec in re.finditer(r"^### (\S+)[^\n]*\n(.*?)(?=^### |\Z)", m.group(1), re.S | re.M):
        wl = sec.group(1)
        for line in sec.group(2).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 6 or cells[0] in ("peer", "") or set(cells[0]) <= {"-"}:
                continue
            try:
                out.setdefault(wl, {})[cells[0]] = float(cells[4])
            except ValueError:
                continue
    return out


def fmt(x: float | None, nd: int = 1) -> str:
    return "—" if x is None else f"{x:,.{nd}f}"


def markdown(results: dict[str, dict], scale: str) -> str:
    peers = peer_medians(scale)
    lines = [
        f"### Engine benchmark, scale {scale}",
        "",
        "Step times in ms: wall-clock median / p90, and (CPU) the process CPU time median — "
        "the machine is shared, so wall time includes waiting for a core (see `load`); "
        "`loop ms` times a fixed pure-Python loop before and after (the machine's speed).",
        "",
        "| workload | initial s (CPU) | median ms (CPU) | p90 ms | target ms | "
        "baseline median ms (CPU) | step speed-up | baseline initial s | initial ratio | "
        "peers median ms (RESULTS.md) | diffs/step | "
        "arranged rows | load 1m | loop ms | correct |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for wl in ("w1", "w2", "w3"):
        r = results.get(wl)
        if r is None:
            continue
        pm = peers.get(PEER_NAMES[wl], {})
        keep = ("pathway", "pathway_t2", "networkx", "duckdb")
        peer_s = ", ".join(f"{p} {pm[p]:g}" for p in keep if p in pm) or "—"
        base = r.get("baseline", "").split(" ")[0]
        load = r.get("loadavg_1m") or []
        speed = r.get("python_loop_ms") or []
        lines.append(
            f"| {TITLES[wl]} | {fmt(r.get('initial_s'), 2)} ({fmt(r.get('initial_cpu_s'), 2)}) | "
            f"{fmt(r.get('median_ms'))} ({fmt(r.get('cpu_median_ms'))}) | "
            f"{fmt(r.get('p90_ms'))} | {TARGET_MS[wl]:g} | "
            f"{fmt(r.get('baseline_median_ms'))} ({fmt(r.get('baseline_cpu_median_ms'))}) "
            f"{base} | {fmt(r.get('speedup_vs_baseline'), 1)}× | "
            f"{fmt(r.get('baseline_initial_s'), 2)} | {fmt(r.get('initial_vs_baseline'), 2)}× | "
            f"{peer_s} | "
            f"{fmt(r.get('differences_median'), 0)} | {r.get('arrangement_rows_final', 0):,} | "
            f"{'–'.join(f'{x:.1f}' for x in load)} | {'–'.join(f'{x:.0f}' for x in speed)} | "
            f"{'yes' if r.get('correct') else 'NO'}{' (profiled)' if r.get('profiled') else ''} |"
        )
    lines.append("")
    lines.append(f"Targets: per-step median as above, initial ≤ {TARGET_INITIAL_S:g} s.")
    return "\n".join(lines)


def python_loop_ms() -> float:
    """The time of a fixed pure-Python loop: this machine's speed varies by up to 2x
    minutes apart (other tenants), so each result records it before and after."""
    t = clock()
    s = 0
    for i in range(1_000_000):
        s += i
    return (clock() - t) * 1e3


def engine_fingerprint() -> str:
    """A hash of the engine's sources: the lead tunes ``ivm/`` between runs, so every stored
    result says which engine code produced it."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted((ROOT / "ivm").rglob("*.py")):
        h.update(f.relative_to(ROOT).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def store(results: dict[str, dict], scale: str, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / f"engine_{scale}.json"
    data: dict[str, Any] = {}
    if p.exists():
        try:
            data = json.loads(p.read_text())
        except ValueError:
            data = {}
    data.setdefault("workloads", {}).update(results)
    data["machine"] = dict(
        python=platform.python_version(), cores=os.cpu_count(), platform=platform.platform()
    )
    data["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=float))
    os.replace(tmp, p)
    return p


def parse_workloads(spec: str) -> list[str]:
    if spec == "all":
        return ["w1", "w2", "w3"]
    out = []
    for s in spec.split(","):
        s = ALIASES.get(s.strip().lower(), s.strip().lower())
        if s not in RUNNERS:
            raise SystemExit(f"unknown workload {s!r}: use w1,w2,w3 or all")
        out.append(s)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m bench engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--scale", default="small", choices=sorted(W.SCALES))
    ap.add_argument("--workload", default="all", help="all, or a comma list of w1,w2,w3")
    ap.add_argument("--steps", type=int, default=W.N_STEPS)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip timing the recompute baseline (outputs are still checked)",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the engine's timed steps; top entries go to the JSON "
        "and to bench/results/profile_<workload>_<scale>.txt",
    )
    ap.add_argument(
        "--baseline",
        default="duckdb",
        choices=["duckdb", "networkx"],
        help="W1/W2 recompute baseline (W3 is always DuckDB); duckdb runs the peers' queries",
    )
    ap.add_argument(
        "--cold",
        action="store_true",
        help="no warm-up: the initial load then includes loading the compiled kernels",
    )
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--no-store", action="store_true")
    a = ap.parse_args(argv)

    results: dict[str, dict] = {}
    for wl in parse_workloads(a.workload):
        print(f"[engine] {TITLES[wl]} scale={a.scale} steps={a.steps}", flush=True)
        load_before = os.getloadavg()[0]
        speed_before = python_loop_ms()
        warm_s = None if a.cold else warm_up(wl, a.seed)
        rec = RUNNERS[wl](
            Options(a.scale, a.seed, a.steps, not a.no_baseline, a.profile, a.baseline)
        )
        rec["seed"] = a.seed
        rec["warmup_s"] = warm_s
        rec["profiled"] = a.profile
        rec["engine_fingerprint"] = engine_fingerprint()
        rec["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        # the machine is shared: record how busy it was (1-minute load average)
        rec["loadavg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        rec["python_loop_ms"] = [round(speed_before, 1), round(python_loop_ms(), 1)]
        prof = rec.pop("profile", None)
        if prof is not None and not a.no_store:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / f"profile_{wl}_{a.scale}.txt").write_text(prof)
        results[wl] = rec
        print(
            f"  => initial {rec['initial_s']:.3f}s, median {fmt(rec['median_ms'], 2)} ms, "
            f"p90 {fmt(rec['p90_ms'], 2)} ms, cpu median {fmt(rec['cpu_median_ms'], 2)} ms, "
            f"baseline median "
            f"{fmt(rec['baseline_median_ms'], 1)} ms (x{fmt(rec.get('speedup_vs_baseline'), 1)}), "
            f"baseline initial {fmt(rec.get('baseline_initial_s'), 3)}s "
            f"(engine/baseline {fmt(rec.get('initial_vs_baseline'), 2)}), "
            f"correct={rec['correct']}; traces {rec['trace_rows']:,} rows, "
            f"{fmt(rec['trace_bytes_per_row'], 1)} B/row in memory, state() "
            f"{fmt(rec['state_bytes_per_row'], 1)} B/row",
            flush=True,
        )
    if not a.no_store:
        print(f"stored {store(results, a.scale, a.out)}")
    print()
    print(markdown(results, a.scale))
    return 0 if all(r.get("correct") for r in results.values()) else 1
