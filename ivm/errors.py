"""The one exception hierarchy users see.

Every user-facing failure derives from :class:`IvmError`; each subclass also derives from the
builtin that matches its meaning, so ``except ValueError`` keeps working for callers that do
not know this package.
"""

from __future__ import annotations

from typing import TypedDict, Unpack


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


class Where(TypedDict, total=False):
    """Where in the user's source text an error is: 1-based ``line`` and ``column`` (the
    keyword arguments every :class:`SourceError` takes, passed on as ``**where``)."""

    line: int | None
    column: int | None


class SourceError(IvmError):
    """Base of errors that point into user source text (SQL, Datalog)."""

    def __init__(
        self, message: str, *, construct: str | None = None, **where: Unpack[Where]
    ) -> None:
        self.line = where.get("line")
        self.column = where.get("column")
        self.construct = construct
        at = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        super().__init__(f"{message}{at}")


class ArithmeticOverflowError(IvmError, OverflowError):
    """A 64-bit integer result that would wrap: never saturated or wrapped, always raised.

    Raised where the arithmetic happens (possibly inside a compiled kernel, with only
    ``detail``); the dataflow then fills in ``operator`` (the operator that was running) and
    ``outputs`` (the outputs, i.e. views, that the operator feeds) and rolls the epoch back,
    so the message says what overflowed, where, and what to do.
    """

    #: what the user can do about it (subclasses say it for their case)
    advice = ""

    def __init__(
        self,
        detail: str,
        *,
        operator: str | None = None,
        outputs: tuple[str, ...] = (),
        column: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.operator = operator
        self.operator_id: int | None = None
        self.outputs = outputs
        self.column = column
        self.rolled_back = False

    def __str__(self) -> str:
        where = f"{self.operator}: " if self.operator else ""
        col = f" (column {self.column!r})" if self.column else ""
        feeds = f"; it feeds {', '.join(repr(o) for o in self.outputs)}" if self.outputs else ""
        undone = (
            " The epoch was rolled back and its input changes discarded."
            if self.rolled_back
            else ""
        )
        return (
            f"{where}{self.detail}{col} does not fit a signed 64-bit integer "
            f"(at most 2**63 - 1 in magnitude){feeds}.{undone} {self.advice}"
        ).rstrip()


class MultiplicityOverflowError(ArithmeticOverflowError):
    """A row's multiplicity (its count: a join product, a sum of diffs, a COUNT) overflows."""

    advice = (
        "Multiplicities multiply in joins: a self-join inside iterate squares them every "
        "round. Use set semantics where duplicates carry no meaning: distinct() in the loop "
        "body (SQL: UNION instead of UNION ALL in a recursive CTE, SELECT DISTINCT; Datalog "
        "relations are sets already)."
    )


class SumOverflowError(ArithmeticOverflowError):
    """An integer SUM (value times multiplicity, summed over a group) overflows."""

    advice = "Sum a float64 column instead (cast it), or sum smaller values."
