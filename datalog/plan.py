"""Rule planning: the order in which a rule's literals are evaluated, and range restriction.

A rule body is a conjunction. The planner turns it into a :class:`ConjunctionPlan`: a start
(the first positive atom, the unit relation when there is none, or the distinct outer bindings
for a correlated aggregate) followed by steps, each of which needs only variables bound by
earlier steps:

* :class:`Join` another positive atom on the variables it shares with the binding (the atom
  sharing most variables first; a cross product only when nothing is shared);
* :class:`Filter` by a comparison or constraint whose variables are all bound;
* :class:`Bind` ``v = term`` where ``v`` is new and ``term`` is bound (a computed column);
* :class:`AntiJoin` a negated atom whose variables are all bound;
* :class:`AggregateStep` once the aggregate's correlated variables are bound.

Filters, binds, anti-joins and aggregates are applied as soon as possible (before the next
join), cheapest first: filters and binds, then anti-joins, then aggregates.
A variable that no order can bind is *unsafe* and refused with its position (range
restriction): every variable must occur in a positive atom, or be defined by ``=`` from bound
variables, or be an aggregate's result.

Normalization before planning: aggregates in terms are lifted to fresh variables ``@aggN``
(with an :class:`AggregateLiteral`); in a positive atom, every argument that is not a fresh
variable (a constant, an expression, a repeated variable) is replaced by a fresh variable
``@argN`` plus an equality, so atoms carry only distinct variables and wildcards. A negated
atom keeps constants and repeated variables (they filter the negated relation) but its
expressions are lifted the same way.

Aggregates. The *correlated* variables of an aggregate are those of its body that also occur
in the rule outside every aggregate (in the head or a literal that is not an aggregate); they
group the aggregate and must be bound outside it. A variable that occurs only inside
aggregates is local to each of them (``s = sum y : {e(x, y)}, m = max y : {e(x, y)}`` uses two
different ``y``). The body is a
conjunction planned on its own when that binds every correlated variable, and otherwise
starting from the distinct correlated bindings of the outer plan (``seeded``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from datalog import ast
from datalog.errors import UnsafeVariableError


@dataclass(frozen=True)
class AggregateLiteral:
    """``var`` is the value of ``aggregate`` (a lifted aggregate term)."""

    var: str
    aggregate: ast.Aggregate

    @property
    def pos(self) -> ast.Pos:
        return self.aggregate.pos

    def __str__(self) -> str:
        return f"{self.var} = {self.aggregate}"


BodyLiteral = ast.Literal | AggregateLiteral


# -------------------------------------------------------------------------------- starts


@dataclass(frozen=True)
class Scan:
    """Start from a positive atom (args: distinct variables and wildcards only)."""

    atom: ast.Atom


@dataclass(frozen=True)
class Unit:
    """Start from the one-row unit relation (a body without positive atoms)."""


@dataclass(frozen=True)
class Seed:
    """Start from the distinct bindings of ``vars`` in the enclosing plan (correlated aggregate)."""

    vars: tuple[str, ...]


Start = Scan | Unit | Seed


# --------------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class _AtomStep:
    """A step against ``atom`` on the variables ``on`` it shares with the binding."""

    atom: ast.Atom
    on: tuple[str, ...]


@dataclass(frozen=True)
class Join(_AtomStep):
    """Join a positive atom on the variables ``on`` it shares with the binding (may be empty)."""


@dataclass(frozen=True)
class Filter:
    """Keep bindings where a comparison or constraint holds."""

    literal: ast.Comparison | ast.Constraint


@dataclass(frozen=True)
class Bind:
    """Add column ``var`` computed from ``term``."""

    var: str
    term: ast.Term


@dataclass(frozen=True)
class AntiJoin(_AtomStep):
    """Drop bindings whose values of ``on`` match the negated atom."""


@dataclass(frozen=True)
class AggregateStep:
    """Add column ``var``: ``aggregate`` grouped by ``keys`` over the plan ``inner``."""

    var: str
    aggregate: ast.Aggregate
    keys: tuple[str, ...]
    inner: ConjunctionPlan

    @property
    def seeded(self) -> bool:
        return isinstance(self.inner.start, Seed)


Step = Join | Filter | Bind | AntiJoin | AggregateStep


@dataclass(frozen=True)
class ConjunctionPlan:
    """A start and steps; ``vars`` are the variables bound at the end (column order)."""

    start: Start
    steps: tuple[Step, ...]
    vars: tuple[str, ...]
    target: ast.Term | None = None  # an aggregate body's target term, after lifting


@dataclass(frozen=True)
class RulePlan:
    """A rule's body plan and its head arguments (aggregates lifted to variables)."""

    rule: ast.Rule
    body: ConjunctionPlan
    head: tuple[ast.Term, ...]


