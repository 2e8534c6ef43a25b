"""The reduce's prefix cache and the compiled kernels, against plain references.

The prefix cache (ivm/operators/prefix_cache.py) keeps accumulations of long-history keys
across epochs and patches them with every later update; a missed patch would show up as a
wrong min label or a wrong reachable set several epochs later.  The hypothesis tests make
every key eligible (``MIN_ROWS = 1``) so small random graphs exercise it; the hub test runs
with the default threshold on a graph whose hub is cached for real.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np
import pytest
from engine_helpers import (
    change_sequence,
    check_output,
    edge_row,
    every_key_cached,
    examples,
    ref_min_label,
    ref_paths,
    replay,
    seed_row,
)
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.batch import consolidate_hashed, hash_rows
from ivm.kernels import group_hashes, probe_run
from ivm.library.graphs import EDGE, NODE_LABEL, connected_components, propagate_min_label
from ivm.operators.reduce import Reduce


def paths(edges: ivm.Collection) -> ivm.Collection:
    return edges.iterate(
        lambda p: (
            p.join(edges, on=[("dst", "src")])
            .map(lambda s, d, s2, d2: (s, d2), EDGE)
            .concat(edges)
            .distinct()
        )
    )


def cached_entries(g: ivm.Dataflow) -> int:
    return sum(len(op.cache) for op in g.ops if isinstance(op, Reduce))


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list, list]:
    epochs = draw(st.integers(3, 7))
    return draw(change_sequence(edge_row, epochs)), draw(change_sequence(seed_row, epochs))


@given(scenario())
@examples(40)
def test_loops_with_every_key_cached_match_references(sc: tuple[list, list]) -> None:
    edge_changes, seed_changes = sc
    with every_key_cached():
        g = ivm.Dataflow()
        edges = g.input("edges", EDGE)
        seeds = g.input("seeds", NODE_LABEL)
        labels = g.output(propagate_min_label(edges, seeds), "labels")
        closure = g.output(paths(edges), "paths")
        prev: dict[str, Counter] = {"labels": Counter(), "paths": Counter()}
        feeds = [(edges, edge_changes, 0), (seeds, seed_changes, lambda e: e % 2)]
        for epoch, (E, S) in replay(g, feeds):
            want = {"labels": ref_min_label(E, S), "paths": ref_paths(E)}
            check_output(labels, want["labels"], prev["labels"], f"epoch {epoch} min label")
            check_output(closure, want["paths"], prev["paths"], f"epoch {epoch} paths")
            prev = want


#: a hub's id: larger than its neighbours', so that connected_components keeps the
#: proposals it receives (a proposal not below the receiving node's id is dropped)
HUB = 1000


def test_cache_is_used_and_exact_on_a_hub_graph_under_churn() -> None:
    """A hub of degree 400 whose neighbours keep changing component: the hub's entries
    are built once and patched for 40 epochs; labels equal networkx's every epoch."""
    rng = np.random.default_rng(7)
    n = 600
    # the hub has the largest id: proposals to it are labels below its own (not dropped)
    live: set[tuple[int, int]] = {(HUB, v) for v in range(1, 401)}
    live |= {(int(a), int(b)) for a, b in rng.integers(1, n, (300, 2)) if a != b}
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    out = g.output(connected_components(edges), "wcc")
    edges.insert(sorted(live))
    g.step()
    used = 0
    for epoch in range(40):
        gone = [e for e in sorted(live) if rng.random() < 0.02]
        new = {(int(a), int(b)) for a, b in rng.integers(0, n, (8, 2)) if a != b} - live
        live = (live - set(gone)) | new
        if gone:
            edges.delete(gone)
        if new:
            edges.insert(sorted(new))
        g.step()
        used = max(used, cached_entries(g))
        ref = nx.Graph()
        ref.add_edges_from(live)
        want = Counter({(v, min(comp)): 1 for comp in nx.connected_components(ref) for v in comp})
        assert Counter(dict(out.counts())) == want, f"epoch {epoch}"
    assert used > 0, "the hub was never cached: the test no longer exercises the cache"
    rows = g.arrangement_rows()
    reduce_ops = [op for op in g.ops if isinstance(op, Reduce) and len(op.cache)]
    assert all(rows[op.name] >= op.cache.rows() for op in reduce_ops)


