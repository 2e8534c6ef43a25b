"""Property: printing a rule and parsing it back gives the same AST (positions aside)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from datalog import ast, parse

P = ast.Pos(1, 1)
names = st.sampled_from(["x", "y", "z", "w1", "_v"])
variables = names.map(lambda n: ast.Var(n, P))
constants = st.one_of(
    st.integers(-(2**40), 2**40).map(lambda v: ast.Const(v, "number", P)),
    st.integers(0, 2**40).map(lambda v: ast.Const(v, "unsigned", P)),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: ast.Const(v, "float", P)),
    st.text(alphabet='ab \\"xyz', max_size=6).map(lambda v: ast.Const(v, "symbol", P)),
)
ops = st.sampled_from(["+", "-", "*", "/", "%", "^", "band", "bor", "bxor", "bshl", "land"])


def terms(depth: int = 2) -> st.SearchStrategy[ast.Term]:
    leaf: st.SearchStrategy[ast.Term] = st.one_of(variables, constants)
    if depth == 0:
        return leaf
    sub = terms(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda o, a, b: ast.BinOp(o, a, b, P), ops, sub, sub),
        st.builds(lambda a: ast.UnaryOp("-", a, P), variables),
        st.builds(lambda a, b: ast.Functor("cat", (a, b), P), sub, sub),
        st.builds(lambda a: ast.Functor("strlen", (a,), P), sub),
    )


relations = st.sampled_from(["e", "p", "q2"])


def atoms(depth: int = 2) -> st.SearchStrategy[ast.Atom]:
    arg = st.one_of(terms(depth), st.just(ast.Wildcard(P)))
    return st.builds(
        lambda r, args: ast.Atom(r, tuple(args), P),
        relations,
        st.lists(arg, min_size=1, max_size=3),
    )


comparisons = st.builds(
    lambda o, a, b: ast.Comparison(o, a, b, P),
    st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
    terms(2),
    terms(2),
)
aggregates = st.builds(
    lambda f, t, body: ast.Aggregate(f, None if f == "count" else t, tuple(body), P),
    st.sampled_from(["count", "sum", "min", "max"]),
    terms(1),
    st.lists(atoms(0), min_size=1, max_size=2),
)
literals: st.SearchStrategy[ast.Literal] = st.one_of(
    atoms(),
    atoms(0).map(lambda a: ast.Negation(a, P)),
    comparisons,
    st.builds(lambda v, a: ast.Comparison("=", v, a, P), variables, aggregates),
)
rules = st.builds(
    lambda h, body: ast.Rule(h, tuple(body), P),
    atoms().filter(lambda a: not any(isinstance(x, ast.Wildcard) for x in a.args)),
    st.lists(literals, max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(rules)
def test_print_then_parse_is_identity(rule: ast.Rule) -> None:
    (parsed,) = parse(str(rule)).rules
    assert parsed == rule, str(rule)
