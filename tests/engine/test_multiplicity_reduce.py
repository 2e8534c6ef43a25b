"""Distinct read as multiplicities (``Reduce.by_multiplicity``, ``Trace.key_sums``).

For ``distinct`` the key is the whole row and the output is the key, so the reduce reads
each key's accumulated count as a sum of diffs instead of gathering its rows.  These tests
run the same programs with that path switched off and on, against plain references, under
random inserts and deletes — in a loop (interesting times, next-iteration scheduling) and
outside one, with an integer key (compiled sums) and with keys whose hash may collide
(sums through ``lookup``, which compares columns).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from engine_helpers import (
    change_sequence,
    check_output,
    edge_row,
    every_third,
    examples,
    ref_paths,
    ref_reachable,
    replay,
)
from engine_helpers import (
    node_row as root_row,
)
from hypothesis import given
from hypothesis import strategies as st

import ivm
from ivm.batch import hash_rows
from ivm.library.graphs import EDGE, reachable
from ivm.operators.reduce import Reduce
from ivm.trace import NO_TIME, Trace

word_row = st.tuples(st.sampled_from(["a", "b", "c", None]), st.integers(0, 2))


def ref_reach(edges: Counter, roots: Counter) -> Counter:
    live_roots = [r for (r,), c in roots.items() if c > 0]
    return Counter({(x,): 1 for x in ref_reachable(edges, live_roots)})


def build(by_multiplicity: bool) -> tuple[ivm.Dataflow, dict, dict]:
    g = ivm.Dataflow()
    edges = g.input("edges", EDGE)
    roots = g.input("roots", [("node", "int64")])
    words = g.input("words", [("w", "str"), ("n", "int64")])
    closure = edges.iterate(
        lambda p: (
            p.join(edges, on=[("dst", "src")])
            .map(lambda s, d, s2, d2: (s, d2), EDGE)
            .concat(edges)
            .distinct()
        )
    )
    outs = {
        "reach": g.output(reachable(edges, roots), "reach"),
        "paths": g.output(closure, "paths"),
        "words": g.output(words.distinct(), "words"),
    }
    reduces = [op for op in g.ops if isinstance(op, Reduce)]
    assert reduces and all(op.by_multiplicity for op in reduces)
    for op in reduces:
        op.by_multiplicity = by_multiplicity
    return g, {"edges": edges, "roots": roots, "words": words}, outs


@st.composite
def scenario(draw: st.DrawFn) -> list[list]:
    epochs = draw(st.integers(2, 6))
    return [
        draw(change_sequence(edge_row, epochs)),
        draw(change_sequence(root_row, epochs)),
        draw(change_sequence(word_row, epochs)),
    ]


@pytest.mark.parametrize("by_multiplicity", [True, False], ids=["multiplicity", "rows"])
@given(sc=scenario())
@examples(30)
def test_distinct_paths_match_references(by_multiplicity: bool, sc: list[list]) -> None:
    g, inputs, outs = build(by_multiplicity)
    prev: dict[str, Counter] = {k: Counter() for k in outs}
    feeds = [(inp, ch, every_third) for inp, ch in zip(inputs.values(), sc, strict=True)]
    for epoch, accumulated in replay(g, feeds):
        state = dict(zip(inputs, accumulated, strict=True))
        want = {
            "reach": ref_reach(state["edges"], state["roots"]),
            "paths": ref_paths(state["edges"]),
            "words": Counter({r: 1 for r, c in state["words"].items() if c > 0}),
        }
        for name, out in outs.items():
            check_output(out, want[name], prev[name], f"epoch {epoch} {name}")
        prev = want


def _single_loop_trace(rows: list[tuple[int, str, int, int]]) -> Trace:
    """A trace of (key, word) rows inside one loop, one run per distinct iteration."""
    tr = Trace((np.dtype("int64"), np.dtype(object)), (0,), ("iter",))
    for it in sorted({r[2] for r in rows}):
        sel = [r for r in rows if r[2] == it]
        tr.insert(
            (
                np.array([r[0] for r in sel], dtype=np.int64),
                np.array([r[1] for r in sel], dtype=object),
            ),
            np.full((len(sel), 1), it, dtype=np.int64),
            np.array([r[3] for r in sel], dtype=np.int64),
        )
    return tr


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from("xy"), st.integers(0, 4), st.integers(-2, 2)),
        max_size=40,
    ),
    st.lists(st.integers(0, 6), min_size=1, max_size=40, unique=True),
    st.integers(0, 4),
)
@examples(80)
def test_key_sums_match_a_scan(rows: list, probes: list[int], upto: int) -> None:
    """Sums and next iterations per probe, with the integer key (compiled path) and with
    the (key, word) pair as key (lookup path); ≥ 32 probes exercise the sorted order."""
    tr = _single_loop_trace(rows)
    pk = np.array(probes, dtype=np.int64)
    nxt = np.full(len(probes), NO_TIME, dtype=np.int64)
    sums = tr.key_sums(hash_rows((pk,), len(pk)), (pk,), upto, nxt)
    net: Counter = Counter()
    for k, w, it, d in rows:
        net[k, w, it] += d
    for j, p in enumerate(probes):
        assert sums[j] == sum(d for (k, _, it), d in net.items() if k == p and it <= upto)
        later = [it for (k, _, it), d in net.items() if k == p and it > upto and d != 0]
        assert nxt[j] == (min(later) if later else NO_TIME)

    pair = Trace((np.dtype("int64"), np.dtype(object)), (0, 1), ("iter",))
    for run in tr.runs:
        pair.insert(run.cols, run.times, run.diff)
    words = np.array(["x"] * len(probes), dtype=object)
    psums = pair.key_sums(hash_rows((pk, words), len(pk)), (pk, words), upto)
    for j, p in enumerate(probes):
        assert psums[j] == sum(r[3] for r in rows if r[0] == p and r[1] == "x" and r[2] <= upto)
