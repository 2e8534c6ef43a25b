"""Delta-query joins (triangles) and as-of joins against brute-force references."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from references import asof_join, step_edge_batch

import ivm
from ivm.collection import delta_join

TRIANGLE = [((0, "a"), (1, "a")), ((0, "b"), (2, "a")), ((1, "b"), (2, "b"))]


def triangles_ref(edges: set[tuple[int, int]]) -> Counter:
    out: Counter = Counter()
    for a, b in edges:
        for a2, c in edges:
            if a2 == a and (b, c) in edges:
                out[(a, b, a, c, b, c)] += 1
    return out


def binary_triangles(e: ivm.Collection) -> ivm.Collection:
    ab_ac = e.join(e, on=[("a", "a")])  # a, b, a_r, b_r  (= a, b, a, c)
    return ab_ac.join(e, on=[("b", "a"), ("b_r", "b")])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_triangles_delta_and_binary_equal_reference(seed: int) -> None:
    rng = random.Random(seed)
    g = ivm.Dataflow()
    e = g.input("e", [("a", "int64"), ("b", "int64")])
    delta = g.output(delta_join([e, e, e], TRIANGLE), "delta")
    binary = g.output(binary_triangles(e), "binary")
    cur: set[tuple[int, int]] = set()
    for step in range(60):
        adds: set[tuple[int, int]] = set()
        dels: set[tuple[int, int]] = set()
        if step % 5 == 2:  # all three edges of a new triangle in one batch
            x, y, z = rng.sample(range(10), 3)
            adds |= {(x, y), (x, z), (y, z)} - cur
        if step % 7 == 4:  # all three edges of an existing triangle removed at once
            tris = sorted(triangles_ref(cur))
            if tris:
                a, b, _, c, _, _ = rng.choice(tris)
                dels |= {(a, b), (a, c), (b, c)}
        for _ in range(5):
            edge = (rng.randrange(10), rng.randrange(10))
            (dels if edge in cur else adds).add(edge)
        cur = step_edge_batch(g, e, cur, adds, dels)
        want = dict(triangles_ref(cur))
        assert delta.counts() == want, f"seed {seed} step {step}"
        assert binary.counts() == want, f"seed {seed} step {step}"


def test_delta_join_holds_only_input_arrangements() -> None:
    g = ivm.Dataflow()
    e = g.input("e", [("a", "int64"), ("b", "int64")])
    g.output(delta_join([e, e, e], TRIANGLE), "t")
    hub = [(0, i) for i in range(1, 200)] + [(i, i + 1) for i in range(1, 199)]
    e.insert(hub)
    g.step()
    rows = g.arrangement_rows()
    assert all(n <= len(hub) for n in rows.values())
    assert sum(rows.values()) <= 3 * len(hub)


def test_delta_join_refused_inside_loops() -> None:
    g = ivm.Dataflow()
    e = g.input("e", [("a", "int64"), ("b", "int64")])
    with pytest.raises(ivm.PlanError, match="outside loops"):
        e.iterate(lambda v: delta_join([v, v], [((0, "b"), (1, "a"))]).project(0, 3))


@pytest.mark.parametrize("seed", [5, 6])
def test_asof_joins_event_and_processing_time(seed: int) -> None:
    rng = random.Random(seed)
    g = ivm.Dataflow()
    orders = g.input("orders", [("oid", "int64"), ("sym", "str"), ("t", "int64")])
    prices = g.input("prices", [("sym", "str"), ("t", "int64"), ("px", "float64")])
    ev = g.output(orders.asof_join(prices, [("sym", "sym")], "t", "t"), "ev")
    pt = g.output(orders.join_at_arrival(prices, [("sym", "sym")]), "pt")
    cur_o: set = set()
    cur_p: set = set()
    for step in range(40):
        add_o = {(rng.randrange(500), rng.choice("ABC"), rng.randrange(40)) for _ in range(3)}
        add_p = {(rng.choice("ABC"), rng.randrange(40), float(rng.randrange(90))) for _ in range(3)}
        add_o -= cur_o
        add_p -= cur_p
        del_p = {rng.choice(sorted(cur_p))} if cur_p and step % 2 else set()
        orders.insert(sorted(add_o))
        prices.insert(sorted(add_p))
        prices.delete(sorted(del_p))
        cur_o |= add_o
        cur_p = (cur_p | add_p) - del_p
        before = pt.counts()
        g.step()
        assert ev.counts() == asof_join(Counter(cur_o), Counter(cur_p)), f"seed {seed} step {step}"
        # processing time: price changes never revise rows of orders that arrived earlier
        for row in pt.changed_counts():
            assert row[:3] in add_o, (step, row)
        after = pt.counts()
        for row, n in before.items():
            assert after.get(row) == n
        # and each new order joined the prices as they were when it arrived
        arrived = Counter((o + p) for o in add_o for p in cur_p if p[0] == o[1])
        assert dict(pt.changed_counts()) == dict(arrived)


def test_processing_time_retraction_uses_right_side_at_retraction() -> None:
    g = ivm.Dataflow()
    left = g.input("l", [("k", "int64")])
    right = g.input("r", [("k", "int64"), ("v", "int64")])
    out = g.output(left.join_at_arrival(right, [("k", "k")]), "o")
    right.insert([(1, 10)])
    left.insert([(1,)])
    g.step()
    assert out.counts() == {(1, 1, 10): 1}
    right.update([(1, 10)], [(1, 20)])
    g.step()
    assert out.counts() == {(1, 1, 10): 1}  # not revised
    left.delete([(1,)])
    g.step()
    # the retraction subtracts the join as of now: (1, 20) is retracted, (1, 10) stays
    assert out.counts() == {(1, 1, 10): 1, (1, 1, 20): -1}


def test_integrate_differentiate_is_identity() -> None:
    g = ivm.Dataflow()
    c = g.input("c", [("x", "int64")])
    out = g.output(c.differentiate(lambda d: d), "o")
    rng = random.Random(0)
    cur: Counter = Counter()
    for _ in range(30):
        adds = [(rng.randrange(5),) for _ in range(3)]
        dels = [r for r in list(cur.elements())[:2]]
        c.insert(adds)
        c.delete(dels)
        cur.update(adds)
        cur.subtract(dels)
        g.step()
        assert out.counts() == {r: n for r, n in cur.items() if n}
