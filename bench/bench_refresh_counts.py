"""What one small refresh does, counted (not timed): ``python -m bench refresh-counts``.

The workload of ``bench refresh`` (orders ⋈ customers, aggregated; ``--rows`` orders), then
``--refreshes`` refreshes of a 10-row change under cProfile.  Per refresh: sequential fsync
waits (``fsync`` calls on the calling thread, and barriers of :func:`catalog.durable.
fsync_all`, whose fsyncs run together on other threads), deltalake calls by kind, checkpoint
tables read, Parquet reads, path resolutions, files opened, ``stat`` calls, Delta schemas
converted, indented JSON encodes, schema checks, and Python function calls; then, in a second
run of as many refreshes (not profiled), what each checkpoint save leaves in the group's
checkpoint directory (names created, files written: new inodes, hard links are not) and the
paths fsynced, in the checkpoint directory and elsewhere (``os.fsync`` on every thread).
These counts do not move with the machine's load,
so two trees can be compared on a busy machine: run the module from each tree
(``cd TREE && PYTHONPATH=. python -m bench refresh-counts --out ...``).  Results go to
``bench/results/refresh_counts.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "refresh_counts.json"

COUNTS = {
    "fsync calls on the refreshing thread": lambda f, _: f == "<built-in method posix.fsync>",
    "fsync_all barriers": lambda f, _: f == "fsync_all",
    "deltalake transaction_version": lambda f, _: "transaction_version' of 'deltalake" in f,
    "deltalake load_cdf": lambda f, _: "load_cdf' of 'deltalake" in f,
    "deltalake update_incremental": lambda f, _: "update_incremental' of 'deltalake" in f,
    "deltalake compact_optimize": lambda f, _: "compact_optimize' of 'deltalake" in f,
    "deltalake create_checkpoint": lambda f, _: "create_checkpoint' of 'deltalake" in f,
    "checkpoint tables read": lambda f, _: f == "_read_table",
    "view table compactions": lambda f, _: f == "compact_view",
    "Parquet files written": lambda f, _: f == "write_data_file",
    # what issue 15's refresh-floor pass cut (bench/README.md)
    "Parquet reads (ParquetFile.read, read_row_groups, capture's whole-file parse)": lambda f, src: (
        (f in ("read", "read_row_groups") and src.endswith("parquet/core.py"))
        or (f == "_parse_whole" and src.endswith("capture.py"))
    ),
    "paths resolved (Path.resolve)": lambda f, src: f == "resolve" and src.endswith("pathlib.py"),
    "files opened (io.open)": lambda f, _: f == "<built-in method io.open>",
    "stat calls": lambda f, _: f == "<built-in method posix.stat>",
    "Delta schemas converted to Arrow": lambda f, _: "to_arrow' of 'deltalake" in f,
    "Python-level JSON encodes (indented dumps)": lambda f, _: f == "_iterencode",
    "schema compatibility checks": lambda f, _: f == "check_compatible",
    # what issue 15's seventh pass cut (bench/README.md)
    "Arrow hash aggregations (group_by)": lambda f, src: (
        f == "_group_by" and src.endswith("pyarrow/acero.py")
    ),
    "Arrow hash joins": lambda f, src: f == "_perform_join" and src.endswith("pyarrow/acero.py"),
}


def main(argv: list[str]) -> int:
    from bench import bench_refresh as br

    ap = argparse.ArgumentParser(prog="python -m bench refresh-counts")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--refreshes", type=int, default=16)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    _inline_staging()
    from catalog import delta_commit

    # a tree that encodes a local file before writing it counts its encodes (once per file)
    writer = "encode_data_file" if hasattr(delta_commit, "encode_data_file") else "write_data_file"
    COUNTS["Parquet files written"] = lambda f, _: f == writer
    root = Path(tempfile.mkdtemp(prefix="ivm-bench-counts-"))
    try:
        rng = np.random.default_rng(0)
        n = args.rows
        s = br.setup(root / "wh", n, rng)
        s.create_view("revenue", br.VIEW)
        next_id = n
        for _ in range(3):  # past the first refreshes' one-off work
            next_id = br._change(s, rng, 10, next_id)
            s.refresh()
        prof = cProfile.Profile()
        for _ in range(args.refreshes):
            next_id = br._change(s, rng, 10, next_id)
            prof.enable()
            s.refresh()
            prof.disable()
        stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        per = {
            name: sum(v[1] for k, v in stats.items() if match(k[2], k[0])) / args.refreshes
            for name, match in COUNTS.items()
        }
        per["Python function calls"] = sum(v[1] for v in stats.values()) / args.refreshes
        per.update(
            _save_counts(
                s, root / "wh", args.refreshes, lambda i: br._change(s, rng, 10, i), next_id
            )
        )
        result = {"benchmark": "refresh-counts", "rows": n, "per_refresh": per}
        Path(args.out).write_text(json.dumps(result, indent=1))
        for k, v in per.items():
            print(f"{k:>40}: {v:,.2f}")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _inline_staging() -> None:
    """Count the view commits' staged work too: catalog.refresh stages it on a worker thread
    while the checkpoint is saved, and cProfile sees only the refreshing thread; here the same
    calls run on the refreshing thread, before the save (a tree without staging: unchanged)."""
    from concurrent.futures import Future

    from catalog import refresh

    stage = getattr(refresh, "_stage_views", None)
    if stage is None:
        return

    def inline(ckpt: Any, targets: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(stage(ckpt, targets))
        return done

    refresh._submit_staging = inline  # type: ignore[attr-defined]


def _entries(directory: Path) -> dict[str, int]:
    """Every name under ``directory`` (relative) and its inode."""
    out = {}
    for dirpath, _, files in os.walk(directory):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, directory)] = os.stat(p).st_ino
    return out


def _save_counts(
    s: Any, warehouse: Path, refreshes: int, change: Callable[[int], int], next_id: int
) -> dict[str, float]:
    """Per refresh: names created and files written in the checkpoint directory, and the
    paths fsynced there and elsewhere (``os.fsync`` wrapped, on every thread)."""
    checkpoints = warehouse / "_ivm" / "checkpoints"
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    names = files = 0
    os.fsync = fsync  # type: ignore[assignment]
    try:
        for _ in range(refreshes):
            next_id = change(next_id)
            before = _entries(checkpoints)
            s.refresh()
            after = _entries(checkpoints)
            new = set(after) - set(before)
            names += len(new)
            files += len({after[n] for n in new} - set(before.values()))
    finally:
        os.fsync = real  # type: ignore[assignment]
    inside = sum(1 for p in synced if p.startswith(str(checkpoints.resolve())))
    return {
        "checkpoint names created per save (CURRENT not counted)": names / refreshes,
        "checkpoint files written per save": files / refreshes,
        "paths fsynced in the checkpoint directory": inside / refreshes,
        "paths fsynced elsewhere (view tables)": (len(synced) - inside) / refreshes,
    }
