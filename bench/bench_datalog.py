"""Datalog benchmark: transitive closure and Andersen points-to on synthetic inputs.

For each workload, in one run:
  * initial evaluation of the compiled program on the ivm engine (one epoch, all inputs);
  * per-change latency: single-fact inserts and deletes, one epoch each (median and max);
  * from-scratch re-evaluation of the final inputs: the same program in a fresh dataflow,
    and a plain Python baseline (networkx descendants for the closure; a semi-naive worklist
    solver with Python sets for points-to).
Every engine result is checked against the baseline before timings are reported.

    python -m bench.bench_datalog [small|medium] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

import ivm
from datalog import compile_program

TC = """
.decl edge(x: number, y: number)  .input edge
.decl path(x: number, y: number)  .output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""

# the example program (examples/datalog/points_to.dl), as the Datalog tests run it
POINTS_TO = (
    Path(__file__).resolve().parents[1] / "examples" / "datalog" / "points_to.dl"
).read_text()


@dataclass(frozen=True)
class Scale:
    tc: tuple[int, int, int]  # nodes, edges, window (an edge spans at most `window` ids)
    pt: tuple[int, int, int]  # variables, objects, locality (assignments stay this close)
    changes: int  # inserts and as many deletes, one epoch each


SCALES = {
    "small": Scale(tc=(400, 600, 12), pt=(600, 150, 12), changes=20),
    "medium": Scale(tc=(1500, 2000, 8), pt=(2000, 400, 20), changes=20),
}

Rows = dict[str, set[tuple[Any, ...]]]


def tc_inputs(rng: random.Random, n: int, m: int, window: int) -> Rows:
    edges: set[tuple[Any, ...]] = set()
    while len(edges) < m:
        x = rng.randrange(n - 1)
        edges.add((x, min(n - 1, x + 1 + rng.randrange(window))))
    return {"edge": edges}


def tc_baseline(inputs: Rows) -> Rows:
    g = nx.DiGraph()
    g.add_edges_from(inputs["edge"])
    return {"path": {(x, y) for x in g for y in nx.descendants(g, x)}}  # acyclic: no (x, x)


def pt_inputs(rng: random.Random, n_vars: int, n_objs: int, locality: int) -> Rows:
    def var(near: int) -> str:
        return f"v{(near + rng.randrange(locality)) % n_vars}"

    rows: Rows = {"new": set(), "assign": set(), "load": set(), "store": set()}
    for i in range(n_vars):
        if rng.random() < 0.3:
            rows["new"].add((f"v{i}", f"o{rng.randrange(n_objs)}"))
        rows["assign"].add((var(i), var(i)))
        if rng.random() < 0.3:
            rows["assign"].add((var(i), var(i)))
        if rng.random() < 0.15:
            rows["load"].add((var(i), var(i), rng.choice("fg")))
        if rng.random() < 0.15:
            rows["store"].add((var(i), rng.choice("fg"), var(i)))
    return rows


def pt_baseline(inputs: Rows) -> Rows:
    """Semi-naive worklist solver for the points-to rules, with Python sets."""
    pt: dict[str, set[str]] = {}
    hpt: dict[tuple[str, str], set[str]] = {}
    assign_from: dict[str, list[str]] = {}
    for to, frm in inputs["assign"]:
        assign_from.setdefault(frm, []).append(to)
    loads: dict[str, list[tuple[str, str]]] = {}
    for to, base, f in inputs["load"]:
        loads.setdefault(base, []).append((to, f))
    stores_base: dict[str, list[tuple[str, str]]] = {}
    stores_from: dict[str, list[tuple[str, str]]] = {}
    for base, f, frm in inputs["store"]:
        stores_base.setdefault(base, []).append((f, frm))
        stores_from.setdefault(frm, []).append((base, f))
    loads_of_obj: dict[tuple[str, str], list[str]] = {}  # (o, f) -> load targets
    work: list[tuple[str, str]] = []

    def add_pt(v: str, o: str) -> None:
        if o not in pt.setdefault(v, set()):
            pt[v].add(o)
            work.append((v, o))

    def add_hpt(o1: str, f: str, o2: str) -> None:
        if o2 not in hpt.setdefault((o1, f), set()):
            hpt[(o1, f)].add(o2)
            for to in loads_of_obj.get((o1, f), []):
                add_pt(to, o2)

    for v, o in inputs["new"]:
        add_pt(v, o)
    while work:
        v, o = work.pop()
        for to in assign_from.get(v, []):
            add_pt(to, o)
        for f, frm in stores_base.get(v, []):  # v is a store base pointing to o
            for o2 in list(pt.get(frm, ())):
                add_hpt(o, f, o2)
        for base, f in stores_from.get(v, []):  # v is a stored value pointing to o
            for o1 in list(pt.get(base, ())):
                add_hpt(o1, f, o)
        for to, f in loads.get(v, []):  # v is a load base pointing to o
            targets = loads_of_obj.setdefault((o, f), [])
            targets.append(to)
            for o2 in list(hpt.get((o, f), ())):
                add_pt(to, o2)
    return {
        "pt": {(v, o) for v, os in pt.items() for o in os},
        "hpt": {(o1, f, o2) for (o1, f), os in hpt.items() for o2 in os},
    }


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run_workload(
    name: str,
    text: str,
    inputs: Rows,
    baseline: Callable[[Rows], Rows],
    changes: list[tuple[str, tuple[Any, ...], int]],
) -> dict[str, Any]:
    g = ivm.Dataflow()
    prog = compile_program(text, g)
    for rel, rows in inputs.items():
        prog.new_inputs[rel].insert(sorted(rows))
    report, initial_s = timed(g.step)
    current = {rel: set(rows) for rel, rows in inputs.items()}
    _check(prog, baseline(current), name)
    facts = sum(len(o.counts()) for o in prog.outputs.values())

    inserts: list[float] = []
    deletes: list[float] = []
    diffs: list[int] = []
    for rel, row, sign in changes:
        if sign > 0:
            prog.new_inputs[rel].insert([row])
            current[rel].add(row)
        else:
            prog.new_inputs[rel].delete([row])
            current[rel].discard(row)
        rep, secs = timed(g.step)
        (inserts if sign > 0 else deletes).append(secs)
        diffs.append(rep.differences)
    expected, baseline_s = timed(lambda: baseline(current))
    _check(prog, expected, name)

    def scratch() -> None:
        g2 = ivm.Dataflow()
        p2 = compile_program(text, g2)
        for rel, rows in current.items():
            p2.new_inputs[rel].insert(sorted(rows))
        g2.step()

    _, scratch_s = timed(scratch)
    return {
        "workload": name,
        "input_rows": sum(len(r) for r in inputs.values()),
        "output_facts": facts,
        "initial_s": initial_s,
        "initial_differences": report.differences,
        "insert_median_ms": 1e3 * statistics.median(inserts),
        "delete_median_ms": 1e3 * statistics.median(deletes),
        "change_max_ms": 1e3 * max(inserts + deletes),
        "change_differences_median": statistics.median(diffs),
        "scratch_engine_s": scratch_s,
        "scratch_baseline_s": baseline_s,
    }


