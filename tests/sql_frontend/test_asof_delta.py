"""SQL as-of joins (processing and event time) and delta-query plans for multiway joins."""

from __future__ import annotations

import random
import zlib
from collections import Counter

import pytest
from references import asof_join as asof_ref
from references import step_edge_batch
from sql_harness import edge_view

import ivm
from ivm.collection import delta_join
from sql_frontend import UnsupportedSqlError, compile_view, explain, plan_sql
from sql_frontend.plan import explain as explain_plan

EDGES = {"e": [("a", "bigint"), ("b", "bigint")]}
EDGE_SCHEMA = [("a", "int64"), ("b", "int64")]
TRIANGLES = (
    "SELECT e1.a, e1.b, e2.b FROM e e1 JOIN e e2 ON e1.a = e2.a "
    "JOIN e e3 ON e1.b = e3.a AND e2.b = e3.b"
)
MARKET = {
    "orders": [("oid", "bigint"), ("sym", "string"), ("t", "bigint")],
    "prices": [("sym", "string"), ("t", "bigint"), ("px", "double")],
}


# ---------------------------------------------------------------- triangles
def triangles_ref(edges: set[tuple[int, int]]) -> dict[tuple[int, int, int], int]:
    out: Counter = Counter()
    for a, b in edges:
        for a2, c in edges:
            if a2 == a and (b, c) in edges:
                out[(a, b, c)] += 1
    return dict(out)


def _triangle_view(strategy: str, sql: str = TRIANGLES):
    return edge_view(sql, EDGES, EDGE_SCHEMA, join_strategy=strategy)


@pytest.mark.parametrize(
    ("strategy", "sql"),
    [
        ("delta", TRIANGLES),
        ("binary", TRIANGLES),
        ("auto", TRIANGLES.replace("SELECT", "SELECT /*+ DELTA_JOIN */", 1)),
        ("auto", TRIANGLES.replace("SELECT", "SELECT /*+ BINARY_JOIN */", 1)),
    ],
)
def test_triangle_view_equals_reference_after_every_step(strategy: str, sql: str) -> None:
    g, e, out, cv = _triangle_view(strategy, sql)
    want_plan = "binary" if "BINARY" in sql or strategy == "binary" else "delta"
    assert f"MultiJoin {want_plan} plan" in cv.explain
    # the engine-level plans, on the same input, for comparison
    engine = g.output(
        delta_join(
            [e, e, e], [((0, "a"), (1, "a")), ((0, "b"), (2, "a")), ((1, "b"), (2, "b"))]
        ).project(0, 1, 3),
        "engine",
    )
    rng = random.Random(zlib.crc32((strategy + sql).encode()))
    cur: set[tuple[int, int]] = set()
    whole = 0
    for step in range(45):
        adds: set[tuple[int, int]] = set()
        dels: set[tuple[int, int]] = set()
        if step % 4 == 1:  # the three edges of a new triangle in one batch
            x, y, z = rng.sample(range(9), 3)
            tri = {(x, y), (x, z), (y, z)}
            if not tri & cur:
                adds |= tri
                whole += 1
        if step % 5 == 3:  # the three edges of an existing triangle removed at once
            tris = sorted(triangles_ref(cur))
            if tris:
                a, b, c = rng.choice(tris)
                dels |= {(a, b), (a, c), (b, c)}
                whole += 1
        for _ in range(4):
            edge = (rng.randrange(9), rng.randrange(9))
            if edge not in adds:
                (dels if edge in cur else adds).add(edge)
        cur = step_edge_batch(g, e, cur, adds, dels)
        want = triangles_ref(cur)
        assert out.counts() == want, f"step {step}"
        assert engine.counts() == want, f"step {step}"
    assert whole >= 10


def test_delta_plan_state_stays_linear_on_a_hub() -> None:
    hub = [(0, i) for i in range(1, 120)] + [(i, i + 1) for i in range(1, 119)]
    rows = {}
    for strategy in ("delta", "binary"):
        g, e, out, _ = _triangle_view(strategy)
        e.insert(hub)
        g.step()
        rows[strategy] = sum(g.arrangement_rows().values())
        assert out.counts() == triangles_ref(set(hub))
    assert rows["delta"] <= 3 * len(hub)
    assert rows["binary"] > 20 * rows["delta"]  # the hub's d² pairs are arranged


