"""Tokenizer for Soufflé-style Datalog text.

Tokens carry their 1-based line and column. Comments (``//`` to end of line, ``/* ... */``)
and whitespace are skipped. A ``.`` directly followed by a directive keyword (``.decl``, ``.input``,
...) is a directive token; any other ``.`` ends a clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from datalog.ast import ARITHMETIC_OPERATORS, Pos
from datalog.errors import DatalogSyntaxError


class Kind(Enum):
    IDENT = "identifier"
    NUMBER = "number"
    FLOAT = "float"
    UNSIGNED = "unsigned"
    STRING = "string"
    DIRECTIVE = "directive"
    PUNCT = "punctuation"
    EOF = "end of input"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    pos: Pos

    def describe(self) -> str:
        return "end of input" if self.kind is Kind.EOF else repr(self.text)


# Longest first, so that ":-" wins over ":" and "<=" over "<"; the one-character arithmetic
# operators come from the AST's vocabulary.
_PUNCT = (
    ":-",
    "<=",
    ">=",
    "!=",
    "<:",
    *(op for op in ARITHMETIC_OPERATORS if not op.isalpha()),
    *"(),.:{}!=<>;|[]",
)

_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F]+u?|0[bB][01]+u?|\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+u?"
)
_IDENT = re.compile(r"[A-Za-z_?][A-Za-z0-9_?]*")
#: Soufflé's directive keywords (``.decl`` ...); the parser refuses the unsupported ones.
DIRECTIVES = frozenset(
    {
        "decl",
        "input",
        "output",
        "type",
        "printsize",
        "functor",
        "comp",
        "init",
        "pragma",
        "plan",
        "limitsize",
        "override",
        "include",
    }
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with one EOF token."""
    tokens: list[Token] = []
    i, line, line_start = 0, 1, 0
    while True:
        i, line, line_start = _skip_blank(text, i, line, line_start)
        start = Pos(line, i - line_start + 1)
        if i >= len(text):
            tokens.append(Token(Kind.EOF, "", start))
            return tokens
        token, i = _read_token(text, i, start)
        tokens.append(token)


def _skip_blank(text: str, i: int, line: int, line_start: int) -> tuple[int, int, int]:
    """Past whitespace and comments from ``i``: the next position, its line and line start."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            i += 1
            line, line_start = line + 1, i
        elif ch in " \t\r\f\v":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise DatalogSyntaxError.at(
                    "unterminated comment", Pos(line, i - line_start + 1), "/*"
                )
            for j in range(i, end):
                if text[j] == "\n":
                    line, line_start = line + 1, j + 1
            i = end + 2
        else:
            break
    return i, line, line_start


def _read_token(text: str, i: int, start: Pos) -> tuple[Token, int]:
    """The token starting at ``i`` (not blank) and the position after it."""
    ch = text[i]
    if ch == '"':
        value, end = _read_string(text, i, start)
        return Token(Kind.STRING, value, start), end
    if ch.isdigit():
        return _read_number(text, i, start)
    if ch == ".":
        m = _IDENT.match(text, i + 1)
        if m and m.group(0) in DIRECTIVES:
            return Token(Kind.DIRECTIVE, m.group(0), start), m.end()
    m = _IDENT.match(text, i)
    if m:
        return Token(Kind.IDENT, m.group(0), start), m.end()
    for p in _PUNCT:
        if text.startswith(p, i):
            return Token(Kind.PUNCT, p, start), i + len(p)
    raise DatalogSyntaxError.at(f"unexpected character {ch!r}", start, ch)


def _read_number(text: str, i: int, start: Pos) -> tuple[Token, int]:
    """A number literal: unsigned with suffix ``u``, float with a point or exponent."""
    m = _NUMBER.match(text, i)
    assert m is not None
    word = m.group(0)
    tail = _IDENT.match(text, m.end())
    if tail:
        bad = text[i : tail.end()]
        raise DatalogSyntaxError.at(f"malformed number {bad!r}", start, bad)
    lower = word.lower()
    if lower.endswith("u"):
        kind = Kind.UNSIGNED
    elif not lower.startswith(("0x", "0b")) and ("." in lower or "e" in lower):
        kind = Kind.FLOAT
    else:
        kind = Kind.NUMBER
    return Token(kind, word, start), m.end()


def _read_string(text: str, i: int, start: Pos) -> tuple[str, int]:
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == '"':
            return "".join(out), j + 1
        if ch == "\n":
            break
        if ch == "\\" and j + 1 < len(text):
            esc = text[j + 1]
            if esc not in _ESCAPES:
                raise DatalogSyntaxError.at(f"unknown escape \\{esc} in string", start, "\\" + esc)
            out.append(_ESCAPES[esc])
            j += 2
            continue
        out.append(ch)
        j += 1
    raise DatalogSyntaxError.at("unterminated string", start, '"')
