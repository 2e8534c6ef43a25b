"""Size and depth limits of SQL text, checked before and right after parsing.

sqlglot's parser and optimizer, and our translator, recurse over the syntax tree, and the
optimizer's boolean simplification compares the terms of a connector pairwise.  Without
bounds, 50 nested parentheses exhaust Python's stack (``RecursionError``) and an OR of
5,000 terms runs for hours.  These checks refuse such text with a :class:`SqlLimitError`
that names the line and column, before any of that work starts:

* :data:`MAX_TOKENS` tokens per statement;
* :data:`MAX_NESTING` levels of parentheses, ``CASE ... END`` and prefix operators
  (``NOT``, unary ``-``), counted on the tokens, so even text the parser cannot finish is
  refused cleanly;
* :data:`MAX_DEPTH` levels of the parsed tree: a chain ``a OR b OR ...`` (or ``+``, ``AND``)
  of n terms is n levels deep.  Many alternatives of one column fit in ``col IN (...)``,
  which is one level whatever its length.

>>> check_text("SELECT " + "(" * 40 + "1" + ")" * 40)     # doctest: +ELLIPSIS
Traceback (most recent call last):
sql_frontend.errors.SqlLimitError: SQL nested more than 32 levels deep (parentheses, CASE, ...
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from sql_frontend.errors import SqlLimitError

DIALECT = "spark"

MAX_TOKENS = 200_000
MAX_NESTING = 32
MAX_DEPTH = 150

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}
# after these a '-' or '+' is a prefix (unary) operator, not a binary one
_NO_OPERAND = _OPEN | _PREFIX | {TokenType.COMMA}


def _start_column(tok: Token) -> int:
    return max(1, tok.col - len(tok.text) + 1)


def check_text(sql: str) -> None:
    """Refuse ``sql`` if it has too many tokens or nests too deeply (see the module doc)."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(sql)
    except SqlglotError:
        return  # the parser reports bad tokens with their position
    if len(tokens) > MAX_TOKENS:
        tok = tokens[MAX_TOKENS]
        raise SqlLimitError(
            f"SQL text of {len(tokens)} tokens is longer than the limit of {MAX_TOKENS}",
            line=tok.line,
            column=_start_column(tok),
            construct="statement size",
        )
    depth = 0
    prefix = 0
    previous: TokenType | None = None
    for tok in tokens:
        t = tok.token_type
        if t in _PREFIX and (t is TokenType.NOT or previous is None or previous in _NO_OPERAND):
            prefix += 1
        elif t in _OPEN:
            depth += 1
            prefix = 0
        elif t in _CLOSE:
            depth = max(0, depth - 1)
            prefix = 0
        else:
            prefix = 0
        if depth + prefix > MAX_NESTING:
            raise SqlLimitError(
                f"SQL nested more than {MAX_NESTING} levels deep (parentheses, CASE, NOT, "
                "unary minus); flatten the expression or split it into views",
                line=tok.line,
                column=_start_column(tok),
                construct=tok.text,
            )
        previous = t


def check_tree(tree: exp.Expr | None) -> None:
    """Refuse a parsed statement deeper than :data:`MAX_DEPTH` (long operator chains)."""
    if tree is None:
        return
    stack: list[tuple[exp.Expr, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        if d > MAX_DEPTH:
            chain = node
            while isinstance(chain.parent, exp.Connector | exp.Binary):
                chain = chain.parent
            what = (
                f"a chain of {type(chain).__name__.upper()} operators"
                if isinstance(chain, exp.Connector | exp.Binary)
                else "an expression"
            )
            line, column = _position(node)
            raise SqlLimitError(
                f"SQL expression nested more than {MAX_DEPTH} levels deep ({what}); write "
                "many alternatives of one column as col IN (v1, v2, ...), or split the "
                "condition into views",
                line=line,
                column=column,
                construct=type(chain).__name__.upper(),
            )
        for child in node.iter_expressions():
            stack.append((child, d + 1))


def _position(node: exp.Expr) -> tuple[int | None, int | None]:
    for n in node.walk():  # breadth first, without recursion
        meta = getattr(n, "_meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            if col is not None and "start" in meta and "end" in meta:
                col -= meta["end"] - meta["start"]
            return meta["line"], col
    return None, None
