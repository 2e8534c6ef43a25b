"""``(a AND b) OR (a AND c)`` → ``a AND (b OR c)`` in WHERE and ON conditions.

A conjunct common to every branch of a disjunction holds whenever the disjunction does, so it
can be pulled out (for three-valued logic too: if ``a`` is NULL or FALSE, both sides are NULL
or FALSE alike). This exposes join keys that are written inside each branch, as in TPC-H Q19
(``(p_partkey = l_partkey AND ...) OR (p_partkey = l_partkey AND ...)``), to predicate pushdown
and equi-join planning; without it such a join is a cross product. Spark's optimizer does the
same (``BooleanSimplification``). Only the rewrite of whole conditions: nothing else changes.
"""

from __future__ import annotations

from sqlglot import exp


def _conjuncts(e: exp.Expr) -> list[exp.Expr]:
    e = e.unnest()
    return list(e.flatten()) if isinstance(e, exp.And) else [e]


def _factor(cond: exp.Expr) -> exp.Expr:
    inner = cond.unnest()
    if not isinstance(inner, exp.Or):
        return cond
    branches = [_conjuncts(b) for b in inner.flatten()]
    first = branches[0]
    common = [c for c in first if all(any(c == d for d in b) for b in branches[1:])]
    if not common:
        return cond
    rests = []
    for b in branches:
        rest = [d for d in b if not any(d == c for c in common)]
        if not rest:  # one branch is just the common part: the disjunction is the common part
            return exp.and_(*[c.copy() for c in common])
        rests.append(exp.and_(*[d.copy() for d in rest]))
    return exp.and_(*[c.copy() for c in common], exp.paren(exp.or_(*rests)))


def factor_disjunctions(expression: exp.Expr) -> exp.Expr:
    for node in list(expression.find_all(exp.Where, exp.Join)):
        key = "this" if isinstance(node, exp.Where) else "on"
        cond = node.args.get(key)
        if cond is None:
            continue
        parts = _conjuncts(cond)
        new = [_factor(p) for p in parts]
        if any(n is not p for n, p in zip(new, parts, strict=True)):
            node.set(key, exp.and_(*new))
    return expression
