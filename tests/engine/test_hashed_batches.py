"""Batches that carry row hashes are consolidated, and their hashes are their rows'.

Operators pass consolidated batches on with their row hashes (an arrangement's output, a
reduce's output, :meth:`Batch.consolidate`), and consumers then stage them without hashing
or consolidating again (the small-change fast path of issue 15).  That is only sound while
``rowhash`` is set exactly on batches whose rows are distinct, whose diffs are non-zero and
whose ``rowhash`` equals :func:`hash_rows` of the columns.  These tests check the invariant
on every batch every operator emits while loops (reachability, connected components) are
maintained under random inserts and deletes, and that the outputs equal a plain-Python
recomputation (``engine_helpers``' references) after every step.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from engine_helpers import examples, ref_min_label, ref_reachable
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.batch import Batch, hash_rows, hash_rows_after
from ivm.library.graphs import EDGE, connected_components, reachable
from ivm.operators.base import Operator

rows = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["a", "b", None]), st.integers(-2, 2)),
    max_size=30,
)


def check_hashed(batch: Batch) -> None:
    """A batch with row hashes: distinct rows, no zero diff, the hashes of its rows."""
    if batch.rowhash is None:
        return
    n = len(batch)
    assert np.array_equal(batch.rowhash, hash_rows(batch.cols, n))
    assert (batch.diff != 0).all()
    keys = list(zip(*(c.tolist() for c in batch.cols), strict=True)) if batch.cols else []
    assert len(set(keys)) == n


@contextmanager
def every_emit_checked() -> Iterator[list[int]]:
    """Check :func:`check_hashed` on every batch an operator emits; yields a one-item
    list counting the hashed batches seen."""
    seen = [0]
    original = Operator.emit

    def emit(self: Operator, time: tuple[int, ...], batch: Batch) -> None:
        if batch.rowhash is not None:
            seen[0] += 1
            check_hashed(batch)
        original(self, time, batch)

    Operator.emit = emit  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Operator.emit = original  # type: ignore[method-assign]


@given(rows)
@examples(60)
def test_consolidate_keeps_the_row_hashes(rs: list[tuple]) -> None:
    b = Batch(
        (
            np.array([r[0] for r in rs], dtype=np.int64),
            np.array([r[1] for r in rs], dtype=object),
        ),
        np.array([r[2] for r in rs], dtype=np.int64),
    )
    c = b.consolidate()
    want: Counter = Counter()
    for k, s, d in rs:
        want[k, s] += d
    got = Counter()
    for i in range(len(c)):
        got[int(c.cols[0][i]), c.cols[1][i]] += int(c.diff[i])
    assert got == Counter({k: v for k, v in want.items() if v})
    if len(rs) > 1:
        assert c.rowhash is not None
    check_hashed(c)
    assert c.consolidate() is c or c.rowhash is None


def edge_batch(pairs: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    return {
        "src": np.array([p[0] for p in pairs], dtype=np.int64),
        "dst": np.array([p[1] for p in pairs], dtype=np.int64),
    }


@given(st.integers(0, 10_000), st.integers(1, 40))
@examples(12)
def test_loops_pass_on_only_true_row_hashes(seed: int, per_step: int) -> None:
    rng = random.Random(seed)
    nodes = 30
    g = ivm.Dataflow("hashed")
    edges = g.input("edges", EDGE)
    roots = g.input("roots", [("node", "int64")])
    reach = g.output(reachable(edges, roots), "reach")
    wcc = g.output(connected_components(edges), "wcc")
    live: set[tuple[int, int]] = set()
    with every_emit_checked() as seen:
        roots.insert({"node": np.array([0, 1], dtype=np.int64)})
        for _ in range(6):
            dels = rng.sample(sorted(live), min(len(live), per_step // 2))
            adds = {(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(per_step)}
            adds -= live
            if dels:
                edges.delete(edge_batch(dels))
            if adds:
                edges.insert(edge_batch(sorted(adds)))
            live = (live - set(dels)) | adds
            g.step()
            got = set(reach.contents().column("node").to_pylist())
            assert got == ref_reachable(dict.fromkeys(live, 1), [0, 1])
            both = dict.fromkeys(live | {(d, s) for s, d in live}, 1)
            seeds = {(n, n): 1 for e in live for n in e}
            assert wcc.counts() == ref_min_label(both, seeds)
    assert seen[0] > 0


cols_st = st.lists(
    st.tuples(st.integers(-3, 3), st.sampled_from(["a", "b", None]), st.floats(allow_nan=True)),
    min_size=1,
    max_size=20,
)


@given(cols_st, st.integers(0, 3))
@examples(60)
def test_hash_rows_after_equals_hash_rows(rs: list[tuple], split: int) -> None:
    """A prefix's hashes carried on give every row's hash (any split, any column kind)."""
    n = len(rs)
    ints = np.array([r[0] for r in rs], dtype=np.int64)
    strs = np.empty(n, dtype=object)
    strs[:] = [r[1] for r in rs]
    floats = np.array([r[2] for r in rs], dtype=np.float64)
    cols = (ints, strs, floats)
    prefix, more = cols[:split], cols[split:]
    assert (hash_rows_after(hash_rows(prefix, n), prefix, more) == hash_rows(cols, n)).all()


@given(st.integers(0, 10_000))
@examples(15)
def test_accumulate_emits_true_row_hashes(seed: int) -> None:
    """COUNT and SUM per (int, str) key: the rows it emits carry their own hashes, and its
    output equals a plain-Python group-by after every step."""
    rng = random.Random(seed)
    g = ivm.Dataflow("acc")
    x = g.input("x", [("k", "int64"), ("s", "str"), ("v", "int64")])
    out = g.output(x.reduce(["k", "s"], [("count",), ("sum", "v")], names=["n", "t"]), "agg")
    live: Counter = Counter()
    with every_emit_checked() as seen:
        for _ in range(8):
            ins = [(rng.randint(0, 4), rng.choice("ab"), rng.randint(-3, 3)) for _ in range(6)]
            dels = rng.sample(sorted(live.elements()), min(3, sum(live.values())))
            x.insert(ins)
            if dels:
                x.delete(dels)
            live.update(ins)
            live.subtract(dels)
            g.step()
            want: dict = {}
            for (k, s_, v), m in live.items():
                if m:
                    n, t = want.get((k, s_), (0, 0))
                    want[(k, s_)] = (n + m, t + v * m)
            assert out.counts() == {(k, s_, n, t): 1 for (k, s_), (n, t) in want.items()}
    assert seen[0] > 0
