"""Recursive-descent parser: Soufflé-style Datalog text -> :class:`datalog.ast.Program`.

Hand-written rather than generated: the grammar is small, and a hand-written parser gives
errors that name the token and its line and column, which is what users act on.

Grammar (the supported subset; ``[]`` optional, ``*`` repetition)::

    program    := statement*
    statement  := ".decl" IDENT "(" [attr ("," attr)*] ")" qualifier*
                | ".type" IDENT ("<:" | "=") IDENT
                | (".input" | ".output") IDENT ("," IDENT)* ["(" [param ("," param)*] ")"]
                | atom ("," atom)* [":-" body] "."
    attr       := IDENT ":" IDENT
    body       := conj (";" conj)*                          -- disjunction, expanded to rules
    conj       := literal ("," literal)*
    literal    := "!" atom | atom | "(" body ")" | "true" | "false"
                | ("contains" | "match") "(" term "," term ")" | term cmp term
    term       := binary operators by precedence: lor < land < bor < bxor < band
                  < bshl/bshr < + - < * / % < unary (- bnot lnot) < ^ < primary
    primary    := NUMBER | FLOAT | UNSIGNED | STRING | "_" | IDENT | "(" term ")"
                | FUNCTOR "(" [term ("," term)*] ")"
                | "count" ":" aggbody | ("sum" | "min" | "max") term ":" aggbody
    aggbody    := "{" conj "}" | atom
"""

from __future__ import annotations

import itertools
from typing import Literal

from datalog import ast
from datalog.ast import Pos
from datalog.errors import (
    DatalogLimitError,
    DatalogOverflowError,
    DatalogSyntaxError,
    UnsupportedError,
)
from datalog.lexer import Kind, Token, tokenize

#: Built-in functions usable in terms; see ``datalog.expr`` for their meaning.
FUNCTORS = frozenset(
    {
        "cat",
        "strlen",
        "substr",
        "to_number",
        "to_float",
        "to_string",
        "to_unsigned",
        "min",
        "max",
        "ord",
    }
)
#: Built-in boolean constraints.
CONSTRAINTS = frozenset({"contains", "match"})
#: Relation qualifiers that do not change meaning (storage hints); accepted and recorded.
QUALIFIERS = frozenset(
    {
        "brie",
        "btree",
        "btree_delete",
        "inline",
        "no_inline",
        "magic",
        "no_magic",
        "overridable",
        "no_subsumption",
    }
)
#: Qualifiers that change meaning and are refused.
UNSUPPORTED_QUALIFIERS = frozenset({"eqrel", "choice"})

_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
_WORD_OPERATORS = frozenset({"band", "bor", "bxor", "bshl", "bshr", "land", "lor", "bnot", "lnot"})
#: Limits of the parser (the parser and the evaluation of terms recurse): nesting of
#: parentheses, unary operators, function arguments and aggregate bodies; the depth of one
#: term's syntax tree (a chain ``x + x + ...`` of n terms is n deep); tokens per program.
MAX_NESTING = 40
MAX_DEPTH = 256
MAX_TOKENS = 2_000_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Binary operator levels, loosest first.
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("lor",),
    ("land",),
    ("bor",),
    ("bxor",),
    ("band",),
    ("bshl", "bshr"),
    ("+", "-"),
    ("*", "/", "%"),
)


