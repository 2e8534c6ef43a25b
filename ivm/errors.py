"""The one exception hierarchy users see.

Every user-facing failure derives from :class:`IvmError`; each subclass also derives from the
builtin that matches its meaning, so ``except ValueError`` keeps working for callers that do
not know this package.
"""

from __future__ import annotations


class IvmError(Exception):
    """Root of every error raised by spark-ivm."""


class SchemaError(IvmError, ValueError):
    """Rows or columns that do not match a collection's schema."""


class EpochError(IvmError, ValueError):
    """An epoch that does not advance (times must only move forward)."""


class DiffError(IvmError, TypeError):
    """A multiplicity change that is not a 64-bit integer."""


class ForeignCollectionError(IvmError, ValueError):
    """An operator wired to a collection of another dataflow."""


class PlanError(IvmError, ValueError):
    """A dataflow that cannot be built as asked (bad column, loop misuse, ...)."""


class SourceError(IvmError):
    """Base of errors that point into user source text (SQL, Datalog)."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        construct: str | None = None,
    ) -> None:
        self.line = line
        self.column = column
        self.construct = construct
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{message}{where}")