def _check(prog: Any, expected: Rows, name: str) -> None:
    for rel, out in prog.outputs.items():
        got = set(out.counts())
        if got != expected[rel]:
            raise AssertionError(
                f"{name}: {rel} differs from the baseline "
                f"({len(got)} vs {len(expected[rel])} facts)"
            )


def make_changes(
    rng: random.Random,
    inputs: Rows,
    fresh: Callable[[random.Random], tuple[str, tuple[Any, ...]]],
    k: int,
) -> list[tuple[str, tuple[Any, ...], int]]:
    """k inserts of new facts, then k deletes of existing ones, interleaved."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    live = {rel: sorted(rows) for rel, rows in inputs.items()}
    for _ in range(k):
        rel, row = fresh(rng)
        out.append((rel, row, 1))
        rel = rng.choice([r for r in live if live[r]])
        victim = live[rel].pop(rng.randrange(len(live[rel])))
        out.append((rel, victim, -1))
    return out


def markdown(results: list[dict[str, Any]], scale: str) -> str:
    head = (
        "| workload | input rows | facts | initial (s) | insert p50 (ms) | delete p50 (ms) "
        "| change max (ms) | diffs/change p50 | from scratch: engine (s) | "
        "from scratch: Python baseline (s) |"
    )
    lines = [f"Datalog benchmark, scale {scale}", "", head, "|" + "---|" * 10]
    for r in results:
        lines.append(
            f"| {r['workload']} | {r['input_rows']:,} | {r['output_facts']:,} | "
            f"{r['initial_s']:.2f} | {r['insert_median_ms']:.1f} | {r['delete_median_ms']:.1f} "
            f"| {r['change_max_ms']:.1f} | {r['change_differences_median']:,.0f} | "
            f"{r['scratch_engine_s']:.2f} | {r['scratch_baseline_s']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scale", nargs="?", default="small", choices=sorted(SCALES))
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    cfg = SCALES[args.scale]
    rng = random.Random(args.seed)
    k = cfg.changes

    n, m, window = cfg.tc
    tc_in = tc_inputs(rng, n, m, window)
    tc_changes = make_changes(
        rng,
        tc_in,
        lambda r: ("edge", ((x := r.randrange(n - 1)), min(n - 1, x + 1 + r.randrange(window)))),
        k,
    )
    n_vars, n_objs, locality = cfg.pt
    pt_in = pt_inputs(rng, n_vars, n_objs, locality)

    def pt_fresh(r: random.Random) -> tuple[str, tuple[Any, ...]]:
        i = r.randrange(n_vars)
        v = f"v{(i + r.randrange(locality)) % n_vars}"
        return (
            ("assign", (f"v{i}", v))
            if r.random() < 0.7
            else ("new", (f"v{i}", f"o{r.randrange(n_objs)}"))
        )

    pt_changes = make_changes(rng, pt_in, pt_fresh, k)
    results = [
        run_workload("transitive closure", TC, tc_in, tc_baseline, tc_changes),
        run_workload("points-to (Andersen)", POINTS_TO, pt_in, pt_baseline, pt_changes),
    ]
    print(markdown(results, args.scale))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"scale": args.scale, "workloads": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
