"""The bulk paths of traces give the same updates as the per-change paths.

* :meth:`Trace.stage_batch` consolidates a large batch by one sort (``_stage_sorted``,
  :func:`ivm.kernels.consolidate_sorted`) instead of grouping it by hash;
* :meth:`Trace._merge` merges sorted runs by linear passes (:func:`ivm.kernels.merge_runs`)
  instead of consolidating their concatenation.

Each is compared with the other path on random updates (inserts, deletes, cancellations,
NULLs, several times), the thresholds forced so that small examples take the bulk path;
forced hash collisions must make both fall back; and whole dataflows (WCC, reachability)
with deletes give the same outputs, equal to networkx, with every batch on the bulk path.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from engine_helpers import examples
from hypothesis import given
from hypothesis import strategies as st

import ivm
import ivm.trace as trace_mod
from ivm.batch import Batch, hash_rows
from ivm.kernels import consolidate_sorted
from ivm.library.graphs import EDGE, connected_components, reachable
from ivm.trace import Run, Trace

DTYPES = (np.dtype("int64"), np.dtype(object))
KINDS = {0: (), 1: ("iter",), 2: ("iter", "iter")}

rows = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from(["a", "b", None]), st.integers(-2, 2)),
    max_size=40,
)


def batch_of(rs: list[tuple]) -> Batch:
    return Batch(
        (
            np.array([r[0] for r in rs], dtype=np.int64),
            np.array([r[1] for r in rs], dtype=object),
        ),
        np.array([r[2] for r in rs], dtype=np.int64),
    )


def as_counter(cols: tuple, diff: np.ndarray) -> Counter:
    out: Counter = Counter()
    for i in range(len(diff)):
        out[int(cols[0][i]), cols[1][i]] += int(diff[i])
    return out


def nonzero(c: Counter) -> Counter:
    return Counter({k: v for k, v in c.items() if v})


def run_contents(run: Run | None) -> Counter:
    if run is None:
        return Counter()
    out: Counter = Counter()
    for i in range(len(run)):
        key = (int(run.cols[0][i]), run.cols[1][i], tuple(run.times[i].tolist()))
        out[key] += int(run.diff[i])
    return out


def check_run(run: Run | None) -> None:
    if run is None:
        return
    assert (run.sortkey[1:] >= run.sortkey[:-1]).all()
    assert (run.diff != 0).all()
    assert len(run_contents(run)) == len(run), "a (row, time) twice in a run"
    assert (run.rowhash == hash_rows(run.cols, len(run))).all()


def stage(rs: list[tuple], depth: int, key: tuple[int, ...], bulk: bool) -> tuple:
    tr = Trace(DTYPES, key, KINDS[depth])
    b = batch_of(rs)
    time = (1, *([2] * depth))
    old = trace_mod.BULK_ROWS
    trace_mod.BULK_ROWS = 0 if bulk else 1 << 62
    try:
        out = tr.stage_batch(b, time, hash_rows(b.cols, len(b)))
    finally:
        trace_mod.BULK_ROWS = old
    return tr, out


@given(rows, st.integers(0, 2), st.booleans())
@examples(150)
def test_bulk_staging_equals_hash_consolidation(rs: list[tuple], depth: int, by_key: bool) -> None:
    key = (0,) if by_key else (0, 1)
    t_bulk, out_bulk = stage(rs, depth, key, bulk=True)
    t_hash, out_hash = stage(rs, depth, key, bulk=False)
    want = nonzero(as_counter(batch_of(rs).cols, batch_of(rs).diff))
    # the emitted batches: consolidated, with their row hashes, the same multiset
    for out in (out_bulk, out_hash):
        assert nonzero(as_counter(out.cols, out.diff)) == want
        assert (out.diff != 0).all() and len(as_counter(out.cols, out.diff)) == len(out)
        assert out.rowhash is not None
        assert (out.rowhash == hash_rows(out.cols, len(out))).all()
    # the staged runs hold the same updates, sorted
    check_run(t_bulk.staged)
    assert run_contents(t_bulk.staged) == run_contents(t_hash.staged)


updates = st.lists(
    st.tuples(
        st.integers(0, 6), st.sampled_from(["a", "b", None]), st.integers(0, 2), st.integers(-2, 2)
    ),
    max_size=40,
)


def make(tr: Trace, us: list[tuple], depth: int) -> Run:
    cols = (
        np.array([u[0] for u in us], dtype=np.int64),
        np.array([u[1] for u in us], dtype=object),
    )
    times = np.array([[u[2]] * depth for u in us], dtype=np.int64).reshape(len(us), depth)
    return tr.consolidated_run(cols, times, np.array([u[3] for u in us], dtype=np.int64))


@given(st.lists(updates, min_size=2, max_size=5), st.integers(0, 2), st.booleans())
@examples(150)
def test_linear_merge_equals_consolidating_the_concatenation(
    parts: list[list[tuple]], depth: int, by_key: bool
) -> None:
    tr = Trace(DTYPES, (0,) if by_key else (0, 1), KINDS[depth])
    runs = [make(tr, us, depth) for us in parts]
    old = trace_mod.SMALL_RUN
    trace_mod.SMALL_RUN = 0  # no compiled pair merge: every merge takes merge_runs
    try:
        linear = tr._merge(runs)
    finally:
        trace_mod.SMALL_RUN = old
    general = tr._merge(runs, sorted_keys=False)
    check_run(linear)
    assert run_contents(linear) == run_contents(general)
    want: Counter = Counter()
    for r in runs:
        want.update(run_contents(r))
    assert run_contents(linear) == nonzero(want)


class Clash:
    """A value whose hash always collides (equal only to an equal ``v``)."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clash) and other.v == self.v

    def __repr__(self) -> str:
        return f"Clash({self.v})"