def plan_rule(rule: ast.Rule) -> RulePlan:
    """Plan a rule (not a fact); raises :class:`UnsafeVariableError` for unbound variables."""
    fresh = _Fresh()
    head_args, head_aggs = _lift_terms(rule.head.args, fresh)
    for arg in rule.head.args:
        _no_wildcard(arg, "in a rule head")
    literals: list[BodyLiteral] = [*_normalize(rule.body, fresh), *head_aggs]
    needed = [v for a in head_args for v in _vars_deep(a)]
    context = {v.name for v in needed}
    body = _plan_conjunction(literals, (), context, fresh, needed)
    return RulePlan(rule, body, tuple(head_args))


class _Fresh:
    def __init__(self) -> None:
        self.counter = itertools.count()

    def var(self, kind: str, pos: ast.Pos) -> ast.Var:
        return ast.Var(f"@{kind}{next(self.counter)}", pos)


def _no_wildcard(term: ast.Term, where: str) -> None:
    if isinstance(term, ast.Wildcard):
        raise UnsafeVariableError.at(f"'_' is not allowed {where}", term.pos, "_")
    for child in ast.term_children(term):
        _no_wildcard(child, where)


def _lift_terms(
    terms: Iterable[ast.Term], fresh: _Fresh
) -> tuple[list[ast.Term], list[AggregateLiteral]]:
    """Replace aggregate sub-terms by fresh variables."""
    aggs: list[AggregateLiteral] = []

    def lift(term: ast.Term) -> ast.Term:
        match term:
            case ast.Aggregate():
                var = fresh.var("agg", term.pos)
                aggs.append(AggregateLiteral(var.name, term))
                return var
            case ast.BinOp(op=op, left=left, right=right, pos=pos):
                return ast.BinOp(op, lift(left), lift(right), pos)
            case ast.UnaryOp(op=op, operand=operand, pos=pos):
                return ast.UnaryOp(op, lift(operand), pos)
            case ast.Functor(name=name, args=args, pos=pos):
                return ast.Functor(name, tuple(lift(a) for a in args), pos)
        return term

    return [lift(t) for t in terms], aggs


