"""Spark's analyzed logical plan, in its JSON form, as SQL text for this front end.

A view defined by a DataFrame (``Session.create_view("v", df)``) is compiled from what Spark's
analyzer made of it — ``df._jdf.queryExecution().analyzed().toJSON()`` — so names, types,
implicit casts and function overloads are Spark's own decisions, not re-derived.  The plan is
written back as one SQL query in which every attribute is named after its Spark expression id
(``c<id>``): the analyzer's name resolution survives exactly (two columns ``k`` of a join stay
two columns), every implicit cast is an explicit ``CAST``, and the query then goes through the
same planner, type checks, EXPLAIN and dataflow compiler as a SQL view.  The stored definition
is that SQL, so a refresh in a new process needs no Spark.

The JSON is a pre-order list of nodes, each with ``num-children``; a field holding an int (or a
list of ints) names children by position, a field holding a list of node dicts is an
expression tree of its own (e.g. a ``Project``'s ``projectList``, ``CaseWhen.branches``).

Supported plan nodes: catalog table reads, ``Project``, ``Filter``, ``Aggregate``, ``Join`` (all
kinds), ``Union``/``Intersect``/``Except``, ``Distinct``, ``Deduplicate`` over every column,
``Sort`` with ``Limit`` (top-k), ``SubqueryAlias``, ``View``.  Expressions: attributes,
literals, casts, arithmetic, comparisons, boolean logic, ``IN`` lists, ``CASE``/``IF``/
``COALESCE``, aggregates (``DISTINCT`` and ``FILTER`` included), and other functions by their
SQL names.  Anything else is refused with :class:`UnsupportedSqlError` naming the Spark node.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sql_frontend.errors import UnsupportedSqlError

_SQL_ONLY = "define this view in SQL instead"


@dataclass
class Tree:
    """One node of a plan or expression tree, with its children built."""

    node: dict[str, Any]
    kids: list[Tree]

    @property
    def kind(self) -> str:
        return str(self.node["class"]).rsplit(".", 1)[-1]

    def kid(self, field: str) -> Tree:
        return self.kids[int(self.node[field])]

    def expr(self, field: str) -> Tree:
        """A field that holds an expression tree of its own (a flat node list)."""
        return build(self.node[field])

    def exprs(self, field: str) -> list[Tree]:
        """A field that holds a list of expression trees."""
        return [build(e) for e in self.node[field]]


def build(flat: list[dict[str, Any]]) -> Tree:
    """The tree of a pre-order node list."""
    it: Iterator[dict[str, Any]] = iter(flat)

    def one() -> Tree:
        node = next(it)
        return Tree(node, [one() for _ in range(int(node.get("num-children", 0)))])

    return one()


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(text: str) -> str:
    if "\x00" in text:
        raise UnsupportedSqlError("a string literal with a NUL character", reason=_SQL_ONLY)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _col(attr: dict[str, Any]) -> str:
    return _id_mark(int(attr["exprId"]["id"]))


def _id_mark(expr_id: int) -> str:
    """A placeholder for Spark's expression id; :func:`_renumber` turns it into ``c<n>``."""
    return f"\x00{expr_id}\x00"


_MARK = re.compile("\x00(\\d+)\x00")


def _renumber(sql: str) -> str:
    """Expression ids differ between two analyses of the same DataFrame: number the columns in
    order of first appearance instead, so the same DataFrame always gives the same SQL."""
    seen: dict[str, str] = {}
    return _MARK.sub(lambda m: seen.setdefault(m.group(1), f"c{len(seen) + 1}"), sql)


# -- types and literals --------------------------------------------------------------------

_TYPES = {
    "integer": "INT",
    "long": "BIGINT",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "double": "DOUBLE",
    "float": "FLOAT",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "binary": "BINARY",
}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def sql_type(spark_type: Any) -> str:
    """The SQL name of a Spark data type as the plan JSON writes it (``"long"``, ...)."""
    if isinstance(spark_type, str):
        if spark_type in _TYPES:
            return _TYPES[spark_type]
        m = _DECIMAL.match(spark_type)
        if m:
            return f"DECIMAL({m.group(1)},{m.group(2)})"
    raise UnsupportedSqlError(
        f"column type {spark_type!r}", reason=f"not supported in DataFrame views yet; {_SQL_ONLY}"
    )


