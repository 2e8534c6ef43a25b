"""IN / EXISTS in HAVING or in an aggregating SELECT list: aggregate first, then test.

``SELECT k, max(v), k IN (q) FROM t GROUP BY k HAVING EXISTS (r)`` is evaluated by Spark over
the groups: the predicate reads group keys and aggregates only. This rule makes that order
explicit, so the predicate sits in an ordinary (non-aggregating) SELECT list or WHERE, where
:mod:`.subquery_to_semijoin` and :mod:`.subquery_to_mark_join` handle it::

    SELECT _g._k0 AS k, _g._a0 AS ..., _g._k0 IN (q) AS ...
    FROM (SELECT t.k AS _k0, max(t.v) AS _a0 FROM t GROUP BY t.k) AS _g
    WHERE EXISTS (r)                 -- HAVING, over _g's columns

Every group key expression and every aggregate of the query (SELECT list, HAVING, ORDER BY)
is replaced by the column of the derived table that computes it, in correlated subqueries
too. Grouping sets, window functions, DISTINCT ON and a query correlated with an enclosing one
are left alone (the other rules then refuse
by name). The input must be qualified.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from sql_frontend.rules.ancestors import enclosing_query

_GROUPING = ("rollup", "cube", "grouping_sets", "totals")


def aggregate_before_subquery(expression: exp.Expr) -> exp.Expr:
    n = 0
    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select) or not _applies(select):
            continue
        if any(c.table not in scope.sources for c in scope.external_columns):
            continue  # correlated with an enclosing query: a derived table could not see it
        n += 1
        _split(select, f"_g{n}")
    return expression


def _own(node: exp.Expr, select: exp.Select) -> bool:
    return enclosing_query(node) is select


def _predicates(part: exp.Expr, select: exp.Select) -> bool:
    return any(
        _own(n, select) and (isinstance(n, exp.Exists) or n.args.get("query") is not None)
        for n in part.find_all(exp.In, exp.Exists)
    )


def _aggregates(part: exp.Expr, select: exp.Select) -> list[exp.AggFunc]:
    return [
        a for a in part.find_all(exp.AggFunc) if _own(a, select) and not a.find_ancestor(exp.Window)
    ]


def _applies(select: exp.Select) -> bool:
    group = select.args.get("group")
    if group is not None and any(group.args.get(k) for k in _GROUPING):
        return False
    if select.args.get("windows") or any(
        _own(w, select) for e in select.expressions for w in e.find_all(exp.Window)
    ):
        return False
    having = select.args.get("having")
    aggregating = (
        group is not None
        or having is not None
        or any(_aggregates(e, select) for e in select.expressions)
    )
    parts = [*select.expressions, *([having] if having is not None else [])]
    return aggregating and any(_predicates(p, select) for p in parts)


def _split(select: exp.Select, alias: str) -> None:
    group = select.args.get("group")
    keys = list(group.expressions) if group is not None else []
    having = select.args.get("having")
    order = select.args.get("order")
    parts: list[exp.Expr] = [*select.expressions]
    parts += [x for x in (having, order) if x is not None]
    inner_items: list[exp.Expr] = []
    by_sql: dict[str, str] = {}
    for i, k in enumerate(keys):
        by_sql.setdefault(k.sql(), f"_k{i}")
        inner_items.append(exp.alias_(k.copy(), f"_k{i}"))
    outer = _aliases(select)
    for j, a in enumerate(
        a
        for part in parts
        for a in part.find_all(exp.AggFunc)
        if not a.find_ancestor(exp.Window)
        and (_own(a, select) or _outer_aggregate(a, select, outer))
    ):
        # agg(...) FILTER (WHERE ...) is computed whole, in the groups
        whole: exp.Expr = a.parent if isinstance(a.parent, exp.Filter) else a
        if whole.sql() not in by_sql:
            by_sql[whole.sql()] = f"_a{j}"
            inner_items.append(exp.alias_(whole.copy(), f"_a{j}"))
    if not inner_items:
        inner_items.append(exp.alias_(exp.Literal.number(1), "_one"))
    inner = exp.Select(expressions=inner_items, from_=select.args["from_"].copy())
    for arg in ("joins", "where", "group", "laterals"):
        value = select.args.get(arg)
        if value:
            inner.set(arg, [v.copy() for v in value] if isinstance(value, list) else value.copy())
    new = [
        part.transform(lambda n: _replace(n, by_sql, alias, select), copy=True) for part in parts
    ]
    select.set("expressions", new[: len(select.expressions)])
    rest = new[len(select.expressions) :]
    for arg in ("joins", "group", "laterals", "having", "where"):
        select.set(arg, None)
    derived = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    select.set("from_", exp.From(this=derived))
    if having is not None:
        select.set("where", exp.Where(this=rest.pop(0).this))
    if order is not None:
        select.set("order", rest.pop(0))


def _outer_aggregate(a: exp.AggFunc, select: exp.Select, outer: set[str]) -> bool:
    """An aggregate inside a subquery over columns of ``select`` only: Spark computes it in
    ``select``'s groups (``HAVING EXISTS (… WHERE x < min(t.v))``)."""
    cols = list(a.find_all(exp.Column))
    return bool(cols) and all(c.table in outer for c in cols) and not _shadowed(a, select)


def _shadowed(node: exp.Expr, select: exp.Select) -> bool:
    """Whether a column under ``node`` names a relation of a subquery nested in ``select``
    around ``node`` (the same alias inside means another relation); a relation of a subquery
    inside ``node`` itself is ``node``'s own business."""
    for col in [node] if isinstance(node, exp.Column) else list(node.find_all(exp.Column)):
        scope = col.parent
        while scope is not None and scope is not select:
            if isinstance(scope, exp.Select) and col.table in _aliases(scope):
                if _within(scope, node):
                    break
                return True
            scope = scope.parent
    return False


def _within(inner: exp.Expr, node: exp.Expr) -> bool:
    while inner is not None:
        if inner is node:
            return True
        inner = inner.parent  # type: ignore[assignment]
    return False


def _aliases(select: exp.Select) -> set[str]:
    out = set()
    from_ = select.args.get("from_")
    for rel in [from_.this] if from_ is not None else []:
        out.add(rel.alias_or_name)
    for j in select.args.get("joins") or []:
        out.add(j.this.alias_or_name)
    return out


def _replace(node: exp.Expr, by_sql: dict[str, str], alias: str, select: exp.Select) -> exp.Expr:
    if isinstance(node, exp.Literal | exp.Star | exp.Identifier | exp.TableAlias):
        return node
    name = by_sql.get(node.sql())
    if name is not None and not _shadowed(node, select):
        return exp.column(name, table=alias)
    return node