def _normalize(body: Iterable[ast.Literal], fresh: _Fresh) -> list[BodyLiteral]:
    out: list[BodyLiteral] = []
    for lit in body:
        match lit:
            case ast.Atom(relation=rel, args=args, pos=pos):
                lifted, aggs = _lift_terms(args, fresh)
                out.extend(aggs)
                new_args: list[ast.Term] = []
                seen: set[str] = set()
                for arg in lifted:
                    if isinstance(arg, ast.Wildcard) or (
                        isinstance(arg, ast.Var) and arg.name not in seen
                    ):
                        if isinstance(arg, ast.Var):
                            seen.add(arg.name)
                        new_args.append(arg)
                        continue
                    var = fresh.var("arg", arg.pos)
                    new_args.append(var)
                    out.append(ast.Comparison("=", var, arg, arg.pos))
                out.append(ast.Atom(rel, tuple(new_args), pos))
            case ast.Negation(atom=atom, pos=pos):
                lifted, aggs = _lift_terms(atom.args, fresh)
                out.extend(aggs)
                neg_args: list[ast.Term] = []
                for arg in lifted:
                    if isinstance(arg, ast.Var | ast.Wildcard | ast.Const):
                        neg_args.append(arg)
                        continue
                    var = fresh.var("arg", arg.pos)
                    neg_args.append(var)
                    out.append(ast.Comparison("=", var, arg, arg.pos))
                out.append(ast.Negation(ast.Atom(atom.relation, tuple(neg_args), atom.pos), pos))
            case ast.Comparison(op=op, left=left, right=right, pos=pos):
                (left, right), aggs = _lift_terms((left, right), fresh)
                _no_wildcard(left, "in a comparison")
                _no_wildcard(right, "in a comparison")
                out.extend(aggs)
                out.append(ast.Comparison(op, left, right, pos))
            case ast.Constraint(name=name, args=args, pos=pos):
                lifted, aggs = _lift_terms(args, fresh)
                for arg in lifted:
                    _no_wildcard(arg, f"in {name}(...)")
                out.extend(aggs)
                out.append(ast.Constraint(name, tuple(lifted), pos))
    return out


def _vars_deep(term: ast.Term) -> list[ast.Var]:
    """Every variable in a term, including inside aggregates (bodies and targets)."""
    if isinstance(term, ast.Var):
        return [term]
    if isinstance(term, ast.Aggregate):
        out = [] if term.target is None else _vars_deep(term.target)
        for lit in term.body:
            out.extend(_literal_vars_deep(lit))
        return out
    return [v for child in ast.term_children(term) for v in _vars_deep(child)]


def _literal_vars_deep(lit: BodyLiteral) -> list[ast.Var]:
    if isinstance(lit, AggregateLiteral):
        return [ast.Var(lit.var, lit.pos), *_vars_deep(lit.aggregate)]
    return [v for t in ast.literal_terms(lit) for v in _vars_deep(t)]


def _names(terms: Iterable[ast.Term]) -> list[str]:
    return [v.name for t in terms for v in ast.term_vars(t)]


def _unsafe(var: ast.Var, why: str) -> UnsafeVariableError:
    shown = var.name if not var.name.startswith("@") else "an expression"
    return UnsafeVariableError.at(f"variable {shown} is not bound {why}", var.pos, var.name)


def _plan_conjunction(
    literals: list[BodyLiteral],
    prebound: tuple[str, ...],
    context: set[str],
    fresh: _Fresh,
    needed: Iterable[ast.Var],
    target: ast.Term | None = None,
) -> ConjunctionPlan:
    """Order ``literals``; ``context`` holds variables used outside this conjunction."""
    positives = [lit for lit in literals if isinstance(lit, ast.Atom)]
    pending = [lit for lit in literals if not isinstance(lit, ast.Atom)]
    bound: list[str] = list(prebound)
    start: Start
    if prebound:
        start = Seed(prebound)
    elif positives:
        first = positives.pop(0)
        start = Scan(first)
        bound = _atom_vars(first)
    else:
        start = Unit()
    steps: list[Step] = []
    while True:
        progress = True
        while progress:
            progress = False
            for lit in sorted(pending, key=_cost_rank):
                step = _try_step(lit, bound, literals, context, fresh)
                if step is None:
                    continue
                steps.append(step)
                pending.remove(lit)
                if isinstance(step, Bind | AggregateStep):
                    bound.append(step.var)
                progress = True
                break  # cheaper literals that became ready go first
        if not positives:
            break
        best = max(positives, key=lambda a: len(set(_atom_vars(a)) & set(bound)))
        positives.remove(best)
        shared = tuple(v for v in _atom_vars(best) if v in bound)
        steps.append(Join(best, shared))
        bound.extend(v for v in _atom_vars(best) if v not in bound)
    if pending:
        raise _stuck(pending[0], bound)
    for var in needed:
        if var.name not in bound:
            raise _unsafe(var, "by a positive atom of the body")
    return ConjunctionPlan(start, tuple(steps), tuple(bound), target)


