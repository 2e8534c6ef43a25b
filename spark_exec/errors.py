"""Errors of the Session facade (statements that cannot run), under the one ``IvmError`` root.

Unsupported SQL constructs raise the front end's
:class:`~sql_frontend.errors.UnsupportedSqlError` (with line and column); catalog problems the
catalog's own errors (:mod:`catalog.errors`); Datalog problems :mod:`datalog.errors`.  What is
left is a statement that is well-formed but wrong for the table it targets
(:class:`StatementError`, defined in :mod:`catalog.errors` since DML lives in the catalog):

>>> str(StatementError("INSERT INTO edges", "3 values for 2 columns", line=1, column=1))
'INSERT INTO edges: 3 values for 2 columns (line 1, column 1)'
"""

from __future__ import annotations

from typing import Unpack

from catalog.errors import StatementError
from ivm.errors import IvmError, SourceError, Where

__all__ = ["RefreshFailedError", "SparkSetupError", "SparkSqlError", "StatementError"]


class RefreshFailedError(IvmError):
    """Some refresh groups failed while the others were refreshed and committed.

    ``failures`` maps each failed group to its error (also each one's ``__cause__`` chain);
    ``reports`` holds the reports of the groups that did commit.  Every failed group keeps
    its last committed state, is shown as ``failed`` by ``SHOW MATERIALIZED VIEWS`` with the
    error, and is retried by the next refresh.
    """

    def __init__(self, failures: dict[str, BaseException], reports: list[object]) -> None:
        self.failures = failures
        self.reports = reports
        lines = [f"  group {g}: {type(e).__name__}: {e}" for g, e in failures.items()]
        super().__init__(
            f"{len(failures)} refresh group(s) failed; the other groups were refreshed "
            "(SHOW MATERIALIZED VIEWS shows each view's status):\n" + "\n".join(lines)
        )


class SparkSqlError(SourceError, ValueError):
    """A statement run by Spark SQL (a query, or DDL/DML on a non-catalog object) that Spark
    refused: its parse or analysis error, with the statement's position in the script.
    ``spark_error`` is Spark's error class (e.g. ``PARSE_SYNTAX_ERROR``) when it gives one."""

    def __init__(
        self, detail: str, *, spark_error: str | None = None, **where: Unpack[Where]
    ) -> None:
        self.spark_error = spark_error
        super().__init__(f"Spark SQL refused the statement: {detail}", **where)


class SparkSetupError(IvmError, RuntimeError):
    """Spark cannot start as configured: no Java, or delta-spark's jars not fetched."""
