"""CPU of the two ends of a refresh, without the rest: ``python -m bench publish-cpu``.

* **view publish**: a 10,000-row view table (one file, the shape of ``bench refresh``'s
  view: region, customer, count, total) receives ``--changes``-row updates (half its rows'
  old versions retracted, their new versions inserted) through
  ``view_table.commit_view_changes`` with a key, then ``view_table.maintain`` — what a
  refresh's commit and maintenance phases do for the view;
* **second consolidation**: the view commit's conform-and-split of a change that
  ``refresh.commit_refresh`` already consolidated, done as before (consolidated again) and
  as now (not), alternating in one process: what skipping it saves per view and refresh;
* **input read**: ``changes.read_changes`` of an input's last two commits (5 rows inserted
  by delta-rs, 5 deleted), what a refresh's read phase does for the changed input;
* **read phase**: the same input and an unchanged second one registered in a catalog, read
  as a refresh's read phase does (``Catalog.pin_inputs``, then ``changes_since``): the
  inputs' checks, pins and both reads.

Each is timed with ``time.process_time`` (CPU of the process, all threads) after warm-up;
printed: minimum, tenth percentile and median per call.  Two trees are compared by running
the module from each in turn (``cd TREE && PYTHONPATH=. python -m bench publish-cpu``); the
figures move far less with other processes' load than a refresh's wall clock does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

VIEW_ROWS = 10_000


def _cpu(samples: list[float]) -> dict[str, float]:
    q = sorted(samples)
    return {
        "min_ms": q[0] * 1e3,
        "p10_ms": q[len(q) // 10] * 1e3,
        "median_ms": statistics.median(q) * 1e3,
    }


def publish(root: Path, changes: int, commits: int) -> dict[str, float]:
    """CPU per view commit and maintenance of ``changes``-row updates (after 20 warm-ups)."""
    from catalog import view_table as vt
    from catalog.changes import DIFF

    rng = np.random.default_rng(0)
    n = VIEW_ROWS
    schema = pa.schema(
        [
            pa.field("region", pa.string()),
            pa.field("cust", pa.int64(), False),
            pa.field("n", pa.int64(), False),
            pa.field("total", pa.int64()),
        ]
    )
    region = [f"region {i % 20}" for i in range(n)]
    count = rng.integers(1, 200, n)
    total = rng.integers(1, 10**6, n)
    path = str(root / "view")
    vt.create_view_table(path, schema, view="v")
    rows = pa.table({"region": region, "cust": np.arange(n), "n": count, "total": total})
    first = pa.Table.from_arrays([*rows.columns], schema=schema)
    ones = pa.array(np.ones(n, np.int64))
    vt.commit_view_changes(
        path, first.append_column(DIFF, ones), view="v", epoch=1, input_versions={}
    )
    samples = []
    for epoch in range(2, commits + 22):
        ids = rng.choice(n, max(changes // 2, 1), replace=False)
        old = {
            "region": [region[i] for i in ids],
            "cust": ids,
            "n": count[ids],
            "total": total[ids],
        }
        count[ids] += 1
        total[ids] += 7
        new = {"region": old["region"], "cust": ids, "n": count[ids], "total": total[ids]}
        change = pa.concat_tables(
            [
                pa.Table.from_pydict(old, schema=schema).append_column(
                    DIFF, pa.array(np.full(len(ids), -1, np.int64))
                ),
                pa.Table.from_pydict(new, schema=schema).append_column(
                    DIFF, pa.array(np.ones(len(ids), np.int64))
                ),
            ]
        )
        c = time.process_time()
        vt.commit_view_changes(
            path, change, view="v", epoch=epoch, input_versions={"t": epoch}, key=("cust",)
        )
        vt.maintain(path)
        if epoch >= 22:
            samples.append(time.process_time() - c)
    if vt.read_view(path).num_rows != n:
        raise AssertionError("the view table lost rows")
    return _cpu(samples)


def read(root: Path, calls: int) -> dict[str, float]:
    """CPU per read of an input's changes: one insert commit and one delete commit."""
    from catalog import delta
    from catalog.changes import read_changes

    rng = np.random.default_rng(0)
    path = str(root / "orders")
    delta.create_table(
        path,
        pa.schema([pa.field(c, pa.int64(), False) for c in ("id", "cust", "amount")]),
    )
    n = 100_000
    cols = {"id": np.arange(n), "cust": rng.integers(0, 10_000, n), "amount": np.arange(n)}
    delta.insert(path, pa.table(cols))
    start = delta.current_version(path)
    delta.insert(
        path, pa.table({"id": np.arange(n, n + 5), "cust": np.arange(5), "amount": np.arange(5)})
    )
    delta.delete(path, "id IN (1, 50, 600, 7000, 80000)")
    end = delta.current_version(path)
    samples = []
    for i in range(calls + 20):
        c = time.process_time()
        got = read_changes(path, start, end, name="orders")
        if i >= 20:
            samples.append(time.process_time() - c)
    if got.num_rows != 10:
        raise AssertionError(f"expected 10 changed rows, read {got.num_rows}")
    return _cpu(samples)