def _cost_rank(lit: BodyLiteral) -> int:
    """Filters and binds first, then anti-joins, then aggregates (stable within a rank)."""
    if isinstance(lit, ast.Negation):
        return 1
    return 2 if isinstance(lit, AggregateLiteral) else 0


def _atom_vars(atom: ast.Atom) -> list[str]:
    return list(dict.fromkeys(a.name for a in atom.args if isinstance(a, ast.Var)))


def _stuck(lit: BodyLiteral, bound: list[str]) -> UnsafeVariableError:
    if isinstance(lit, AggregateLiteral):
        return UnsafeVariableError.at(
            f"aggregate {lit.aggregate.function} cannot be evaluated: "
            "its variables shared with the rule are not bound outside "
            "it",
            lit.pos,
            lit.aggregate.function,
        )
    terms = lit.atom.args if isinstance(lit, ast.Negation) else ast.literal_terms(lit)
    for term in terms:
        for var in ast.term_vars(term):
            if var.name not in bound:
                where = (
                    "(it occurs only under negation)"
                    if isinstance(lit, ast.Negation)
                    else "by a positive atom"
                )
                return _unsafe(var, where)
    raise AssertionError(lit)


def _try_step(
    lit: BodyLiteral,
    bound: list[str],
    literals: list[BodyLiteral],
    context: set[str],
    fresh: _Fresh,
) -> Step | None:
    match lit:
        case ast.Comparison(op="=", left=left, right=right):
            lv, rv = _names((left,)), _names((right,))
            if all(v in bound for v in lv + rv):
                return Filter(lit)
            for var, other, ov in ((left, right, rv), (right, left, lv)):
                if (
                    isinstance(var, ast.Var)
                    and var.name not in bound
                    and all(v in bound for v in ov)
                ):
                    return Bind(var.name, other)
            return None
        case ast.Comparison() | ast.Constraint():
            if all(v in bound for v in _names(ast.literal_terms(lit))):
                return Filter(lit)
            return None
        case ast.Negation(atom=atom):
            names = _atom_vars(atom)
            if all(v in bound for v in names):
                return AntiJoin(atom, tuple(names))
            return None
        case AggregateLiteral(var=var, aggregate=agg):
            outside = set(context)
            for sibling in literals:
                if isinstance(sibling, AggregateLiteral):
                    outside.add(sibling.var)
                else:
                    outside.update(v.name for v in _literal_vars_deep(sibling))
            inner_vars = {v.name for v in _vars_deep(agg)}
            keys = tuple(sorted(inner_vars & outside))
            if not all(k in bound for k in keys):
                return None
            return AggregateStep(var, agg, keys, _plan_aggregate(agg, keys, outside, fresh))
    raise AssertionError(lit)


def _plan_aggregate(
    agg: ast.Aggregate, keys: tuple[str, ...], outside: set[str], fresh: _Fresh
) -> ConjunctionPlan:
    target: ast.Term | None = None
    target_aggs: list[AggregateLiteral] = []
    if agg.target is not None:
        _no_wildcard(agg.target, "as an aggregate's target")
        lifted, target_aggs = _lift_terms((agg.target,), fresh)
        target = lifted[0]
    literals = [*_normalize(agg.body, fresh), *target_aggs]
    occurrences = {v.name: v for v in reversed(_vars_deep(agg))}
    needed = [occurrences[k] for k in keys]
    if target is not None:
        needed.extend(ast.term_vars(target))
    context = outside | {v.name for v in needed}
    try:
        return _plan_conjunction(literals, (), context, fresh, needed, target)
    except UnsafeVariableError:
        if not keys:
            raise
    return _plan_conjunction(literals, keys, context, fresh, needed, target)
