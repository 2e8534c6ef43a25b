"""Datalog on the shared relational plan: what EXPLAIN shows, and how Datalog's semantics are
written as plan nodes (datalog.lower)."""

from __future__ import annotations

from pathlib import Path

from test_incremental_work import TC

import ivm
from datalog import compile_program
from sql_frontend import plan as p
from sql_frontend.compile import explain_text
from sql_frontend.plan import AggFunc, JoinKind


def test_explain_of_a_datalog_relation_is_the_sql_plan_printer() -> None:
    prog = compile_program(TC, ivm.Dataflow())
    text = prog.relational_explain("path")
    assert text == explain_text(prog.plans["path"])  # one printer for both languages
    lines = text.splitlines()
    assert lines[1].startswith("Recursive path UNION [x:BIGINT NOT NULL, y:BIGINT NOT NULL]")
    assert any("binding path UNION" in line for line in lines)
    assert any(line.strip().startswith("Join inner keys [#1 = #2]") for line in lines)
    assert any(line.strip().startswith("RecRef path") for line in lines)
    assert any(line.strip().startswith("Scan edge") for line in lines)


def test_set_semantics_and_failed_operations_are_plan_nodes() -> None:
    prog = compile_program(
        """
        .decl v(a: number, b: number)  .input v
        .decl q(a: number, r: number)  .output q
        .decl c(a: number, n: number)  .output c
        q(a, a / b) :- v(a, b).
        q(a, 0) :- v(a, _).
        c(a, n) :- v(a, _), n = count : { v(a, _) }.
        """,
        ivm.Dataflow(),
    )
    q = prog.plans["q"]
    assert isinstance(q, p.Distinct)  # two rules: the set union of their results
    projects = [n for n in p.walk(q) if isinstance(n, p.Project) and n.drop_failed]
    assert projects and "(rows where an expression fails are dropped)" in p.explain(q)
    c = prog.plans["c"]
    kinds = {n.kind for n in p.walk(c) if isinstance(n, p.Join)}
    assert JoinKind.ANTI in kinds  # bindings without a match: count 0
    aggregates = {n for n in p.walk(c) if isinstance(n, p.Aggregate)}  # one, read twice
    assert [a.func for n in aggregates for a in n.aggs] == [AggFunc.COUNT_STAR]


def test_session_explain_of_a_datalog_view_shows_the_shared_plan(tmp_path: Path) -> None:
    from spark_exec.session import Session

    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE edge (x BIGINT, y BIGINT)")
    s.datalog(TC)
    text = s.explain("path")
    assert "stratum 2: path (recursive, one iterate scope)" in text  # Datalog's rule plans
    assert "== Relational plan ==\nRecursive path UNION" in text  # the plan SQL views use
    assert "== Dataflow ==" in text
