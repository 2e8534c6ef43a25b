"""Deleting an edge from a recursive program does work proportional to what changed.

Measured with the engine's difference counters (``Dataflow.metrics``), which do not depend on
machine noise: the differences processed by every operator in the deleting epoch.
"""

from __future__ import annotations

from datalog_harness import Maintained

REACH = """
.decl edge(x: number, y: number)  .input edge
.decl source(x: number)           .input source
.decl reach(x: number)            .output reach
reach(x) :- source(x).
reach(y) :- reach(x), edge(x, y).
"""

TC = """
.decl edge(x: number, y: number)  .input edge
.decl path(x: number, y: number)  .output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def test_reachability_leaf_deletion_is_cheap() -> None:
    n = 400
    chain = {(i, i + 1) for i in range(n)}
    m = Maintained(REACH)
    first = m.change(inserts={"edge": chain | {(5, 10_000)}, "source": {(0,)}})
    assert len(m.output("reach")) == n + 2
    initial = m.g.metrics.total(epoch=first.epoch)

    report = m.change(deletes={"edge": {(5, 10_000)}})
    assert m.output("reach") == {(i,) for i in range(n + 1)}
    work = m.g.metrics.total(epoch=report.epoch)
    assert report.differences == work
    # one fact changed: a few dozen differences, against thousands to build the view
    assert work < 100, m.g.metrics.differences(epoch=report.epoch)
    assert initial > 10 * n
    # and the work is confined to the iterations around the changed fact
    touched = {it for it, rows in m.g.metrics.by_iteration(report.epoch).items() if rows}
    assert all(not it or it[0] <= 8 for it in touched), touched


def test_transitive_closure_deletion_scales_with_the_change() -> None:
    n = 60
    chain = {(i, i + 1) for i in range(n)}
    m = Maintained(TC)
    first = m.change(inserts={"edge": chain | {(n - 3, 999)}})
    initial = m.g.metrics.total(epoch=first.epoch)
    assert len(m.output("path")) == n * (n + 1) // 2 + (n - 2)

    leaf = m.change(deletes={"edge": {(n - 3, 999)}})  # n - 2 facts disappear
    assert m.output("path") == {(x, y) for x in range(n) for y in range(x + 1, n + 1)}
    middle = m.change(deletes={"edge": {(n // 2, n // 2 + 1)}})  # ~n²/4 facts disappear
    half = n // 2
    assert len(m.output("path")) == half * (half + 1) // 2 + (n - half) * (n - half - 1) // 2
    leaf_work = m.g.metrics.total(epoch=leaf.epoch)
    middle_work = m.g.metrics.total(epoch=middle.epoch)
    # the same cost per changed fact as building the view, far less in total
    per_fact_initial = initial / (n * (n + 1) // 2 + n - 2)
    assert leaf_work < 2 * per_fact_initial * (n - 2)
    assert leaf_work < initial / 20
    assert leaf_work * 5 < middle_work
