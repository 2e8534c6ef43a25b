"""``x op ANY / SOME / ALL (q)`` and ``(a, b) IN (q)`` as WHERE filters → EXISTS.

In a top-level conjunct of WHERE only TRUE keeps a row, so FALSE and NULL need not be told
apart, and each form is an EXISTS over ``q`` (whose one column is named ``_v``, or ``_v0``,
``_v1``… for a tuple):

* ``x op ANY (q)``  keeps a row iff some ``v`` of ``q`` has ``x op v`` TRUE:
  ``EXISTS (SELECT 1 FROM (q) AS _aN WHERE x op _aN._v)``;
* ``x op ALL (q)``  keeps it iff no ``v`` has ``x op v`` FALSE or NULL:
  ``NOT EXISTS (SELECT 1 FROM (q) AS _aN WHERE NOT coalesce(x op _aN._v, FALSE))``;
* ``(a, b) IN (q)`` keeps it iff some row of ``q`` equals the tuple:
  ``EXISTS (SELECT 1 FROM (q) AS _aN WHERE a = _aN._v0 AND b = _aN._v1)``.

The semi / anti join rules (:mod:`.subquery_to_semijoin`) then take them; the comparison is
the join condition. ``(a, b) IN (q)`` as a value with no NOT above it (the SELECT list, CASE,
OR) is the same EXISTS — TRUE when a row of ``q`` equals the tuple, else FALSE, as Spark's
existence join gives it — which :mod:`.subquery_to_mark_join` computes. ANY / ALL outside a
filter (the pinned Spark cannot check their value), ``NOT IN`` of a tuple and a correlated
``q`` are left as they are and refused by name later. Runs before qualification.
"""

from __future__ import annotations

from sqlglot import exp

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def quantified_to_exists(tree: exp.Expr) -> exp.Expr:
    n = 0
    for node in list(tree.find_all(exp.Any, exp.All, exp.In)):
        target: exp.Expr | None
        if isinstance(node, exp.In):
            target = node
            if not (isinstance(node.this, exp.Tuple) and node.args.get("query") is not None):
                continue
        else:
            target = node.parent
            if not isinstance(target, _COMPARISONS) or target.expression is not node:
                continue
        if target is None:
            continue
        if not _filter_conjunct(target) and not (
            isinstance(node, exp.In) and _positive_value(target)
        ):
            continue
        query = node.args["query"] if isinstance(node, exp.In) else node.this
        inner = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(inner, exp.Query) or _correlated(inner):
            continue  # a correlated q cannot become a derived table: refused by name later
        n += 1
        alias = f"_a{n}"
        if isinstance(node, exp.In):
            width = len(node.this.expressions)
            renamed = _renamed(inner, [f"_v{i}" for i in range(width)])
            if renamed is None:
                continue
            cond: exp.Expr = exp.and_(
                *[
                    exp.EQ(this=x.copy(), expression=exp.column(f"_v{i}", table=alias))
                    for i, x in enumerate(node.this.expressions)
                ],
                copy=False,
            )
            negate = False
        else:
            renamed = _renamed(inner, ["_v"])
            if renamed is None:
                continue
            cmp = target.__class__(
                this=target.this.copy(), expression=exp.column("_v", table=alias)
            )
            negate = isinstance(node, exp.All)
            cond = exp.Not(this=exp.func("coalesce", cmp, exp.false())) if negate else cmp
        sub = exp.Select(
            expressions=[exp.Literal.number(1)],
            from_=exp.From(
                this=exp.Subquery(this=renamed, alias=exp.TableAlias(this=exp.to_identifier(alias)))
            ),
            where=exp.Where(this=cond),
        )
        exists: exp.Expr = exp.Exists(this=sub)
        target.replace(exp.Not(this=exists) if negate else exists)
    return tree


def _correlated(q: exp.Query) -> bool:
    """Whether ``q`` names a relation it does not define (``outer.col``)."""
    defined = {t.alias_or_name.lower() for t in q.find_all(exp.Table)}
    defined |= {s.alias_or_name.lower() for s in q.find_all(exp.Subquery) if s.alias}
    defined |= {c.alias_or_name.lower() for c in q.find_all(exp.CTE)}
    return any(c.table and c.table.lower() not in defined for c in q.find_all(exp.Column))


def _positive_value(node: exp.Expr) -> bool:
    """Whether ``node`` is a value (SELECT list, CASE, OR...) with no NOT above it in its
    query: there ``(a, b) IN (q)`` is TRUE when a row of ``q`` equals the tuple, else FALSE,
    as Spark's existence join computes it — EXISTS's meaning. Under NOT it would be NOT IN's
    NULL-aware meaning, which EXISTS does not have."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select | exp.SetOperation):
        if isinstance(parent, exp.Not):
            return False
        parent = parent.parent
    return parent is not None


def _filter_conjunct(node: exp.Expr) -> bool:
    parent = node.parent
    while isinstance(parent, exp.And | exp.Paren):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _renamed(q: exp.Query, names: list[str]) -> exp.Query | None:
    """A copy of ``q`` whose output columns are ``names`` (None when the widths differ or a
    star hides the width)."""
    q = q.copy()
    select = q
    while isinstance(select, exp.SetOperation):
        select = select.left
    if not isinstance(select, exp.Select) or len(select.expressions) != len(names):
        return None
    if any(
        isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
        for e in select.expressions
    ):
        return None
    select.set(
        "expressions",
        [exp.alias_(e.unalias(), name) for e, name in zip(select.expressions, names, strict=True)],
    )
    return q
