"""Checkpoints: ``g.state()`` / ``load_state()`` into a freshly built identical dataflow.

The restored dataflow must continue exactly like the uninterrupted one — same contents and
changes after every later epoch — and must not recompute from scratch: the differences it
processes in each later epoch equal the uninterrupted dataflow's, operator by operator.
The checkpoint goes through Arrow IPC bytes, so it holds data only.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from engine_helpers import change_sequence, examples, push
from hypothesis import given
from hypothesis import strategies as st
from test_operators import X_SCHEMA, Y_SCHEMA, build, x_row, y_row

import ivm
from ivm.library.graphs import EDGE, NODE_LABEL, propagate_min_label, reachable

edge_row = st.tuples(st.integers(0, 6), st.integers(0, 6))


def build_all() -> tuple[ivm.Dataflow, dict[str, ivm.InputCollection], dict[str, ivm.Output]]:
    """Every operator of the operator tests plus loops (one prioritized, one nested)."""
    g = ivm.Dataflow("ckpt")
    x = g.input("x", X_SCHEMA)
    y = g.input("y", Y_SCHEMA)
    e = g.input("edges", EDGE)
    outs = {name: g.output(c, name) for name, (c, _) in build(g, x, y).items()}
    seeds = e.map(lambda s, d: (s, s), NODE_LABEL)
    outs["labels"] = g.output(propagate_min_label(e, seeds), "labels")
    outs["labels_prio"] = g.output(
        propagate_min_label(e, seeds, entry=lambda n, lab: lab % 3), "labels_prio"
    )
    outs["reach"] = g.output(reachable(e, x.project("b").rename(["node"])), "reach")
    outs["nested"] = g.output(
        e.iterate(
            lambda v: v.iterate(
                lambda w: (
                    w.join(e, on=[("dst", "src")])
                    .map(lambda s, d, s2, d2: (s, d2), EDGE)
                    .concat(v)
                    .distinct()
                )
            )
        ),
        "closure",
    )
    outs["altneu"] = g.output(y.differentiate(lambda d: d).count("a"), "altneu")
    return g, {"x": x, "y": y, "edges": e}, outs


def through_ipc(state: dict[str, pa.Table]) -> dict[str, pa.Table]:
    out = {}
    for k, t in state.items():
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        out[k] = pa.ipc.open_stream(io.BytesIO(sink.getvalue())).read_all()
    return out


def feed(inputs: dict[str, ivm.InputCollection], changes: dict[str, list], style: int) -> None:
    for name, ch in changes.items():
        push(inputs[name], ch, style)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[dict[str, list]], int]:
    epochs = draw(st.integers(2, 5))
    xs = draw(change_sequence(x_row, epochs))
    ys = draw(change_sequence(y_row, epochs))
    es = draw(change_sequence(edge_row, epochs))
    steps = [{"x": a, "y": b, "edges": c} for a, b, c in zip(xs, ys, es, strict=True)]
    return steps, draw(st.integers(1, epochs - 1))


@given(scenario())
@examples(15)
def test_restored_dataflow_continues_like_the_uninterrupted_one(sc: tuple) -> None:
    steps, cut = sc
    a, a_in, a_out = build_all()
    for i, ch in enumerate(steps[:cut]):
        feed(a_in, ch, i % 3)
        a.step()
    b, b_in, b_out = build_all()
    b.load_state(through_ipc(a.state()))
    assert b.epoch == a.epoch
    for name in a_out:
        assert b_out[name].counts() == a_out[name].counts(), f"restored {name}"
    for i, ch in enumerate(steps[cut:], start=cut):
        feed(a_in, ch, i % 3)
        feed(b_in, ch, i % 3)
        a.step()
        b.step()
        for name in a_out:
            assert b_out[name].counts() == a_out[name].counts(), f"epoch {a.epoch} {name}"
            assert b_out[name].changed_counts() == a_out[name].changed_counts(), (
                f"epoch {a.epoch} {name} changes"
            )
        assert b.metrics.differences(epoch=b.epoch) == a.metrics.differences(epoch=a.epoch)


def test_restored_dataflow_does_not_recompute() -> None:
    """A one-edge change after a restore costs what it costs uninterrupted, a small
    fraction of the initial computation."""
    rng = np.random.default_rng(3)
    edges = sorted({(int(s), int(d)) for s, d in rng.integers(0, 300, size=(600, 2))})
    a, a_in, a_out = build_all()
    a_in["edges"].insert(edges)
    a_in["x"].insert([(0, int(v), None) for v in range(0, 300, 7)])
    first = a.step().differences
    b, b_in, b_out = build_all()
    b.load_state(a.state())
    for inp in (a_in, b_in):
        inp["edges"].delete([edges[0]])
        inp["edges"].insert([(edges[0][0], (edges[0][1] + 1) % 300)])
    ra, rb = a.step(), b.step()
    assert rb.differences == ra.differences
    assert rb.differences < first / 10, (rb.differences, first)
    assert b.metrics.differences(epoch=b.epoch) == a.metrics.differences(epoch=a.epoch)
    for name in a_out:
        assert b_out[name].counts() == a_out[name].counts(), name


def test_checkpoint_keeps_typed_and_any_values() -> None:
    g = ivm.Dataflow()
    x = g.input("x", [("k", "int64"), ("f", "float64"), ("b", "bool"), ("s", "str"), ("a", "any")])
    out = g.output(x.distinct(), "d")
    rows = [
        (1, 0.5, True, "é", None),
        (2, -1.0, False, None, ("t", 1)),
        (3, 2.0, True, "", 10**30),
        (4, 1.0, False, "x", 1.25),
    ]
    x.insert(rows)
    g.step()
    h = ivm.Dataflow()
    y = h.input("x", [("k", "int64"), ("f", "float64"), ("b", "bool"), ("s", "str"), ("a", "any")])
    out2 = h.output(y.distinct(), "d")
    h.load_state(through_ipc(g.state()))
    assert out2.counts() == out.counts() == {r: 1 for r in rows}
    y.delete([rows[1]])
    h.step()
    assert out2.changed_counts() == {rows[1]: -1}


def test_checkpoint_of_a_different_dataflow_is_refused() -> None:
    a, a_in, _ = build_all()
    a_in["edges"].insert([(1, 2)])
    a.step()
    other = ivm.Dataflow()
    other.output(other.input("edges", EDGE).distinct(), "d")
    with pytest.raises(ivm.PlanError, match="differently built dataflow"):
        other.load_state(a.state())
    a_in["edges"].insert([(2, 3)])
    with pytest.raises(ivm.EpochError, match="unprocessed input changes"):
        a.state()
