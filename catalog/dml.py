"""DML on catalog tables, as delta-rs operations (:mod:`catalog.delta`); no Spark here.

* ``INSERT INTO t [(cols)] VALUES ...`` — literal rows are converted here; ``INSERT ... SELECT``
  and non-literal values are evaluated by the caller's ``spark_eval`` (the Session runs them in
  Spark SQL, which sees every catalog table and view by name);
* ``DELETE FROM t WHERE p`` and ``UPDATE t SET c = e WHERE p`` — ``p`` and ``e`` are handed to
  delta-rs as SQL (DataFusion evaluates them; qualifiers of the target are stripped);
  subqueries are refused;
* ``MERGE INTO t USING s ON ... WHEN ...`` — the source (a catalog table, a VALUES list or a
  query ``spark_eval`` runs) becomes an Arrow table; the clauses map one to one onto
  delta-rs's ``when_*`` builders.

Errors carry the line and column of the offending node in the user's script (``st`` is where
the statement starts, for nodes without a position).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from sqlglot import exp

from catalog import delta
from catalog.delta import MergeClause, WriteResult
from catalog.errors import StatementError, UnsupportedProtocolError
from catalog.manager import Catalog
from catalog.names import parse_identifier
from catalog.store import TableEntry, ViewEntry
from ivm.errors import Where
from sql_frontend.errors import UnsupportedSqlError

DIALECT = "spark"
PREDICATE_DIALECT = "postgres"  # what DataFusion (delta-rs) reads best


class Located(Protocol):
    """Where a statement starts in the user's script."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


def position(node: exp.Expr | None, st: Located) -> Where:
    """Line and column of ``node`` in the script (the statement's start if unknown)."""
    from sql_frontend.analyze import position as pos

    line, col = pos(node)
    return {
        "line": line if line is not None else st.line,
        "column": col if col is not None else st.column,
    }


def table_name(node: exp.Expr) -> str:
    """``db.name`` of a sqlglot Table (or a Schema around one)."""
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table):
        raise UnsupportedSqlError(f"target {type(node).__name__}")
    parts = [p.name for p in (node.args.get("db"), node.this) if p is not None and p.name]
    if node.args.get("catalog") is not None:
        raise UnsupportedSqlError("three-part table name")
    return str(parse_identifier(".".join(f"`{p}`" for p in parts)))


# -- values ------------------------------------------------------------------------------


class NotLiteral(Exception):
    """A VALUES element that needs Spark to evaluate it."""


