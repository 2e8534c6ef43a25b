"""Every operator against a plain-Python reference, under random inserts and deletes.

Two inputs with small value domains (so keys collide and rows repeat) change over several
epochs; one dataflow exposes every operator — linear ones, joins, reductions with every
aggregate, distinct, top-k and a user group function — as an output.  After every epoch each
output's contents must equal the reference applied to the accumulated inputs, and its
changes the difference of two consecutive references.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from engine_helpers import apply_changes, change_sequence, check_output, examples, push
from hypothesis import given
from hypothesis import strategies as st

import ivm

X_SCHEMA = [("a", "int64"), ("b", "int64"), ("c", "any")]
Y_SCHEMA = [("a", "int64"), ("d", "int64")]

x_row = st.tuples(st.integers(0, 3), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 2)))
y_row = st.tuples(st.integers(0, 3), st.integers(0, 3))

Ref = Callable[[Counter, Counter], Counter]


# -- references -------------------------------------------------------------------------
def ref_map(x: Counter, f: Callable[[tuple], tuple]) -> Counter:
    out: Counter = Counter()
    for r, n in x.items():
        out[f(r)] += n
    return out


def ref_join(x: Counter, y: Counter, lk: tuple[int, ...], rk: tuple[int, ...]) -> Counter:
    out: Counter = Counter()
    for r, n in x.items():
        for s, m in y.items():
            if tuple(r[i] for i in lk) == tuple(s[i] for i in rk):
                out[r + s] += n * m
    return out


def groups(x: Counter, key: tuple[int, ...]) -> dict[tuple, list[tuple[tuple, int]]]:
    gs: dict[tuple, list[tuple[tuple, int]]] = defaultdict(list)
    for r, n in x.items():
        if n:
            gs[tuple(r[i] for i in key)].append((r, n))
    return gs


def sql_agg(fn: str, col: int | None, members: list[tuple[tuple, int]]) -> Any:
    if fn == "count" and col is None:
        return sum(n for _, n in members)
    vals = [(r[col], n) for r, n in members if r[col] is not None]
    if fn == "count":
        return sum(n for _, n in vals)
    if fn == "count_distinct":
        return len({v for v, _ in vals})
    if not vals:
        return None
    if fn == "sum":
        return sum(v * n for v, n in vals)
    return (min if fn == "min" else max)(v for v, _ in vals)


def ref_reduce(x: Counter, key: tuple[int, ...], aggs: list[tuple[str, int | None]]) -> Counter:
    out: Counter = Counter()
    for k, members in groups(x, key).items():
        if sum(n for _, n in members) > 0:
            out[k + tuple(sql_agg(fn, col, members) for fn, col in aggs)] += 1
    return out


def _cmp_col(u: Any, v: Any, desc: bool) -> int:
    """Spark order: NULLS FIRST ascending, NULLS LAST descending."""
    if u == v:
        return 0
    if u is None:
        return 1 if desc else -1
    if v is None:
        return -1 if desc else 1
    less = u < v
    return (1 if less else -1) if desc else (-1 if less else 1)


def ref_top_k(x: Counter, key: tuple[int, ...], order: list[tuple[int, bool]], k: int) -> Counter:
    def cmp(r: tuple, s: tuple) -> int:
        for i, desc in order:
            c = _cmp_col(r[i], s[i], desc)
            if c:
                return c
        return 0

    out: Counter = Counter()
    for members in groups(x, key).values():
        expanded = [r for r, n in members for _ in range(n)]
        expanded.sort(key=functools.cmp_to_key(cmp))
        for r in expanded[:k]:
            out[r] += 1
    return out


def group_fn(key: tuple, rows: list[tuple], counts: list[int]) -> list[tuple[tuple, int]]:
    """A user reduction (order-independent): every b held at least twice, with its count,
    and the spread max(b) − min(b) with multiplicity 2."""
    by_b: Counter = Counter()
    for r, n in zip(rows, counts, strict=True):
        by_b[r[1]] += n
    out = [((b, n), 1) for b, n in sorted(by_b.items()) if n >= 2]
    bs = [r[1] for r, n in zip(rows, counts, strict=True) if n > 0]
    out.append(((-1, max(bs) - min(bs)), 2))
    return out


def ref_group_fn(x: Counter) -> Counter:
    out: Counter = Counter()
    for k, members in groups(x, (0,)).items():
        for row, m in group_fn(k, [r for r, _ in members], [n for _, n in members]):
            out[k + row] += m
    return out


def flat_fn(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple:
    """Row (a, b, c) -> rows (a, j) for j in range(b)."""
    parent = np.repeat(np.arange(len(a)), b)
    j = np.concatenate([np.arange(n) for n in b]) if len(b) else np.zeros(0, np.int64)
    return parent, (a[parent], j)


def null_positive(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A SQL predicate ``c > 0``: NULL where c is NULL (only True passes)."""
    return np.array([None if v is None else v > 0 for v in c], dtype=object)


