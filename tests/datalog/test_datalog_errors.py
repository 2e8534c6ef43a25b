"""Semantic errors: typed, positioned, worded so that a user can act on them."""

from __future__ import annotations

import pytest

import ivm
from datalog import analyze, compile_program
from datalog.errors import (
    ArityError,
    DatalogError,
    DatalogTypeError,
    StratificationError,
    UndeclaredRelationError,
    UnsafeVariableError,
    UnsupportedError,
)
from ivm.errors import IvmError, SourceError

DECLS = """.decl e(x: number, y: number)
.decl s(name: symbol)
.decl p(x: number, y: number)
"""  # lines 1-3; programs below start on line 4


def fails(text: str, error: type[DatalogError]) -> DatalogError:
    with pytest.raises(error) as info:
        analyze(DECLS + text)
    return info.value


def test_hierarchy() -> None:
    err = fails("p(x, y) :- q(x, y).", UndeclaredRelationError)
    assert isinstance(err, SourceError) and isinstance(err, IvmError)
    assert isinstance(err, NameError)
    assert isinstance(fails("p(x) :- e(x, _).", ArityError), ValueError)
    assert isinstance(fails("p(x, y) :- e(x, y), s(x).", DatalogTypeError), TypeError)


def test_undeclared_relation() -> None:
    err = fails("p(x, y) :- e(x, y), q(y).", UndeclaredRelationError)
    assert (err.line, err.column, err.construct) == (4, 21, "q")
    assert "relation 'q' is not declared (.decl)" in str(err)


def test_undeclared_in_directive_and_duplicates() -> None:
    err = fails(".output nope", UndeclaredRelationError)
    assert (err.line, err.column) == (4, 9)
    err = fails(".decl e(a: number, b: number)", UndeclaredRelationError)
    assert "declared twice (first at line 1)" in str(err) and err.line == 4
    err = fails(".decl r(a: node)", UndeclaredRelationError)
    assert "unknown type 'node'" in str(err) and (err.line, err.column) == (4, 9)


def test_arity_mismatch() -> None:
    err = fails("p(x, y) :- e(x, y, 3).", ArityError)
    assert (err.line, err.column, err.construct) == (4, 12, "e")
    assert "relation 'e' has 2 attributes, but 3 arguments are given" in str(err)
    err = fails("p(1).", ArityError)
    assert (err.line, err.column) == (4, 1)


def test_type_mismatches() -> None:
    err = fails("p(x, y) :- e(x, y), s(y).", DatalogTypeError)
    assert "variable y is used as int and as symbol" in str(err)
    assert (err.line, err.column) == (4, 23)
    err = fails('p(x, "a") :- e(x, _).', DatalogTypeError)
    assert "\"a\" is symbol, but the attribute of 'p' is int" in str(err)
    assert (err.line, err.column) == (4, 6)
    err = fails("p(x, y) :- e(x, y), s(n), x < n.", DatalogTypeError)
    assert "type mismatch" in str(err) and err.line == 4
    err = fails("p(x, y) :- e(x, y), s(n), y = strlen(n + n).", DatalogTypeError)
    assert "does not apply to symbols (use cat)" in str(err)
    err = fails("p(x, y) :- e(x, y), s(n), y = strlen(x).", DatalogTypeError)
    assert "argument 1 of strlen must be symbol" in str(err)


def test_unsafe_variables() -> None:
    err = fails("p(x, z) :- e(x, y).", UnsafeVariableError)
    assert "variable z is not bound" in str(err) and (err.line, err.column) == (4, 6)
    err = fails("p(x, y) :- e(x, x), !e(x, y).", UnsafeVariableError)
    assert "variable y is not bound (it occurs only under negation)" in str(err)
    assert (err.line, err.column) == (4, 27)
    err = fails("p(x, y) :- e(x, _), y < 3.", UnsafeVariableError)
    assert "variable y is not bound" in str(err)
    err = fails("p(x, y) :- e(x, y), _ < 3.", UnsafeVariableError)
    assert "'_' is not allowed in a comparison" in str(err)
    err = fails("p(x, n) :- n = count : { e(x, _) }.", UnsafeVariableError)
    assert "aggregate count cannot be evaluated" in str(err) and (err.line, err.column) == (4, 16)
    err = fails("p(x, _) :- e(x, _).", UnsafeVariableError)
    assert "'_' is not allowed in a rule head" in str(err)
    err = fails("p(x, 1) :- e(x, _).\np(x, 2).", UnsafeVariableError)
    assert "must be ground" in str(err) and (err.line, err.column) == (5, 3)


def test_negation_cycle_is_refused_naming_the_cycle() -> None:
    err = fails(
        """
.decl a(x: number)
.decl b(x: number)
a(x) :- e(x, _), !b(x).
b(x) :- e(x, _), a(x).
""",
        StratificationError,
    )
    assert isinstance(err, StratificationError)
    assert err.cycle == ("a", "b", "a")
    assert "a depends on itself through negation (cycle a -> !b -> a)" in str(err)
    assert (err.line, err.column, err.construct) == (7, 18, "b")


def test_count_and_sum_in_recursion_are_refused() -> None:
    err = fails(
        """
.decl n(x: number, c: number)
n(x, c) :- e(x, _), c = count : { n(x, _) }.
""",
        StratificationError,
    )
    assert "through aggregate count (cycle n -> count n)" in str(err)
    assert "only min and max may be used inside recursion" in str(err)
    err = fails(
        """
.decl t(x: number, c: number)
.decl u(x: number, c: number)
t(x, c) :- u(x, c).
u(x, c) :- e(x, _), c = sum y : { t(x, y) }.
""",
        StratificationError,
    )
    assert isinstance(err, StratificationError) and err.cycle == ("u", "t", "u")


def test_min_in_recursion_is_accepted() -> None:
    analysis = analyze(
        DECLS
        + "p(x, m) :- e(x, _), m = min y : { p(x, y) ; e(x, y) }.".replace(
            "{ p(x, y) ; e(x, y) }", "{ e(x, y) }"
        )
        + "\np(x, m) :- p(x, y), e(y, m)."
    )
    assert any(s.recursive for s in analysis.strata)


def test_unsupported_nullary_relation() -> None:
    err = fails(".decl flag()", UnsupportedError)
    assert err.line == 4 and "nullary relations are not supported" in str(err)


def test_given_input_is_checked() -> None:
    g = ivm.Dataflow()
    wrong = g.input("edges", [("a", "str"), ("b", "int64")])
    with pytest.raises(DatalogTypeError) as info:
        compile_program(".decl e(x: number, y: number)\n.input e", g, {"e": wrong})
    assert "input 'e' has dtypes ('str', 'int64')" in str(info.value)
    with pytest.raises(DatalogTypeError):
        compile_program(".decl e(x: number, y: number)", g, {"e": wrong})
