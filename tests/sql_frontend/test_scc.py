"""The front ends' one SCC utility: against networkx, and used by both view languages."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import datalog.stratify
import sql_frontend.scc
import sql_frontend.translate
from datalog import analyze
from sql_frontend.planner import plan_sql
from sql_frontend.scc import is_recursive, strongly_connected_components

ROOT = Path(__file__).resolve().parents[2]

edges_st = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(edges_st, st.integers(1, 12))
def test_components_and_their_order_match_networkx(
    edges: list[tuple[int, int]], n_nodes: int
) -> None:
    nodes = list(range(n_nodes))
    succ: dict[int, list[int]] = {n: [] for n in nodes}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    comps = strongly_connected_components(nodes, succ)
    g = nx.DiGraph()
    g.add_nodes_from(succ)
    g.add_edges_from((a, b) for a, bs in succ.items() for b in bs)
    reached = set(nodes).union(*(nx.descendants(g, n) for n in nodes))
    g = g.subgraph(reached)  # nodes outside ``nodes`` count when a listed node reaches them
    expected = {frozenset(c) for c in nx.strongly_connected_components(g)}
    assert {frozenset(c) for c in comps} == expected
    position = {n: i for i, c in enumerate(comps) for n in c}
    for a, b in g.edges:  # a reads b: b's component comes first (or is a's own)
        assert position[b] <= position[a]
    for c in comps:
        assert is_recursive(c, succ) == (len(c) > 1 or g.has_edge(c[0], c[0]))
        listed = [n for n in nodes if n in c]
        assert list(c[: len(listed)]) == listed  # members in the order of ``nodes``


def test_deep_chain_does_not_hit_the_recursion_limit() -> None:
    n = 20_000
    comps = strongly_connected_components(list(range(n)), {i: [i + 1] for i in range(n - 1)})
    assert comps[0] == (n - 1,) and comps[-1] == (0,)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record which front end computes SCCs (the real utility still does the work)."""
    seen: list[str] = []
    real = sql_frontend.scc.strongly_connected_components
    for module in (datalog.stratify, sql_frontend.translate):

        def spy(nodes, succ, module=module):  # type: ignore[no-untyped-def]
            seen.append(module.__name__)
            return real(nodes, succ)

        monkeypatch.setattr(module, "strongly_connected_components", spy)
    return seen


def test_both_languages_stratify_with_the_one_utility(calls: list[str]) -> None:
    analyze("""
        .decl e(x: number, y: number)  .input e
        .decl p(x: number, y: number)  .output p
        p(x, y) :- e(x, y).
        p(x, z) :- p(x, y), e(y, z).
    """)
    plan_sql(
        "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM e UNION "
        "SELECT r.a, e.dst FROM r JOIN e ON r.b = e.src) SELECT a, b FROM r",
        {"e": [("src", "bigint"), ("dst", "bigint")]},
    )
    assert calls == ["datalog.stratify", "sql_frontend.translate"]


def test_no_other_scc_algorithm_in_the_front_ends() -> None:
    """Only ``sql_frontend/scc.py`` walks a graph for components (no second Tarjan)."""
    found = []
    for package in ("sql_frontend", "datalog", "catalog", "spark_exec"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "sql_frontend" / "scc.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.ClassDef) and any(
                    word in node.name.lower() for word in ("scc", "tarjan", "strongly")
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert found == []