def test_multiway_join_with_residual_and_nulls() -> None:
    cat = {
        "r": [("k", "string"), ("x", "bigint")],
        "s": [("k", "string"), ("m", "string"), ("y", "bigint")],
        "u": [("m", "string"), ("z", "bigint")],
    }
    sql = (
        "SELECT r.x, s.y, u.z FROM r JOIN s ON r.k = s.k JOIN u ON s.m = u.m "
        "WHERE r.x + u.z > s.y AND u.z < 8"
    )
    outs = {}
    g = ivm.Dataflow()
    ins = {
        "r": g.input("r", [("k", "str"), ("x", "int64")]),
        "s": g.input("s", [("k", "str"), ("m", "str"), ("y", "int64")]),
        "u": g.input("u", [("m", "str"), ("z", "int64")]),
    }
    for strategy in ("delta", "binary"):
        cv = compile_view(sql, cat, g, ins, join_strategy=strategy)
        assert f"MultiJoin {strategy} plan" in cv.explain
        outs[strategy] = g.output(cv.collection, strategy)
    rng = random.Random(3)
    cur: dict[str, Counter] = {t: Counter() for t in ins}
    keys = ["p", "q", None]
    for step in range(25):
        for t, inp in ins.items():
            row: tuple
            if t == "r":
                row = (rng.choice(keys), rng.randrange(6))
            elif t == "s":
                row = (rng.choice(keys), rng.choice(keys), rng.randrange(6))
            else:
                row = (rng.choice(keys), rng.randrange(10))
            live = sorted((r for r, n in cur[t].items() if n > 0), key=repr)
            if live and rng.random() < 0.3:
                gone = rng.choice(live)
                inp.delete([gone])
                cur[t][gone] -= 1
            inp.insert([row])
            cur[t][row] += 1
        g.step()
        want: Counter = Counter()
        for (rk, x), n1 in cur["r"].items():
            for (sk, sm, y), n2 in cur["s"].items():
                for (um, z), n3 in cur["u"].items():
                    keys_match = rk is not None and rk == sk and sm is not None and sm == um
                    if keys_match and x + z > y and z < 8:
                        want[(x, y, z)] += n1 * n2 * n3
        for strategy, out in outs.items():
            assert out.counts() == {r: n for r, n in want.items() if n}, (strategy, step)


# ---------------------------------------------------------------- EXPLAIN
def test_explain_shows_the_delta_plan_and_its_arrangements() -> None:
    text = explain(TRIANGLES, EDGES)
    line = next(x for x in text.splitlines() if "MultiJoin" in x)
    assert "MultiJoin delta plan, 3 inputs keys [#0 = #2, #1 = #4, #3 = #5]" in line
    assert "arrangements [e by [a] ~1,000 rows; e by [a, b] ~1,000 rows; e by [b]" in line
    assert "chosen by cost; est. rows held: delta 3,000, binary 3,000" in line
    lookups = [x for x in text.splitlines() if x.strip().startswith("half_join#")]
    assert len(lookups) == 6  # 3 rules x 2 lookups into the inputs' arrangements
    assert "== Dataflow ==" in text


def test_explain_cost_model_uses_statistics() -> None:
    skewed = explain_plan(plan_sql(TRIANGLES, EDGES, stats={"e": 10_000, "e.a": 50}))
    assert "delta 30,000, binary 2,020,000" in skewed  # |e ⋈ e| = 10⁴·10⁴/50
    # a selective key join (dimension tables): the binary plan holds less and is chosen
    cat = {
        "f": [("k1", "bigint"), ("k2", "bigint")],
        "d1": [("k1", "bigint")],
        "d2": [("k2", "bigint")],
    }
    sql = "SELECT * FROM f JOIN d1 ON f.k1 = d1.k1 JOIN d2 ON f.k2 = d2.k2"
    small = explain_plan(plan_sql(sql, cat, stats={"f": 1_000_000, "d1": 10, "d2": 10}))
    assert "MultiJoin binary plan" in small and "chosen by cost" in small
    forced = explain_plan(plan_sql(sql, cat, join_strategy="delta", stats={"f": 10**6}))
    assert "MultiJoin delta plan" in forced and "forced by join_strategy='delta'" in forced


