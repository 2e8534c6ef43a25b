"""Compilation details: expressions, explain, inputs, checkpoints, documented examples."""

from __future__ import annotations

import doctest
import math

import pytest
from datalog_harness import Maintained

import datalog.analysis
import datalog.compile
import datalog.parser
import datalog.stratify
import ivm
from datalog import analyze, compile_program


@pytest.mark.parametrize(
    "module", [datalog.parser, datalog.stratify, datalog.compile, datalog.analysis]
)
def test_docstring_examples_run(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted > 0


def test_expression_semantics() -> None:
    m = Maintained("""
        .decl v(a: number, b: number, s: symbol)  .input v
        .decl r(name: symbol, x: number)          .output r
        .decl f(name: symbol, x: float)           .output f
        .decl t(name: symbol, x: symbol)          .output t
        r("div", a / b) :- v(a, b, _).
        r("mod", a % b) :- v(a, b, _).
        r("pow", a ^ 2) :- v(a, _, _).
        r("bits", (a band 6) bor (1 bshl 4) bxor 1) :- v(a, _, _).
        r("logic", (a land 0) + (a lor 0) * 10 + lnot(b) * 100) :- v(a, b, _).
        r("num", to_number(s) + 1) :- v(_, _, s).
        r("len", strlen(s)) :- v(_, _, s).
        r("minmax", min(a, b) * 100 + max(a, b, 3)) :- v(a, b, _).
        f("half", to_float(a) / 2) :- v(a, _, _).
        f("mix", to_float(a) + 0.5) :- v(a, _, _).
        t("sub", substr(s, 1, 2)) :- v(_, _, s).
        t("str", cat(to_string(a), "/", s)) :- v(a, _, s).
    """)
    m.change(inserts={"v": {(-7, 2, "123"), (7, 0, "x1")}})
    m.check()
    r = m.output("r")
    assert ("div", -3) in r and ("mod", -1) in r  # truncation toward zero, C remainder
    assert not any(x for name, x in r if name == "div" and x != -3)  # 7 / 0: no fact
    assert {("num", 124)} == {row for row in r if row[0] == "num"}  # "x1" is no number
    assert ("pow", 49) in r and ("len", 3) in r and ("len", 2) in r
    assert {x for n, x in m.output("f") if n == "half"} == {-3.5, 3.5}
    assert ("sub", "23") in m.output("t") and ("str", "-7/123") in m.output("t")
    assert ("minmax", -700 + 3) in r and ("minmax", 7) in r


def test_float_division_follows_ieee() -> None:
    m = Maintained("""
        .decl v(a: float, b: float)  .input v
        .decl q(x: float)            .output q
        q(a / b) :- v(a, b).
    """)
    m.change(inserts={"v": {(1.0, 0.0)}})
    assert m.output("q") == {(math.inf,)}


def test_explain_shows_strata_and_plans() -> None:
    text = """
        .decl edge(x: number, y: number)  .input edge
        .decl path(x: number, y: number)  .output path
        .decl far(x: number, n: number)   .output far
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        far(x, n) :- path(x, _), n = count : { path(x, y), y > x + 1 }, !edge(x, 0).
    """
    assert (
        analyze(text).explain()
        == """\
stratum 1: edge (non-recursive)
  edge(x: number, y: number)  [input]
stratum 2: path (recursive, one iterate scope)
  path(x: number, y: number)  [output]
    rule path(x, y) :- edge(x, y).  (line 5)
      scan edge(x, y)
      head path(x, y)
    rule path(x, z) :- path(x, y), edge(y, z).  (line 6)
      scan path(x, y)
      join edge(y, z) on y
      head path(x, z)
stratum 3: far (non-recursive)
  far(x: number, n: number)  [output]
    rule far(x, n) :- path(x, _), n = count : { path(x, y), y > (x + 1) }, !edge(x, 0).  \
(line 7)
      scan path(x, _)
      antijoin edge(x, 0) on x
      aggregate @agg0 = count group by (x)
        scan path(x, y)
        filter y > (x + 1)
      bind n = @agg0
      head far(x, n)"""
    )
    g = ivm.Dataflow()
    prog = compile_program(text, g)
    assert prog.explain == analyze(text).explain()
    assert "loop scope" in g.explain()


def test_inputs_bound_to_existing_collections_and_output_prefix() -> None:
    g = ivm.Dataflow()
    table = g.input("catalog.edges", [("src", "int64"), ("dst", "int64")])
    prog = compile_program(
        """
        .decl edge(x: number, y: number)  .input edge
        .decl two(x: number, z: number)   .output two
        two(x, z) :- edge(x, y), edge(y, z).
    """,
        g,
        {"edge": table},
        output_prefix="dl.",
    )
    assert prog.inputs["edge"].schema.names == ("x", "y")
    assert prog.input_schemas == {"edge": (("x", "int64"), ("y", "int64"))}
    assert prog.output_schemas == {"two": (("x", "int64"), ("z", "int64"))}
    assert list(g.outputs) == ["dl.two"]
    table.insert([(1, 2), (2, 3), (2, 3)])
    g.step()
    assert prog.outputs["two"].counts() == {(1, 3): 1}
    assert prog.outputs["two"].contents().column_names == ["x", "z"]


def test_max_iterations_caps_a_diverging_program() -> None:
    g = ivm.Dataflow()
    prog = compile_program(
        """
        .decl n(x: number)  .output n
        n(0).
        n(x + 1) :- n(x).
    """,
        g,
        max_iterations=5,
    )
    g.step()
    rows = sorted(prog.outputs["n"].counts())
    assert rows[0] == (0,) and 3 <= len(rows) <= 7


PROGRAM = """
.decl edge(x: number, y: number)  .input edge
.decl path(x: number, y: number)  .output path
edge(100, 101).
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def test_checkpoint_round_trip_keeps_facts_once() -> None:
    first = Maintained(PROGRAM)
    first.change(inserts={"edge": {(1, 2), (2, 3), (101, 1)}})
    state = first.g.state()

    second = Maintained(PROGRAM)
    second.g.load_state(state)
    second.current = {"edge": set(first.current["edge"])}
    second.change(deletes={"edge": {(2, 3)}}, inserts={"edge": {(3, 100)}})
    second.check()
    assert (100, 2) in second.output("path")