def clash_cols(vs: list[int]) -> tuple[np.ndarray]:
    col = np.empty(len(vs), dtype=object)
    col[:] = [Clash(v) for v in vs]
    return (col,)


def test_bulk_paths_fall_back_on_hash_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_mod, "BULK_ROWS", 0)
    monkeypatch.setattr(trace_mod, "SMALL_RUN", 0)
    tr = Trace((np.dtype(object),), (0,), ())
    b = Batch(clash_cols([1, 2, 1, 3, 2]), np.array([1, 1, 1, -1, -1], dtype=np.int64))
    out = tr.stage_batch(b, (1,), hash_rows(b.cols, len(b)))
    got = {c.v: int(d) for c, d in zip(out.cols[0], out.diff, strict=True)}
    assert got == {1: 2, 3: -1}
    tr.commit()
    b2 = Batch(clash_cols([1, 3, 4]), np.array([-2, 1, 5], dtype=np.int64))
    tr.stage_batch(b2, (2,), hash_rows(b2.cols, len(b2)))
    tr.commit()
    merged = tr._merge(tr.runs)
    got = {c.v: int(d) for c, d in zip(merged.cols[0], merged.diff, strict=True)}
    assert got == {4: 5}


def graph_outputs(
    bulk: bool, monkeypatch: pytest.MonkeyPatch, seed: int, nodes: int, m: int, steps: int
) -> tuple[list[tuple[dict, dict]], set[tuple[int, int]], set[int]]:
    """WCC and reachability of a random graph over ``steps`` steps of deletes and inserts;
    ``bulk``: every batch and merge takes the bulk paths.  Returns the outputs after every
    step, and the final edges and roots."""
    with monkeypatch.context() as mp:
        if bulk:
            mp.setattr(trace_mod, "BULK_ROWS", 1)
            mp.setattr(trace_mod, "SMALL_RUN", 0)
        rng = random.Random(seed)
        g = ivm.Dataflow()
        edges = g.input("edges", EDGE)
        roots = g.input("roots", [("node", "int64")])
        wcc = g.output(connected_components(edges), "wcc")
        reach = g.output(reachable(edges, roots), "reach")
        cur: set[tuple[int, int]] = set()
        while len(cur) < m:
            a, b = rng.randrange(nodes), rng.randrange(nodes)
            if a != b:
                cur.add((a, b))
        edges.insert(sorted(cur))
        roots.insert([(0,), (1,)])
        root_set = {0, 1}
        seen = []
        for step in range(steps + 1):
            if step:
                dels = rng.sample(sorted(cur), 5)
                cur -= set(dels)
                ins = set()
                while len(ins) < 5:
                    a, b = rng.randrange(nodes), rng.randrange(nodes)
                    if a != b and (a, b) not in cur:
                        ins.add((a, b))
                cur |= ins
                edges.delete(dels)
                edges.insert(sorted(ins))
                if step == steps // 2:
                    roots.delete([(0,)])
                    root_set = {1}
            g.step()
            seen.append((wcc.counts(), reach.counts()))
        return seen, cur, root_set


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dataflows_give_the_same_outputs_on_the_bulk_paths(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import networkx as nx

    bulk, edges, roots = graph_outputs(True, monkeypatch, seed, 60, 90, 8)
    hashed, _, _ = graph_outputs(False, monkeypatch, seed, 60, 90, 8)
    assert bulk == hashed
    # and the last step is right
    wcc_last, reach_last = bulk[-1]
    und = nx.Graph(list(edges))
    assert wcc_last == {(v, min(c)): 1 for c in nx.connected_components(und) for v in c}
    dg = nx.DiGraph(list(edges))
    dg.add_nodes_from(roots)
    want = set(roots).union(*(nx.descendants(dg, r) for r in roots))
    assert reach_last == {(v,): 1 for v in want}


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(-2, 2)),
        max_size=400,
    )
)
@examples(60)
def test_consolidate_sorted_sums_equal_hashes_per_block(items: list[tuple]) -> None:
    # few sort keys, many rows each: blocks above the pairwise size take the hash table
    items = sorted(items, key=lambda t: t[0])
    sk = np.array([t[0] for t in items], dtype=np.uint64)
    rh = np.array([t[1] for t in items], dtype=np.uint64)
    diff = np.array([t[2] for t in items], dtype=np.int64)
    keep, sums, pa, pb = consolidate_sorted(sk, rh, diff)
    want: Counter = Counter()
    for s, r, d in items:
        want[s, r] += d
    got = Counter({(int(sk[i]), int(rh[i])): int(v) for i, v in zip(keep, sums, strict=True)})
    assert got == nonzero(want) and len(got) == len(keep)
    assert (np.diff(sk[keep].astype(np.int64)) >= 0).all()  # still in sort-key order
    assert (sk[pa] == sk[pb]).all() and (rh[pa] == rh[pb]).all()
    assert len(pa) == len(items) - len(want)  # every row summed into another is reported