def parse(text: str) -> ast.Program:
    """Parse a program.

    >>> p = parse('.decl e(x: number, y: number)\\ne(1, 2).')
    >>> p.rules[0].head.relation, p.declarations[0].arity
    ('e', 2)
    """
    tokens = tokenize(text)
    if len(tokens) > MAX_TOKENS:
        tok = tokens[MAX_TOKENS]
        raise DatalogLimitError.at(
            f"program of {len(tokens)} tokens is longer than the limit of {MAX_TOKENS}; "
            "load large fact sets from tables (.input) instead of inline facts",
            tok.pos,
            "program size",
        )
    return _Parser(tokens).program()


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.nesting = 0  # parentheses, unary operators, arguments, aggregate bodies
        self.depth = 0  # depth of the term being parsed (nesting plus operator chains)

    def enter(self, tok: Token, *, nest: bool = True) -> None:
        """One level deeper at ``tok``; refuse past :data:`MAX_NESTING` / :data:`MAX_DEPTH`."""
        self.depth += 1
        self.nesting += nest
        if self.nesting > MAX_NESTING or self.depth > MAX_DEPTH:
            what = (
                f"nested more than {MAX_NESTING} levels deep (parentheses, unary operators, "
                "function arguments, aggregates)"
                if self.nesting > MAX_NESTING
                else f"more than {MAX_DEPTH} levels deep (a long operator chain)"
            )
            raise DatalogLimitError.at(
                f"expression {what}; split it with intermediate variables or relations",
                tok.pos,
                tok.text or None,
            )

    def leave(self, levels: int = 1, *, nest: bool = True) -> None:
        self.depth -= levels
        self.nesting -= levels if nest else 0

    # -- token helpers ------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def at(self, text: str, kind: Kind = Kind.PUNCT) -> bool:
        return self.tok.kind is kind and self.tok.text == text

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind is not Kind.EOF:
            self.i += 1
        return tok

    def error(self, expected: str, tok: Token | None = None) -> DatalogSyntaxError:
        tok = tok or self.tok
        return DatalogSyntaxError.at(
            f"expected {expected}, found {tok.describe()}", tok.pos, tok.text or None
        )

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise self.error(repr(text))
        return self.advance()

    def ident(self, what: str = "an identifier") -> Token:
        if self.tok.kind is not Kind.IDENT:
            raise self.error(what)
        return self.advance()

    # -- statements ---------------------------------------------------------------------

    def program(self) -> ast.Program:
        statements: list[ast.Statement] = []
        while self.tok.kind is not Kind.EOF:
            if self.tok.kind is Kind.DIRECTIVE:
                statements.extend(self.directive())
            else:
                statements.extend(self.clause())
        return ast.Program(tuple(statements))

    def directive(self) -> list[ast.Statement]:
        tok = self.advance()
        match tok.text:
            case "decl":
                return [self.decl(tok.pos)]
            case "type":
                return [self.type_decl(tok.pos)]
            case "input" | "output":
                return self.io(tok)
        raise UnsupportedError.at(
            f"directive .{tok.text} is not supported", tok.pos, f".{tok.text}"
        )

    def decl(self, pos: Pos) -> ast.RelationDecl:
        name = self.ident("a relation name after .decl")
        self.expect("(")
        attrs: list[ast.Attribute] = []
        if not self.at(")"):
            while True:
                attr = self.ident("an attribute name")
                self.expect(":")
                type_tok = self.ident("a type name")
                attrs.append(ast.Attribute(attr.text, type_tok.text, attr.pos))
                if not self.at(","):
                    break
                self.advance()
        self.expect(")")
        qualifiers: list[str] = []
        while self.tok.kind is Kind.IDENT and self.peek().text not in ("(", ","):
            q = self.tok
            if q.text in UNSUPPORTED_QUALIFIERS:
                raise UnsupportedError.at(
                    f"relation qualifier {q.text!r} is not supported", q.pos, q.text
                )
            if q.text not in QUALIFIERS:
                break
            qualifiers.append(self.advance().text)
        return ast.RelationDecl(name.text, tuple(attrs), tuple(qualifiers), pos)

    def type_decl(self, pos: Pos) -> ast.TypeDecl:
        name = self.ident("a type name after .type")
        if not (self.at("<:") or self.at("=")):
            raise self.error("'<:' or '='")
        self.advance()
        if self.at("["):
            raise UnsupportedError.at("record types are not supported", self.tok.pos, "[")
        base = self.ident("a base type")
        if self.at("|") or self.at("{"):
            raise UnsupportedError.at(
                "union and algebraic data types are not supported", self.tok.pos, self.tok.text
            )
        return ast.TypeDecl(name.text, base.text, pos)

    def io(self, tok: Token) -> list[ast.Statement]:
        kind: Literal["input", "output"] = "input" if tok.text == "input" else "output"
        names = [self.ident(f"a relation name after .{tok.text}")]
        while self.at(","):
            self.advance()
            names.append(self.ident("a relation name"))
        params: list[tuple[str, str]] = []
        if self.at("(") and self.tok.pos.line == names[-1].pos.line:
            self.advance()
            while not self.at(")"):
                key = self.ident("a parameter name")
                self.expect("=")
                value = self.advance()
                if value.kind not in (Kind.IDENT, Kind.STRING, Kind.NUMBER):
                    raise self.error("a parameter value", value)
                params.append((key.text, value.text))
                if not self.at(","):
                    break
                self.advance()
            self.expect(")")
        return [ast.Directive(kind, n.text, tuple(params), n.pos) for n in names]

    def clause(self) -> list[ast.Statement]:
        start = self.tok
        heads = [self.atom()]
        while self.at(","):
            self.advance()
            heads.append(self.atom())
        alternatives: list[list[ast.Literal]] = [[]]
        if self.at(":-"):
            self.advance()
            alternatives = self.body()
            if not self.at("."):
                raise self.error("',', ';' or '.' after a literal")
        elif not self.at("."):
            raise self.error("':-' or '.' after the head")
        self.expect(".")
        return [ast.Rule(head, tuple(body), start.pos) for body in alternatives for head in heads]

    # -- bodies -------------------------------------------------------------------------

    def body(self) -> list[list[ast.Literal]]:
        """A disjunction of conjunctions, in disjunctive normal form."""
        alternatives = self.conj()
        while self.at(";"):
            self.advance()
            alternatives = alternatives + self.conj()
        return alternatives

    def conj(self) -> list[list[ast.Literal]]:
        alternatives: list[list[ast.Literal]] = [[]]
        while True:
            options = self.literal()
            alternatives = [a + o for a, o in itertools.product(alternatives, options)]
            if not self.at(","):
                return alternatives
            self.advance()

    def literal(self) -> list[list[ast.Literal]]:
        tok = self.tok
        if self.at("!"):
            self.advance()
            if self.tok.kind is Kind.IDENT and self.tok.text in CONSTRAINTS:
                raise UnsupportedError.at(
                    f"negated {self.tok.text}(...) is not supported", tok.pos, "!" + self.tok.text
                )
            if self.at("("):
                raise UnsupportedError.at(
                    "negation of a parenthesized body is not supported", tok.pos, "!("
                )
            return [[ast.Negation(self.atom(), tok.pos)]]
        if self.at("(") and self._parenthesized_body():
            self.enter(self.advance())
            alternatives = self.body()
            self.expect(")")
            self.leave()
            return alternatives
        if tok.kind is Kind.IDENT and tok.text in ("true", "false") and self.peek().text != "(":
            self.advance()
            return [[ast.Constraint(tok.text, (), tok.pos)]]
        if tok.kind is Kind.IDENT and tok.text in CONSTRAINTS and self.peek().text == "(":
            self.advance()
            args = self.arguments()
            if len(args) != 2:
                raise DatalogSyntaxError.at(
                    f"{tok.text} takes 2 arguments, got {len(args)}", tok.pos, tok.text
                )
            return [[ast.Constraint(tok.text, args, tok.pos)]]
        if tok.kind is Kind.IDENT and self.peek().text == "(" and tok.text not in FUNCTORS:
            return [[self.atom()]]
        left = self.term()
        if not (self.tok.kind is Kind.PUNCT and self.tok.text in _COMPARISONS):
            raise self.error("a comparison operator (=, !=, <, <=, >, >=)")
        op = self.advance().text
        right = self.term()
        return [[ast.Comparison(op, left, right, tok.pos)]]

    def _parenthesized_body(self) -> bool:
        """Whether the ``(`` at the cursor opens a sub-body rather than a term like ``(x+1)``."""
        depth, j = 0, self.i
        while j < len(self.tokens):
            t = self.tokens[j]
            if t.kind is Kind.PUNCT and t.text == "(":
                depth += 1
            elif t.kind is Kind.PUNCT and t.text == ")":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and _starts_literal(t, self.tokens[j + 1]):
                return True
            j += 1
        return False

    def atom(self) -> ast.Atom:
        name = self.ident("a relation name")
        if not self.at("("):
            raise self.error(f"'(' after relation name {name.text!r}")
        return ast.Atom(name.text, self.arguments(), name.pos)

    def arguments(self) -> tuple[ast.Term, ...]:
        self.expect("(")
        args: list[ast.Term] = []
        if not self.at(")"):
            args.append(self.term())
            while self.at(","):
                self.advance()
                args.append(self.term())
        self.expect(")")
        return tuple(args)

    # -- terms --------------------------------------------------------------------------

    def term(self) -> ast.Term:
        self.enter(self.tok)
        result = self._chain(0)
        self.leave()
        return result

    def _chain(self, level: int) -> ast.Term:
        if level == len(_LEVELS):
            return self.unary()
        ops = _LEVELS[level]
        left = self._chain(level + 1)
        links = 0
        while self.tok.kind in (Kind.PUNCT, Kind.IDENT) and self.tok.text in ops:
            op = self.advance()
            self.enter(op, nest=False)
            links += 1
            right = self._chain(level + 1)
            left = ast.BinOp(op.text, left, right, op.pos)
        self.leave(links, nest=False)
        return left

    def unary(self) -> ast.Term:
        tok = self.tok
        if self.at("-"):
            self.enter(self.advance())
            operand = self.unary()
            self.leave()
            if isinstance(operand, ast.Const) and operand.type in ("number", "float"):
                return ast.Const(-operand.value, operand.type, tok.pos)  # type: ignore[operator]
            return ast.UnaryOp("-", operand, tok.pos)
        if tok.kind is Kind.IDENT and tok.text in ("bnot", "lnot"):
            self.enter(self.advance())
            operand = self.unary()
            self.leave()
            return ast.UnaryOp(tok.text, operand, tok.pos)
        base = self.primary()
        if self.at("^"):
            op = self.advance()
            return ast.BinOp("^", base, self.unary(), op.pos)
        return base

    def primary(self) -> ast.Term:
        tok = self.tok
        match tok.kind:
            case Kind.NUMBER:
                self.advance()
                return ast.Const(self._int64(int(tok.text, 0), tok), "number", tok.pos)
            case Kind.UNSIGNED:
                self.advance()
                return ast.Const(self._int64(int(tok.text[:-1], 0), tok), "unsigned", tok.pos)
            case Kind.FLOAT:
                self.advance()
                return ast.Const(float(tok.text), "float", tok.pos)
            case Kind.STRING:
                self.advance()
                return ast.Const(tok.text, "symbol", tok.pos)
            case Kind.PUNCT if tok.text == "(":
                self.advance()
                inner = self.term()
                self.expect(")")
                return inner
            case Kind.IDENT:
                return self.named_term()
        raise self.error("a term (variable, constant, expression or aggregate)")

    def _int64(self, value: int, tok: Token) -> int:
        # 2**63 is allowed here for "-9223372036854775808"; compile checks the folded value
        if not INT64_MIN <= value <= INT64_MAX + 1:
            raise DatalogOverflowError.at(
                f"number {tok.text} does not fit a signed 64-bit integer", tok.pos, tok.text
            )
        return value

    def named_term(self) -> ast.Term:
        tok = self.advance()
        if tok.text == "_":
            return ast.Wildcard(tok.pos)
        if tok.text == "count" and self.at(":"):
            self.advance()
            return ast.Aggregate("count", None, self.aggregate_body(), tok.pos)
        if tok.text in ("sum", "mean") or (tok.text in ("min", "max") and not self.at("(")):
            target = self.term()
            return self.aggregate(tok, target)
        if self.at("("):
            if tok.text not in FUNCTORS:
                raise DatalogSyntaxError.at(
                    f"{tok.text!r} is not a built-in function (atoms are not terms)",
                    tok.pos,
                    tok.text,
                )
            args = self.arguments()
            if tok.text in ("min", "max") and self.at(":"):
                if len(args) != 1:
                    raise self.error(f"one target expression for {tok.text}")
                return self.aggregate(tok, args[0])
            return ast.Functor(tok.text, args, tok.pos)
        return ast.Var(tok.text, tok.pos)

    def aggregate(self, tok: Token, target: ast.Term) -> ast.Aggregate:
        if tok.text == "mean":
            raise UnsupportedError.at("aggregate mean is not supported", tok.pos, "mean")
        if not self.at(":"):
            raise self.error(f"':' after the target of {tok.text}")
        self.advance()
        return ast.Aggregate(tok.text, target, self.aggregate_body(), tok.pos)

    def aggregate_body(self) -> tuple[ast.Literal, ...]:
        if not self.at("{"):
            return (self.atom(),)
        self.enter(self.advance())
        alternatives = self.conj()
        self.leave()
        if self.at(";") or len(alternatives) != 1:
            raise UnsupportedError.at(
                "disjunction inside an aggregate is not supported", self.tok.pos, ";"
            )
        self.expect("}")
        return tuple(alternatives[0])


def _starts_literal(tok: Token, following: Token) -> bool:
    """Whether ``tok`` (inside parentheses) shows that they hold literals, not a term."""
    if tok.kind is Kind.PUNCT:
        return tok.text in (";", ",", "!", *_COMPARISONS)
    return (
        tok.kind is Kind.IDENT
        and following.text == "("
        and tok.text not in FUNCTORS
        and tok.text not in _WORD_OPERATORS
    )