def test_explain_binary_plan_and_fallbacks() -> None:
    text = explain_plan(plan_sql(TRIANGLES.replace("SELECT", "SELECT /*+ BINARY_JOIN */"), EDGES))
    assert "MultiJoin binary plan" in text and "forced by hint BINARY_JOIN" in text
    assert "⋈ of inputs 0-1 by [b, b]" in text  # the arranged intermediate result
    # inputs not connected by equalities: no delta plan
    cross = "SELECT * FROM e e1 JOIN e e2 ON e1.a = e2.a CROSS JOIN e e3"
    text = explain_plan(plan_sql(cross, EDGES, join_strategy="delta"))
    assert "delta impossible: the equalities do not connect every input" in text
    # inside a recursive CTE's loop: binary joins
    rec = (
        "WITH RECURSIVE r(a, b) AS (SELECT a, b FROM e UNION "
        "SELECT r.a, e2.b FROM r JOIN e e1 ON r.b = e1.a JOIN e e2 ON e1.b = e2.a) "
        "SELECT * FROM r"
    )
    text = explain_plan(plan_sql(rec, EDGES, join_strategy="delta"))
    assert "delta impossible: inside a recursive loop" in text
    # two-way joins are left alone
    assert "MultiJoin" not in explain_plan(
        plan_sql("SELECT * FROM e e1 JOIN e e2 ON e1.a = e2.a", EDGES)
    )


def test_recursive_view_with_multiway_join_is_maintained() -> None:
    rec = (
        "WITH RECURSIVE r(a, b) AS (SELECT a, b FROM e UNION "
        "SELECT r.a, e2.b FROM r JOIN e e1 ON r.b = e1.a JOIN e e2 ON e1.b = e2.a) "
        "SELECT * FROM r"
    )
    g, e, out, _ = edge_view(rec, EDGES, EDGE_SCHEMA)
    e.insert([(1, 2), (2, 3), (3, 4), (4, 5)])
    g.step()
    # pairs at odd distance (1, 3, ...) along the path
    assert set(out.counts()) == {(1, 2), (2, 3), (3, 4), (4, 5), (1, 4), (2, 5)}


# ---------------------------------------------------------------- event-time ASOF JOIN
@pytest.mark.parametrize("kind", ["ASOF JOIN", "ASOF LEFT JOIN"])
def test_event_time_asof_view_equals_reference(kind: str) -> None:
    g = ivm.Dataflow()
    orders = g.input("orders", [("oid", "int64"), ("sym", "str"), ("t", "int64")])
    prices = g.input("prices", [("sym", "str"), ("t", "int64"), ("px", "float64")])
    ins = {"orders": orders, "prices": prices}
    # the as-of condition written either way round
    cond = "o.t >= p.t" if kind == "ASOF JOIN" else "p.t <= o.t"
    sql = f"SELECT * FROM orders o {kind} prices p ON o.sym = p.sym AND {cond}"
    view = compile_view(sql, MARKET, g, ins)
    assert "AsofJoin" in view.explain
    out = g.output(view.collection, "v")
    # a WHERE on the right side filters the matches; it is not pushed into the ON
    filtered = g.output(
        compile_view(
            f"SELECT o.oid, p.px FROM orders o ASOF JOIN prices p ON o.sym = p.sym AND {cond} "
            "WHERE p.px >= 40",
            MARKET,
            g,
            ins,
        ).collection,
        "f",
    )
    rng = random.Random(11)
    cur_o: Counter = Counter()
    cur_p: Counter = Counter()
    for step in range(40):
        for _ in range(2):
            o = (rng.randrange(200), rng.choice(["A", "B", None]), rng.randrange(30))
            p = (rng.choice("AB"), rng.randrange(30), float(rng.randrange(80)))
            orders.insert([o])
            prices.insert([p])
            cur_o[o] += 1
            cur_p[p] += 1
        for cur, inp in ((cur_o, orders), (cur_p, prices)):
            live = sorted((r for r, n in cur.items() if n > 0), key=repr)
            if live and step % 2:
                gone = rng.choice(live)
                inp.delete([gone])
                cur[gone] -= 1
        g.step()
        want = asof_ref(cur_o, cur_p, left=kind == "ASOF LEFT JOIN")
        assert out.counts() == want, f"step {step}"
        inner = asof_ref(cur_o, cur_p, left=False)
        want_f: Counter = Counter()
        for r, n in inner.items():
            if r[5] >= 40:
                want_f[(r[0], r[5])] += n
        assert filtered.counts() == dict(want_f), f"step {step}"


