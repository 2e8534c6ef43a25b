"""Identifiers of tables and views: ``name`` or ``db.name``, validated and normalized.

Rules (a subset of Spark's, chosen so that every name is also a safe directory name):

* each part is ``[A-Za-z_][A-Za-z0-9_]*``, at most 128 characters, optionally in backquotes
  (backquotes do not widen the character set: the name becomes a directory name);
* names are case-insensitive, as in Spark SQL by default: they are stored lower-case;
* at most one qualifier (the database); ``default.t`` and ``t`` are the same table.

>>> parse_identifier("Sales.`Orders_2024`")
Identifier(db='sales', name='orders_2024')
>>> str(parse_identifier("default.edges"))
'edges'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalog.errors import InvalidIdentifierError

DEFAULT_DB = "default"
MAX_LENGTH = 128
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, order=True)
class Identifier:
    """A validated, lower-case object name; ``db`` is ``None`` for the default database."""

    db: str | None
    name: str

    def __post_init__(self) -> None:
        _check_part(self.name, self.name)
        if self.db is not None:
            _check_part(self.db, self.db)
            if self.db == DEFAULT_DB:
                raise InvalidIdentifierError(self.db, "use db=None for the default database")
        if self.name != self.name.lower() or (self.db and self.db != self.db.lower()):
            raise InvalidIdentifierError(str(self), "identifiers are stored lower-case")

    @property
    def database(self) -> str:
        """The database name, ``"default"`` when unqualified."""
        return self.db or DEFAULT_DB

    def __str__(self) -> str:
        return self.name if self.db is None else f"{self.db}.{self.name}"

    def sql(self) -> str:
        """The identifier quoted for Spark SQL."""
        return f"`{self.name}`" if self.db is None else f"`{self.db}`.`{self.name}`"


def _check_part(part: str, text: str) -> None:
    if not part:
        raise InvalidIdentifierError(text, "empty name")
    if len(part) > MAX_LENGTH:
        raise InvalidIdentifierError(text, f"longer than {MAX_LENGTH} characters")
    if not _PART.fullmatch(part):
        raise InvalidIdentifierError(
            text, "use letters, digits and underscores, not starting with a digit"
        )


def parse_identifier(text: str | Identifier) -> Identifier:
    """Parse ``name``, ``db.name`` or their backquoted forms into an :class:`Identifier`."""
    if isinstance(text, Identifier):
        return text
    if not isinstance(text, str):
        raise InvalidIdentifierError(repr(text), "an identifier must be a string")
    parts = _split(text)
    if len(parts) > 2:
        raise InvalidIdentifierError(text, "at most one qualifier (database.name) is allowed")
    for p in parts:
        if not p:
            raise InvalidIdentifierError(text, "empty name part")
        _check_part(p, text)
    if len(parts) == 1:
        return Identifier(None, parts[0].lower())
    db = parts[0].lower()
    return Identifier(None if db == DEFAULT_DB else db, parts[1].lower())


def _split(text: str) -> list[str]:
    """Split on dots outside backquotes; strip the backquotes."""
    parts: list[str] = []
    cur: list[str] = []
    i, n = 0, len(text.strip())
    s = text.strip()
    while i < n:
        ch = s[i]
        if ch == "`":
            j = s.find("`", i + 1)
            if j < 0:
                raise InvalidIdentifierError(text, "unterminated backquote")
            cur.append(s[i + 1 : j])
            i = j + 1
            if i < n and s[i] != ".":
                raise InvalidIdentifierError(text, "text after a closing backquote")
        elif ch == ".":
            parts.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(ch)
            i += 1
    parts.append("".join(cur))
    return parts