def second_consolidation(changes: int, calls: int) -> dict[str, dict[str, float]]:
    """CPU of ``view_table._signed_change`` on a consolidated ``changes``-row update of the
    bench view's shape, consolidating again (``again``) and not (``skipped``), alternating."""
    from catalog import view_table as vt
    from catalog.changes import DIFF, consolidate

    rng = np.random.default_rng(0)
    rows = pa.schema(
        [("region", pa.string()), ("cust", pa.int64()), ("n", pa.int64()), ("total", pa.int64())]
    )
    half = max(changes // 2, 1)
    ids = rng.choice(VIEW_ROWS, half, replace=False).tolist()
    change = consolidate(
        pa.table(
            {
                "region": [f"region {i % 20}" for i in ids] * 2,
                "cust": ids * 2,
                "n": list(range(2 * half)),
                "total": list(range(2 * half)),
                DIFF: [-1] * half + [1] * half,
            },
            schema=rows.append(pa.field(DIFF, pa.int64())),
        )
    )
    samples: dict[bool, list[float]] = {False: [], True: []}
    for i in range(2 * (calls + 20)):
        skip = bool(i % 2)
        c = time.process_time()
        vt._signed_change(change, rows, "v", consolidated=skip)
        if i >= 40:
            samples[skip].append(time.process_time() - c)
    return {"again": _cpu(samples[False]), "skipped": _cpu(samples[True])}


def read_phase(root: Path, calls: int) -> dict[str, float]:
    """CPU per read phase over ``read``'s input (its last two commits) and an unchanged one."""
    from catalog import Catalog, delta

    other = str(root / "customers")
    delta.create_table(other, pa.schema([pa.field("id", pa.int64(), False)]))
    delta.insert(other, pa.table({"id": np.arange(100)}))
    cat = Catalog(root / "wh")
    cat.register_table("orders", root / "orders")
    cat.register_table("customers", other)
    end = delta.current_version(root / "orders")
    before = {"orders": end - 2, "customers": delta.current_version(other)}
    samples = []
    for i in range(calls + 20):
        c = time.process_time()
        pins = cat.pin_inputs(["orders", "customers"], view="v")
        got = cat.changes_since(pins, before, {t: tid for t, (_, tid) in pins.items()})
        if i >= 20:
            samples.append(time.process_time() - c)
    assert got is not None
    if got["orders"].num_rows != 10 or got["customers"].num_rows != 0:
        raise AssertionError(f"expected 10 and 0 changed rows, read {got}")
    return _cpu(samples)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench publish-cpu")
    ap.add_argument("--changes", type=int, nargs="+", default=[10, 1_200])
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--out", default=None, help="write the results here as JSON")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ivm-bench-publish-"))
    result: dict[str, Any] = {"benchmark": "publish-cpu", "view_rows": VIEW_ROWS}
    try:
        for k in args.changes:
            got = publish(root / f"p{k}", k, args.commits)
            result[f"publish_{k}"] = got
            print(f"view publish + maintenance, {k}-row change: " + _line(got))
        for k in args.changes:
            twice = second_consolidation(k, args.reads)
            result[f"second_consolidation_{k}"] = twice
            print(
                f"view change conformed, {k}-row change: consolidated again "
                + _line(twice["again"])
                + "; skipped "
                + _line(twice["skipped"])
            )
        got = read(root, args.reads)
        result["read"] = got
        print("input read (2 commits, 10 rows): " + _line(got))
        got = read_phase(root, args.reads)
        result["read_phase"] = got
        print("read phase (2 inputs, one with 2 commits, 10 rows): " + _line(got))
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _line(r: dict[str, float]) -> str:
    return f"CPU min {r['min_ms']:.2f} ms, p10 {r['p10_ms']:.2f}, median {r['median_ms']:.2f}"