AGGS = [
    ("count", None),
    ("count", "c"),
    ("sum", "b"),
    ("min", "b"),
    ("max", "b"),
    ("count_distinct", "c"),
    ("sum", "c"),
    ("min", "c"),
    ("max", "c"),
    ("count_distinct", "b"),
]
AGG_IDX = [(fn, None if c is None else {"a": 0, "b": 1, "c": 2}[c]) for fn, c in AGGS]


def build(
    g: ivm.Dataflow, x: ivm.Collection, y: ivm.Collection
) -> dict[str, tuple[ivm.Collection, Ref]]:
    """Every operator under test with its reference: name -> (collection, reference)."""
    aggs = [(fn,) if c is None else (fn, c) for fn, c in AGGS]
    return {
        "map": (
            x.map(lambda a, b, c: (a + b, b * 2), [("s", "int64"), ("t", "int64")]),
            lambda X, Y: ref_map(X, lambda r: (r[0] + r[1], r[1] * 2)),
        ),
        "filter": (
            x.filter(lambda a, b, c: (a % 2 == 0) | (b > a)),
            lambda X, Y: Counter({r: n for r, n in X.items() if r[0] % 2 == 0 or r[1] > r[0]}),
        ),
        "filter_null": (
            x.filter(null_positive),
            lambda X, Y: Counter({r: n for r, n in X.items() if r[2] is not None and r[2] > 0}),
        ),
        "flat_map": (
            x.flat_map(flat_fn, [("a", "int64"), ("j", "int64")]),
            lambda X, Y: Counter(_flat(X)),
        ),
        "project": (x.project("c", "a"), lambda X, Y: ref_map(X, lambda r: (r[2], r[0]))),
        "concat": (
            x.project("a", "b").concat(y, y.map(lambda a, d: (d, a), Y_SCHEMA)),
            lambda X, Y: ref_map(X, lambda r: r[:2]) + Y + ref_map(Y, lambda r: (r[1], r[0])),
        ),
        "negate": (x.negate(), lambda X, Y: Counter({r: -n for r, n in X.items()})),
        "concat_negate": (
            x.concat(x.negate(), y.map(lambda a, d: (a, d, None), X_SCHEMA)),
            lambda X, Y: ref_map(Y, lambda r: (r[0], r[1], None)),
        ),
        "join": (x.join(y, on=[("a", "a")]), lambda X, Y: ref_join(X, Y, (0,), (0,))),
        "join_two_keys": (
            x.join(y, on=[("a", "a"), ("b", "d")]),
            lambda X, Y: ref_join(X, Y, (0, 1), (0, 1)),
        ),
        "self_join_shared": (x.join(x, on=[("a", "a")]), lambda X, Y: ref_join(X, X, (0,), (0,))),
        "self_join": (x.join(x, on=[("b", "a")]), lambda X, Y: ref_join(X, X, (1,), (0,))),
        "join_null_key": (
            x.join(x.project("c", "b"), on=[("c", "c")]),
            lambda X, Y: ref_join(X, ref_map(X, lambda r: (r[2], r[1])), (2,), (0,)),
        ),
        "semijoin": (
            x.semijoin(y, on=[("a", "a")]),
            lambda X, Y: Counter({r: n for r, n in X.items() if any(s[0] == r[0] for s in Y)}),
        ),
        "antijoin": (
            x.antijoin(y, on=[("b", "d")]),
            lambda X, Y: Counter({r: n for r, n in X.items() if not any(s[1] == r[1] for s in Y)}),
        ),
        "reduce": (x.reduce("a", aggs), lambda X, Y: ref_reduce(X, (0,), AGG_IDX)),
        "reduce_global": (
            x.reduce((), [("count",), ("sum", "b"), ("max", "c")]),
            lambda X, Y: ref_reduce(X, (), [("count", None), ("sum", 1), ("max", 2)]),
        ),
        "reduce_null_key": (
            x.reduce(["c", "a"], [("count",), ("min", "b")]),
            lambda X, Y: ref_reduce(X, (2, 0), [("count", None), ("min", 1)]),
        ),
        "count": (x.count("b"), lambda X, Y: ref_reduce(X, (1,), [("count", None)])),
        "sum": (y.sum("a", "d"), lambda X, Y: ref_reduce(Y, (0,), [("sum", 1)])),
        "min": (y.min("d", "a"), lambda X, Y: ref_reduce(Y, (1,), [("min", 0)])),
        "max": (x.max("c", "b"), lambda X, Y: ref_reduce(X, (2,), [("max", 1)])),
        "distinct": (x.distinct(), lambda X, Y: Counter(set(X))),
        "distinct_projected": (
            x.project("a", "c").distinct(),
            lambda X, Y: Counter({(r[0], r[2]) for r in X}),
        ),
        "top_k": (
            x.top_k("a", [("b", False), ("c", True)], 2),
            lambda X, Y: ref_top_k(X, (0,), [(1, False), (2, True)], 2),
        ),
        "top_k_nulls_first": (
            x.top_k("b", [("c", False), ("a", True)], 1),
            lambda X, Y: _top1_nulls_first(X),
        ),
        "top_k_global": (
            x.project("a", "b").top_k((), [("a", True), ("b", False)], 3),
            lambda X, Y: ref_top_k(ref_map(X, lambda r: r[:2]), (), [(0, True), (1, False)], 3),
        ),
        "reduce_group": (
            x.reduce_group("a", group_fn, [("b", "int64"), ("n", "int64")]),
            lambda X, Y: ref_group_fn(X),
        ),
        "join_then_reduce": (
            x.join(y, on=[("a", "a")]).reduce("d", [("count",), ("sum", "b")]),
            lambda X, Y: ref_reduce(
                ref_join(X, Y, (0,), (0,)), (4,), [("count", None), ("sum", 1)]
            ),
        ),
        "distinct_then_count": (
            x.project("a", "b").distinct().count("a"),
            lambda X, Y: ref_reduce(Counter({r[:2] for r in X}), (0,), [("count", None)]),
        ),
    }


