"""The output column names Spark gives a query's SELECT list (issue 19, item 3).

Spark keeps an identifier's case as written (``SELECT A FROM t`` over a column ``a`` is named
``A``) and names an expression without alias by printing it back in its own style (Catalyst's
"pretty" SQL): operators in parentheses (``(a + 1)``, ``(NOT (a = b))``), literals bare
(``x`` for ``'x'``), function names as written and lower-cased, ``count(*)`` as ``count(1)``,
casts as their operand, ``CASE WHEN … END``. :func:`spark_names` reads the query as parsed
(before sqlglot's normalisation lower-cases identifiers) and returns one name per output
column, or ``None`` for a column whose Spark name it cannot reproduce (the analyser's own name,
``_col_<i>``, stays). The names of ``*`` columns come from the catalog and are not touched.

The table of forms was taken from a live Spark 4.2 (``df.columns``); the test is
``tests/sql_frontend/test_column_names.py::test_names_are_sparks``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlglot import exp

from sql_frontend import plan as p
from sql_frontend import scalar as sc
from sql_frontend.analyze import parse
from sql_frontend.errors import SqlError
from sql_frontend.translate_generators import select_generator

_BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.IntDiv: "div",
    exp.EQ: "=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.NullSafeEQ: "<=>",
    exp.And: "AND",
    exp.Or: "OR",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseXor: "^",
}
_UPPER_NAMES = {"ceil": "CEIL"}
GENERATED = "\x00generated"
"""The name :func:`spark_names` gives a SELECT item that is a generator (its columns, how many
the plan tells, keep the translator's names)."""


class _Unknown(Exception):
    """A form whose Spark name is not reproduced."""


def spark_names(
    tree: exp.Expr, sql: str, catalog: Mapping[str, Sequence[tuple[str, Any]]] | None = None
) -> list[str | None] | None:
    """Spark's name for each column of ``tree`` (a parsed query of the text ``sql``), or None
    when the SELECT list holds a star (its names are the catalog's)."""
    select = _first_select(tree)
    if select is None:
        return None
    out: list[str | None] = []
    for e in select.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star):
            return None
        if select_generator(e) is not None:
            out.append(GENERATED)  # the translator names a generator's columns as Spark does
            continue
        if isinstance(e, exp.Alias):
            out.append(e.alias)
            continue
        try:
            out.append(_Printer(sql, catalog or {}).pretty(e))
        except _Unknown:
            out.append(None)
    return out


def _first_select(q: exp.Expr) -> exp.Select | None:
    while True:
        if isinstance(q, exp.Select):
            return q
        if isinstance(q, exp.SetOperation):
            q = q.left
        elif isinstance(q, exp.Subquery):
            q = q.this
        else:
            return None


def _written_name(node: exp.Func, sql: str) -> str:
    meta = getattr(node, "_meta", None) or {}
    if "start" in meta and "end" in meta:
        name = sql[meta["start"] : meta["end"] + 1]
        if name.replace("_", "").isalnum():
            return _UPPER_NAMES.get(name.lower(), name.lower())
    raise _Unknown


class _Printer:
    """Catalyst's pretty SQL of an expression (``catalog`` tells a subquery's outer
    references, which Spark lists in ``listquery(…)`` / ``exists(…)``)."""

    def __init__(self, sql: str, catalog: Mapping[str, Sequence[tuple[str, Any]]]) -> None:
        self.sql = sql
        self.columns = {t.lower(): {c.lower() for c, _ in cols} for t, cols in catalog.items()}

    def pretty(self, e: exp.Expr) -> str:
        return _pretty(e, self.sql, self)

    def outer_refs(self, q: exp.Expr) -> str:
        names: list[str] = []
        for col in q.find_all(exp.Column):
            if col.is_star:
                continue
            if not self._resolves_inside(col, q) and col.name not in names:
                names.append(col.name)
        return ", ".join(names)

    def _resolves_inside(self, col: exp.Column, root: exp.Expr) -> bool:
        node: exp.Expr | None = col
        while node is not None:
            if isinstance(node, exp.Select):
                for rel in _relations(node):
                    alias = rel.alias_or_name.lower()
                    if col.table:
                        if col.table.lower() == alias:
                            return True
                        continue
                    if not isinstance(rel, exp.Table) or rel.name.lower() not in self.columns:
                        raise _Unknown  # a derived table or CTE: its columns are not known here
                    if col.name.lower() in self.columns[rel.name.lower()]:
                        return True
            if node is root:
                return False
            node = node.parent
        return False