def literal(node: dict[str, Any]) -> str:
    value, kind = node.get("value"), node.get("dataType")
    if kind in ("void", "null") or value is None:
        return "NULL" if kind in ("void", "null") else f"CAST(NULL AS {sql_type(kind)})"
    if kind == "boolean":
        return "TRUE" if str(value).lower() == "true" else "FALSE"
    if kind == "string":
        return _string(str(value))
    if kind in ("date", "timestamp"):
        return f"{kind.upper()} {_string(str(value))}"
    return f"CAST({_string(str(value))} AS {sql_type(kind)})"


# -- expressions ---------------------------------------------------------------------------

_BINARY = {
    "Add": "+",
    "Subtract": "-",
    "Multiply": "*",
    "Divide": "/",
    "Remainder": "%",
    "IntegralDivide": "div",
    "EqualTo": "=",
    "EqualNullSafe": "<=>",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "And": "AND",
    "Or": "OR",
}
#: Spark expression classes whose SQL function name is not their class name in snake case
_FUNCTIONS = {
    "StringTrim": "trim",
    "StringTrimLeft": "ltrim",
    "StringTrimRight": "rtrim",
    "Average": "avg",
    "Count": "count",
    "Pow": "power",
    "Pmod": "pmod",
    "Substring": "substring",
    "Length": "length",
    "Upper": "upper",
    "Lower": "lower",
    "Concat": "concat",
    "Coalesce": "coalesce",
    "StringReplace": "replace",
    "StringLocate": "locate",
    "StringRepeat": "repeat",
    "StringLPad": "lpad",
    "StringRPad": "rpad",
    "DateAdd": "date_add",
    "DateSub": "date_sub",
    "DateDiff": "datediff",
    "CollectList": "collect_list",
    "CollectSet": "collect_set",
}
_SUBQUERIES = ("ScalarSubquery", "Exists", "InSubquery", "ListQuery", "OuterReference")
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _sql_name(kind: str) -> str:
    """The SQL function name of a Spark expression class (``StddevSamp`` → ``stddev_samp``)."""
    return _FUNCTIONS.get(kind) or _SNAKE.sub("_", kind).lower()


def expr(t: Tree) -> str:
    """The SQL text of an expression tree."""
    k = t.kind
    if k == "AttributeReference":
        return _col(t.node)
    if k == "Literal":
        return literal(t.node)
    if k == "Alias":
        return expr(t.kids[0])
    if k in _BINARY:
        return f"({expr(t.kids[0])} {_BINARY[k]} {expr(t.kids[1])})"
    special = _SPECIAL.get(k)
    if special is not None:
        return special(t)
    if k in _SUBQUERIES:
        raise UnsupportedSqlError(
            f"Spark expression {k}", reason=f"subqueries in DataFrame views: {_SQL_ONLY}"
        )
    return f"{_sql_name(k)}({', '.join(expr(c) for c in t.kids)})"


def _cast(t: Tree) -> str:
    return f"CAST({expr(t.kids[0])} AS {sql_type(t.node['dataType'])})"


def _case(t: Tree) -> str:
    parts = ["CASE"]
    for branch in t.node["branches"]:
        parts.append(f"WHEN {expr(build(branch['_1']))} THEN {expr(build(branch['_2']))}")
    if t.node.get("elseValue"):
        parts.append(f"ELSE {expr(t.expr('elseValue'))}")
    return " ".join([*parts, "END"])


def _aggregate(t: Tree) -> str:
    fn = t.kid("aggregateFunction")
    name = _sql_name(fn.kind)
    distinct = "DISTINCT " if t.node.get("isDistinct") else ""
    args = ", ".join(expr(c) for c in fn.kids)
    text = f"{name}({distinct}{args})"
    if t.node.get("filter"):
        text += f" FILTER (WHERE {expr(t.expr('filter'))})"
    return text


_SPECIAL: dict[str, Callable[[Tree], str]] = {
    "Cast": _cast,
    "Not": lambda t: f"(NOT {expr(t.kids[0])})",
    "IsNull": lambda t: f"({expr(t.kids[0])} IS NULL)",
    "IsNotNull": lambda t: f"({expr(t.kids[0])} IS NOT NULL)",
    "UnaryMinus": lambda t: f"(- {expr(t.kids[0])})",
    "UnaryPositive": lambda t: expr(t.kids[0]),
    "In": lambda t: f"({expr(t.kids[0])} IN ({', '.join(expr(c) for c in t.kids[1:])}))",
    "If": lambda t: f"IF({', '.join(expr(c) for c in t.kids)})",
    "CaseWhen": _case,
    "AggregateExpression": _aggregate,
}