def explode(x: np.ndarray) -> tuple[np.ndarray]:
    if (x == 13).any():
        raise RuntimeError("boom")
    return (x,)


def test_rollback_drops_the_cache_and_stays_exact() -> None:
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    bad = g.input("bad", [("x", "int64")])
    out = g.output(connected_components(edges), "wcc")
    g.output(bad.map(explode, [("x", "int64")]), "boom")
    edges.insert([(HUB, v) for v in range(1, 300)])
    g.step()
    edges.insert([(300, 301)])
    g.step()
    assert cached_entries(g) > 0
    before = Counter(dict(out.counts()))
    # a user function failing mid-epoch rolls every operator back, the cache included
    edges.delete([(HUB, 5)])
    bad.insert([(13,)])
    with pytest.raises(RuntimeError, match="boom"):
        g.step()
    assert cached_entries(g) == 0
    assert Counter(dict(out.counts())) == before
    edges.delete([(HUB, 7)])  # the failed epoch's delete of (HUB, 5) was discarded
    g.step()
    want = Counter({(v, 1): 1 for v in [*range(1, 300), HUB] if v != 7})
    want.update({(300, 300): 1, (301, 300): 1})
    assert Counter(dict(out.counts())) == want


# -- kernels -------------------------------------------------------------------------------
def test_consolidation_is_exact_when_every_hash_collides() -> None:
    rows = np.array([3, 1, 3, 2, 1, 3], dtype=np.int64)
    other = np.array(["a", "b", "a", "c", "b", "z"], dtype=object)
    diff = np.array([1, 1, 1, -1, -1, 2], dtype=np.int64)
    h = np.zeros(len(rows), dtype=np.uint64)  # every row in one hash group
    keep, sums = consolidate_hashed(h, (rows, other), diff)
    got = Counter({(int(rows[k]), other[k]): int(s) for k, s in zip(keep, sums, strict=True)})
    assert got == Counter({(3, "a"): 2, (2, "c"): -1, (3, "z"): 2})


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 2)), max_size=60))
@examples(60)
def test_group_hashes_matches_a_dictionary(pairs: list[tuple[int, int]]) -> None:
    keys = np.array([k for k, _ in pairs], dtype=np.int64)
    h = hash_rows((keys,), len(keys))
    diff = np.array([d for _, d in pairs], dtype=np.int64)
    gid, rep, sums = group_hashes(h, diff)
    want: dict[int, int] = {}
    for k, d in pairs:
        want[k] = want.get(k, 0) + d
    assert [int(keys[r]) for r in rep] == list(want)  # first-occurrence order
    assert sums.tolist() == list(want.values())
    assert all(keys[rep[gid[i]]] == keys[i] for i in range(len(keys)))


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), max_size=40),
    st.lists(st.integers(0, 4), min_size=1, max_size=6),
    st.integers(0, 4),
    st.booleans(),
)
@examples(80)
def test_probe_run_matches_a_scan(
    rows: list[tuple[int, int]], probes: list[int], upto: int, with_after: bool
) -> None:
    # sort keys as single-loop traces build them: key bits above, iteration below
    shift = np.uint64(8)
    keyhash = np.array([k for k, _ in rows], dtype=np.uint64) << shift
    iters = np.array([i for _, i in rows], dtype=np.int64)
    sortkey = keyhash | iters.astype(np.uint64)
    order = np.argsort(sortkey, kind="stable")
    sortkey, keyhash, iters = sortkey[order], keyhash[order], iters[order]
    probe_h = np.array(probes, dtype=np.uint64) << shift
    after = np.array([(p % 2) - 1 if with_after else -1 for p in probes], dtype=np.int64)
    nxt = np.full(len(probes), 99, dtype=np.int64)
    owner, pos = probe_run(
        sortkey, keyhash, iters.reshape(-1, 1), probe_h, after, True, upto, 8, nxt, True
    )
    got = sorted(zip(owner.tolist(), pos.tolist(), strict=True))
    want = []
    for j, p in enumerate(probe_h.tolist()):
        lo = after[j]
        want += [(j, i) for i in range(len(sortkey)) if keyhash[i] == p and lo < iters[i] <= upto]
        later = [int(iters[i]) for i in range(len(sortkey)) if keyhash[i] == p and iters[i] > upto]
        assert nxt[j] == (min(later) if later else 99)
    assert got == sorted(want)
