"""The Datalog abstract syntax tree: immutable, typed, with source positions.

The parser produces a :class:`Program`; later passes (checks, stratification, planning) only
read it. Every node is a frozen dataclass with tuple fields and a ``pos`` pointing at its first
token. Sugar is removed at parse time: a rule with several heads or a disjunctive body (``;``)
becomes several :class:`Rule` nodes sharing the same position, so every ``Rule`` has exactly
one head and a conjunctive body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as TypingLiteral

#: The primitive types of Soufflé this front end supports.
PrimitiveType = TypingLiteral["number", "unsigned", "float", "symbol"]
PRIMITIVE_TYPES: tuple[PrimitiveType, ...] = ("number", "unsigned", "float", "symbol")

#: Aggregate functions (``count : { ... }``, ``sum x : { ... }``, ...).
AGGREGATE_FUNCTIONS = ("count", "sum", "min", "max")

#: Binary arithmetic / bitwise / logical operators, as spelled in Soufflé.
ARITHMETIC_OPERATORS = (
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "band",
    "bor",
    "bxor",
    "bshl",
    "bshr",
    "land",
    "lor",
)

#: Comparison operators of a constraint literal.
COMPARISON_OPERATORS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True, order=True)
class Pos:
    """A 1-based line and column in the program text."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


# --------------------------------------------------------------------------------- terms


@dataclass(frozen=True)
class Var:
    """A named variable."""

    name: str
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Wildcard:
    """``_``: a fresh anonymous variable at each occurrence."""

    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class Const:
    """A literal: number (int), unsigned (int, suffix ``u``), float or symbol (string)."""

    value: int | float | str
    type: PrimitiveType
    pos: Pos = field(compare=False)

    def __post_init__(self) -> None:
        expected = {"number": int, "unsigned": int, "float": float, "symbol": str}[self.type]
        if type(self.value) is not expected:
            raise TypeError(f"constant {self.value!r} is not a {self.type}")

    def __str__(self) -> str:
        if self.type == "symbol":
            return '"' + str(self.value).replace("\\", "\\\\").replace('"', '\\"') + '"'
        text = f"{self.value}u" if self.type == "unsigned" else repr(self.value)
        return f"({text})" if text.startswith("-") else text


@dataclass(frozen=True)
class BinOp:
    """``left op right`` for an operator of :data:`ARITHMETIC_OPERATORS`."""

    op: str
    left: Term
    right: Term
    pos: Pos = field(compare=False)

    def __post_init__(self) -> None:
        if self.op not in ARITHMETIC_OPERATORS:
            raise ValueError(f"unknown operator {self.op!r}")

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class UnaryOp:
    """``-x``, ``bnot x`` or ``lnot x``."""

    op: str
    operand: Term
    pos: Pos = field(compare=False)

    def __post_init__(self) -> None:
        if self.op not in ("-", "bnot", "lnot"):
            raise ValueError(f"unknown unary operator {self.op!r}")

    def __str__(self) -> str:
        return f"(-{self.operand})" if self.op == "-" else f"{self.op}({self.operand})"


@dataclass(frozen=True)
class Functor:
    """A built-in function call such as ``cat(a, b)`` or ``strlen(s)`` (see ``datalog.expr``)."""

    name: str
    args: tuple[Term, ...]
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Aggregate:
    """``count : { body }`` or ``f target : { body }`` for f in sum, min, max.

    ``target`` is None exactly for ``count``. The body is a conjunction of literals.
    """

    function: str
    target: Term | None
    body: tuple[Literal, ...]
    pos: Pos = field(compare=False)

    def __post_init__(self) -> None:
        if self.function not in AGGREGATE_FUNCTIONS:
            raise ValueError(f"unknown aggregate {self.function!r}")
        if (self.target is None) != (self.function == "count"):
            raise ValueError("count takes no target; sum/min/max take one")

    def __str__(self) -> str:
        target = "" if self.target is None else f" {self.target}"
        return f"{self.function}{target} : {{ {', '.join(map(str, self.body))} }}"


Term = Var | Wildcard | Const | BinOp | UnaryOp | Functor | Aggregate


# ------------------------------------------------------------------------------ literals


