"""Errors raised by the SQL front end.

Every error points into the user's SQL text: ``line`` and ``column`` (1-based, as sqlglot
reports them) and the ``construct`` that was refused, so a user can act on the message.

>>> from sql_frontend.errors import UnsupportedSqlError
>>> str(UnsupportedSqlError("LATERAL VIEW", line=2, column=5))
'unsupported SQL construct: LATERAL VIEW (line 2, column 5)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ivm.errors import SourceError

if TYPE_CHECKING:
    from sqlglot.errors import ParseError


class SqlError(SourceError):
    """Root of the SQL front end's errors (a :class:`ivm.errors.SourceError`)."""


#: Python errors that, raised inside the front end, are a gap in it (not the user's SQL)
INTERNAL_GAPS = (ArithmeticError, ValueError, TypeError, LookupError, AttributeError)


def internal_message(what: str, err: BaseException) -> str:
    """Spark's ``INTERNAL_ERROR`` text for a gap ``err`` met while doing ``what``."""
    return f"[INTERNAL_ERROR] {what}: {type(err).__name__}: {err}; please report this query"


class SqlSyntaxError(SqlError, ValueError):
    """The text is not valid Spark SQL."""

    @classmethod
    def of(cls, exc: ParseError) -> SqlSyntaxError:
        """sqlglot's parse error ``exc`` as ours, at the first error's line and column."""
        err = exc.errors[0] if exc.errors else {}
        where = {"line": err.get("line"), "column": err.get("col")}
        return cls(f"cannot parse SQL: {err.get('description', exc)}", **where)


class SqlAnalysisError(SqlError, ValueError):
    """Valid syntax that does not resolve: unknown table or column, type mismatch, ..."""


class UnsupportedSqlError(SqlError, NotImplementedError):
    """A construct that cannot be maintained incrementally (yet); refused at CREATE time."""

    def __init__(
        self,
        construct: str,
        *,
        line: int | None = None,
        column: int | None = None,
        reason: str | None = None,
    ) -> None:
        message = f"unsupported SQL construct: {construct}"
        if reason:
            message += f" ({reason})"
        super().__init__(message, line=line, column=column, construct=construct)


class NonDeterministicError(UnsupportedSqlError):
    """A non-deterministic function (rand, uuid, current_timestamp, ...): a maintained view
    must be a function of its inputs, so these are refused at CREATE time."""

    def __init__(
        self, function: str, *, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(
            function,
            line=line,
            column=column,
            reason="non-deterministic functions cannot be maintained incrementally",
        )


class SqlRuntimeError(SqlError, ArithmeticError):
    """An expression failed on a row as Spark's default ANSI mode fails the query: division by
    zero, integer overflow, an invalid CAST. The refresh is aborted; no state changes."""


class SqlLimitError(SqlError, ValueError):
    """Text past a size or depth limit of the front end (:mod:`sql_frontend.limits`): too many
    tokens, parentheses nested too deeply, an operator chain too long.  Refused before any
    recursive work starts, with the line and column where the limit was passed."""
