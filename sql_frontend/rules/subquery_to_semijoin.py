"""Predicate subqueries in WHERE become LEFT SEMI / LEFT ANTI joins.

sqlglot's ``unnest_subqueries`` turns EXISTS and IN into a LEFT JOIN against a grouped copy of
the subquery, and leaves NOT IN alone; for correlations that are not equalities it builds
arrays (``COLLECT_LIST``/``FILTER``) that cannot be maintained incrementally. This rule runs
first and rewrites the WHERE conjuncts it can, as Spark's own ``RewritePredicateSubquery`` does:

* ``[NOT] EXISTS (SELECT ... FROM f WHERE local AND corr)`` →
  ``LEFT [ANTI|SEMI] JOIN (SELECT <inner columns of corr> FROM f WHERE local) ON corr``;
* ``x IN (q)`` → ``LEFT SEMI JOIN q ON x = q.v`` (q may also be correlated, as above);
* ``x NOT IN (q)`` (q uncorrelated) → ``LEFT ANTI JOIN q ON x = q.v OR (x = q.v) IS NULL``,
  which is NOT IN's three-valued meaning; the translator recognises it as a null-aware join.

Anything else is left to ``unnest_subqueries``. The input must be qualified.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope


def subquery_to_semijoin(expression: exp.Expr) -> exp.Expr:
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"_sq{counter[0]}"

    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select) or not select.args.get("from_"):
            continue
        where = select.args.get("where")
        if not where:
            continue
        keep: list[exp.Expr] = []
        joins: list[exp.Join] = []
        for cond in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
            join = _rewrite(cond, scope, fresh)
            if join is None:
                keep.append(cond)
            else:
                joins.append(join)
        if not joins:
            continue
        for j in joins:
            select.append("joins", j)
        if keep:
            select.set("where", exp.Where(this=exp.and_(*keep, copy=False)))
        else:
            select.set("where", None)
    return expression


def _negated(cond: exp.Expr) -> tuple[exp.Expr, bool]:
    if isinstance(cond, exp.Not):
        inner = cond.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        return inner, True
    return cond, False


def _rewrite(cond: exp.Expr, scope: Scope, fresh) -> exp.Join | None:
    inner, negated = _negated(cond)
    if isinstance(inner, exp.Exists):
        sub = inner.this
        if not isinstance(sub, exp.Select):
            return None
        return _correlated_join(sub, None, scope, fresh, "ANTI" if negated else "SEMI")
    if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery | exp.Select):
        query = inner.args["query"]
        sub = query.this if isinstance(query, exp.Subquery) else query
        if isinstance(inner.this, exp.Tuple) or len(sub.selects) != 1:
            return None
        correlated = _external_columns(sub, scope)
        if not correlated:
            alias = fresh()
            value = exp.column(sub.selects[0].alias_or_name, alias)
            on: exp.Expr = exp.EQ(this=inner.this.copy(), expression=value)
            if negated:
                on = exp.or_(on, exp.Is(this=exp.paren(on.copy()), expression=exp.Null()))
            return exp.Join(
                this=exp.Subquery(
                    this=sub.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias))
                ),
                side="LEFT",
                kind="ANTI" if negated else "SEMI",
                on=on,
            )
        if negated or not isinstance(sub, exp.Select):
            return None
        return _correlated_join(sub, inner.this, scope, fresh, "SEMI")
    return None


def _sub_scope(sub: exp.Expr, scope: Scope) -> Scope | None:
    for s in scope.subquery_scopes:
        if s.expression is sub:
            return s
    return None


def _external_columns(sub: exp.Expr, scope: Scope) -> list[exp.Column]:
    s = _sub_scope(sub, scope)
    return list(s.external_columns) if s is not None else []


_NOT_PLAIN = (
    "group",
    "having",
    "limit",
    "offset",
    "order",
    "qualify",
    "distinct",
    "windows",
    "with_",
)


def _plain_correlated(sub: exp.Select, s: Scope, scope: Scope) -> bool:
    """Whether ``sub`` is a plain SELECT-FROM-WHERE (no grouping, aggregate, window, limit,
    CTE) correlated only with ``scope``: the shape this rule rewrites."""
    if any(sub.args.get(k) for k in _NOT_PLAIN):
        return False
    if any(isinstance(p, exp.AggFunc) or p.find(exp.AggFunc, exp.Window) for p in sub.selects):
        return False
    return all(c.table in scope.sources for c in s.external_columns)


def _split_where(
    sub: exp.Select, inner_sources: set[str]
) -> tuple[list[exp.Expr], list[exp.Expr]] | None:
    """The conjuncts of ``sub``'s WHERE that read only its own sources, and those correlated
    with the outer query; None where a correlation stands elsewhere (a nested subquery, a
    join's ON), which this rule does not rewrite."""
    where = sub.args.get("where")
    conds = (
        (where.this.flatten() if isinstance(where.this, exp.And) else [where.this]) if where else []
    )
    local: list[exp.Expr] = []
    corr: list[exp.Expr] = []
    for c in conds:
        cols = list(c.find_all(exp.Column))
        if c.find(exp.Subquery, exp.Exists):
            if any(col.table not in inner_sources for col in cols):
                return None
            local.append(c)
        elif any(col.table not in inner_sources for col in cols):
            corr.append(c)
        else:
            local.append(c)
    for j in sub.args.get("joins") or []:
        on = j.args.get("on")
        if on is not None and any(
            col.table not in inner_sources for col in on.find_all(exp.Column)
        ):
            return None
    return local, corr


def _correlated_join(
    sub: exp.Select, in_value: exp.Expr | None, scope: Scope, fresh, kind: str
) -> exp.Join | None:
    s = _sub_scope(sub, scope)
    if s is None or not _plain_correlated(sub, s, scope):
        return None
    inner_sources = set(s.sources)
    split = _split_where(sub, inner_sources)
    if split is None:
        return None
    local, corr = split
    alias = fresh()
    projections: list[exp.Expr] = []
    names: dict[str, str] = {}

    def inner_name(col: exp.Column) -> str:
        key = col.sql()
        if key not in names:
            names[key] = f"_c{len(names)}"
            projections.append(exp.alias_(col.copy(), names[key]))
        return names[key]

    on_parts: list[exp.Expr] = []
    if in_value is not None:
        v = sub.selects[0].unalias() if isinstance(sub.selects[0], exp.Alias) else sub.selects[0]
        projections.append(exp.alias_(v.copy(), "_v"))
        on_parts.append(exp.EQ(this=in_value.copy(), expression=exp.column("_v", alias)))
    for c in corr:
        c = c.copy()
        for col in list(c.find_all(exp.Column)):
            if col.table in inner_sources:
                col.replace(exp.column(inner_name(col), alias))
        on_parts.append(c)
    if not projections:
        projections.append(exp.alias_(exp.Literal.number(1), "_one"))
    derived = exp.Select(expressions=projections, from_=sub.args["from_"].copy())
    if sub.args.get("joins"):
        derived.set("joins", [j.copy() for j in sub.args["joins"]])
    if local:
        derived.set("where", exp.Where(this=exp.and_(*[x.copy() for x in local], copy=False)))
    on = exp.and_(*on_parts, copy=False) if on_parts else None
    return exp.Join(
        this=exp.Subquery(this=derived, alias=exp.TableAlias(this=exp.to_identifier(alias))),
        side="LEFT",
        kind=kind,
        on=on,
    )