@pytest.mark.parametrize("depth", [0, 1])
@pytest.mark.parametrize("by_key", [True, False])
def test_large_int_batches_stage_as_by_hash(depth: int, by_key: bool) -> None:
    """A batch of int64 rows of at least ``RADIX_ROWS`` (an initial load's) is staged by
    :func:`ivm.kernels.stage_int_rows` on its radix-sort branch: the same updates, sorted,
    as consolidating it by hash, and the same batch passed on."""
    rng = np.random.default_rng(depth * 2 + by_key)
    n = trace_mod.RADIX_ROWS + 1000
    cols = (rng.integers(0, 3000, n), rng.integers(0, 40, n))
    diff = rng.integers(-2, 3, n)
    key = (0,) if by_key else (0, 1)
    time = (1, *([3] * depth))
    got = Trace((np.dtype("int64"),) * 2, key, KINDS[depth])
    b = Batch(cols, diff)
    out = got.stage_int_batch(b, time, hash_rows(cols, n))
    want = Trace((np.dtype("int64"),) * 2, key, KINDS[depth])
    ref = want.stage_batch(b, time, hash_rows(cols, n))

    def counted(c: tuple, d: np.ndarray) -> Counter:
        return Counter({(int(x), int(y)): int(v) for x, y, v in zip(*c, d, strict=True)})

    expect: Counter = Counter()
    for x, y, v in zip(*cols, diff, strict=True):
        expect[int(x), int(y)] += int(v)
    expect = nonzero(expect)
    assert counted(out.cols, out.diff) == counted(ref.cols, ref.diff) == expect
    assert out.rowhash is not None and (out.rowhash == hash_rows(out.cols, len(out))).all()
    run, ref_run = got.staged, want.staged
    assert run is not None and ref_run is not None
    assert (run.sortkey[1:] >= run.sortkey[:-1]).all()
    assert (run.sortkey == ref_run.sortkey).all() and (run.keyhash == ref_run.keyhash).all()
    assert (run.rowhash == hash_rows(run.cols, len(run))).all()
    assert counted(run.cols, run.diff) == expect
    assert (run.times == ref_run.times).all()
