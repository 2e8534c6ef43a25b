"""Spark SQL types <-> Arrow: moved to :mod:`catalog.sql_types` (no Spark is involved).

Kept as a re-export so that callers written against the old place keep working.
"""

from catalog.sql_types import arrow_to_sql, frontend_columns, sql_to_arrow, view_schema

__all__ = ["arrow_to_sql", "frontend_columns", "sql_to_arrow", "view_schema"]
