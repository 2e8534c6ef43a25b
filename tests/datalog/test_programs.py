"""Datalog programs maintained under random insert/delete sequences.

After every epoch each output equals the naive reference evaluator (``datalog_reference``)
on the accumulated inputs, and, where networkx has the algorithm, networkx as well.
"""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest
from datalog_harness import Maintained, run_random

SEEDS = [0, 1, 2]
SHARDED_SEED = 0  # also run in-process sharded N = 2, 3, 7 (datalog_harness.Maintained)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TC = """
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def edge_gen(n: int):
    return lambda rng: (rng.randrange(n), rng.randrange(n))


def node_gen(n: int):
    return lambda rng: (rng.randrange(n),)


def weighted_edge_gen(n: int):
    """Random edges ``(x, y, weight(x, y))`` over ``n`` nodes."""

    def gen(rng: random.Random) -> tuple[int, int, int]:
        x, y = rng.randrange(n), rng.randrange(n)
        return (x, y, weight(x, y))

    return gen


def _digraph(edges) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_edges_from(edges)
    return g


def _closure(g: nx.DiGraph) -> set[tuple[int, int]]:
    """Pairs joined by a path of at least one edge."""
    return {(x, y) for x in g for s in g.successors(x) for y in nx.descendants(g, s) | {s}}


@pytest.mark.parametrize("seed", SEEDS)
def test_transitive_closure(seed: int) -> None:
    m = Maintained(TC, sharded=seed == SHARDED_SEED)

    def vs_networkx(m: Maintained) -> None:
        assert m.output("path") == _closure(_digraph(m.current["edge"]))

    run_random(m, random.Random(seed), 25, {"edge": edge_gen(9)}, extra_check=vs_networkx)


@pytest.mark.parametrize("seed", SEEDS)
def test_single_source_reachability(seed: int) -> None:
    m = Maintained(
        """
        .decl edge(x: number, y: number)  .input edge
        .decl source(x: number)           .input source
        .decl reach(x: number)            .output reach
        reach(x) :- source(x).
        reach(y) :- reach(x), edge(x, y).
    """,
        sharded=seed == SHARDED_SEED,
    )

    def vs_networkx(m: Maintained) -> None:
        g = _digraph(m.current["edge"])
        want: set[tuple[int]] = set()
        for (s,) in m.current["source"]:
            want.add((s,))
            if s in g:
                want |= {(y,) for y in nx.descendants(g, s)}
        assert m.output("reach") == want

    gens = {"edge": edge_gen(10), "source": node_gen(10)}
    run_random(m, random.Random(seed), 25, gens, batch=2, initial=12, extra_check=vs_networkx)


@pytest.mark.parametrize("seed", SEEDS)
def test_same_generation(seed: int) -> None:
    m = Maintained(
        """
        .decl parent(child: number, par: number)  .input parent
        .decl sg(x: number, y: number)            .output sg
        sg(x, y) :- parent(x, p), parent(y, p), x != y.
        sg(x, y) :- parent(x, a), sg(a, b), parent(y, b).
    """,
        sharded=seed == SHARDED_SEED,
    )
    run_random(m, random.Random(seed), 25, {"parent": edge_gen(10)}, initial=12)


