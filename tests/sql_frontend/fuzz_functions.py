"""Every SQL function and operator the front end translates, applied to edge values.

The function list is read from the translator itself (its ``_<Node>`` handlers and its table
of functions sqlglot leaves anonymous), so a new function is fuzzed without editing this file.
"""

from __future__ import annotations

import random

import numpy as np
from sqlglot import exp

from sql_frontend import translate_expr as te
from sql_frontend.analyze import parse
from sql_frontend.errors import SqlError, SqlSyntaxError
from sql_frontend.expressions import registry
from sql_frontend.expressions.evaluate import compile_scalar
from sql_frontend.scalar import Ref
from sql_frontend.sql_types import INT

EDGE_VALUES = [
    "NULL",
    "0",
    "-1",
    "2147483647",
    "9223372036854775807",
    "CAST(-128 AS TINYINT)",
    "1e308",
    "-0.0D",
    "CAST('NaN' AS DOUBLE)",
    "99999999999999999999999999999999999999",
    "0.00000000000000000000000000000000000001",
    "CAST(-1.5 AS DECIMAL(38,37))",
    "''",
    "'abc'",
    "'-5'",
    "' 7 '",
    "'10:11:12'",
    "DATE'2024-02-29'",
    "TIMESTAMP'2024-02-29 23:59:59.999999'",
    "true",
    "X'00'",
]
OPERATORS = [
    "{0} + {1}",
    "{0} - {1}",
    "{0} * {1}",
    "{0} / {1}",
    "{0} % {1}",
    "{0} div {1}",
    "{0} = {1}",
    "{0} < {1}",
    "{0} <=> {1}",
    "- {0}",
    "NOT {0}",
    "{0} AND {1}",
    "{0} IN ({1}, {2})",
    "{0} BETWEEN {1} AND {2}",
    "{0} LIKE {1}",
    "CASE WHEN {0} THEN {1} ELSE {2} END",
    "CASE {0} WHEN {1} THEN {2} END",
]
CAST_TYPES = [
    "TINYINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL(5,2)",
    "DECIMAL(38,0)",
    "STRING",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
    "BINARY",
]


# Spark spellings of handled nodes whose sqlglot name is not Spark's (exp.Pad is LPAD/RPAD ...)
SPARK_ALIASES = [
    "lpad",
    "rpad",
    "locate",
    "position",
    "nvl",
    "ifnull",
    "to_date",
    "rlike",
    "dayofweek",
    "dayofmonth",
    "dayofyear",
    "ltrim",
    "rtrim",
    "pow",
    "ceiling",
]


def function_names() -> list[str]:
    """SQL names of the functions the translator handles (aggregates excluded)."""
    names = set(te._ANON) | set(SPARK_ALIASES) | set(registry.FUNCTIONS) | set(registry.CASTS)
    classes = [*te._STRING_FNS, *te._DATE_PARTS]
    for attr in dir(te.ExprTranslator):
        cls = getattr(exp, attr[1:], None) if attr.startswith("_") else None
        if isinstance(cls, type) and issubclass(cls, exp.Func):
            classes.append(cls)
    for cls in classes:
        if not issubclass(cls, exp.AggFunc):
            names |= {n.lower() for n in cls.sql_names()}
    return sorted(names)


def templates() -> list[tuple[str, int]]:
    """``(template, arity)``: function calls of 1 to 3 arguments, operators and casts."""
    out = [
        (f"{f}({', '.join('{' + str(i) + '}' for i in range(n))})", n)
        for f in function_names()
        for n in (1, 2, 3)
    ]
    out += [(op, op.count("{") if "{2}" in op or "{1}" in op else 1) for op in OPERATORS]
    out += [(f"CAST({{0}} AS {t})", 1) for t in CAST_TYPES]
    out += [(f"try_cast({{0}} AS {t})", 1) for t in CAST_TYPES]
    return out


def expressions(per_template: int, seed: int = 19, sample: int | None = None) -> list[str]:
    """Every unary template over every edge value and ``per_template`` seeded random argument
    tuples for the others; a seeded random ``sample`` of them if given (every template keeps
    at least one expression)."""
    rng = random.Random(seed)
    groups: list[list[str]] = []
    for template, arity in templates():
        if arity == 1:
            groups.append([template.format(v) for v in EDGE_VALUES])
        else:
            groups.append(
                [
                    template.format(*(rng.choice(EDGE_VALUES) for _ in range(arity)))
                    for _ in range(per_template)
                ]
            )
    if sample is None:
        return [e for g in groups for e in g]
    firsts = [rng.choice(g) for g in groups]
    rest = [e for g in groups for e in g if e not in firsts]
    return firsts + rng.sample(rest, max(0, min(len(rest), sample - len(firsts))))


def outcome(sql: str) -> str | None:
    """None if ``sql`` is computed or refused with a typed error, else what escaped: a Python
    error, or a typed error that only the safety net produced (``INTERNAL_ERROR``)."""
    try:
        query = parse(f"SELECT {sql} FROM one")
    except SqlSyntaxError:
        return None
    assert isinstance(query, exp.Select)
    tree = query.expressions[0]
    translate = te.ExprTranslator(lambda c: Ref(0, INT, "k"))
    try:
        f = compile_scalar(translate(tree))
        f(np.array([1], dtype=object))
    except SqlError as e:
        return f"{sql}: {e}" if "INTERNAL_ERROR" in str(e) else None
    except Exception as e:
        return f"{sql}: untyped {type(e).__name__}: {e}"
    return None