def literal(node: exp.Expr) -> Any:
    """The Python value of a literal expression (raises :class:`NotLiteral` otherwise)."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        try:
            return int(text)
        except ValueError:
            try:
                return decimal.Decimal(text)
            except decimal.InvalidOperation:
                raise NotLiteral(text) from None
    if isinstance(node, exp.Neg):
        v = literal(node.this)
        if isinstance(v, int | decimal.Decimal) and not isinstance(v, bool):
            return -v
        raise NotLiteral(node.sql())
    if isinstance(node, exp.Paren):
        return literal(node.this)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal | exp.Null):
        return _CastValue(literal(node.this), node.to.sql(DIALECT))
    if isinstance(node, exp.Array):  # array(...): a list; map(k, v, ...): (key, value) pairs
        return [literal(x) for x in node.expressions]
    if isinstance(node, exp.VarMap):
        keys, values = node.args["keys"], node.args["values"]
        return list(zip(literal(keys), literal(values), strict=True))
    if isinstance(node, exp.Struct):  # struct(...) / named_struct(...): fields by position
        return tuple(
            literal(x.expression if isinstance(x, exp.PropertyEQ) else x) for x in node.expressions
        )
    raise NotLiteral(node.sql(DIALECT))


@dataclass(frozen=True)
class _CastValue:
    value: Any
    sql_type: str


def column_array(values: list[Any], target: pa.DataType, column: str) -> pa.Array:
    """Literal values as an Arrow array of the column's type (Spark's implicit casts)."""
    plain = [v.value if isinstance(v, _CastValue) else v for v in values]
    try:
        if pa.types.is_decimal(target):
            plain = [None if v is None else decimal.Decimal(str(v)) for v in plain]
        elif pa.types.is_floating(target):
            plain = [None if v is None else float(v) for v in plain]
        elif pa.types.is_integer(target):
            for v in plain:
                if isinstance(v, decimal.Decimal | float) and v != int(v):
                    raise ValueError(f"{v} is not an integer")
            plain = [None if v is None else int(v) for v in plain]
        elif pa.types.is_string(target):
            plain = [
                None if v is None else str(v) if not isinstance(v, bool) else str(v).lower()
                for v in plain
            ]
        if pa.types.is_temporal(target):
            return pa.array([None if v is None else str(v) for v in plain]).cast(target)
        return pa.array(plain, type=target)
    except OverflowError:
        big = next((v for v in plain if isinstance(v, int) and not -(2**63) <= v < 2**63), "")
        raise StatementError(
            "INSERT", f"[CAST_OVERFLOW] column {column!r} ({target}): the value {big} does not fit"
        ) from None
    except (ValueError, TypeError, decimal.InvalidOperation, pa.ArrowException) as exc:
        raise StatementError("INSERT", f"column {column!r} ({target}): {exc}") from None


def values_rows(values: exp.Values) -> list[list[Any]]:
    rows = []
    for t in values.expressions:
        items = t.expressions if isinstance(t, exp.Tuple) else [t]
        rows.append([literal(x) for x in items])
    return rows


# -- DML ---------------------------------------------------------------------------------


SparkEval = Callable[[str], pa.Table]
"""Runs a query in Spark SQL and returns its rows (the Session's, started on demand)."""


def _target(catalog: Catalog, node: exp.Expr, what: str) -> TableEntry:
    name = table_name(node)
    entry = catalog.lookup(name)
    if isinstance(entry, ViewEntry):
        raise StatementError(
            what, f"{entry.name!r} is a materialized view; it changes only by REFRESH"
        )
    assert isinstance(entry, TableEntry)
    return entry


def _write(entry: TableEntry, run: Callable[[], WriteResult]) -> WriteResult:
    """Run a Delta write on ``entry``; a protocol delta-rs cannot write names the table."""
    try:
        return run()
    except UnsupportedProtocolError as exc:
        raise exc.named(entry.name) from exc


def _predicate(
    node: exp.Expr | None,
    qualifiers: set[str],
    st: Located,
    what: str,
    keep_qualifiers: bool = False,
) -> str | None:
    if node is None:
        return None
    bad = node.find(exp.Subquery, exp.Select, exp.Exists)
    if bad is not None:
        raise UnsupportedSqlError(
            f"subquery in {what}",
            **position(bad, st),
            reason="delta-rs evaluates the condition row by row",
        )

    def strip(n: exp.Expr) -> exp.Expr:
        if (
            not keep_qualifiers
            and isinstance(n, exp.Column)
            and n.table
            and n.table.lower() in qualifiers
        ):
            return exp.column(n.name)
        return n

    return node.copy().transform(strip).sql(PREDICATE_DIALECT)


def insert(catalog: Catalog, tree: exp.Insert, st: Located, spark_eval: SparkEval) -> WriteResult:
    entry = _target(catalog, tree.this, "INSERT")
    schema = entry.schema
    if isinstance(tree.this, exp.Schema):
        names = [i.name for i in tree.this.expressions]
        unknown = [n for n in names if n.lower() not in {c.lower() for c in schema.names}]
        if unknown:
            raise StatementError(
                f"INSERT INTO {entry.name}",
                f"unknown column(s) {unknown}; the table has {schema.names}",
                **position(tree, st),
            )
        lower = {c.lower(): c for c in schema.names}
        names = [lower[n.lower()] for n in names]
    else:
        names = list(schema.names)
    source = tree.expression
    rows: pa.Table
    if isinstance(source, exp.Values):
        try:
            literal_rows = values_rows(source)
        except NotLiteral:
            rows = spark_eval("SELECT * FROM " + source.sql(DIALECT))
        else:
            for r in literal_rows:
                if len(r) != len(names):
                    raise StatementError(
                        f"INSERT INTO {entry.name}",
                        f"a row has {len(r)} values for {len(names)} columns",
                        **position(source, st),
                    )
            cols = {
                n: column_array([r[i] for r in literal_rows], schema.field(n).type, n)
                for i, n in enumerate(names)
            }
            rows = pa.table(cols)
    elif isinstance(source, exp.Query):
        rows = spark_eval(source.sql(DIALECT))
    else:
        raise UnsupportedSqlError(f"INSERT from {type(source).__name__}", **position(source, st))
    if rows.num_columns != len(names):
        raise StatementError(
            f"INSERT INTO {entry.name}",
            f"{rows.num_columns} values for {len(names)} columns",
            **position(source, st),
        )
    rows = rows.rename_columns(names)
    for f in schema:
        if f.name not in names:
            if not f.nullable:
                raise StatementError(
                    f"INSERT INTO {entry.name}", f"column {f.name!r} is NOT NULL and has no value"
                )
            rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
    for f in schema:
        if not f.nullable and rows.column(f.name).null_count:
            raise StatementError(
                f"INSERT INTO {entry.name}", f"NULL in column {f.name!r}, which is NOT NULL"
            )
    return _write(entry, lambda: delta.insert(entry.path, rows.select(schema.names)))


def _qualifiers(entry: TableEntry, node: exp.Expr) -> set[str]:
    q = {entry.ident.name}
    alias = node.args.get("alias") if isinstance(node, exp.Table) else None
    if alias is not None and alias.name:
        q.add(alias.name.lower())
    return q


#: the statements this module runs
DmlTree = exp.Insert | exp.Delete | exp.Update | exp.Merge


def write(catalog: Catalog, tree: DmlTree, st: Located, spark_eval: SparkEval) -> WriteResult:
    """Run one INSERT, DELETE, UPDATE or MERGE against its catalog table."""
    if isinstance(tree, exp.Insert):
        return insert(catalog, tree, st, spark_eval)
    if isinstance(tree, exp.Delete):
        return delete(catalog, tree, st)
    if isinstance(tree, exp.Update):
        return update(catalog, tree, st)
    return merge(catalog, tree, st, spark_eval)


def delete(catalog: Catalog, tree: exp.Delete, st: Located) -> WriteResult:
    entry = _target(catalog, tree.this, "DELETE")
    where = tree.args.get("where")
    pred = _predicate(
        where.this if where is not None else None, _qualifiers(entry, tree.this), st, "DELETE"
    )
    return _write(entry, lambda: delta.delete(entry.path, pred))


def update(catalog: Catalog, tree: exp.Update, st: Located) -> WriteResult:
    entry = _target(catalog, tree.this, "UPDATE")
    quals = _qualifiers(entry, tree.this)
    if tree.args.get("from_") is not None or tree.args.get("from") is not None:
        raise UnsupportedSqlError("UPDATE ... FROM", **position(tree, st))
    assignments: dict[str, str] = {}
    lower = {c.lower(): c for c in entry.schema.names}
    for a in tree.expressions:
        if not isinstance(a, exp.EQ) or not isinstance(a.this, exp.Column):
            raise UnsupportedSqlError("UPDATE assignment", **position(a, st))
        col = lower.get(a.this.name.lower())
        if col is None:
            raise StatementError(
                f"UPDATE {entry.name}", f"unknown column {a.this.name!r}", **position(a, st)
            )
        value = _predicate(a.expression, quals, st, "UPDATE")
        assert value is not None
        assignments[col] = value
    where = tree.args.get("where")
    pred = _predicate(where.this if where is not None else None, quals, st, "UPDATE")
    return _write(entry, lambda: delta.update(entry.path, assignments, pred))


def merge(catalog: Catalog, tree: exp.Merge, st: Located, spark_eval: SparkEval) -> WriteResult:
    entry = _target(catalog, tree.this, "MERGE")
    target_alias = tree.this.alias or entry.ident.name
    using = tree.args["using"]
    source_alias = using.alias or (using.name if isinstance(using, exp.Table) else "source")
    source: pa.Table
    if isinstance(using, exp.Table):
        found = catalog.store.find(table_name(using))
        source = (
            catalog.read(found.ident)
            if found is not None
            else spark_eval(f"SELECT * FROM {table_name(using)}")
        )
    elif isinstance(using, exp.Values):
        alias = using.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None else []
        try:
            rows = values_rows(using)
            if not names or any(len(r) != len(names) for r in rows):
                raise NotLiteral("columns")
            source = pa.table(
                {n: pa.array([_plain(r[i]) for r in rows]) for i, n in enumerate(names)}
            )
        except OverflowError:
            raise StatementError(
                f"MERGE INTO {entry.name}",
                "[CAST_OVERFLOW] a source value does not fit a 64-bit integer",
                **position(using, st),
            ) from None
        except (NotLiteral, pa.ArrowException):
            source = spark_eval("SELECT * FROM " + using.sql(DIALECT))
    elif isinstance(using, exp.Subquery):
        source = spark_eval(using.this.sql(DIALECT))
    else:
        raise UnsupportedSqlError(f"MERGE source {type(using).__name__}", **position(using, st))
    quals = {target_alias.lower(), source_alias.lower()}
    on = _predicate(tree.args["on"], quals, st, "MERGE", keep_qualifiers=True)
    assert on is not None
    clauses = []
    whens = tree.args.get("whens")
    for w in whens.expressions if whens is not None else []:
        clauses.append(_clause(w, entry, st, quals))
    if not clauses:
        raise StatementError(f"MERGE INTO {entry.name}", "needs at least one WHEN clause")
    return _write(
        entry,
        lambda: delta.merge(
            entry.path, source, on, clauses, source_alias=source_alias, target_alias=target_alias
        ),
    )


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, _CastValue) else v


