"""NOT moved down to the IN / EXISTS subqueries beneath it, as Spark's optimizer does.

``NOT (a AND b)`` → ``NOT a OR NOT b``, ``NOT (a OR b)`` → ``NOT a AND NOT b`` and
``NOT NOT a`` → ``a`` hold in three-valued logic, so the rewrite never changes a value by
itself. It matters because Spark applies it (``BooleanSimplification``) before it turns
subquery predicates into joins (``RewritePredicateSubquery``), and there ``NOT (x IN (q))`` —
NOT directly over the IN — is NULL-aware while a bare ``x IN (q)`` is not (see
:mod:`.subquery_to_mark_join`): ``NOT (a > 5 AND a IN (q))`` drops a row whose ``a`` is NULL.
Only NOTs over a subquery predicate are rewritten; a conjunct that surfaces at the top of WHERE
(``NOT (x IN q OR y IN r)``) then becomes a semi or anti join. For the same reason a
parenthesised conjunction among WHERE's conjuncts is opened (``a AND (NOT EXISTS q AND NOT
EXISTS r)`` → ``a AND NOT EXISTS q AND NOT EXISTS r``, TPC-DS q69): AND is associative in
three-valued logic too.
"""

from __future__ import annotations

from sqlglot import exp


def push_not(expression: exp.Expr) -> exp.Expr:
    for node in list(expression.find_all(exp.Not)):
        if node.parent is None and node is not expression:
            continue  # replaced already, with an ancestor
        if _has_subquery_predicate(node):
            new = _pushed(node.this, True)
            if isinstance(node.parent, exp.Where) and isinstance(new, exp.Paren):
                new = new.this  # WHERE's own conjuncts stay visible to the semi-join rule
            node.replace(new)
    for where in list(expression.find_all(exp.Where)):
        if _has_subquery_predicate(where) and _has_nested_conjunction(where.this):
            where.set("this", exp.and_(*_conjuncts(where.this), copy=False))
    return expression


def _conjuncts(e: exp.Expr) -> list[exp.Expr]:
    """The conjuncts of ``e`` through nested ANDs and the parentheses around them."""
    while isinstance(e, exp.Paren) and isinstance(e.this, exp.And | exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]


def _has_nested_conjunction(e: exp.Expr) -> bool:
    if isinstance(e, exp.And):
        return _has_nested_conjunction(e.this) or _has_nested_conjunction(e.expression)
    return isinstance(e, exp.Paren) and isinstance(e.this, exp.And | exp.Paren)


def _has_subquery_predicate(node: exp.Expr) -> bool:
    return any(
        isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query"))
        for n in node.walk()
    )


def _pushed(e: exp.Expr, negate: bool) -> exp.Expr:
    """``e`` (negated if ``negate``) with NOT pushed through AND / OR / NOT / parentheses."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Not):
        return _pushed(e.this, not negate)
    if isinstance(e, exp.And | exp.Or) and _has_subquery_predicate(e):
        cls = type(e) if not negate else (exp.Or if isinstance(e, exp.And) else exp.And)
        return exp.paren(
            cls(this=_pushed(e.this, negate), expression=_pushed(e.expression, negate)),
            copy=False,
        )
    e = e.copy()
    return exp.Not(this=exp.paren(e, copy=False)) if negate else exp.paren(e, copy=False)