CC_MIN_LABEL = """
.decl edge(x: number, y: number)  .input edge
.decl node(x: number)
.decl cand(x: number, l: number)
.decl cc(x: number, l: number)    .output cc
node(x) :- edge(x, _).
node(y) :- edge(_, y).
cand(x, x) :- node(x).
cand(y, l) :- cc(x, l), edge(x, y).
cand(y, l) :- cc(x, l), edge(y, x).
cc(x, m) :- node(x), m = min l : { cand(x, l) }.
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_connected_components_by_min_label(seed: int) -> None:
    m = Maintained(CC_MIN_LABEL, sharded=seed == SHARDED_SEED)
    assert m.prog.analysis.strata[-1].recursive

    def vs_networkx(m: Maintained) -> None:
        g = nx.Graph()
        g.add_edges_from(m.current["edge"])
        want = {(x, min(comp)) for comp in nx.connected_components(g) for x in comp}
        assert m.output("cc") == want

    run_random(m, random.Random(seed), 25, {"edge": edge_gen(12)}, extra_check=vs_networkx)


@pytest.mark.parametrize("seed", SEEDS)
def test_strongly_connected_components(seed: int) -> None:
    m = Maintained(
        TC.replace(".output path", "")
        + """
        .decl node(x: number)
        .decl same(x: number, y: number)
        .decl scc(x: number, rep: number)  .output scc
        node(x) :- edge(x, _).
        node(y) :- edge(_, y).
        same(x, x) :- node(x).
        same(x, y) :- path(x, y), path(y, x).
        scc(x, r) :- node(x), r = min y : { same(x, y) }.
    """,
        sharded=seed == SHARDED_SEED,
    )

    def vs_networkx(m: Maintained) -> None:
        g = _digraph(m.current["edge"])
        want = {(x, min(c)) for c in nx.strongly_connected_components(g) for x in c}
        assert m.output("scc") == want

    run_random(m, random.Random(seed), 25, {"edge": edge_gen(9)}, extra_check=vs_networkx)


def weight(x: int, y: int) -> int:
    return 1 + (7 * x + 3 * y) % 5


SHORTEST_PATHS = """
.decl edge(x: number, y: number, w: number)  .input edge
.decl source(x: number)                      .input source
.decl cand(x: number, d: number)
.decl dist(x: number, d: number)             .output dist
cand(x, 0) :- source(x).
cand(y, d + w) :- dist(x, d), edge(x, y, w).
dist(x, d) :- cand(x, _), d = min c : { cand(x, c) }.
"""


@pytest.mark.parametrize("seed", SEEDS)
def test_shortest_paths_min_in_recursion(seed: int) -> None:
    m = Maintained(SHORTEST_PATHS, sharded=seed == SHARDED_SEED)

    def vs_networkx(m: Maintained) -> None:
        g = nx.DiGraph()
        g.add_weighted_edges_from(m.current["edge"])
        g.add_nodes_from(s for (s,) in m.current["source"])
        want: dict[int, int] = {}
        for (s,) in m.current["source"]:
            for node, d in nx.single_source_dijkstra_path_length(g, s).items():
                want[node] = min(d, want.get(node, d))
        assert m.output("dist") == set(want.items())

    gens = {"edge": weighted_edge_gen(10), "source": node_gen(10)}
    run_random(m, random.Random(seed), 25, gens, batch=2, initial=14, extra_check=vs_networkx)


POINTS_TO = (EXAMPLES / "datalog" / "points_to.dl").read_text()


@pytest.mark.parametrize("seed", SEEDS)
def test_andersen_points_to(seed: int) -> None:
    m = Maintained(POINTS_TO, sharded=seed == SHARDED_SEED)
    rels = {s.relations for s in m.prog.analysis.strata if s.recursive}
    assert rels == {("pt", "hpt")}
    v = [f"v{i}" for i in range(7)]
    o = [f"o{i}" for i in range(4)]
    fields = ["f", "g"]
    gen = {
        "new": lambda rng: (rng.choice(v), rng.choice(o)),
        "assign": lambda rng: (rng.choice(v), rng.choice(v)),
        "load": lambda rng: (rng.choice(v), rng.choice(v), rng.choice(fields)),
        "store": lambda rng: (rng.choice(v), rng.choice(fields), rng.choice(v)),
    }
    run_random(m, random.Random(seed), 20, gen, batch=2, initial=5)


@pytest.mark.parametrize("seed", SEEDS)
def test_negation_pairs_not_reachable(seed: int) -> None:
    m = Maintained(
        TC.replace(".output path", "")
        + """
        .decl node(x: number)
        .decl unreach(x: number, y: number)  .output unreach
        node(x) :- edge(x, _).
        node(y) :- edge(_, y).
        unreach(x, y) :- node(x), node(y), !path(x, y).
    """,
        sharded=seed == SHARDED_SEED,
    )

    def vs_networkx(m: Maintained) -> None:
        g = _digraph(m.current["edge"])
        reach = _closure(g)
        want = {(x, y) for x in g for y in g if (x, y) not in reach}
        assert m.output("unreach") == want

    run_random(m, random.Random(seed), 25, {"edge": edge_gen(8)}, extra_check=vs_networkx)


@pytest.mark.parametrize("seed", SEEDS)
def test_mutual_recursion_even_odd_paths(seed: int) -> None:
    m = Maintained(
        """
        .decl edge(x: number, y: number)  .input edge
        .decl odd(x: number, y: number)   .output odd
        .decl even(x: number, y: number)  .output even
        odd(x, y) :- edge(x, y).
        odd(x, z) :- even(x, y), edge(y, z).
        even(x, z) :- odd(x, y), edge(y, z).
    """,
        sharded=seed == SHARDED_SEED,
    )
    assert [s.relations for s in m.prog.analysis.strata if s.recursive] == [("odd", "even")]
    run_random(m, random.Random(seed), 25, {"edge": edge_gen(8)})


@pytest.mark.parametrize("seed", SEEDS)
def test_non_recursive_aggregates_and_arithmetic(seed: int) -> None:
    m = Maintained(
        """
        .decl edge(x: number, y: number)  .input edge
        .decl node(x: number)
        .decl stats(x: number, out: number, total: number, lo: number, hi: number)
        .output stats
        .decl deg(x: number, n: number)   .output deg
        .decl total(n: number)            .output total
        .decl scaled(x: number, y: number, q: number, r: number) .output scaled
        node(x) :- edge(x, _) ; edge(_, x).
        deg(x, count : { edge(x, _) }) :- node(x).
        stats(x, n, s, lo, hi) :- node(x), n = count : { edge(x, _) },
            s = sum y : { edge(x, y) }, lo = min y : { edge(x, y) }, hi = max y * 2 : edge(x, y).
        total(n) :- n = count : { edge(_, _) }.
        scaled(x, y, (x - 4) / (y - 3), (x - 4) % (y - 3)) :- edge(x, y), x + y > 3.
    """,
        sharded=seed == SHARDED_SEED,
    )
    run_random(m, random.Random(seed), 20, {"edge": edge_gen(8)})


def test_facts_constants_and_symbols() -> None:
    m = Maintained(
        """
        .decl person(name: symbol, age: number)  .input person
        .decl city(name: symbol, c: symbol)
        city("ann", "paris"). city("bob", "oslo"). city("cy", "rome").
        .decl adult(name: symbol, where: symbol, tag: symbol)  .output adult
        adult(n, c, cat(n, "@", c)) :- person(n, a), a >= 18, city(n, c), !city(n, "rome").
        .decl young(name: symbol, len: number)  .output young
        young(n, strlen(n)) :- person(n, a), a < 18, contains("y", n) ; person(n, 7).
    """,
        sharded=True,
    )
    m.change(inserts={"person": {("ann", 30), ("bob", 12), ("cy", 40), ("yy", 3), ("zed", 7)}})
    m.check()
    assert m.output("adult") == {("ann", "paris", "ann@paris")}
    assert m.output("young") == {("yy", 2), ("zed", 3)}
    m.change(deletes={"person": {("ann", 30)}}, inserts={"person": {("bob", 20)}})
    m.check()
    assert m.output("adult") == {("bob", "oslo", "bob@oslo")}


def test_float_columns() -> None:
    m = Maintained(
        """
        .decl price(item: symbol, p: float)  .input price
        .decl taxed(item: symbol, p: float)  .output taxed
        .decl cheapest(p: float)             .output cheapest
        taxed(i, p * 1.25 + 1) :- price(i, p), p > 2.
        cheapest(m) :- m = min p : { price(_, p) }.
    """,
        sharded=True,
    )
    m.change(inserts={"price": {("a", 4.0), ("b", 1.5), ("c", 8.0)}})
    m.check()
    assert m.output("taxed") == {("a", 6.0), ("c", 11.0)}
    assert m.output("cheapest") == {(1.5,)}
    m.change(deletes={"price": {("b", 1.5)}})
    assert m.output("cheapest") == {(4.0,)}


def test_duplicate_input_rows_are_one_fact() -> None:
    m = Maintained(
        """
        .decl e(x: number)  .input e
        .decl n(c: number)  .output n
        n(c) :- c = count : { e(_) }.
    """,
        sharded=True,
    )
    m.send("e", [(1,), (1,), (2,)], 1)
    m.step()
    assert m.output("n") == {(2,)}
    m.send("e", [(1,)], -1)
    m.step()
    assert m.output("n") == {(2,)}


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 13))
def test_many_seeds_slow(seed: int) -> None:
    rng = random.Random(seed)
    run_random(Maintained(TC), rng, 40, {"edge": edge_gen(12)})
    run_random(Maintained(CC_MIN_LABEL), rng, 40, {"edge": edge_gen(14)})
    paths = {"edge": weighted_edge_gen(12), "source": node_gen(12)}
    run_random(Maintained(SHORTEST_PATHS), rng, 40, paths, batch=2, initial=14)
    points_to = {
        "new": lambda r: (f"v{r.randrange(9)}", f"o{r.randrange(5)}"),
        "assign": lambda r: (f"v{r.randrange(9)}", f"v{r.randrange(9)}"),
        "load": lambda r: (f"v{r.randrange(9)}", f"v{r.randrange(9)}", r.choice("fg")),
        "store": lambda r: (f"v{r.randrange(9)}", r.choice("fg"), f"v{r.randrange(9)}"),
    }
    run_random(Maintained(POINTS_TO), rng, 30, points_to, batch=3, initial=8)


@pytest.mark.parametrize("seed", SEEDS)
def test_unusual_rule_shapes(seed: int) -> None:
    """Seeded aggregates, empty groups, ground negation, unit bodies, copies, cross products."""
    m = Maintained(
        """
        .decl e(x: number, y: number)  .input e
        .decl flag(x: number)          .input flag
        .decl above(x: number, n: number)  .output above
        .decl total(n: number, s: number)  .output total
        .decl ground(x: number)            .output ground
        .decl unit(x: number)              .output unit
        .decl copy(x: number, y: number)   .output copy
        .decl cross(x: number, y: number)  .output cross
        .decl loop(x: number)              .output loop
        above(x, n) :- e(x, _), n = count : { e(y, _), y > x }.
        total(n, s) :- n = count : { e(_, _) }, s = sum x + y : { e(x, y) }.
        ground(x) :- e(x, x), !flag(3), !flag(_) ; flag(x), !e(_, _).
        unit(7) :- 1 < 2.
        unit(x) :- x = 2 * 4, true.
        copy(x, y) :- e(x, z), y = z, y = x + 1.
        cross(x, y) :- flag(x), flag(y), x < y.
        loop(x) :- e(x, y), e(y, x).
    """,
        sharded=seed == SHARDED_SEED,
    )
    gens = {"e": edge_gen(6), "flag": node_gen(6)}
    run_random(m, random.Random(seed), 25, gens, batch=2, initial=3)
    m.change(deletes={"e": set(m.current["e"]), "flag": set(m.current["flag"])})
    m.check()
    assert m.output("total") == {(0, 0)}


@pytest.mark.parametrize("seed", SEEDS)
def test_widest_paths_max_in_recursion(seed: int) -> None:
    m = Maintained(
        """
        .decl edge(x: number, y: number, w: number)  .input edge
        .decl source(x: number)                      .input source
        .decl cand(x: number, b: number)
        .decl best(x: number, b: number)             .output best
        cand(x, 1000) :- source(x).
        cand(y, min(b, w)) :- best(x, b), edge(x, y, w).
        best(x, b) :- cand(x, _), b = max c : { cand(x, c) }.
    """,
        sharded=seed == SHARDED_SEED,
    )

    def weighted(rng: random.Random) -> tuple[int, int, int]:
        x, y = rng.randrange(8), rng.randrange(8)
        return (x, y, weight(x, y))

    run_random(
        m,
        random.Random(seed),
        20,
        {"edge": weighted, "source": lambda rng: (rng.randrange(8),)},
        batch=2,
        initial=10,
    )
