"""``python -m bench clustering``: what ``CLUSTER BY`` buys a reader of a view table.

One view, ``SELECT r, k, sum(v) AS s FROM t GROUP BY r, k`` over ``--rows`` input rows, is
created twice: plainly and ``CLUSTER BY (k)``; then ``--refreshes`` rounds of random
inserts, deletes and updates are refreshed into both.  For ``--lookups`` random keys it counts
what a reader with a filter ``k = x`` must open after skipping by statistics: the data files
whose ``k`` min/max (Delta log) can hold ``x``, and the Parquet row groups whose ``k``
statistics can.  Counts, not timers: the ratio plain / clustered is the reading saved.
Results go to ``bench/results/clustering.json``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.cli import bench_arguments
from catalog import delta, delta_commit
from catalog.view_partitions import file_path

RESULTS = Path(__file__).parent / "results" / "clustering.json"
QUERY = "SELECT r, k, sum(v) AS s FROM t GROUP BY r, k"


def reads(path: str, keys: np.ndarray) -> tuple[float, float, int, int]:
    """Mean data files and row groups a reader of ``k = x`` opens, over ``keys``; and the
    table's files and row groups."""
    _, files = delta_commit.snapshot_files(path)
    bounds = []
    for f in files.values():
        lo, hi = f.stats["minValues"]["k"], f.stats["maxValues"]["k"]
        md = pq.ParquetFile(file_path(path, f)).metadata
        i = md.schema.names.index("k")
        groups = [
            (md.row_group(g).column(i).statistics.min, md.row_group(g).column(i).statistics.max)
            for g in range(md.num_row_groups)
        ]
        bounds.append((lo, hi, groups))
    nfiles = ngroups = 0
    for x in keys.tolist():
        for lo, hi, groups in bounds:
            if lo <= x <= hi:
                nfiles += 1
                ngroups += sum(1 for a, b in groups if a <= x <= b)
    total_groups = sum(len(g) for _, _, g in bounds)
    return nfiles / len(keys), ngroups / len(keys), len(bounds), total_groups


def run(rows: int, refreshes: int, lookups: int, seed: int = 18) -> dict[str, Any]:
    from spark_exec.session import Session

    rng = np.random.default_rng(seed)
    keys = rows // 2
    with tempfile.TemporaryDirectory() as d:
        s = Session(warehouse=Path(d) / "wh")
        s.sql("CREATE TABLE t (id BIGINT, r STRING, k BIGINT, v BIGINT)")
        regions = np.array(["north", "south", "east", "west"])
        delta.insert(
            s.table_path("t"),
            pa.table(
                {
                    "id": np.arange(rows),
                    "r": regions[rng.integers(0, 4, rows)],
                    "k": rng.integers(0, keys, rows),
                    "v": rng.integers(0, 100, rows),
                }
            ),
        )
        s.sql(f"CREATE MATERIALIZED VIEW plain AS {QUERY}")
        s.sql(f"CREATE MATERIALIZED VIEW clustered CLUSTER BY (k) AS {QUERY}")
        next_id = rows
        for _ in range(refreshes):
            n = 200
            values = ", ".join(
                f"({next_id + i}, '{regions[rng.integers(0, 4)]}', {rng.integers(0, keys)}, "
                f"{rng.integers(0, 100)})"
                for i in range(n)
            )
            next_id += n
            s.sql(f"INSERT INTO t VALUES {values}")
            gone = ", ".join(str(int(x)) for x in rng.integers(0, rows, 50))
            s.sql(f"DELETE FROM t WHERE id IN ({gone})")
            s.sql(f"UPDATE t SET v = v + 1 WHERE k < {keys // 100}")
            s.refresh()
        a = s.read("plain").sort_by([("r", "ascending"), ("k", "ascending")])
        b = s.read("clustered").sort_by([("r", "ascending"), ("k", "ascending")])
        assert a.equals(b), "the two views differ"
        probe = rng.integers(0, keys, lookups)
        out: dict[str, Any] = {"rows": rows, "view_rows": a.num_rows, "refreshes": refreshes}
        for name in ("plain", "clustered"):
            f, g, nf, ng = reads(s.table_path(name), probe)
            out[name] = {"files_read": f, "row_groups_read": g, "files": nf, "row_groups": ng}
        out["files_ratio"] = out["plain"]["files_read"] / max(out["clustered"]["files_read"], 1e-9)
        out["row_groups_ratio"] = out["plain"]["row_groups_read"] / max(
            out["clustered"]["row_groups_read"], 1e-9
        )
        return out


def main(argv: list[str]) -> int:
    ap = bench_arguments(
        "python -m bench clustering", out=RESULTS, rows=600_000, refreshes=5, lookups=200
    )
    args = ap.parse_args(argv)
    result = run(args.rows, args.refreshes, args.lookups)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0