@dataclass(frozen=True)
class Atom:
    """``relation(arg, ...)``."""

    relation: str
    args: tuple[Term, ...]
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"{self.relation}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Negation:
    """``!atom``: the atom is not in its relation."""

    atom: Atom
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        return f"!{self.atom}"


@dataclass(frozen=True)
class Comparison:
    """``left op right`` for an operator of :data:`COMPARISON_OPERATORS`."""

    op: str
    left: Term
    right: Term
    pos: Pos = field(compare=False)

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPERATORS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Constraint:
    """A boolean built-in: ``contains(sub, s)``, ``match(regex, s)``, ``true``, ``false``."""

    name: str
    args: tuple[Term, ...]
    pos: Pos = field(compare=False)

    def __str__(self) -> str:
        if self.name in ("true", "false"):
            return self.name
        return f"{self.name}({', '.join(map(str, self.args))})"


Literal = Atom | Negation | Comparison | Constraint


# ---------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Attribute:
    """One column of a relation declaration: ``name: type``."""

    name: str
    type: str
    pos: Pos = field(compare=False)


@dataclass(frozen=True)
class TypeDecl:
    """``.type Name <: base`` or ``.type Name = base``: an alias of a primitive or user type."""

    name: str
    base: str
    pos: Pos = field(compare=False)


@dataclass(frozen=True)
class RelationDecl:
    """``.decl rel(a: t, ...) qualifiers``."""

    name: str
    attributes: tuple[Attribute, ...]
    qualifiers: tuple[str, ...]
    pos: Pos = field(compare=False)

    @property
    def arity(self) -> int:
        return len(self.attributes)


@dataclass(frozen=True)
class Directive:
    """``.input rel(key=value, ...)`` or ``.output rel(...)``; parameters are kept, not used."""

    kind: TypingLiteral["input", "output"]
    relation: str
    params: tuple[tuple[str, str], ...]
    pos: Pos = field(compare=False)


@dataclass(frozen=True)
class Rule:
    """``head :- body.``; a fact is a rule with an empty body."""

    head: Atom
    body: tuple[Literal, ...]
    pos: Pos = field(compare=False)

    @property
    def is_fact(self) -> bool:
        return not self.body

    def __str__(self) -> str:
        if not self.body:
            return f"{self.head}."
        return f"{self.head} :- {', '.join(map(str, self.body))}."


Statement = TypeDecl | RelationDecl | Directive | Rule


@dataclass(frozen=True)
class Program:
    """A parsed program: its statements in source order."""

    statements: tuple[Statement, ...]

    @property
    def types(self) -> tuple[TypeDecl, ...]:
        return tuple(s for s in self.statements if isinstance(s, TypeDecl))

    @property
    def declarations(self) -> tuple[RelationDecl, ...]:
        return tuple(s for s in self.statements if isinstance(s, RelationDecl))

    @property
    def directives(self) -> tuple[Directive, ...]:
        return tuple(s for s in self.statements if isinstance(s, Directive))

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(s for s in self.statements if isinstance(s, Rule))


# ------------------------------------------------------------------------------ traversal


def term_children(term: Term) -> tuple[Term, ...]:
    """The sub-terms of a term (an aggregate's body is a scope of its own: not included)."""
    match term:
        case BinOp(left=left, right=right):
            return (left, right)
        case UnaryOp(operand=operand):
            return (operand,)
        case Functor(args=args):
            return args
        case Var() | Wildcard() | Const() | Aggregate():
            return ()
    raise AssertionError(term)


def term_vars(term: Term) -> list[Var]:
    """Variables of a term in order of occurrence, not looking into aggregates."""
    if isinstance(term, Var):
        return [term]
    out: list[Var] = []
    for child in term_children(term):
        out.extend(term_vars(child))
    return out


def literal_terms(literal: Literal) -> tuple[Term, ...]:
    """The top-level terms of a literal."""
    match literal:
        case Atom(args=args):
            return args
        case Negation(atom=atom):
            return atom.args
        case Comparison(left=left, right=right):
            return (left, right)
        case Constraint(args=args):
            return args
    raise AssertionError(literal)


def aggregates_in(term: Term) -> list[Aggregate]:
    """Aggregates occurring in a term (outermost only)."""
    if isinstance(term, Aggregate):
        return [term]
    out: list[Aggregate] = []
    for child in term_children(term):
        out.extend(aggregates_in(child))
    return out
