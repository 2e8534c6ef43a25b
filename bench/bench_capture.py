"""Cost of verified change capture (catalog.capture) on a 1M-row table in 10 files.

``python -m bench.bench_capture``: for each kind of commit, the median time of reading one
version's changes with :func:`catalog.changes.read_changes` (verified per commit), next to
delta-rs's unverified ``load_cdf`` of the same version (what the refresh used before).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable

from catalog import delta
from catalog.changes import read_changes

ROWS, FILES, REPEAT = 1_000_000, 10, 5


def _median(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _cdf(p: str, v: int) -> None:
    pa.RecordBatchReader.from_stream(
        DeltaTable(p).load_cdf(starting_version=v, ending_version=v)
    ).read_all()


def main(argv: list[str]) -> int:
    p = tempfile.mkdtemp() + "/t"
    delta.create_table(p, pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    per = ROWS // FILES
    for i in range(FILES):
        ids = np.arange(i * per, (i + 1) * per)
        delta.insert(p, pa.table({"id": ids, "v": ids % 97}))
    ops: dict[str, Callable[[], object]] = {
        "append 10 rows": lambda: delta.insert(
            p, pa.table({"id": np.arange(-10, 0), "v": np.zeros(10, np.int64)})
        ),
        "UPDATE 10 rows, delta-rs (feed incomplete: file diff)": lambda: DeltaTable(p).update(
            updates={"v": "v + 1"}, predicate="id >= 0 AND id < 10"
        ),
        "UPDATE 10 rows, catalog (MERGE: feed verified)": lambda: delta.update(
            p, {"v": "v + 1"}, "id >= 0 AND id < 10"
        ),
        "DELETE 10 rows (feed verified)": lambda: delta.delete(p, "id >= 10 AND id < 20"),
        "OPTIMIZE (no data change)": lambda: DeltaTable(p).optimize.compact(),
    }
    print(f"| commit ({ROWS:,} rows, {FILES} files) | read_changes | load_cdf (unverified) |")
    print("|---|---|---|")
    for name, op in ops.items():
        op()
        v = delta.current_version(p)
        ours = _median(lambda v=v: read_changes(p, v - 1, v))
        theirs = _median(lambda v=v: _cdf(p, v))
        print(f"| {name} | {ours * 1000:.0f} ms | {theirs * 1000:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