def _clause(w: exp.When, entry: TableEntry, st: Located, quals: set[str]) -> MergeClause:
    cond_node = w.args.get("condition")
    cond = _predicate(cond_node, quals, st, "MERGE", keep_qualifiers=True)
    then = w.args.get("then")
    by_source = bool(w.args.get("source"))
    matched = bool(w.args.get("matched"))
    when = "matched" if matched else ("not_matched_by_source" if by_source else "not_matched")
    lower = {c.lower(): c for c in entry.schema.names}

    def col(name: str, node: exp.Expr) -> str:
        c = lower.get(name.lower())
        if c is None:
            raise StatementError(
                f"MERGE INTO {entry.name}", f"unknown column {name!r}", **position(node, st)
            )
        return c

    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return MergeClause(when, "delete", cond)  # type: ignore[arg-type]
    if isinstance(then, exp.Update):
        if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
            return MergeClause(when, "update_all", cond)  # type: ignore[arg-type]
        sets = {}
        for a in then.expressions:
            if not isinstance(a, exp.EQ) or not isinstance(a.this, exp.Column):
                raise UnsupportedSqlError("MERGE assignment", **position(a, st))
            value = _predicate(a.expression, quals, st, "MERGE", keep_qualifiers=True)
            assert value is not None
            sets[col(a.this.name, a)] = value
        return MergeClause(when, "update", cond, sets)  # type: ignore[arg-type]
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star):
            return MergeClause(when, "insert_all", cond)  # type: ignore[arg-type]
        names = (
            [c.name for c in then.this.expressions]
            if then.this is not None
            else list(entry.schema.names)
        )
        values = then.expression.expressions if then.expression is not None else []
        if len(names) != len(values):
            raise StatementError(
                f"MERGE INTO {entry.name}",
                f"INSERT has {len(values)} values for {len(names)} columns",
                **position(then, st),
            )
        ins = {}
        for n, v in zip(names, values, strict=True):
            value = _predicate(v, quals, st, "MERGE", keep_qualifiers=True)
            assert value is not None
            ins[col(n, then)] = value
        return MergeClause(when, "insert", cond, ins)  # type: ignore[arg-type]
    raise UnsupportedSqlError(
        f"MERGE clause {then.sql(DIALECT) if then else '?'}", **position(w, st)
    )
