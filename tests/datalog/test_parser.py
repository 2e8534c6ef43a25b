"""Parser: Soufflé syntax to the immutable AST, with positions."""

from __future__ import annotations

import dataclasses

import pytest

from datalog import ast, parse
from datalog.errors import DatalogSyntaxError, UnsupportedError


def test_declarations_directives_and_rules() -> None:
    p = parse("""
        .type Node <: number
        .decl edge(x: Node, y: Node) brie
        .input edge(IO=file, filename="edge.facts", delimiter=",")
        .decl path(x: Node, y: Node)
        .output path
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
    """)
    assert [t.name for t in p.types] == ["Node"]
    (edge, _path) = p.declarations
    assert edge.name == "edge" and edge.arity == 2 and edge.qualifiers == ("brie",)
    assert [a.type for a in edge.attributes] == ["Node", "Node"]
    assert [(d.kind, d.relation) for d in p.directives] == [("input", "edge"), ("output", "path")]
    assert p.directives[0].params == (
        ("IO", "file"),
        ("filename", "edge.facts"),
        ("delimiter", ","),
    )
    assert [str(r) for r in p.rules] == [
        "path(x, y) :- edge(x, y).",
        "path(x, z) :- path(x, y), edge(y, z).",
    ]
    assert p.rules[1].pos == ast.Pos(8, 9)
    assert p.rules[1].body[1].pos == ast.Pos(8, 35)


def test_ast_is_immutable() -> None:
    rule = parse("p(x) :- q(x).").rules[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.head = rule.head  # type: ignore[misc]
    assert isinstance(rule.body, tuple)


def test_constants_and_comments() -> None:
    p = parse("""
        // line comment
        f("a\\"b", -3, 2.5, 7u, 0x1F, 0b101, 1e3). /* block
        comment */ g(1).
    """)
    args = p.rules[0].head.args
    assert [(a.value, a.type) for a in args] == [  # type: ignore[union-attr]
        ('a"b', "symbol"),
        (-3, "number"),
        (2.5, "float"),
        (7, "unsigned"),
        (31, "number"),
        (5, "number"),
        (1000.0, "float"),
    ]
    assert p.rules[1].pos == ast.Pos(4, 20)


def test_operator_precedence() -> None:
    rule = parse("p(a + b * c - d / e % f, -x ^ 2, a band b bor c, (a + b) * c) :- q(a).").rules[0]
    assert [str(t) for t in rule.head.args] == [
        "((a + (b * c)) - ((d / e) % f))",
        "(-(x ^ 2))",
        "((a band b) bor c)",
        "((a + b) * c)",
    ]


def test_negation_comparisons_and_constraints() -> None:
    rule = parse(
        'p(x) :- q(x, y), !r(y, _), x != y, x <= 3, contains("a", s), match("a.*", s), true.'
    ).rules[0]
    kinds = [type(lit).__name__ for lit in rule.body]
    assert kinds == [
        "Atom",
        "Negation",
        "Comparison",
        "Comparison",
        "Constraint",
        "Constraint",
        "Constraint",
    ]


def test_aggregates() -> None:
    rule = parse(
        "p(x, n, s, m, k) :- q(x), n = count : { e(x, _) }, s = sum y : { e(x, y) }, "
        "m = min y + 1 : { e(x, y), y > 0 }, k = max(y) : e(x, y)."
    ).rules[0]
    aggs = [lit.right for lit in rule.body[1:]]  # type: ignore[union-attr]
    assert [(a.function, str(a.target)) for a in aggs] == [  # type: ignore[union-attr]
        ("count", "None"),
        ("sum", "y"),
        ("min", "(y + 1)"),
        ("max", "y"),
    ]
    assert len(aggs[2].body) == 2  # type: ignore[union-attr]
    assert str(parse("p(n) :- n = min(a, b), q(a, b).").rules[0].body[0]) == "n = min(a, b)"


def test_disjunction_and_multiple_heads_expand() -> None:
    rules = parse("a(x), b(x) :- c(x), (d(x) ; e(x)).").rules
    assert [str(r) for r in rules] == [
        "a(x) :- c(x), d(x).",
        "b(x) :- c(x), d(x).",
        "a(x) :- c(x), e(x).",
        "b(x) :- c(x), e(x).",
    ]
    assert len(parse("a(x) :- b(x) ; c(x) ; d(x).").rules) == 3


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("p(x) :- q(x)", 1, 13, "expected ',', ';' or '.' after a literal, found end of input"),
        ("p(x) :- q(x),.", 1, 14, "expected a term"),
        ("p(x) : q(x).", 1, 6, "expected ':-' or '.'"),
        (".decl p(x number)", 1, 11, "expected ':'"),
        ("p(x) :-\n  q(x) ~ r.", 2, 8, "unexpected character '~'"),
        ('p("abc).', 1, 3, "unterminated string"),
        ("p(x) :- q(x), x.", 1, 16, "expected a comparison operator"),
        ("p(12ab).", 1, 3, "malformed number '12ab'"),
        ("p(x) :- foo(x) + 1 = 2.", 1, 16, "expected ',', ';' or '.' after a literal"),
        ("/* open", 1, 1, "unterminated comment"),
    ],
)
def test_syntax_errors_have_positions(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(DatalogSyntaxError) as err:
        parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert message in str(err.value)
    assert f"(line {line}, column {column})" in str(err.value)


@pytest.mark.parametrize(
    ("text", "construct"),
    [
        (".decl p(x: number) eqrel", "eqrel"),
        (".printsize p", ".printsize"),
        (".type T = [a: number]", "["),
        (".type T = A | B", "|"),
        ("p(x) :- x = mean y : { q(y) }.", "mean"),
        ("p(x) :- q(x), !(r(x) ; s(x)).", "!("),
        (".comp C { }", ".comp"),
    ],
)
def test_unsupported_constructs_are_named(text: str, construct: str) -> None:
    with pytest.raises(UnsupportedError) as err:
        parse(text)
    assert err.value.construct == construct
    assert err.value.line == 1