# -- plans ---------------------------------------------------------------------------------


_JOINS = {  # Spark's join type → SQL
    "Inner": "JOIN",
    "Cross": "CROSS JOIN",
    "LeftOuter": "LEFT JOIN",
    "RightOuter": "RIGHT JOIN",
    "FullOuter": "FULL JOIN",
    "LeftSemi": "LEFT SEMI JOIN",
    "LeftAnti": "LEFT ANTI JOIN",
}


@dataclass(frozen=True)
class Rel:
    """A plan node as SQL: the query text and its output attributes (expression id, name)."""

    sql: str
    output: tuple[tuple[int, str], ...]

    @property
    def star(self) -> str:
        return ", ".join(_id_mark(i) for i, _ in self.output)


def _attrs(items: list[list[dict[str, Any]]]) -> tuple[tuple[int, str], ...]:
    return tuple((int(e[0]["exprId"]["id"]), str(e[0]["name"])) for e in items)


class PlanToSql:
    """Writes one analyzed plan as SQL (one ``_<Spark class>`` method per plan node kind);
    ``table_name`` maps a Spark catalog identifier
    (``{"catalog", "database", "table"}``) to the name of a table of this warehouse, or
    ``None`` when the table is not one of ours."""

    def __init__(self, table_name: Callable[[dict[str, Any]], str | None]) -> None:
        self.table_name = table_name
        self._aliases = itertools.count(1)

    def alias(self) -> str:
        return f"q{next(self._aliases)}"

    def query(self, flat: list[dict[str, Any]]) -> str:
        """The whole plan as one query whose columns carry the DataFrame's column names."""
        rel = self.rel(build(flat))
        names = ", ".join(f"{_id_mark(i)} AS {quote(n)}" for i, n in rel.output)
        return _renumber(f"SELECT {names} FROM ({rel.sql}) AS {self.alias()}")

    def rel(self, t: Tree) -> Rel:
        handler = getattr(self, f"_{t.kind}", None)
        if handler is None:
            raise UnsupportedSqlError(
                f"Spark plan node {t.kind}", reason=f"not supported in DataFrame views; {_SQL_ONLY}"
            )
        out: Rel = handler(t)
        return out

    def _from(self, t: Tree) -> str:
        return f"({self.rel(t).sql}) AS {self.alias()}"

    # pass-through nodes
    def _SubqueryAlias(self, t: Tree) -> Rel:
        return self.rel(t.kids[0])

    def _View(self, t: Tree) -> Rel:
        return self.rel(t.kids[0])

    def _LogicalRelation(self, t: Tree) -> Rel:
        ident = (t.node.get("catalogTable") or {}).get("identifier")
        name = self.table_name(ident) if ident else None
        if name is None:
            where = ".".join(
                str(ident.get(k))
                for k in ("catalog", "database", "table")
                if ident and ident.get(k)
            )
            raise UnsupportedSqlError(
                f"a DataFrame reading {where or 'files by path'}",
                reason="a DataFrame view must read this warehouse's tables and views by name, "
                "e.g. spark.table('t')",
            )
        output = _attrs(t.node["output"])
        cols = ", ".join(f"{quote(n)} AS {_id_mark(i)}" for i, n in output)
        return Rel(f"SELECT {cols} FROM {name}", output)

    _DataSourceV2Relation = _LogicalRelation

    def _LogicalRDD(self, t: Tree) -> Rel:
        return self._LocalRelation(t)

    def _LocalRelation(self, t: Tree) -> Rel:
        raise UnsupportedSqlError(
            "a DataFrame of local data (createDataFrame, VALUES or an RDD)",
            reason="a maintained view must read tables; write the data to a table first",
        )

    def _Project(self, t: Tree) -> Rel:
        items = t.exprs("projectList")
        output = _attrs(t.node["projectList"])
        cols = ", ".join(
            f"{expr(e)} AS {_id_mark(i)}" for e, (i, _) in zip(items, output, strict=True)
        )
        return Rel(f"SELECT {cols} FROM {self._from(t.kids[0])}", output)

    def _Filter(self, t: Tree) -> Rel:
        child = self.rel(t.kids[0])
        cond = expr(t.expr("condition"))
        return Rel(
            f"SELECT {child.star} FROM ({child.sql}) AS {self.alias()} WHERE {cond}", child.output
        )

    def _Aggregate(self, t: Tree) -> Rel:
        output = _attrs(t.node["aggregateExpressions"])
        items = t.exprs("aggregateExpressions")
        cols = ", ".join(
            f"{expr(e)} AS {_id_mark(i)}" for e, (i, _) in zip(items, output, strict=True)
        )
        groups = ", ".join(expr(g) for g in t.exprs("groupingExpressions"))
        tail = f" GROUP BY {groups}" if groups else ""
        return Rel(f"SELECT {cols} FROM {self._from(t.kids[0])}{tail}", output)

    def _Join(self, t: Tree) -> Rel:
        kind = str(t.node["joinType"].get("object", "")).rsplit(".", 1)[-1].rstrip("$")
        if kind not in _JOINS:
            raise UnsupportedSqlError(f"Spark join type {kind}", reason=_SQL_ONLY)
        left, right = self.rel(t.kid("left")), self.rel(t.kid("right"))
        on = f" ON {expr(t.expr('condition'))}" if t.node.get("condition") else ""
        join = _JOINS[kind] if on or kind != "Inner" else "CROSS JOIN"
        output = left.output if kind in ("LeftSemi", "LeftAnti") else left.output + right.output
        cols = ", ".join(_id_mark(i) for i, _ in output)
        sql = (
            f"SELECT {cols} FROM ({left.sql}) AS {self.alias()} {join} "
            f"({right.sql}) AS {self.alias()}{on}"
        )
        return Rel(sql, output)

    def _set(self, t: Tree, op: str) -> Rel:
        rels = [self.rel(k) for k in t.kids]
        sql = f" {op} ".join(f"SELECT * FROM ({r.sql}) AS {self.alias()}" for r in rels)
        return Rel(sql, rels[0].output)

    def _Union(self, t: Tree) -> Rel:
        if t.node.get("byName") or t.node.get("allowMissingCol"):
            raise UnsupportedSqlError("unionByName", reason="use union() with matching columns")
        return self._set(t, "UNION ALL")

    def _Intersect(self, t: Tree) -> Rel:
        return self._set(t, "INTERSECT ALL" if t.node.get("isAll") else "INTERSECT")

    def _Except(self, t: Tree) -> Rel:
        return self._set(t, "EXCEPT ALL" if t.node.get("isAll") else "EXCEPT")

    def _Distinct(self, t: Tree) -> Rel:
        child = self.rel(t.kids[0])
        return Rel(
            f"SELECT DISTINCT {child.star} FROM ({child.sql}) AS {self.alias()}", child.output
        )

    def _Deduplicate(self, t: Tree) -> Rel:
        child = self.rel(t.kids[0])
        keys = {int(k[0]["exprId"]["id"]) for k in t.node["keys"]}
        if keys != {i for i, _ in child.output}:
            raise UnsupportedSqlError(
                "dropDuplicates on a subset of the columns",
                reason="it keeps an arbitrary row per key, which no maintained view can; "
                "use distinct() or an aggregate",
            )
        return Rel(
            f"SELECT DISTINCT {child.star} FROM ({child.sql}) AS {self.alias()}", child.output
        )

    def _GlobalLimit(self, t: Tree) -> Rel:
        n = int(t.node["limitExpr"][0]["value"])
        inner = t.kids[0]
        if inner.kind == "LocalLimit":
            inner = inner.kids[0]
        if inner.kind != "Sort":
            raise UnsupportedSqlError(
                "limit() without orderBy()", reason="which rows it keeps is arbitrary; sort first"
            )
        child = self.rel(inner.kids[0])
        order = ", ".join(_sort_key(o) for o in inner.exprs("order"))
        sql = f"SELECT {child.star} FROM ({child.sql}) AS {self.alias()} ORDER BY {order} LIMIT {n}"
        return Rel(sql, child.output)

    def _Sort(self, t: Tree) -> Rel:
        return self.rel(t.kids[0])  # a view is a bag of rows: order only matters under a limit


def _sort_key(t: Tree) -> str:
    direction = "DESC" if "Descending" in str(t.node["direction"]) else "ASC"
    nulls = "NULLS FIRST" if "NullsFirst" in str(t.node["nullOrdering"]) else "NULLS LAST"
    return f"{expr(t.kids[0])} {direction} {nulls}"


def plan_to_sql(
    flat: list[dict[str, Any]], table_name: Callable[[dict[str, Any]], str | None]
) -> str:
    """SQL text equivalent to the analyzed plan ``flat`` (see the module docstring)."""
    return PlanToSql(table_name).query(flat)
