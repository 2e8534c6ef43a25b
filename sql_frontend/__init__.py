"""SQL views → differential dataflows.

Pipeline (one module per stage): :mod:`.analyze` (parse, refuse, sqlglot's optimizer passes)
→ :mod:`.translate` / :mod:`.translate_expr` (AST → :mod:`.plan` and :mod:`.scalar`) →
:mod:`.compile` (plan → ``ivm`` collections, expressions evaluated by :mod:`.expressions`).

Entry points: :func:`compile_view`, :func:`explain`, :func:`plan_sql`.
"""

from sql_frontend.compile import CompiledView, compile_view, explain
from sql_frontend.errors import (
    NonDeterministicError,
    SqlAnalysisError,
    SqlError,
    SqlRuntimeError,
    SqlSyntaxError,
    UnsupportedSqlError,
)
from sql_frontend.planner import plan_sql

__all__ = [
    "CompiledView",
    "NonDeterministicError",
    "SqlAnalysisError",
    "SqlError",
    "SqlRuntimeError",
    "SqlSyntaxError",
    "UnsupportedSqlError",
    "compile_view",
    "explain",
    "plan_sql",
]
