"""SQL views → differential dataflows.

Pipeline (one module per stage): :mod:`.analyze` (parse, refuse, sqlglot's optimizer passes)
→ :mod:`.translate` / :mod:`.translate_expr` (AST → :mod:`.plan` and :mod:`.scalar`) →
:mod:`.compile` (plan → ``ivm`` collections, expressions evaluated by :mod:`.expressions`).

Entry points: :func:`compile_view`, :func:`explain`, :func:`plan_sql` (loaded lazily).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use, so that the sqlglot-free parts (the relational plan, the SCC utility,
# the types) can serve the Datalog front end without loading sqlglot.
_HOME = {
    "CompiledView": "sql_frontend.compile",
    "compile_view": "sql_frontend.compile",
    "explain": "sql_frontend.compile",
    "plan_sql": "sql_frontend.planner",
    "NonDeterministicError": "sql_frontend.errors",
    "SqlAnalysisError": "sql_frontend.errors",
    "SqlError": "sql_frontend.errors",
    "SqlRuntimeError": "sql_frontend.errors",
    "SqlSyntaxError": "sql_frontend.errors",
    "UnsupportedSqlError": "sql_frontend.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'sql_frontend' has no attribute {name!r}")
    return getattr(import_module(_HOME[name]), name)


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