def _relations(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_")
    rels = [from_.this] if from_ is not None else []
    return rels + [j.this for j in select.args.get("joins") or []]


def _pretty(e: exp.Expr, sql: str, printer: _Printer | None = None) -> str:
    """Spark's name for the expression ``e`` (as ``sql`` writes it), or :class:`_Unknown`."""
    printer = printer or _Printer(sql, {})
    for step in (_pretty_leaf, _pretty_operator, _pretty_call):
        text = step(e, sql, printer)
        if text is not None:
            return text
    raise _Unknown


def _pretty_leaf(e: exp.Expr, sql: str, printer: _Printer) -> str | None:
    """Columns, literals and casts (Spark names a cast by its operand)."""
    p = lambda x: _pretty(x, sql, printer)  # noqa: E731 - a short local alias
    if isinstance(e, exp.Paren):
        return p(e.this)
    if isinstance(e, exp.Column):
        if e.args.get("table") is not None and not e.table:
            raise _Unknown
        return e.name
    if isinstance(e, exp.Null):
        return "NULL"
    if isinstance(e, exp.Boolean):
        return "true" if e.this else "false"
    if isinstance(e, exp.Literal):
        if e.is_string:
            return e.this
        text = e.this
        if any(c in text.lower() for c in "ex"):
            raise _Unknown  # 1E2 is printed as Spark's double (100.0)
        return text
    if isinstance(e, exp.Cast):  # TryCast too: sqlglot reads 10L and 2.5D as such casts
        if isinstance(e, exp.TryCast) and not e.this.is_number:
            raise _Unknown
        if isinstance(e.this, exp.Literal) and e.this.is_string:
            raise _Unknown  # typed literals (DATE '…') and casts of strings are named apart
        return p(e.this)
    return None


def _pretty_operator(e: exp.Expr, sql: str, printer: _Printer) -> str | None:
    """Operators, predicates, CASE and IF, parenthesized as Spark prints them."""
    p = lambda x: _pretty(x, sql, printer)  # noqa: E731 - a short local alias
    if isinstance(e, exp.NEQ):
        return f"(NOT ({p(e.this)} = {p(e.expression)}))"
    if isinstance(e, exp.Not):
        inner = e.this.unnest() if isinstance(e.this, exp.Paren) else e.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"({p(inner.this)} IS NOT NULL)"
        return f"(NOT {p(inner)})"
    if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
        return f"({p(e.this)} IS NULL)"
    if isinstance(e, exp.Neg):
        return f"(- {p(e.this)})"
    for cls, op in _BINARY.items():
        if type(e) is cls:
            return f"({p(e.this)} {op} {p(e.expression)})"
    if isinstance(e, exp.In) and e.args.get("query") is not None and printer.columns:
        if isinstance(e.this, exp.Tuple):
            raise _Unknown
        return f"({p(e.this)} IN (listquery({printer.outer_refs(e.args['query'])})))"
    if isinstance(e, exp.Exists) and printer.columns:
        return f"exists({printer.outer_refs(e.this)})"
    if isinstance(e, exp.In):
        if e.args.get("query") is not None or e.args.get("unnest") is not None:
            raise _Unknown
        return f"({p(e.this)} IN ({', '.join(p(x) for x in e.expressions)}))"
    if isinstance(e, exp.Case):
        subject = e.this
        parts = ["CASE"]
        for branch in e.args.get("ifs") or []:
            cond = branch.this
            when = f"({p(subject)} = {p(cond)})" if subject is not None else p(cond)
            parts.append(f"WHEN {when} THEN {p(branch.args['true'])}")
        if e.args.get("default") is not None:
            parts.append(f"ELSE {p(e.args['default'])}")
        parts.append("END")
        return " ".join(parts)
    if isinstance(e, exp.If):
        false = e.args.get("false")
        if false is None:
            raise _Unknown
        return f"(IF({p(e.this)}, {p(e.args['true'])}, {p(false)}))"
    return None


def _pretty_call(e: exp.Expr, sql: str, printer: _Printer) -> str | None:
    """Function calls, by the name written in ``sql``."""
    p = lambda x: _pretty(x, sql, printer)  # noqa: E731 - a short local alias
    if isinstance(e, exp.Count):
        arg = e.this
        if arg is None or isinstance(arg, exp.Star):
            return f"{_written_name(e, sql)}(1)"
        return f"{_written_name(e, sql)}({_args(arg, sql)})"
    if isinstance(e, exp.Between):
        return f"between({p(e.this)}, {p(e.args['low'])}, {p(e.args['high'])})"
    if isinstance(e, exp.Like) and not e.args.get("escape"):
        return f"{p(e.this)} LIKE {p(e.expression)}"
    if isinstance(e, exp.DPipe):
        return f"concat({p(e.this)}, {p(e.expression)})"
    if isinstance(e, exp.Ceil) and not e.args.get("decimals"):
        if re.search(r"\bceiling\s*\(", sql, re.IGNORECASE):
            raise _Unknown  # Spark names ceiling(x) as written, ceil(x) as CEIL(x)
        return f"CEIL({p(e.this)})"
    if isinstance(e, exp.Window | exp.Subquery | exp.Exists | exp.Lambda):
        raise _Unknown
    if isinstance(e, exp.Func) and not isinstance(e, exp.Substring):
        name = _written_name(e, sql)
        flat: list[exp.Expr] = []
        for v in (e.args.get(k) for k in e.arg_types):
            if v is None:
                continue
            if isinstance(v, list):
                flat.extend(v)
            elif isinstance(v, exp.Expr):
                flat.append(v)
        if len(flat) == 1 and isinstance(flat[0], exp.Distinct):
            return f"{name}({_args(flat[0], sql)})"
        return f"{name}({', '.join(p(x) for x in flat)})"
    return None


def _args(arg: exp.Expr, sql: str) -> str:
    if isinstance(arg, exp.Distinct):
        return "DISTINCT " + ", ".join(_pretty(x, sql) for x in arg.expressions)
    return _pretty(arg, sql)


def with_spark_names(
    node: p.Node, sql: str, catalog: Mapping[str, Sequence[tuple[str, Any]]] | None = None
) -> p.Node:
    """``node`` with its output columns named as Spark names them (a Project that only
    renames is folded into the root when the root is a Project)."""
    try:
        names = spark_names(parse(sql), sql, catalog)
    except SqlError:  # pragma: no cover - the text was parsed once already
        return node
    current = [n for n, _ in node.schema]
    if names is not None and names.count(GENERATED) == 1:
        at = names.index(GENERATED)
        names[at : at + 1] = [None] * (len(current) - len(names) + 1)
    if names is None or len(names) != len(current) or GENERATED in names:
        return node
    wanted = tuple(n if n is not None else c for n, c in zip(names, current, strict=True))
    if list(wanted) == current:
        return node
    if isinstance(node, p.Project):
        return replace(node, names=wanted)
    refs = tuple(sc.Ref(i, t, n) for i, (n, t) in enumerate(node.schema))
    return p.Project(input=node, exprs=refs, names=wanted)
