"""Text → analysed sqlglot AST: parse, refuse, qualify, rewrite, annotate.

The passes are sqlglot's own optimizer rules and ours (:mod:`sql_frontend.rules`), in this
order (:data:`RULES` after qualification):

1. ``expand_join_stars`` (ours): ``*`` and ``t.*`` over USING / NATURAL joins, as Spark;
   ``lateral_view_names`` (ours): Spark's default column names on an unnamed LATERAL VIEW;
   ``lambda_exists`` (ours): ``exists(array, x -> ...)`` a function call, not a subquery;
   ``quantified_to_exists`` (ours): ``x > ANY (q)``, ``ALL``, ``(a, b) IN (q)`` filters → EXISTS;
2. ``qualify``: resolve tables and columns against the catalog, expand ``*``, validate;
3. ``push_not`` (ours): NOT moved down to the IN / EXISTS subqueries beneath it (Spark's
   order: it decides which IN is NULL-aware);
3b. ``unnest_correlated`` (ours): correlated subqueries the one-level rules below cannot take
   (correlation not an equality, two or more levels out, a correlated subquery that joins,
   groups or aggregates) → joins with the distinct domain of their outer values;
4. ``aggregate_before_subquery`` (ours): an aggregating query whose SELECT list or HAVING
   holds IN / EXISTS aggregates in a derived table first, the predicate reads its columns;
   then ``unnest_correlated`` once more, for subqueries over the groups' aggregates;
4b. ``subquery_to_semijoin`` (ours): EXISTS / IN / NOT IN in WHERE → LEFT SEMI / ANTI joins;
5. ``subquery_to_mark_join`` (ours): IN / EXISTS anywhere else → boolean columns from LEFT
   JOINs (OR, CASE, the SELECT list, inner joins' ON);
6. ``unnest_subqueries``: other (scalar, correlated) subqueries → joins with grouped subqueries;
7. ``factor_disjunctions`` (ours): a conjunct common to every branch of an OR is pulled out;
8. ``pushdown_predicates``: filters move towards the scans (and into join conditions);
9. ``eliminate_subqueries``: derived tables become CTEs, so every FROM names a relation;
10. ``annotate_types``.

Non-deterministic functions and statements that are not queries are refused before anything
else, while the tree still carries line and column positions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.eliminate_subqueries import eliminate_subqueries
from sqlglot.optimizer.pushdown_predicates import pushdown_predicates
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.unnest_subqueries import unnest_subqueries

from sql_frontend.errors import (
    NonDeterministicError,
    SqlAnalysisError,
    SqlSyntaxError,
)
from sql_frontend.limits import check_text, check_tree
from sql_frontend.positions import position, unsupported
from sql_frontend.rules.aggregate_before_subquery import aggregate_before_subquery
from sql_frontend.rules.expand_join_stars import expand_join_stars
from sql_frontend.rules.factor_disjunctions import factor_disjunctions
from sql_frontend.rules.lambda_exists import lambda_exists
from sql_frontend.rules.lateral_view_names import lateral_view_names
from sql_frontend.rules.push_not import push_not
from sql_frontend.rules.quantified_to_exists import quantified_to_exists
from sql_frontend.rules.subquery_to_mark_join import subquery_to_mark_join
from sql_frontend.rules.subquery_to_semijoin import subquery_to_semijoin
from sql_frontend.rules.unnest_correlated import unnest_correlated
from sql_frontend.sql_types import SqlType, parse_type

DIALECT = "spark"

CatalogLike = Mapping[str, Sequence[tuple[str, Any]]]
"""``{table: [(column, type)]}``; a type is an engine dtype, a SQL type name or a SqlType."""

NON_DETERMINISTIC_NODES: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name)
    for name in (
        "Rand",
        "Randn",
        "Uuid",
        "CurrentTimestamp",
        "CurrentDate",
        "CurrentTime",
        "CurrentDatetime",
        "CurrentUser",
        "CurrentSchema",
        "CurrentCatalog",
        "Localtimestamp",
        "Localtime",
        "UnixTimestamp",
        "Randstr",
        "Uniform",
        "Shuffle",
        "Sysdate",
        "CurrentTimezone",
    )
    if hasattr(exp, name)
)
NON_DETERMINISTIC_NAMES = frozenset(
    {
        "rand",
        "random",
        "randn",
        "uuid",
        "shuffle",
        "now",
        "current_timestamp",
        "current_date",
        "localtimestamp",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "randstr",
        "uniform",
        "current_user",
        "user",
        "session_user",
        "current_timezone",
        "input_file_block_start",
        "input_file_block_length",
        "unix_timestamp",
        "curdate",
        "try_reflect",
        "reflect",
        "java_method",
    }
)


def catalog_schema(catalog: CatalogLike) -> dict[str, dict[str, SqlType]]:
    """The catalog with every type read as a :class:`SqlType`."""
    out: dict[str, dict[str, SqlType]] = {}
    for table, columns in catalog.items():
        cols: dict[str, SqlType] = {}
        for name, t in columns:
            cols[name] = t if isinstance(t, SqlType) else parse_type(str(t))
        out[table] = cols
    return out


def parse(sql: str) -> exp.Expr:
    """One Spark SQL query (a ``CREATE [MATERIALIZED] VIEW v AS q`` yields ``q``)."""
    check_text(sql)  # size and nesting limits, before the recursive parser runs
    try:
        statements = sqlglot.parse(sql, read=DIALECT)
    except ParseError as e:
        raise SqlSyntaxError.of(e) from e
    except ValueError as e:  # sqlglot's function builders reject some arguments this way
        raise SqlSyntaxError(f"cannot parse SQL: {e}") from e
    except IndexError as e:  # ... and others this way (map with an odd number of arguments)
        raise SqlSyntaxError(
            "cannot parse SQL: a function call has arguments that do not fit it (map(...) takes "
            "key, value pairs)"
        ) from e
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise SqlSyntaxError(f"expected one query, found {len(statements)} statements")
    tree = statements[0]
    check_tree(tree)
    if isinstance(tree, exp.Create) and isinstance(tree.expression, exp.Query):
        tree = tree.expression
    if not isinstance(tree, exp.Query):
        raise unsupported(
            f"{type(tree).__name__.upper()} statement", tree, "a view is defined by a query"
        )
    return tree


def refuse_non_deterministic(tree: exp.Expr) -> None:
    for node in tree.walk():
        name = None
        if isinstance(node, NON_DETERMINISTIC_NODES):
            name = node.sql_name() if hasattr(node, "sql_name") else type(node).__name__
        elif isinstance(node, exp.Anonymous) and str(node.name).lower() in NON_DETERMINISTIC_NAMES:
            name = str(node.name)
        if name is not None:
            line, col = position(node)
            raise NonDeterministicError(name.upper(), line=line, column=col)


def analyze(sql: str, catalog: CatalogLike) -> exp.Query:
    """Parse ``sql`` and run the analysis passes; returns the annotated query."""
    tree, schema = resolve(sql, catalog)
    # A WHERE condition moved into an ASOF JOIN's ON would change which right row is the
    # latest (a filter on the right side applies after the as-of match), so such queries
    # skip predicate pushdown.
    asof = any(j.text("method").upper() == "ASOF" for j in tree.find_all(exp.Join))
    try:
        for rule in RULES:
            if not (asof and rule is pushdown_predicates):
                tree = rule(tree)
        tree = annotate_types(tree, schema=schema, dialect=DIALECT)
    except OptimizeError as e:
        raise SqlAnalysisError(f"cannot analyse: {e}") from e
    assert isinstance(tree, exp.Query)
    return tree


def resolve(sql: str, catalog: CatalogLike) -> tuple[exp.Expr, dict[str, object]]:
    """Steps 1-2: ``sql`` parsed, its stars and quantified filters rewritten and its names
    resolved against ``catalog`` (the input of the :data:`RULES`), with the schema used."""
    tree = parse(sql)
    refuse_non_deterministic(tree)
    columns = {
        t: {c: str(ty) for c, ty in cols.items()} for t, cols in catalog_schema(catalog).items()
    }
    schema: dict[str, object] = dict(columns)
    tree = expand_join_stars(tree, columns)  # Spark's columns of * over USING / NATURAL joins
    tree = lateral_view_names(tree, columns)  # Spark's names of an unnamed LATERAL VIEW's columns
    tree = lambda_exists(tree)  # exists(array, x -> ...) is a function, not a subquery
    tree = quantified_to_exists(tree, columns)  # ANY / ALL / tuple IN filters, before names resolve
    try:
        tree = qualify(
            tree,
            schema=schema,
            dialect=DIALECT,
            quote_identifiers=False,
            validate_qualify_columns=True,
            identify=False,
        )
    except OptimizeError as e:
        raise SqlAnalysisError(f"cannot resolve: {e}") from e
    except SqlglotError as e:  # pragma: no cover - sqlglot raises OptimizeError in practice
        raise SqlAnalysisError(str(e)) from e
    return tree, schema


RULES = (
    push_not,
    unnest_correlated,
    aggregate_before_subquery,
    unnest_correlated,  # again: subqueries over aggregates of the groups, now columns
    subquery_to_semijoin,
    subquery_to_mark_join,
    unnest_subqueries,
    factor_disjunctions,
    pushdown_predicates,
    eliminate_subqueries,
)
"""The rewrite passes after ``qualify``, in order."""
