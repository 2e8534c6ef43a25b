"""The ahead-of-time compiled kernels (:mod:`ivm.aot`): a fresh process runs the three
benchmark shapes (connected components, reachability, a filter-join-aggregate) through
randomized insertions and deletions with the compiled module and no JIT compilation or
loading at all, and gives the same view contents, epoch by epoch, as the JIT alone
(``IVM_AOT=0``); the compiled module is not used when its stamp does not match."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ivm import aot

ROOT = Path(__file__).resolve().parents[2]

#: runs the workloads; prints each epoch's sorted view rows and the JIT overloads made
SCRIPT = r"""
import json, sys
import numpy as np
import ivm
from ivm import aot, difference, kernels
from ivm.library.graphs import connected_components, reachable

rng = np.random.default_rng(int(sys.argv[1]))
EDGE = [("src", "int64"), ("dst", "int64")]
out = {}

def rows(o):
    t = o.contents()
    return sorted(map(list, zip(*(t.column(c).to_pylist() for c in t.column_names))))

def graph_steps(n, m):
    live = {tuple(e) for e in rng.integers(0, n, (m, 2)).tolist()}
    yield sorted(live), []
    for _ in range(5):
        gone = [e for e in sorted(live) if rng.random() < 0.1]
        new = [tuple(e) for e in rng.integers(0, n, (m // 10, 2)).tolist()]
        new = sorted(set(new) - live)
        live = (live - set(gone)) | set(new)
        yield new, gone

def cols(es):
    a = np.asarray(es, dtype=np.int64).reshape(-1, 2)
    return {"src": a[:, 0].copy(), "dst": a[:, 1].copy()}

for name in ("wcc", "reach"):
    g = ivm.Dataflow(name)
    edges = g.input("edges", EDGE)
    if name == "wcc":
        view = connected_components(edges)
    else:
        roots = g.input("roots", [("node", "int64")])
        roots.insert({"node": np.arange(3, dtype=np.int64)})
        view = reachable(edges, roots)
    o = g.output(view, name)
    out[name] = []
    for add, gone in graph_steps(400, 900):
        if gone:
            edges.delete(cols(gone))
        edges.insert(cols(add))
        g.step()
        o.changes()
        out[name].append(rows(o))

g = ivm.Dataflow("join-agg")
orders = g.input("orders", [("id", "int64"), ("cust", "int64"), ("amount", "int64")])
customers = g.input("customers", [("id", "int64"), ("region", "int64")])
live = orders.filter(lambda id, cust, amount: amount % 7 != 0)
joined = live.project("cust", "amount").join(customers, on=[("cust", "id")])
view = joined.reduce(["id", "region"], [("count",), ("sum", "amount")], names=["n", "total"])
o = g.output(view, "view")
customers.insert({"id": np.arange(50, dtype=np.int64), "region": np.arange(50, dtype=np.int64) % 4})
table = rng.integers(0, 100, (3000, 3))
table[:, 0] = np.arange(3000)
out["join-agg"] = []
for step in range(6):
    if step:
        gone = rng.random(table.shape[0]) < 0.05
        orders.delete({c: table[gone, k].copy() for k, c in enumerate(("id", "cust", "amount"))})
        new = rng.integers(0, 100, (int(gone.sum()), 3))
        new[:, 0] = table[gone, 0]
        table[gone] = new
        batch = new
    else:
        batch = table
    orders.insert({c: batch[:, k].copy() for k, c in enumerate(("id", "cust", "amount"))})
    g.step()
    o.changes()
    out["join-agg"].append(rows(o))

jit = sorted(f"{n}{tuple(map(str, sig))}" for m in (kernels, difference)
             for n, d in vars(m).items() if hasattr(d, "py_func") for sig in d.overloads)
print(json.dumps({"views": out, "jit_overloads": jit, "compiled": aot.module() is not None}))
"""


def run(seed: int, compiled: bool) -> dict:
    env = {**os.environ, "IVM_AOT": "1" if compiled else "0"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(seed)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built() -> None:
    assert aot.is_current(), (
        "the compiled kernels are missing or stale: `./run env` (or "
        "`python -m ivm.aot_build`) builds them for this machine"
    )


@pytest.mark.parametrize("seed", [3, 11])
def test_compiled_kernels_match_the_jit_and_need_no_jit(built: None, seed: int) -> None:
    compiled = run(seed, compiled=True)
    jit = run(seed, compiled=False)
    assert compiled["compiled"] and not jit["compiled"]
    assert jit["jit_overloads"]  # the JIT process did compile (or load) its kernels
    assert compiled["jit_overloads"] == []  # every kernel these shapes call was compiled
    assert compiled["views"] == jit["views"]
    assert all(len(v) == 6 for v in compiled["views"].values())


def test_every_table_signature_is_installed(built: None) -> None:
    import ivm.kernels  # noqa: F401 - installs its compiled kernels

    for module, kernels in aot.signatures().items():
        for name, sigs in kernels.items():
            for args in sigs:
                assert aot.compiled(module, name, args) is not None, (module, name, args)


def test_a_module_whose_stamp_differs_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp = aot.stamp()
    path = tmp_path / "stamp.json"
    monkeypatch.setattr(aot, "STAMP", path)
    assert not aot.is_current()  # no stamp at all
    path.write_text(json.dumps(stamp))
    assert aot.is_current()
    for key in ("sources", "cpu", "numba"):
        path.write_text(json.dumps({**stamp, key: stamp[key] + "x"}))
        assert not aot.is_current(), key
    path.write_text("{not json")
    assert not aot.is_current()


#: calls compiled kernels that return arrays many times; prints how often ``pickle.loads``
#: ran during those calls (after each kernel's first call) and what they returned
UNPICKLES = r"""
import json, pickle
import numpy as np
calls = [0]
loads = pickle.loads
def counting(data, *a, **k):
    calls[0] += 1
    return loads(data, *a, **k)
pickle.loads = counting  # before the compiled module looks it up
from ivm import aot, kernels
h = np.array([5, 3, 5, 9], dtype=np.uint64)
c = np.array([1, 0, 2], dtype=np.int64)
first = kernels.first_of_hashes(h)
changes = kernels.distinct_changes(c, np.zeros(3, dtype=np.int64), np.full(3, 7, dtype=np.int64), 7)
before = calls[0]
for _ in range(200):
    again = kernels.first_of_hashes(h)
    more = kernels.distinct_changes(c, np.zeros(3, dtype=np.int64), np.full(3, 7, dtype=np.int64), 7)
print(json.dumps({
    "compiled": aot.module() is not None,
    "loads": calls[0] - before,
    "types": sorted({type(a).__name__ for a in (again, *more[:3])}),
    "same": again.tolist() == first.tolist()
    and all(x.tolist() == y.tolist() for x, y in zip(more[:3], changes[:3])),
    "first": again.tolist(),
}))
"""


def test_compiled_kernels_unpickle_the_array_type_once(built: None) -> None:
    """A returned array's Python type is a pickled constant of the compiled module: it is
    unpickled on a kernel's first call only (``ivm.aot_build._memoized_unserialize``), not on
    every array returned."""
    proc = subprocess.run(
        [sys.executable, "-c", UNPICKLES],
        cwd=ROOT,
        env={**os.environ, "IVM_AOT": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["compiled"]
    assert got["loads"] == 0
    assert got["types"] == ["ndarray"]
    assert got["same"] and got["first"] == [0, 1, 3]
