"""SQL statements of the Session: a script split into statements, each parsed into one model.

:func:`split_statements` cuts a script at the ``;`` tokens (sqlglot's tokenizer, so a ``;``
inside a string or a comment is not a separator) and pads each statement with the newlines
and spaces that preceded it, so every error's line and column point into the user's script.

:func:`parse` reads a statement with sqlglot — the Spark dialect extended with the
materialized-view DDL of Spark and Databricks (:mod:`spark_exec.sql_dialect`); comments may
stand anywhere — and returns one of the :data:`Stmt` types: a closed union of frozen
dataclasses, one per kind of statement, which the Session dispatches on exhaustively.  DML is
executed by :mod:`catalog.dml`; anything the Session does not own is :class:`PassToSpark`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from catalog.dml import position, table_name
from catalog.errors import CatalogError
from catalog.view_options import Schedule, ViewOptions
from ivm.errors import Where
from spark_exec import sql_dialect as d
from spark_exec.errors import StatementError
from spark_exec.result import StatementKind
from sql_frontend.errors import SqlSyntaxError, UnsupportedSqlError
from sql_frontend.limits import check_text, check_tree

DIALECT = "spark"


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text padded to its place in the script, and where its
    first token is (comments before it are part of ``text``)."""

    text: str
    line: int
    column: int

    @property
    def body(self) -> str:
        return self.text.strip()

    @property
    def where(self) -> Where:
        """Its position, as the keyword arguments of an error pointing at it."""
        return {"line": self.line, "column": self.column}


def split_statements(script: str) -> list[Statement]:
    """The statements of ``script``, each padded to its position (pieces holding only blanks
    and comments, such as a comment after the last ``;``, are dropped)."""
    try:
        tokens = d.IvmSpark().tokenize(script)
    except (TokenError, ParseError) as exc:
        raise SqlSyntaxError(f"cannot read the SQL script: {exc}") from exc
    cuts = [t.end + 1 for t in tokens if t.token_type == TokenType.SEMICOLON]
    starts = [t.start for t in tokens if t.token_type != TokenType.SEMICOLON]
    out = []
    start = 0
    for end in [*cuts, len(script) + 1]:
        piece = script[start : end - 1] if end - 1 <= len(script) else script[start:]
        first = next((i for i in starts if start <= i < end - 1), None)
        if first is not None:  # not only blanks and comments
            line, col = _line_col(script, start + len(piece) - len(piece.lstrip()))
            text = "\n" * (line - 1) + " " * (col - 1) + piece.strip()
            out.append(Statement(text, *_line_col(script, first)))
        start = end
    return out


