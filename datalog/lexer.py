"""Tokenizer for Soufflé-style Datalog text.

Tokens carry their 1-based line and column. Comments (``//`` to end of line, ``/* ... */``)
and whitespace are skipped. A ``.`` directly followed by a directive keyword (``.decl``, ``.input``,
...) is a directive token; any other ``.`` ends a clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from datalog.ast import Pos
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


# Longest first, so that ":-" wins over ":" and "<=" over "<".
_PUNCT = (
    ":-",
    "<=",
    ">=",
    "!=",
    "<:",
    "(",
    ")",
    ",",
    ".",
    ":",
    "{",
    "}",
    "!",
    "=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    ";",
    "|",
    "[",
    "]",
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
    n = len(text)

    def pos_at(index: int) -> Pos:
        return Pos(line, index - line_start + 1)

    while i < n:
        ch = text[i]
        if ch == "\n":
            i += 1
            line, line_start = line + 1, i
            continue
        if ch in " \t\r\f\v":
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise DatalogSyntaxError(
                    "unterminated comment", line=line, column=i - line_start + 1, construct="/*"
                )
            for j in range(i, end):
                if text[j] == "\n":
                    line, line_start = line + 1, j + 1
            i = end + 2
            continue
        start = pos_at(i)
        if ch == '"':
            value, i = _read_string(text, i, start)
            tokens.append(Token(Kind.STRING, value, start))
            continue
        if ch.isdigit():
            m = _NUMBER.match(text, i)
            assert m is not None
            word = m.group(0)
            tail = _IDENT.match(text, m.end())
            if tail:
                bad = text[i : tail.end()]
                raise DatalogSyntaxError(
                    f"malformed number {bad!r}", line=start.line, column=start.column, construct=bad
                )
            lower = word.lower()
            if lower.endswith("u"):
                kind = Kind.UNSIGNED
            elif not lower.startswith(("0x", "0b")) and ("." in lower or "e" in lower):
                kind = Kind.FLOAT
            else:
                kind = Kind.NUMBER
            tokens.append(Token(kind, word, start))
            i = m.end()
            continue
        if ch == ".":
            m = _IDENT.match(text, i + 1)
            if m and m.group(0) in DIRECTIVES:
                tokens.append(Token(Kind.DIRECTIVE, m.group(0), start))
                i = m.end()
                continue
        m = _IDENT.match(text, i)
        if m:
            tokens.append(Token(Kind.IDENT, m.group(0), start))
            i = m.end()
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                tokens.append(Token(Kind.PUNCT, p, start))
                i += len(p)
                break
        else:
            raise DatalogSyntaxError(
                f"unexpected character {ch!r}", line=start.line, column=start.column, construct=ch
            )
    tokens.append(Token(Kind.EOF, "", pos_at(i)))
    return tokens


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
                raise DatalogSyntaxError(
                    f"unknown escape \\{esc} in string",
                    line=start.line,
                    column=start.column,
                    construct="\\" + esc,
                )
            out.append(_ESCAPES[esc])
            j += 2
            continue
        out.append(ch)
        j += 1
    raise DatalogSyntaxError(
        "unterminated string", line=start.line, column=start.column, construct='"'
    )
