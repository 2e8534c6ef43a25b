"""A plain, naive bottom-up Datalog evaluator: the oracle for the incremental engine.

Deliberately simple and slow: tuple-at-a-time backtracking over Python sets, no indexes, no
planning. Relations are evaluated SCC by SCC (networkx's condensation, dependencies first);
a recursive SCC is iterated as R_{i+1} = F(R_i) from empty relations until nothing changes,
which is the semantics ``datalog.stratify`` documents (and, for monotone programs, the least
fixed point). Only the parser is shared with the code under test.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import networkx as nx

from datalog import ast
from datalog.parser import parse

Row = tuple[Any, ...]
Env = dict[str, Any]


class _Drop(Exception):
    """A partial operation failed: the binding produces nothing."""


def evaluate(
    text: str, inputs: Mapping[str, set[Row]] | None = None, max_rounds: int = 10_000
) -> dict[str, set[Row]]:
    """Every relation of the program, given the facts of its input relations."""
    program = parse(text)
    decls = {d.name: d for d in program.declarations}
    types = {t.name: t.base for t in program.types}

    def prim(t: str) -> str:
        while t in types:
            t = types[t]
        return t

    kinds = {name: [prim(a.type) for a in d.attributes] for name, d in decls.items()}
    rules = [r for r in program.rules if r.body]
    base: dict[str, set[Row]] = {name: set() for name in decls}
    for name, rows in (inputs or {}).items():
        base[name] |= {tuple(r) for r in rows}
    for fact in (r for r in program.rules if not r.body):
        try:
            row = tuple(
                _coerce(_term(a, {}, {}), k)
                for a, k in zip(fact.head.args, kinds[fact.head.relation], strict=True)
            )
        except _Drop:
            continue
        base[fact.head.relation].add(row)

    graph = nx.DiGraph()
    graph.add_nodes_from(decls)
    for rule in rules:
        for rel in _body_relations(rule.body):
            graph.add_edge(rel, rule.head.relation)
    db: dict[str, set[Row]] = {}
    condensed = nx.condensation(graph)
    for comp in nx.topological_sort(condensed):
        members = condensed.nodes[comp]["members"]
        own = [r for r in rules if r.head.relation in members]
        current: dict[str, set[Row]] = {m: set() for m in members}
        for _ in range(max_rounds):
            view = {**db, **current}
            nxt = {m: set(base[m]) for m in members}
            for rule in own:
                kind = kinds[rule.head.relation]
                for env in _solve(list(rule.body), {}, view, rule):
                    try:
                        row = tuple(
                            _coerce(_term(a, env, view, rule), k)
                            for a, k in zip(rule.head.args, kind, strict=True)
                        )
                    except _Drop:
                        continue
                    nxt[rule.head.relation].add(row)
            if nxt == current:
                break
            current = nxt
        else:
            raise RuntimeError(f"no fixed point for {members} in {max_rounds} rounds")
        db.update(current)
    return db


def _coerce(value: Any, kind: str) -> Any:
    return float(value) if kind == "float" else value


def _body_relations(body: tuple[ast.Literal, ...]) -> Iterator[str]:
    for lit in body:
        if isinstance(lit, ast.Atom):
            yield lit.relation
        elif isinstance(lit, ast.Negation):
            yield lit.atom.relation
        for term in ast.literal_terms(lit):
            yield from _term_relations(term)


def _term_relations(term: ast.Term) -> Iterator[str]:
    if isinstance(term, ast.Aggregate):
        yield from _body_relations(term.body)
        if term.target is not None:
            yield from _term_relations(term.target)
    for child in ast.term_children(term):
        yield from _term_relations(child)


def _all_vars(node: Any) -> set[str]:
    """Variable names anywhere below a term/literal (including aggregate bodies)."""
    out: set[str] = set()
    if isinstance(node, ast.Var):
        out.add(node.name)
    elif isinstance(node, ast.Aggregate):
        if node.target is not None:
            out |= _all_vars(node.target)
        for lit in node.body:
            out |= _all_vars(lit)
    elif isinstance(node, ast.Atom | ast.Negation | ast.Comparison | ast.Constraint):
        for t in ast.literal_terms(node):
            out |= _all_vars(t)
    elif isinstance(node, ast.Rule):
        out |= _all_vars(node.head)
        for lit in node.body:
            out |= _all_vars(lit)
    else:
        for child in ast.term_children(node):
            out |= _all_vars(child)
    return out


def _outside_vars(agg: ast.Aggregate, scope: Any) -> set[str]:
    """Variables of ``scope`` (a rule or aggregate) outside every aggregate in it.

    Those are the correlated variables of ``agg`` (with the ones it uses); a variable that
    occurs only inside aggregates is local to each of them.
    """
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, ast.Var):
            names.add(node.name)
        elif isinstance(node, ast.Aggregate):
            return
        elif isinstance(node, ast.Atom | ast.Negation | ast.Comparison | ast.Constraint):
            for t in ast.literal_terms(node):
                walk(t)
        else:
            for child in ast.term_children(node):
                walk(child)

    if isinstance(scope, ast.Rule):
        walk(scope.head)
        body = scope.body
    else:
        if scope.target is not None:
            walk(scope.target)
        body = scope.body
    for lit in body:
        walk(lit)
    return names


def _evaluable(term: ast.Term, env: Env, rule: Any) -> bool:
    if isinstance(term, ast.Var):
        return term.name in env
    if isinstance(term, ast.Wildcard):
        return False
    if isinstance(term, ast.Aggregate):
        return all(v in env for v in _all_vars(term) & _outside_vars(term, rule))
    return all(_evaluable(c, env, rule) for c in ast.term_children(term))


def _solve(
    lits: list[ast.Literal], env: Env, db: Mapping[str, set[Row]], rule: Any
) -> Iterator[Env]:
    if not lits:
        yield env
        return
    for i, lit in enumerate(lits):
        rest = lits[:i] + lits[i + 1 :]
        if isinstance(lit, ast.Atom):
            if not all(
                isinstance(a, ast.Var | ast.Wildcard) or _evaluable(a, env, rule) for a in lit.args
            ):
                continue
            for row in db[lit.relation]:
                new = _match(lit.args, row, env, db, rule)
                if new is not None:
                    yield from _solve(rest, new, db, rule)
            return
        if isinstance(lit, ast.Negation):
            if not all(
                isinstance(a, ast.Wildcard) or _evaluable(a, env, rule) for a in lit.atom.args
            ):
                continue
            if not any(
                _match(lit.atom.args, row, env, db, rule) is not None
                for row in db[lit.atom.relation]
            ):
                yield from _solve(rest, env, db, rule)
            return
        if isinstance(lit, ast.Comparison):
            left_ok = _evaluable(lit.left, env, rule)
            right_ok = _evaluable(lit.right, env, rule)
            if lit.op == "=" and left_ok != right_ok:
                var, other = (lit.right, lit.left) if left_ok else (lit.left, lit.right)
                if isinstance(var, ast.Var):
                    try:
                        value = _term(other, env, db, rule)
                    except _Drop:
                        return
                    yield from _solve(rest, {**env, var.name: value}, db, rule)
                    return
            if left_ok and right_ok:
                try:
                    ok = _compare(
                        lit.op, _term(lit.left, env, db, rule), _term(lit.right, env, db, rule)
                    )
                except _Drop:
                    return
                if ok:
                    yield from _solve(rest, env, db, rule)
                return
            continue
        if isinstance(lit, ast.Constraint):
            if not all(_evaluable(a, env, rule) for a in lit.args):
                continue
            if lit.name == "true" or (lit.name != "false" and _constraint(lit, env, db, rule)):
                yield from _solve(rest, env, db, rule)
            return
    raise AssertionError(f"reference: no literal of {lits} can be evaluated with {env}")


def _constraint(lit: ast.Constraint, env: Env, db: Mapping[str, set[Row]], rule: Any) -> bool:
    a, b = (_term(t, env, db, rule) for t in lit.args)
    if lit.name == "contains":
        return bool(a in b)
    try:
        return re.fullmatch(a, b) is not None
    except re.error:
        return False


def _match(
    args: tuple[ast.Term, ...], row: Row, env: Env, db: Mapping[str, set[Row]], rule: Any
) -> Env | None:
    new = dict(env)
    for arg, value in zip(args, row, strict=True):
        if isinstance(arg, ast.Wildcard):
            continue
        if isinstance(arg, ast.Var) and arg.name not in new:
            new[arg.name] = value
            continue
        try:
            if _term(arg, new, db, rule) != value:
                return None
        except _Drop:
            return None
    return new


def _compare(op: str, a: Any, b: Any) -> bool:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _term(term: ast.Term, env: Env, db: Mapping[str, set[Row]], rule: Any = None) -> Any:
    match term:
        case ast.Var(name=name):
            return env[name]
        case ast.Const(value=value):
            return value
        case ast.UnaryOp(op=op, operand=operand):
            v = _term(operand, env, db, rule)
            return -v if op == "-" else (~v if op == "bnot" else int(v == 0))
        case ast.BinOp(op=op, left=left, right=right):
            return _binop(op, _term(left, env, db, rule), _term(right, env, db, rule))
        case ast.Functor(name=name, args=args):
            vals = [_term(a, env, db, rule) for a in args]
            return _functor(name, vals)
        case ast.Aggregate():
            outside = _outside_vars(term, rule)
            inner_env = {k: v for k, v in env.items() if k in outside}
            values = []
            for sol in _solve(list(term.body), inner_env, db, term):
                if term.target is None:
                    values.append(1)
                else:
                    try:
                        values.append(_term(term.target, sol, db, term))
                    except _Drop:
                        continue
            if term.function == "count":
                return len(values)
            if term.function == "sum":
                return sum(values)
            if not values:
                raise _Drop
            return min(values) if term.function == "min" else max(values)
    raise AssertionError(term)


def _binop(op: str, a: Any, b: Any) -> Any:
    is_int = isinstance(a, int) and isinstance(b, int)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if is_int:
            if b == 0:
                raise _Drop
            q = abs(a) // abs(b)
            return q if (a < 0) == (b < 0) else -q
        return a / b if b != 0 else math.copysign(math.inf, a) if a else math.nan
    if op == "%":
        if b == 0:
            raise _Drop
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    if op == "^":
        if is_int and b < 0:
            raise _Drop
        return a**b
    return {
        "band": lambda: a & b,
        "bor": lambda: a | b,
        "bxor": lambda: a ^ b,
        "bshl": lambda: a << b,
        "bshr": lambda: a >> b,
        "land": lambda: int(bool(a) and bool(b)),
        "lor": lambda: int(bool(a) or bool(b)),
    }[op]()


def _functor(name: str, vals: list[Any]) -> Any:
    if name == "cat":
        return "".join(vals)
    if name == "strlen":
        return len(vals[0])
    if name == "substr":
        s, i, k = vals
        return s[max(i, 0) : max(i, 0) + max(k, 0)]
    if name == "to_string":
        return str(vals[0])
    if name in ("to_number", "to_unsigned", "to_float"):
        try:
            if name == "to_float":
                return float(vals[0])
            if not isinstance(vals[0], str):
                return math.trunc(vals[0])
            try:
                return int(vals[0])
            except ValueError:
                return int(vals[0].strip(), 0)
        except ValueError:
            raise _Drop from None
    if name == "min":
        return min(vals)
    if name == "max":
        return max(vals)
    raise AssertionError(name)
