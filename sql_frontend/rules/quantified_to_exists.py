"""``x op ANY / SOME / ALL (q)`` and ``(a, b) IN (q)`` → EXISTS, as filters and as values.

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
the join condition. Elsewhere — the SELECT list, CASE, HAVING, a join's ON, under NOT or OR —
the value matters:

* ``x op ANY / ALL (q)`` is the standard's three-valued value (:func:`_three_valued`), a CASE
  over two EXISTS: one for a ``v`` that decides it, one for a ``v`` with ``x op v`` NULL;
* ``(a, b) IN (q)`` is the EXISTS above — TRUE when a row of ``q`` equals the tuple, else
  FALSE, as Spark's existence join computes it; with an odd number of NOTs above it (which
  Spark's ``BooleanSimplification`` moves onto it) each equality ``a = v`` becomes
  ``a = v OR (a = v) IS NULL``, Spark's null-aware NOT IN: ``NOT ((a, b) IN (q))`` is FALSE
  when a row of ``q`` may equal the tuple.

:mod:`.subquery_to_mark_join` computes these EXISTS. A correlated ``q`` is left as it is and
refused by name later. Runs before qualification.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from sql_frontend.positions import unsupported
from sql_frontend.rules.ancestors import enclosing_query

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def quantified_to_exists(
    tree: exp.Expr, columns: Mapping[str, Mapping[str, str]] | None = None
) -> exp.Expr:
    """``columns``: the catalog's columns per table, to tell whether a name of ``x`` would be
    captured by a relation of a correlated ``q`` (see :class:`_Inline`)."""
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
        if target is None or enclosing_query(target) is None:
            continue
        query = node.args["query"] if isinstance(node, exp.In) else node.this
        inner = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(inner, exp.Query):
            continue
        width = len(node.this.expressions) if isinstance(node, exp.In) else 1
        names = [f"_v{i}" for i in range(width)] if isinstance(node, exp.In) else ["_v"]
        over: _Over | _Inline
        if _correlated(inner):  # not a derived table, which cannot see the outer row
            over = _Inline(inner, names, node, target, columns or {})
        else:
            renamed = _renamed(inner, names)
            if renamed is None:
                continue
            n += 1
            over = _Over(renamed, f"_a{n}")
        if isinstance(node, exp.In):
            pairs: list[exp.Expr] = [
                exp.EQ(this=x.copy(), expression=over.col(f"_v{i}"))
                for i, x in enumerate(node.this.expressions)
            ]
            if _negated(target):  # NOT above it: NOT IN's null-aware existence join
                pairs = [exp.or_(p, exp.Is(this=p.copy(), expression=exp.Null())) for p in pairs]
            target.replace(over.exists(exp.and_(*pairs, copy=False)))
            continue
        cmp = target.__class__(this=target.this.copy(), expression=over.col("_v"))
        if _filter_conjunct(target):  # only TRUE keeps the row: FALSE and NULL alike
            if isinstance(node, exp.All):
                no = exp.Not(this=exp.func("coalesce", cmp, exp.false()))
                target.replace(exp.Not(this=over.exists(no)))
            else:
                target.replace(over.exists(cmp))
            continue
        target.replace(_three_valued(cmp, isinstance(node, exp.All), over))
    return tree


class _Over:
    """EXISTS subqueries over one derived table ``(q) AS alias``."""

    def __init__(self, q: exp.Query, alias: str) -> None:
        self.q, self.alias = q, alias

    def col(self, name: str) -> exp.Column:
        return exp.column(name, table=self.alias)

    def exists(self, cond: exp.Expr) -> exp.Exists:
        return exp.Exists(
            this=exp.Select(
                expressions=[exp.Literal.number(1)],
                from_=exp.From(
                    this=exp.Subquery(
                        this=self.q.copy(), alias=exp.TableAlias(this=exp.to_identifier(self.alias))
                    )
                ),
                where=exp.Where(this=cond),
            )
        )


class _Inline:
    """EXISTS subqueries that are a correlated ``q`` itself, the comparison with its value
    added to its WHERE: ``EXISTS (SELECT 1 FROM … WHERE <q's condition> AND x op <q's
    value>)``. Refused by name where that would change ``q``'s rows (aggregates, LIMIT /
    OFFSET, windows, set operations) or where a name of ``x`` could be captured by a relation
    of ``q``."""

    def __init__(
        self,
        q: exp.Query,
        names: list[str],
        node: exp.Expr,
        target: exp.Expr,
        columns: Mapping[str, Mapping[str, str]],
    ) -> None:
        what = "tuple IN" if isinstance(node, exp.In) else node.key.upper()
        if not isinstance(q, exp.Select):
            raise unsupported(f"{what} over a correlated set operation", node)
        for key in ("limit", "offset", "qualify", "windows"):
            if q.args.get(key) is not None:
                raise unsupported(f"{what} over a correlated subquery with {key.upper()}", node)
        if any(e.find(exp.Window) for e in q.expressions):
            raise unsupported(f"{what} over a correlated subquery with a window function", node)
        if len(q.expressions) != len(names) or any(
            isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star)
            for e in q.expressions
        ):
            raise unsupported(f"{what} over a subquery of {len(q.expressions)} columns", node)
        if (
            q.args.get("group")
            or q.args.get("having")
            or any(e.find(exp.AggFunc) for e in q.expressions)
        ):
            raise unsupported(f"{what} over a correlated subquery that aggregates", node)
        outside = node.this if isinstance(node, exp.In) else target.this
        captured = _captured(outside, q, columns)
        if captured is not None:
            raise unsupported(
                f"{what} over a correlated subquery whose relations may capture {captured.sql()}",
                captured,
                "qualify the outer column with its table",
            )
        self.q = q
        self.values = dict(zip(names, (e.unalias() for e in q.expressions), strict=True))

    def col(self, name: str) -> exp.Expr:
        return self.values[name].copy()

    def exists(self, cond: exp.Expr) -> exp.Exists:
        q = self.q.copy()
        q.set("expressions", [exp.Literal.number(1)])
        q.set("distinct", None)
        q.set("order", None)
        return exp.Exists(this=q.where(cond, copy=False))


def _captured(
    outside: exp.Expr, q: exp.Select, columns: Mapping[str, Mapping[str, str]]
) -> exp.Column | None:
    """A column of ``outside`` (the outer side of the comparison) that a relation of ``q``
    could resolve instead of the outer query: an unqualified name that a table of ``q`` has
    (or any, if ``q`` reads a relation whose columns are not known here), or a name qualified
    with a relation ``q`` defines."""
    relations = [t for t in q.find_all(exp.Table)]
    defined = {t.alias_or_name.lower() for t in relations}
    defined |= {s.alias_or_name.lower() for s in q.find_all(exp.Subquery) if s.alias}
    known = {name.lower(): {c.lower() for c in cols} for name, cols in columns.items()}
    opaque = any(t.name.lower() not in known for t in relations) or any(
        isinstance(s.parent, exp.From | exp.Join) for s in q.find_all(exp.Subquery)
    )
    names = set().union(*[known.get(t.name.lower(), set()) for t in relations])
    for c in outside.find_all(exp.Column):
        if c.table:
            if c.table.lower() in defined:
                return c
        elif opaque or c.name.lower() in names:
            return c
    return None


def _three_valued(cmp: exp.Expr, every: bool, over: _Over | _Inline) -> exp.Expr:
    """``x op ANY (q)`` / ``x op ALL (q)`` as a value, by the SQL standard (ISO 9075-2, 8.9
    <quantified comparison predicate>): ANY is TRUE if ``x op v`` is TRUE for some ``v``, else
    NULL if it is NULL for some ``v``, else FALSE (so FALSE over an empty ``q``); ALL is FALSE if
    ``x op v`` is FALSE for some ``v``, else NULL if it is NULL for some, else TRUE."""
    decided = exp.Not(this=exp.paren(cmp.copy(), copy=False)) if every else cmp.copy()
    unknown = exp.Is(this=exp.paren(cmp.copy(), copy=False), expression=exp.Null())
    null = exp.Cast(this=exp.Null(), to=exp.DataType.build("boolean"))
    return exp.paren(
        exp.Case(
            ifs=[
                exp.If(this=over.exists(decided), true=exp.Boolean(this=not every)),
                exp.If(this=over.exists(unknown), true=null),
            ],
            default=exp.Boolean(this=every),
        ),
        copy=False,
    )


def _negated(node: exp.Expr) -> bool:
    """Whether an odd number of NOTs stand above ``node`` through AND / OR / NOT / parentheses:
    :mod:`.push_not` (as Spark's ``BooleanSimplification``) then puts a NOT directly over it."""
    odd = False
    parent = node.parent
    while isinstance(parent, exp.Paren | exp.And | exp.Or | exp.Not):
        odd ^= isinstance(parent, exp.Not)
        parent = parent.parent
    return odd


def _correlated(q: exp.Query) -> bool:
    """Whether ``q`` names a relation it does not define (``outer.col``)."""
    defined = {t.alias_or_name.lower() for t in q.find_all(exp.Table)}
    defined |= {s.alias_or_name.lower() for s in q.find_all(exp.Subquery) if s.alias}
    defined |= {c.alias_or_name.lower() for c in q.find_all(exp.CTE)}
    return any(c.table and c.table.lower() not in defined for c in q.find_all(exp.Column))


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
