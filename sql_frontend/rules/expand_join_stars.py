"""``*`` and ``t.*`` over USING and NATURAL joins, expanded as Spark expands them.

Spark lists the columns of ``l JOIN r USING (k, ...)`` (and of a NATURAL join, a USING join
over the names both sides share, in the left side's order) as: the keys (the left key for
INNER / LEFT, the right key for RIGHT, ``coalesce(l.k, r.k)`` for FULL), the left side's other
columns, then the right side's other columns; a later join appends its columns to that list,
same-named ones included. ``t.*`` is every column of ``t``, its key columns too. sqlglot's own
expansion drops every later column that shares a USING key's name (``a NATURAL JOIN b JOIN c
ON ...`` loses ``c.k``), so this rule runs before ``qualify`` and writes out the stars of every
SELECT that has a USING or NATURAL join; ``qualify`` expands the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

Columns = list[tuple[str, exp.Expr]]


def expand_join_stars(tree: exp.Expr, schema: Mapping[str, Mapping[str, object]]) -> exp.Expr:
    """Rewrite, in place, the stars of SELECTs with USING / NATURAL joins (see module doc)."""
    tables = {k.lower(): list(v) for k, v in schema.items()}
    try:
        scopes = traverse_scope(tree)
    except Exception:  # sqlglot refuses the scopes: qualify will report it
        return tree
    by_expr = {id(s.expression): s for s in scopes}
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select) or not _has_using(select):
            continue
        if any(_is_star(x) for x in select.expressions):
            expanded = _select_items(select, scope, tables, by_expr)
            if expanded is not None:
                select.set("expressions", expanded)
        _fix_chained_keys(select, scope, tables, by_expr)
    return tree


def _fix_chained_keys(select: exp.Select, scope: Scope, tables, by_expr) -> None:
    """After a RIGHT or FULL USING join, a later USING / NATURAL join compares the merged key
    (the right key, or ``coalesce``) — sqlglot would compare the first table's column, which
    is NULL on the rows only the right side has. Such joins get an explicit ON."""
    frm = _from_columns(select, scope, tables, by_expr)
    if frm is None:
        return
    outer_before = False
    for j, pairs, side in frm[2]:
        if outer_before:
            on = exp.and_(*(exp.EQ(this=a.copy(), expression=b.copy()) for a, b in pairs))
            j.set("using", None)
            j.set("method", None)
            j.set("on", on)
        outer_before = outer_before or side in ("RIGHT", "FULL")


def _has_using(select: exp.Select) -> bool:
    return any(
        j.args.get("using") or j.text("method").upper() == "NATURAL"
        for j in select.args.get("joins") or []
    )


def _is_star(x: exp.Expr) -> bool:
    return isinstance(x, exp.Star) or (isinstance(x, exp.Column) and isinstance(x.this, exp.Star))


def _select_items(select: exp.Select, scope: Scope, tables, by_expr) -> list[exp.Expr] | None:
    frm = _from_columns(select, scope, tables, by_expr)
    if frm is None:
        return None
    visible, per_source, _ = frm
    out: list[exp.Expr] = []
    for item in select.expressions:
        if isinstance(item, exp.Star):
            if item.args.get("except_") or item.args.get("replace") or item.args.get("rename"):
                return None
            cols = visible
        elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            own = per_source.get(item.table)
            if own is None:
                return None
            cols = own
        else:
            out.append(item)
            continue
        for name, e in cols:
            e = e.copy()
            out.append(e if isinstance(e, exp.Column) else exp.alias_(e, name))
    return out


def _from_columns(
    select: exp.Select, scope: Scope, tables, by_expr
) -> tuple[Columns, dict[str, Columns], list[tuple[exp.Join, list, str]]] | None:
    """The columns ``*`` lists over ``select``'s FROM clause, each source's own, and each
    USING / NATURAL join with its (left key, right key) pairs and side."""
    frm = select.args.get("from_")
    if frm is None:
        return None
    per_source: dict[str, Columns] = {}
    using_joins: list[tuple[exp.Join, list, str]] = []
    first = _source_columns(frm.this, scope, tables, by_expr)
    if first is None:
        return None
    per_source[frm.this.alias_or_name] = first
    cols = list(first)
    for j in select.args.get("joins") or []:
        right = _source_columns(j.this, scope, tables, by_expr)
        if right is None:
            return None
        per_source[j.this.alias_or_name] = right
        kind, side = j.text("kind").upper(), j.text("side").upper()
        if kind in ("SEMI", "ANTI"):
            continue
        using = [i.name for i in j.args.get("using") or []]
        if not using and j.text("method").upper() == "NATURAL":
            rnames = {n.lower() for n, _ in right}
            using = [n for n, _ in cols if n.lower() in rnames]
        if not using:
            cols = cols + right
            continue
        keys = {n.lower() for n in using}
        key_cols: Columns = []
        pairs: list[tuple[exp.Expr, exp.Expr]] = []
        for name in using:
            left_e = next((e for n, e in cols if n.lower() == name.lower()), None)
            right_e = next((e for n, e in right if n.lower() == name.lower()), None)
            if left_e is None or right_e is None:
                return None  # qualify reports the unknown USING column
            pairs.append((left_e, right_e))
            if side == "RIGHT":
                key_cols.append((name, right_e))
            elif side == "FULL":
                key_cols.append((name, exp.func("coalesce", left_e.copy(), right_e.copy())))
            else:
                key_cols.append((name, left_e))
        using_joins.append((j, pairs, side))
        cols = (
            key_cols
            + [(n, e) for n, e in cols if n.lower() not in keys]
            + [(n, e) for n, e in right if n.lower() not in keys]
        )
    return cols, per_source, using_joins


def _source_columns(node: exp.Expr, scope: Scope, tables, by_expr) -> Columns | None:
    alias = node.alias_or_name
    names: list[str] | None = None
    if isinstance(node, exp.Table):
        src = scope.sources.get(alias)
        if isinstance(src, Scope):
            names = _output_names(src.expression, tables, by_expr)
        elif not node.args.get("db") and node.name.lower() in tables:
            names = [str(c) for c in tables[node.name.lower()]]
    elif isinstance(node, exp.Subquery):
        names = _output_names(node.this, tables, by_expr)
    if names is None:
        return None
    ta = node.args.get("alias")
    if isinstance(ta, exp.TableAlias) and ta.columns:
        names = [c.name for c in ta.columns]
    return [(n, exp.column(n, table=alias)) for n in names]


def _output_names(q: exp.Expr, tables, by_expr) -> list[str] | None:
    while isinstance(q, exp.Subquery):
        q = q.this
    if isinstance(q, exp.SetOperation):
        return _output_names(q.this, tables, by_expr)
    if not isinstance(q, exp.Select):
        return None
    if not any(_is_star(x) for x in q.expressions):
        return [x.alias_or_name for x in q.expressions]
    scope = by_expr.get(id(q))
    if scope is None:
        return None
    frm = _from_columns(q, scope, tables, by_expr)
    if frm is None:
        return None
    visible, per_source, _ = frm
    out: list[str] = []
    for x in q.expressions:
        if isinstance(x, exp.Star):
            out += [n for n, _ in visible]
        elif isinstance(x, exp.Column) and isinstance(x.this, exp.Star):
            if x.table not in per_source:
                return None
            out += [n for n, _ in per_source[x.table]]
        else:
            out.append(x.alias_or_name)
    return out
