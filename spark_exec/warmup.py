"""Load the engine while a Session starts, so its first view does not pay for it.

A process's first view creation used to spend ~0.6 s before any of its own work: importing
the SQL front end (~50 modules, sqlglot's optimizer) and loading the engine's compiled kernels
from numba's on-disk cache (each kernel's machine code is read and linked on its first call
with a given signature; numba's first use also initializes its code-generation target).
Measured on the 1M-row join-aggregate of ``python -m bench refresh``: first creation 1.16 s,
later creations 0.36 s.

:func:`start` does that loading on a daemon thread by running a small view of the usual
shape (a join, a GROUP BY with COUNT/SUM/MIN/MAX/AVG over integer, nullable, float and string
columns, its insertions, a deletion, and its state) through the real front end and engine,
while the caller goes on (creating tables, reading inputs, starting Spark).  Nothing of it is
kept: the dataflow is private to the thread.  A view created before it finishes waits on
numba's compile lock or the import lock for what is still loading, never for more.

``IVM_WARMUP=0`` turns it off (e.g. a short-lived process that creates no view).  A failure
is logged and ignored: warming up is an optimization, never a reason for a Session to fail.
"""

from __future__ import annotations

import logging
import os
import threading

import numpy as np

log = logging.getLogger(__name__)

#: the view run: the shapes of the usual incremental SQL views (a join feeding aggregates)
SQL = """SELECT d.name, f.k, count(*) AS n, sum(f.v) AS total, min(f.v) AS lo,
                max(f.x) AS hi, avg(f.x) AS mean, count(f.maybe) AS m
         FROM facts f JOIN dims d ON f.k = d.id
         WHERE f.v > 0
         GROUP BY d.name, f.k"""
#: a one-column key hashes by its own rule
SQL_ONE_KEY = "SELECT k, count(*) AS n FROM facts GROUP BY k"
CATALOG = {
    "facts": [("k", "bigint"), ("v", "bigint"), ("x", "double"), ("maybe", "bigint")],
    "dims": [("id", "bigint"), ("name", "string")],
}
#: the first epoch's rows: as many as a bulk load's sorts (ivm.batch's radix sort) take
ROWS = 40_000

_started: tuple[int, threading.Thread] | None = None  # (pid, thread): none across a fork
_lock = threading.Lock()


def start() -> threading.Thread | None:
    """Start warming up once per process (``None`` when turned off); returns the thread."""
    global _started
    if os.environ.get("IVM_WARMUP", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    with _lock:
        if _started is None or _started[0] != os.getpid():
            thread = threading.Thread(target=_run_logged, name="ivm-warmup", daemon=True)
            thread.start()
            _started = (os.getpid(), thread)
        return _started[1]


def _run_logged() -> None:
    try:
        run()
    except Exception:  # an optimization only: report, never fail the Session
        log.debug("engine warm-up failed", exc_info=True)


def run(rows: int = ROWS) -> list[dict[tuple[object, ...], int]]:
    """Run the warm-up views through two epochs (``rows`` insertions, then 16 deletions) and
    take the state; returns each view's final contents (``{row: count}``, for the tests)."""
    import ivm
    from sql_frontend.compile import compile_view

    g = ivm.Dataflow("warm-up")
    facts = g.input("facts", [("k", "int64"), ("v", "int64"), ("x", "float64"), ("maybe", "any")])
    dims = g.input("dims", [("id", "int64"), ("name", "str")])
    inputs = {"facts": facts, "dims": dims}
    outs = [g.output(compile_view(q, CATALOG, g, inputs).collection, q) for q in (SQL, SQL_ONE_KEY)]
    rng = np.random.default_rng(0)
    cols = {
        "k": rng.integers(0, 8, rows),
        "v": rng.integers(-5, 100, rows),
        "x": rng.random(rows),
        "maybe": _every_third(rows),
    }
    dims.send({"id": np.arange(8), "name": np.array([f"d{i}" for i in range(8)], object)}, 1)
    facts.send(cols, np.ones(rows, np.int64))
    g.step()
    gone = {name: c[:16] for name, c in cols.items()}
    facts.send(gone, -np.ones(16, np.int64))
    g.step()
    for out in outs:
        out.changes()
    g.state()
    return [out.counts() for out in outs]


def _every_third(n: int) -> np.ndarray:
    """A nullable BIGINT column: every third row holds its number, the others NULL."""
    out = np.full(n, None, dtype=object)
    out[::3] = np.arange(0, n, 3).astype(object)
    return out