def _line_col(script: str, offset: int) -> tuple[int, int]:
    before = script[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


# -- the statement model -----------------------------------------------------------------


@dataclass(frozen=True)
class CreateView:
    """``CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name [(cols)] ... AS query``.

    ``query`` is the query as written; ``located_query`` the statement's text with everything
    before the query blanked out, so the SQL front end's errors point into the script.
    """

    name: str
    query: str
    located_query: str
    if_not_exists: bool = False
    or_replace: bool = False
    options: ViewOptions = field(default_factory=ViewOptions)


@dataclass(frozen=True)
class Named:
    """The base of the statements about one named table or view (``name`` as written)."""

    name: str


@dataclass(frozen=True)
class Drop(Named):
    """The base of ``DROP ... [IF EXISTS] name`` (``if_exists``: a missing name is no error)."""

    if_exists: bool


class DropView(Drop):
    """``DROP MATERIALIZED VIEW``."""


@dataclass(frozen=True)
class RefreshView:
    """``REFRESH MATERIALIZED VIEW [name] [FULL]`` (no name: every view)."""

    name: str | None
    full: bool = False


@dataclass(frozen=True)
class ExplainView(Named):
    """``EXPLAIN`` of a materialized view: its plans and dataflow."""


@dataclass(frozen=True)
class ShowViews:
    """``SHOW MATERIALIZED VIEWS``."""


@dataclass(frozen=True)
class DescribeView(Named):
    """``DESCRIBE [EXTENDED] MATERIALIZED VIEW name``."""

    extended: bool = False


@dataclass(frozen=True)
class ShowCreate(Named):
    """``SHOW CREATE TABLE name`` (a catalog table or view; anything else goes to Spark)."""


@dataclass(frozen=True)
class DescribeHistory(Named):
    """``DESCRIBE HISTORY name`` (a catalog table or view; anything else goes to Spark)."""


@dataclass(frozen=True)
class AlterViewSchedule(Named):
    """``ALTER MATERIALIZED VIEW name {ADD|ALTER} SCHEDULE ... | DROP SCHEDULE``."""

    action: Literal["ADD", "ALTER", "DROP"]
    schedule: Schedule | None


@dataclass(frozen=True)
class AlterViewClustering(Named):
    """``ALTER MATERIALIZED VIEW name CLUSTER BY (cols) | CLUSTER BY NONE`` (``columns`` empty)."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE`` in the catalog (columns, ``AS SELECT`` or ``LOCATION``)."""

    definition: TableDefinition


class DropTable(Drop):
    """``DROP TABLE`` of a catalog table."""


@dataclass(frozen=True)
class Dml:
    """``INSERT``, ``DELETE``, ``UPDATE`` or ``MERGE`` on a catalog table (:mod:`catalog.dml`)."""

    tree: exp.Insert | exp.Delete | exp.Update | exp.Merge


@dataclass(frozen=True)
class PassToSpark:
    """A statement the Session does not own (queries, other DDL): Spark SQL runs its text."""

    tree: exp.Expr


Stmt = (
    CreateView
    | DropView
    | RefreshView
    | ExplainView
    | ShowViews
    | DescribeView
    | ShowCreate
    | DescribeHistory
    | AlterViewSchedule
    | AlterViewClustering
    | CreateTable
    | DropTable
    | Dml
    | PassToSpark
)


def parse(st: Statement) -> Stmt:
    """The model of statement ``st`` (errors carry line and column in the script)."""
    check_text(st.text)  # size and nesting limits, before the recursive parser runs
    try:
        tree = sqlglot.parse_one(st.text, read=d.IvmSpark)
    except ParseError as exc:
        raise SqlSyntaxError.of(exc) from exc
    except TokenError as exc:
        raise SqlSyntaxError(f"cannot read SQL: {exc}", **st.where) from exc
    check_tree(tree)
    return model(tree, st)


def _catalog_name(node: exp.Expr) -> str | None:
    """``db.name`` of a table node, or ``None`` for a name the catalog cannot hold."""
    try:
        return table_name(node)
    except UnsupportedSqlError:  # e.g. a three-part name: Spark's business
        return None


def model(tree: exp.Expr, st: Statement) -> Stmt:
    """The statement type of a parsed tree (the only place that looks at sqlglot's types)."""
    if isinstance(tree, exp.Create) and tree.find(exp.MaterializedProperty) is not None:
        return create_view(tree, st)
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
        return CreateTable(table_definition(tree, st))
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind", "")).upper()
        target = tree.this if tree.this is not None else tree.args["tables"][0]
        if kind == "VIEW" and tree.args.get("materialized"):
            return DropView(table_name(target), bool(tree.args.get("exists")))
        if kind == "TABLE":
            return DropTable(table_name(target), bool(tree.args.get("exists")))
    if isinstance(tree, d.RefreshMaterializedView):
        this = tree.this
        return RefreshView(
            table_name(this) if this is not None else None, bool(tree.args.get("full"))
        )
    if isinstance(tree, d.ExplainMaterializedView):
        return ExplainView(table_name(tree.this))
    if isinstance(tree, d.ShowMaterializedViews):
        return ShowViews()
    if isinstance(tree, d.DescribeMaterializedView):
        return DescribeView(table_name(tree.this), bool(tree.args.get("extended")))
    history = isinstance(tree, exp.Describe) and tree.text("style").upper() == "HISTORY"
    if isinstance(tree, d.ShowCreateTable) or history:
        name = _catalog_name(tree.this)
        if name is not None:
            return ShowCreate(name) if not history else DescribeHistory(name)
    if isinstance(tree, d.AlterMaterializedView) and tree.args.get("cluster") is not None:
        cols = tree.args["cluster"].expressions
        return AlterViewClustering(
            table_name(tree.this), _column_names(cols, "ALTER ... CLUSTER BY", tree, st)
        )
    if isinstance(tree, d.AlterMaterializedView):
        sched = tree.args.get("schedule")
        action: Literal["ADD", "ALTER", "DROP"] = tree.text("action").upper()  # type: ignore[assignment]
        return AlterViewSchedule(
            table_name(tree.this), action, _schedule(sched, st) if sched is not None else None
        )
    if isinstance(tree, exp.Insert | exp.Delete | exp.Update | exp.Merge):
        return Dml(tree)
    return PassToSpark(tree)


def spark_statement_kind(tree: exp.Expr | None, st: Statement) -> tuple[str, StatementKind]:
    """The name and kind of a statement Spark SQL runs (``("SELECT", "query")``, ...).

    >>> spark_statement_kind(sqlglot.parse_one("SELECT 1"), Statement("SELECT 1", 1, 1))
    ('SELECT', 'query')
    """
    if tree is None:
        tree = sqlglot.parse_one(st.text, read=d.IvmSpark)
    kind: StatementKind
    if isinstance(tree, exp.Command):
        name = str(tree.this).upper()
    elif isinstance(tree, exp.Create | exp.Drop | exp.Alter):
        name = f"{type(tree).__name__.upper()} {str(tree.args.get('kind') or '').upper()}"
    else:
        name = type(tree).__name__.upper()
    head = name.split()[0] if name.split() else ""
    if isinstance(tree, exp.Query):
        kind = "query"
    elif isinstance(tree, exp.Describe) or head in ("DESCRIBE", "DESC"):
        kind, name = "describe", "DESCRIBE"
    elif isinstance(tree, exp.Show) or head == "SHOW":
        kind = "show"
    elif head in ("CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "USE", "SET", "RESET"):
        kind = "ddl"
    elif head in ("INSERT", "DELETE", "UPDATE", "MERGE"):
        kind = "dml"
    else:
        kind = "query"  # anything else Spark answers with rows (EXPLAIN, VALUES, CACHE, ...)
    return name.strip(), kind


# -- CREATE MATERIALIZED VIEW ------------------------------------------------------------


def _schedule(node: exp.Expr, st: Statement) -> Schedule:
    if node.args.get("on_update"):
        return Schedule(on_update=True)
    every = node.args["every"]
    try:
        return Schedule(every=int(every.name), unit=node.text("unit").upper())
    except (ValueError, TypeError, CatalogError) as exc:
        raise StatementError("SCHEDULE", str(exc), **position(node, st)) from None


def _query_start(text: str) -> int:
    """Offset just after the ``AS`` that introduces a CREATE statement's query."""
    depth = 0
    for t in d.IvmSpark().tokenize(text):
        if t.token_type == TokenType.L_PAREN:
            depth += 1
        elif t.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and t.token_type == TokenType.ALIAS:
            return t.end + 1
    return len(text)


_REFUSED_PROPERTIES = {
    exp.ClusteredByProperty: "the view table is not bucketed; leave CLUSTERED BY out",
    exp.LocationProperty: "a view's table lives in the warehouse; leave LOCATION out",
}


def create_view(tree: exp.Create, st: Statement) -> CreateView:
    """The model of ``CREATE MATERIALIZED VIEW`` (refusing options it cannot honour, by name)."""
    if str(tree.args.get("kind", "")).upper() != "VIEW" or not isinstance(
        tree.expression, exp.Query
    ):
        raise UnsupportedSqlError(
            "this form of CREATE MATERIALIZED VIEW", **st.where, reason="write ... AS query"
        )
    options = _view_options(tree, st)
    start = _query_start(st.text)
    located = "".join(c if c == "\n" else " " for c in st.text[:start]) + st.text[start:]
    return CreateView(
        table_name(tree.this),
        st.text[start:].strip(),
        located,
        if_not_exists=bool(tree.args.get("exists")),
        or_replace=bool(tree.args.get("replace")),
        options=options,
    )


def _view_options(tree: exp.Create, st: Statement) -> ViewOptions:
    """The options of ``CREATE MATERIALIZED VIEW`` (refusing those it cannot honour, by name)."""
    comment: str | None = None
    properties: list[tuple[str, str]] = []
    schedule: Schedule | None = None
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    props = tree.args.get("properties")
    for p in props.expressions if props is not None else []:
        if isinstance(p, exp.MaterializedProperty):
            continue
        if isinstance(p, exp.SchemaCommentProperty):
            comment = p.this.name
        elif isinstance(p, exp.PartitionedByProperty):
            partitioned_by = _partition_columns(p, st)
        elif isinstance(p, exp.ClusterProperty):
            clustered_by = _column_names(
                p.expressions, "CLUSTER BY on a materialized view", p, st, allow_empty=False
            )
        elif isinstance(p, d.ScheduleProperty):
            if schedule is not None:
                raise StatementError("CREATE MATERIALIZED VIEW", "two schedules", **position(p, st))
            schedule = _schedule(p, st)
        elif type(p) is exp.Property:
            if p.name.lower().startswith("delta."):
                raise UnsupportedSqlError(
                    f"TBLPROPERTIES {p.name!r} on a materialized view",
                    **position(p, st),
                    reason="spark-ivm manages the Delta settings of a view's table; "
                    "give your own keys (they are set on the view's Delta table)",
                )
            properties.append((p.name, p.args["value"].name))
        else:
            reason = _REFUSED_PROPERTIES.get(type(p), "spark-ivm does not support this option")
            construct = p.sql(DIALECT).split("(")[0].strip() or type(p).__name__
            raise UnsupportedSqlError(
                f"{construct} on a materialized view", **position(p, st), reason=reason
            )
    return ViewOptions(
        comment,
        _column_list(tree.this, st),
        tuple(properties),
        schedule,
        partitioned_by=partitioned_by,
        clustered_by=clustered_by,
    )


def _partition_columns(p: exp.PartitionedByProperty, st: Statement) -> tuple[str, ...]:
    """The column names of ``PARTITIONED BY (a, b)`` (names only: no transforms, no types)."""
    node = p.this
    items = node.expressions if isinstance(node, exp.Schema | exp.Tuple) else [node]
    return _column_names(items, "PARTITIONED BY on a materialized view", p, st, allow_empty=False)


def _column_names(
    items: list[exp.Expr], what: str, where: exp.Expr, st: Statement, *, allow_empty: bool = True
) -> tuple[str, ...]:
    """The names of a clause's column list (names only: no transforms, no types)."""
    names: list[str] = []
    for item in items:
        qualified = isinstance(item, exp.Column) and bool(item.table)
        if isinstance(item, exp.Identifier | exp.Column) and item.name and not qualified:
            names.append(item.name)
        else:
            raise UnsupportedSqlError(
                what,
                **position(where, st),
                reason=f"{item.sql(DIALECT)} is not a column name: give the view's columns",
            )
    if not names and not allow_empty:
        raise StatementError(what, "give at least one column", **position(where, st))
    return tuple(names)


def _column_list(target: exp.Expr, st: Statement) -> tuple[tuple[str, str | None], ...]:
    if not isinstance(target, exp.Schema):
        return ()
    out: list[tuple[str, str | None]] = []
    for c in target.expressions:
        comment = None
        if isinstance(c, exp.ColumnDef):
            if c.args.get("kind") is not None:
                raise UnsupportedSqlError(
                    f"a type in the column list ({c.sql(DIALECT)})",
                    **position(c, st),
                    reason="the query gives the types; list names and comments only",
                )
            for k in c.args.get("constraints") or []:
                if not isinstance(k.kind, exp.CommentColumnConstraint):
                    raise UnsupportedSqlError(
                        f"column constraint {k.sql(DIALECT)}", **position(k, st)
                    )
                comment = k.kind.this.name
        elif not isinstance(c, exp.Identifier):
            raise UnsupportedSqlError(f"column list entry {c.sql(DIALECT)}", **position(c, st))
        out.append((c.name, comment))
    return tuple(out)


# -- CREATE TABLE ------------------------------------------------------------------------


@dataclass(frozen=True)
class TableDefinition:
    name: str
    schema: pa.Schema | None
    location: str | None
    query: exp.Query | None
    if_not_exists: bool


def table_definition(tree: exp.Create, st: Statement) -> TableDefinition:
    """The model of ``CREATE TABLE`` (columns, ``USING DELTA``, ``LOCATION``, ``AS`` query)."""
    from catalog.sql_types import sql_to_arrow

    target = tree.this
    schema = None
    if isinstance(target, exp.Schema):
        fields = []
        for c in target.expressions:
            if not isinstance(c, exp.ColumnDef):
                raise UnsupportedSqlError(f"table element {c.sql(DIALECT)}", **position(c, st))
            kind = c.args.get("kind")
            if kind is None:
                raise StatementError(
                    "CREATE TABLE", f"column {c.name!r} needs a type", **position(c, st)
                )
            nullable = True
            for k in c.args.get("constraints") or []:
                if isinstance(k.kind, exp.NotNullColumnConstraint):
                    nullable = bool(k.kind.args.get("allow_null"))
                elif not isinstance(k.kind, exp.CommentColumnConstraint):
                    raise UnsupportedSqlError(
                        f"column constraint {k.sql(DIALECT)}", **position(k, st)
                    )
            try:
                arrow = sql_to_arrow(kind.sql(DIALECT))
            except Exception as exc:
                raise UnsupportedSqlError(
                    f"column type {kind.sql(DIALECT)}", **position(c, st), reason=str(exc)
                ) from None
            fields.append(pa.field(c.name, arrow, nullable))
        schema = pa.schema(fields)
    location = None
    props = tree.args.get("properties")
    for p in props.expressions if props is not None else []:
        if isinstance(p, exp.FileFormatProperty):
            fmt = p.this.name if p.this is not None else ""
            if fmt.lower() != "delta":
                raise UnsupportedSqlError(
                    f"USING {fmt}", **position(p, st), reason="tables are Delta tables"
                )
        elif isinstance(p, exp.LocationProperty):
            location = p.this.name
        else:
            raise UnsupportedSqlError(f"table property {p.sql(DIALECT)}", **position(p, st))
    query = tree.expression if isinstance(tree.expression, exp.Query) else None
    return TableDefinition(
        table_name(target), schema, location, query, bool(tree.args.get("exists"))
    )