def test_asof_join_refusals() -> None:
    for bad in (
        "SELECT * FROM orders o ASOF JOIN prices p ON o.sym = p.sym AND o.t > p.t",
        "SELECT * FROM orders o ASOF JOIN prices p ON o.sym = p.sym",
        "SELECT * FROM orders o ASOF JOIN prices p ON o.sym = p.sym AND o.t >= p.t AND p.px > 1",
        "SELECT * FROM orders o ASOF RIGHT JOIN prices p ON o.sym = p.sym AND o.t >= p.t",
    ):
        with pytest.raises(UnsupportedSqlError):
            plan_sql(bad, MARKET)


# ---------------------------------------------------------------- processing time
ARRIVAL = (
    "SELECT o.oid, o.sym, p.px FROM orders o "
    "JOIN prices FOR SYSTEM_TIME AS OF PROCTIME() AS p ON o.sym = p.sym"
)


def _market(sql: str):
    g = ivm.Dataflow()
    orders = g.input("orders", [("oid", "int64"), ("sym", "str"), ("t", "int64")])
    prices = g.input("prices", [("sym", "str"), ("t", "int64"), ("px", "float64")])
    cv = compile_view(sql, MARKET, g, {"orders": orders, "prices": prices})
    return g, orders, prices, g.output(cv.collection, "v"), cv


def test_processing_time_price_changes_never_revise_orders() -> None:
    g, orders, prices, out, cv = _market(ARRIVAL)
    assert "ArrivalJoin inner" in cv.explain
    rng = random.Random(5)
    cur_p: set = set()
    expected: Counter = Counter()
    oid = 0
    for step in range(30):
        before = dict(out.counts())
        new_orders = []
        for _ in range(2):
            oid += 1
            new_orders.append((oid, rng.choice("AB"), step))
        add_p = {(rng.choice("AB"), step, float(rng.randrange(50)))} - cur_p
        del_p = {rng.choice(sorted(cur_p))} if cur_p and step % 3 else set()
        orders.insert(new_orders)
        prices.insert(sorted(add_p))
        prices.delete(sorted(del_p))
        cur_p = (cur_p | add_p) - del_p
        g.step()
        after = out.counts()
        for row, n in before.items():  # earlier orders: never revised
            assert after.get(row) == n, (step, row)
        for o in new_orders:  # new orders: the prices as they are when they arrive
            for s, _, px in cur_p:
                if s == o[1]:
                    expected[(o[0], o[1], px)] += 1
        assert after == dict(expected), f"step {step}"


def test_processing_time_left_join_and_retraction() -> None:
    g, orders, prices, out, _ = _market(ARRIVAL.replace("JOIN prices", "LEFT JOIN prices"))
    orders.insert([(1, "A", 0)])
    g.step()
    assert out.counts() == {(1, "A", None): 1}  # no price when it arrived
    prices.insert([("A", 1, 10.0)])
    g.step()
    assert out.counts() == {(1, "A", None): 1}  # not revised
    orders.insert([(2, "A", 2)])
    g.step()
    assert out.counts() == {(1, "A", None): 1, (2, "A", 10.0): 1}
    # a retraction subtracts the join with the prices as they are at the retraction
    prices.update([("A", 1, 10.0)], [("A", 3, 12.0)])
    g.step()
    orders.delete([(2, "A", 2)])
    g.step()
    assert out.counts() == {(1, "A", None): 1, (2, "A", 10.0): 1, (2, "A", 12.0): -1}


def test_processing_time_syntax_refusals() -> None:
    for bad, match in (
        (ARRIVAL.replace("PROCTIME()", "o.t"), "PROCTIME"),
        ("SELECT * FROM prices FOR SYSTEM_TIME AS OF PROCTIME()", "right side of a join"),
        (ARRIVAL.replace("JOIN prices", "FULL JOIN prices"), "INNER or LEFT"),
    ):
        with pytest.raises(UnsupportedSqlError, match=match):
            plan_sql(bad, MARKET)
