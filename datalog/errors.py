"""Errors raised for Datalog programs.

Every error points into the program text: ``line`` and ``column`` are 1-based and ``construct``
names the offending piece of syntax (a relation, a variable, a token). All derive from
:class:`DatalogError`, itself a :class:`ivm.errors.SourceError`, and each also derives from the
builtin that matches its meaning (``SyntaxError`` is deliberately *not* used: it has its own
constructor protocol; syntax errors are ``ValueError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from ivm.errors import SourceError

if TYPE_CHECKING:
    from datalog.ast import Pos


class DatalogError(SourceError):
    """Base of every error in a Datalog program."""

    @classmethod
    def at(cls, message: str, pos: Pos, construct: str | None = None) -> Self:
        """The error ``message`` pointing at ``pos`` in the program text, about ``construct``."""
        return cls(message, line=pos.line, column=pos.column, construct=construct)


class DatalogSyntaxError(DatalogError, ValueError):
    """Text that is not a Datalog program (bad token, missing ``.``, unbalanced brackets)."""


class UndeclaredRelationError(DatalogError, NameError):
    """A relation or type used without a ``.decl`` / ``.type``, or declared twice."""


class ArityError(DatalogError, ValueError):
    """An atom whose number of arguments differs from its relation's declaration."""


class DatalogTypeError(DatalogError, TypeError):
    """A value whose type does not match where it is used (e.g. a symbol in a number column)."""


class UnsafeVariableError(DatalogError, ValueError):
    """A variable not bound by a positive atom (range restriction), e.g. only under ``!``."""


class StratificationError(DatalogError, ValueError):
    """A program that is not stratifiable: a cycle through negation or a non-monotone aggregate.

    ``cycle`` holds the relation names along the offending cycle, first == last.
    """

    def __init__(
        self,
        message: str,
        *,
        cycle: tuple[str, ...] = (),
        line: int | None = None,
        column: int | None = None,
        construct: str | None = None,
    ) -> None:
        self.cycle = cycle
        super().__init__(message, line=line, column=column, construct=construct)


class UnsupportedError(DatalogError, NotImplementedError):
    """Valid Soufflé syntax this front end does not support; refused by name, never guessed."""


class DatalogLimitError(DatalogError, ValueError):
    """A program past a size or depth limit of the parser (:data:`datalog.parser.MAX_DEPTH`,
    :data:`datalog.parser.MAX_TOKENS`): refused with the line and column, never a crash."""


class DatalogOverflowError(DatalogError, ArithmeticError):
    """A ``number`` (signed 64-bit) result that does not fit: ``+ - * ^``, negation, a constant
    or ``to_number``.  Raised while the rule is evaluated; the refresh is rolled back."""