def _flat(x: Counter) -> Counter:
    out: Counter = Counter()
    for (a, b, _), n in x.items():
        for j in range(b):
            out[(a, j)] += n
    return out


def _top1_nulls_first(x: Counter) -> Counter:
    """Per b, the row with the smallest c (NULL first), ties broken by the larger a."""
    return ref_top_k(x, (1,), [(2, False), (0, True)], 1)


def run_sequence(
    xs: list[list[tuple[tuple, int]]],
    ys: list[list[tuple[tuple, int]]],
    styles: list[int],
    only: list[str] | None = None,
) -> None:
    g = ivm.Dataflow()
    x = g.input("x", X_SCHEMA)
    y = g.input("y", Y_SCHEMA)
    ops = build(g, x, y)
    if only is not None:
        ops = {k: v for k, v in ops.items() if k in only}
    outs = {name: (g.output(c, name), ref) for name, (c, ref) in ops.items()}
    X: Counter = Counter()
    Y: Counter = Counter()
    prev: dict[str, Counter] = {name: Counter() for name in outs}
    for epoch, (cx, cy, style) in enumerate(zip(xs, ys, styles, strict=True), start=1):
        push(x, cx, style)
        push(y, cy, 2 - style)
        apply_changes(X, cx)
        apply_changes(Y, cy)
        g.step()
        for name, (out, ref) in outs.items():
            want = Counter({r: n for r, n in ref(X, Y).items() if n})
            check_output(out, want, prev[name], f"epoch {epoch} {name}")
            prev[name] = want


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list, list, list[int]]:
    epochs = draw(st.integers(1, 5))
    xs = draw(change_sequence(x_row, epochs))
    ys = draw(change_sequence(y_row, epochs))
    styles = draw(st.lists(st.integers(0, 2), min_size=epochs, max_size=epochs))
    return xs, ys, styles


@given(scenario())
@examples(40)
def test_every_operator_matches_reference(sc: tuple) -> None:
    run_sequence(*sc)


def test_fixed_example_with_full_deletion() -> None:
    """Insert, grow, then delete everything: every output must end empty (or the
    reference of empty inputs)."""
    xs = [
        [((0, 1, None), 2), ((1, 2, 0), 1), ((0, 3, 2), 1)],
        [((0, 1, None), -1), ((1, 2, 0), 2), ((2, 0, 1), 1)],
        [((0, 1, None), -1), ((1, 2, 0), -3), ((0, 3, 2), -1), ((2, 0, 1), -1)],
    ]
    ys = [[((0, 1), 1), ((1, 2), 1)], [((0, 1), 1)], [((0, 1), -2), ((1, 2), -1)]]
    run_sequence(xs, ys, [0, 1, 2])


# -- regression examples (minimized counterexamples found by the property test) ------------
def test_top_k_descending_puts_nulls_last() -> None:
    """Spark order: DESC is NULLS LAST.  Found by hypothesis: the engine ranked NULL first
    for a descending object column."""
    g = ivm.Dataflow()
    x = g.input("x", X_SCHEMA)
    out = g.output(x.top_k("a", [("c", True)], 2), "top")
    x.insert([(0, 0, None), (0, 0, None), (0, 0, 0), (0, 1, 5)])
    g.step()
    assert out.counts() == {(0, 1, 5): 1, (0, 0, 0): 1}
    asc = ivm.Dataflow()
    xa = asc.input("x", X_SCHEMA)
    out_a = asc.output(xa.top_k("a", [("c", False)], 2), "top")
    xa.insert([(0, 0, None), (0, 0, None), (0, 0, 0), (0, 1, 5)])
    asc.step()
    assert out_a.counts() == {(0, 0, None): 2}
