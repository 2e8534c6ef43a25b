"""Errors of the Session facade (statements that cannot run), under the one ``IvmError`` root.

Unsupported SQL constructs raise the front end's
:class:`~sql_frontend.errors.UnsupportedSqlError` (with line and column); catalog problems the
catalog's own errors (:mod:`catalog.errors`); Datalog problems :mod:`datalog.errors`.  What is
left is a statement that is well-formed but wrong for the table it targets:

>>> str(StatementError("INSERT INTO edges", "3 values for 2 columns", line=1, column=1))
'INSERT INTO edges: 3 values for 2 columns (line 1, column 1)'
"""

from __future__ import annotations

from ivm.errors import IvmError, SourceError


class StatementError(SourceError, ValueError):
    """A statement that parses but cannot be applied (wrong arity, unknown column, ...)."""

    def __init__(
        self,
        statement: str,
        detail: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.statement = statement
        self.detail = detail
        super().__init__(f"{statement}: {detail}", line=line, column=column, construct=statement)


class SparkSetupError(IvmError, RuntimeError):
    """Spark cannot start as configured: no Java, or delta-spark's jars not fetched."""
