"""WITH RECURSIVE views (set semantics on cyclic data, which Spark cannot run) against a plain
Python fixed point, through inserts and deletes of edges."""

from __future__ import annotations

import random

from references import transitive_closure as closure
from sql_harness import edge_view

import ivm
from sql_frontend.compile import compile_view

CATALOG = {"e": [("src", "bigint"), ("dst", "bigint")]}

REACH = (
    "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM e UNION "
    "SELECT r.a, e.dst FROM r JOIN e ON r.b = e.src) SELECT a, b FROM r"
)
CC = (
    "WITH RECURSIVE cc(n, l) AS (SELECT src, src FROM e UNION SELECT dst, dst FROM e UNION "
    "SELECT e.dst, cc.l FROM cc JOIN e ON cc.n = e.src UNION "
    "SELECT e.src, cc.l FROM cc JOIN e ON cc.n = e.dst) SELECT n, min(l) FROM cc GROUP BY n"
)
SHORTEST = (
    "WITH RECURSIVE d(n, k) AS (SELECT 0, 0 FROM e WHERE src = 0 UNION "
    "SELECT e.dst, d.k + 1 FROM d JOIN e ON d.n = e.src WHERE d.k < 8) "
    "SELECT n, min(k) FROM d GROUP BY n"
)


def components(edges: set[tuple[int, int]]) -> set[tuple[int, int]]:
    nodes = {x for e in edges for x in e}
    label = {n: n for n in nodes}
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            m = min(label[a], label[b])
            if label[a] != m or label[b] != m:
                label[a] = label[b] = m
                changed = True
    return set(label.items())


def distances(edges: set[tuple[int, int]]) -> set[tuple[int, int]]:
    if not any(a == 0 for a, _ in edges):
        return set()
    dist = {0: 0}
    frontier = [0]
    while frontier:
        nxt = []
        for n in frontier:
            for a, b in edges:
                if a == n and b not in dist and dist[n] + 1 <= 9:
                    dist[b] = dist[n] + 1
                    nxt.append(b)
        frontier = nxt
    return set(dist.items())


def test_recursive_views_follow_edge_changes() -> None:
    seed = 7
    rng = random.Random(seed)
    g = ivm.Dataflow()
    e = g.input("e", [("src", "any"), ("dst", "any")])
    views = {
        name: g.output(compile_view(sql, CATALOG, g, {"e": e}).collection, name)
        for name, sql in [("reach", REACH), ("cc", CC), ("dist", SHORTEST)]
    }
    refs = {"reach": closure, "cc": components, "dist": distances}
    edges: set[tuple[int, int]] = set()
    for step in range(6):
        ins = {(rng.randint(0, 7), rng.randint(0, 7)) for _ in range(6)} - edges
        dels = set(rng.sample(sorted(edges), min(len(edges), 3))) if step else set()
        edges = (edges - dels) | ins
        if ins:
            e.insert(sorted(ins))
        if dels:
            e.delete(sorted(dels))
        g.step()
        for name, out in views.items():
            got = out.counts()
            assert all(c == 1 for c in got.values()), (name, seed, step, got)
            assert set(got) == refs[name](edges), (name, seed, step)


def test_mutual_recursion_even_odd_paths() -> None:
    sql = (
        "WITH RECURSIVE ev(n) AS (SELECT 0 FROM e WHERE src = 0 UNION "
        "SELECT e.dst FROM od JOIN e ON od.n = e.src), "
        "od(n) AS (SELECT e.dst FROM ev JOIN e ON ev.n = e.src) SELECT n FROM ev"
    )
    g, e, out, _ = edge_view(sql, CATALOG, [("src", "any"), ("dst", "any")])
    e.insert([(0, 1), (1, 2), (2, 3), (3, 4)])
    g.step()
    assert set(out.counts()) == {(0,), (2,), (4,)}
    e.insert([(4, 0), (0, 5)])
    g.step()  # the odd cycle 0-1-2-3-4-0 makes every node reachable by an even path
    assert set(out.counts()) == {(0,), (1,), (2,), (3,), (4,), (5,)}
    e.delete([(4, 0)])
    g.step()
    assert set(out.counts()) == {(0,), (2,), (4,)}
