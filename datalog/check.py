"""Semantic checks: declarations, arities and types.

Input: a parsed :class:`~datalog.ast.Program`. Output: a :class:`CheckedProgram` holding every
relation's resolved schema, the rules, the facts, and the type of every variable of every rule.
Range restriction (safe variables) is checked by the planner (``datalog.plan``), which must
find an evaluation order anyway; stratification by ``datalog.stratify``.

Types. ``number`` and ``unsigned`` are both 64-bit signed integers in the engine (``int64``):
an ``unsigned`` column is *not* checked for negative values and arithmetic wraps like
``number``; the two may be mixed freely. ``float`` is ``float64``; ``symbol`` is ``str``.
Integer literals are accepted where a float is expected (``f(1)`` for a float column,
``x + 1`` for a float x); otherwise int and float do not mix (use ``to_float``). A ``.type``
declaration is an alias (``<:`` subtypes are not distinguished from their base). Variables are
typed per rule: a name local to two aggregates of one rule must have one type in both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from datalog import ast
from datalog.errors import (
    ArityError,
    DatalogTypeError,
    UndeclaredRelationError,
    UnsafeVariableError,
)

#: The type classes the checker reasons about.
TypeClass = Literal["int", "float", "symbol"]

#: Engine dtype of each primitive Soufflé type.
ENGINE_DTYPES: Mapping[str, str] = MappingProxyType(
    {"number": "int64", "unsigned": "int64", "float": "float64", "symbol": "str"}
)

_CLASS_OF: Mapping[str, TypeClass] = MappingProxyType(
    {"number": "int", "unsigned": "int", "float": "float", "symbol": "symbol"}
)
_DTYPE_OF_CLASS: Mapping[TypeClass, str] = MappingProxyType(
    {"int": "int64", "float": "float64", "symbol": "str"}
)


def dtype_of_class(cls: TypeClass) -> str:
    """The engine dtype of a type class."""
    return _DTYPE_OF_CLASS[cls]


@dataclass(frozen=True)
class RelationInfo:
    """A declared relation with its types resolved to primitives."""

    name: str
    columns: tuple[str, ...]
    types: tuple[ast.PrimitiveType, ...]
    decl: ast.RelationDecl
    is_input: bool
    is_output: bool

    @property
    def arity(self) -> int:
        return len(self.columns)

    @property
    def classes(self) -> tuple[TypeClass, ...]:
        return tuple(_CLASS_OF[t] for t in self.types)

    @property
    def schema(self) -> tuple[tuple[str, str], ...]:
        """The engine schema: ``(column, dtype)`` per attribute."""
        return tuple((c, ENGINE_DTYPES[t]) for c, t in zip(self.columns, self.types, strict=True))


@dataclass(frozen=True)
class CheckedRule:
    """A rule (not a fact) with the type class of each of its variables."""

    rule: ast.Rule
    var_types: Mapping[str, TypeClass]


@dataclass(frozen=True)
class CheckedProgram:
    """A program whose relations, arities and types are consistent."""

    program: ast.Program
    relations: Mapping[str, RelationInfo]
    rules: tuple[CheckedRule, ...]
    facts: Mapping[str, tuple[ast.Rule, ...]]

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.relations.values() if r.is_input)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.relations.values() if r.is_output)


def check(program: ast.Program) -> CheckedProgram:
    """Resolve declarations and check every atom's arity and every term's type."""
    aliases = _resolve_types(program)
    relations: dict[str, RelationInfo] = {}
    io = {(d.kind, d.relation) for d in program.directives}
    for decl in program.declarations:
        if decl.name in relations:
            first = relations[decl.name].decl.pos
            raise UndeclaredRelationError.at(
                f"relation {decl.name!r} is declared twice (first at line {first.line})",
                decl.pos,
                decl.name,
            )
        names = [a.name for a in decl.attributes]
        for i, attr in enumerate(decl.attributes):
            if attr.name in names[:i]:
                raise UndeclaredRelationError.at(
                    f"attribute {attr.name!r} appears twice in relation {decl.name!r}",
                    attr.pos,
                    attr.name,
                )
        types = tuple(_primitive(a.type, aliases, a.pos) for a in decl.attributes)
        relations[decl.name] = RelationInfo(
            decl.name,
            tuple(names),
            types,
            decl,
            ("input", decl.name) in io,
            ("output", decl.name) in io,
        )
    for directive in program.directives:
        if directive.relation not in relations:
            raise UndeclaredRelationError.at(
                f".{directive.kind} of undeclared relation {directive.relation!r}",
                directive.pos,
                directive.relation,
            )

    rules: list[CheckedRule] = []
    facts: dict[str, list[ast.Rule]] = {}
    for rule in program.rules:
        if rule.is_fact:
            _check_fact(rule, relations)
            facts.setdefault(rule.head.relation, []).append(rule)
        else:
            rules.append(CheckedRule(rule, MappingProxyType(_RuleTyper(relations).run(rule))))
    return CheckedProgram(
        program,
        MappingProxyType(relations),
        tuple(rules),
        MappingProxyType({k: tuple(v) for k, v in facts.items()}),
    )


def _resolve_types(program: ast.Program) -> dict[str, ast.TypeDecl]:
    aliases: dict[str, ast.TypeDecl] = {}
    for t in program.types:
        if t.name in aliases or t.name in ast.PRIMITIVE_TYPES:
            raise UndeclaredRelationError.at(f"type {t.name!r} is declared twice", t.pos, t.name)
        aliases[t.name] = t
    for t in program.types:
        _primitive(t.name, aliases, t.pos)
    return aliases


def _primitive(name: str, aliases: Mapping[str, ast.TypeDecl], pos: ast.Pos) -> ast.PrimitiveType:
    seen: list[str] = []
    while name not in ast.PRIMITIVE_TYPES:
        if name not in aliases:
            raise UndeclaredRelationError.at(
                f"unknown type {name!r} (known: number, unsigned, float, symbol"
                + "".join(f", {a}" for a in aliases)
                + ")",
                pos,
                name,
            )
        if name in seen:
            raise UndeclaredRelationError.at(
                f"type {name!r} is defined in terms of itself", pos, name
            )
        seen.append(name)
        name = aliases[name].base
    return name


def _relation(atom: ast.Atom, relations: Mapping[str, RelationInfo]) -> RelationInfo:
    info = relations.get(atom.relation)
    if info is None:
        raise UndeclaredRelationError.at(
            f"relation {atom.relation!r} is not declared (.decl)", atom.pos, atom.relation
        )
    if len(atom.args) != info.arity:
        raise ArityError.at(
            f"relation {atom.relation!r} has {info.arity} attributes, "
            f"but {len(atom.args)} arguments are given",
            atom.pos,
            atom.relation,
        )
    return info


def _check_fact(rule: ast.Rule, relations: Mapping[str, RelationInfo]) -> None:
    info = _relation(rule.head, relations)
    typer = _RuleTyper(relations)
    for arg, cls in zip(rule.head.args, info.classes, strict=True):
        for node in _walk(arg):
            if isinstance(node, ast.Var | ast.Wildcard | ast.Aggregate):
                raise UnsafeVariableError.at(
                    f"fact {rule.head.relation}(...) must be ground, found {node}",
                    node.pos,
                    str(node),
                )
        typer.expect(arg, cls, {}, f"attribute of {info.name!r}")


def _walk(term: ast.Term) -> list[ast.Term]:
    out = [term]
    for child in ast.term_children(term):
        out.extend(_walk(child))
    return out


def _type_error(msg: str, node: ast.Term | ast.Literal) -> DatalogTypeError:
    return DatalogTypeError.at(msg, node.pos, str(node))


class _RuleTyper:
    """Infers the type class of each variable of a rule, then checks every term."""

    def __init__(self, relations: Mapping[str, RelationInfo]) -> None:
        self.relations = relations

    def run(self, rule: ast.Rule) -> dict[str, TypeClass]:
        types: dict[str, TypeClass] = {}
        body: tuple[ast.Literal, ...] = (*rule.body, rule.head)
        # 1. Variables typed by atom positions (including inside aggregates and negations).
        self._from_atoms(body, types)
        # 2. Variables typed by equalities `v = e`, until nothing changes.
        changed = True
        while changed:
            changed = self._from_equalities(body, types)
        # 3. Check every literal.
        self._check_literals(body, types)
        return types

    def _from_atoms(self, body: tuple[ast.Literal, ...], types: dict[str, TypeClass]) -> None:
        for lit in body:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom):
                info = _relation(atom, self.relations)
                for arg, cls in zip(atom.args, info.classes, strict=True):
                    if isinstance(arg, ast.Var):
                        self._bind(arg, cls, types, f"attribute of {info.name!r}")
            for term in ast.literal_terms(lit):
                for agg in ast.aggregates_in(term):
                    self._from_atoms(agg.body, types)

    def _bind(self, var: ast.Var, cls: TypeClass, types: dict[str, TypeClass], where: str) -> None:
        known = types.get(var.name)
        if known is None:
            types[var.name] = cls
        elif known != cls:
            raise _type_error(f"variable {var.name} is used as {known} and as {cls} ({where})", var)

    def _from_equalities(self, body: tuple[ast.Literal, ...], types: dict[str, TypeClass]) -> bool:
        changed = False
        for lit in body:
            for term in ast.literal_terms(lit):
                for agg in ast.aggregates_in(term):
                    changed |= self._from_equalities(agg.body, types)
            if not (isinstance(lit, ast.Comparison) and lit.op == "="):
                continue
            for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
                if isinstance(var, ast.Var) and var.name not in types:
                    cls = self.type_of(other, types)
                    if cls is not None:
                        types[var.name] = cls
                        changed = True
        return changed

    def _check_literals(self, body: tuple[ast.Literal, ...], types: dict[str, TypeClass]) -> None:
        for lit in body:
            for term in ast.literal_terms(lit):
                for agg in ast.aggregates_in(term):
                    self._check_literals(agg.body, types)
            match lit:
                case ast.Atom() | ast.Negation():
                    atom = lit.atom if isinstance(lit, ast.Negation) else lit
                    info = _relation(atom, self.relations)
                    for arg, cls in zip(atom.args, info.classes, strict=True):
                        self.expect(arg, cls, types, f"attribute of {info.name!r}")
                case ast.Comparison(left=left, right=right):
                    lc = self.type_of(left, types)
                    rc = self.type_of(right, types)
                    self._unify(lc, rc, left, right, lit)  # symbols compare lexicographically
                case ast.Constraint(args=args):
                    for arg in args:
                        self.expect(arg, "symbol", types, f"argument of {lit.name}")

    def _unify(
        self,
        lc: TypeClass | None,
        rc: TypeClass | None,
        left: ast.Term,
        right: ast.Term,
        node: ast.Term | ast.Literal,
    ) -> TypeClass | None:
        if lc is None or rc is None or lc == rc:
            return lc or rc
        if {lc, rc} == {"int", "float"}:
            int_side = left if lc == "int" else right
            if isinstance(int_side, ast.Const):
                return "float"
        raise _type_error(f"type mismatch: {left} is {lc} but {right} is {rc}", node)

    def expect(
        self, term: ast.Term, cls: TypeClass, types: Mapping[str, TypeClass], where: str
    ) -> None:
        actual = self.type_of(term, types)
        if actual is None or actual == cls:
            return
        if actual == "int" and cls == "float" and isinstance(term, ast.Const):
            return
        raise _type_error(f"{term} is {actual}, but the {where} is {cls}", term)

    def type_of(self, term: ast.Term, types: Mapping[str, TypeClass]) -> TypeClass | None:
        """The type class of a term; None when it depends on an untyped variable."""
        match term:
            case ast.Var(name=name):
                return types.get(name)
            case ast.Wildcard():
                return None
            case ast.Const(type=t):
                return _CLASS_OF[t]
            case ast.UnaryOp(op=op, operand=operand):
                cls = self.type_of(operand, types)
                if cls is not None and (cls == "symbol" or (op != "-" and cls == "float")):
                    raise _type_error(f"operator {op} does not apply to {cls}", term)
                return cls
            case ast.BinOp(op=op, left=left, right=right):
                lc = self.type_of(left, types)
                rc = self.type_of(right, types)
                cls = self._unify(lc, rc, left, right, term)
                if cls == "symbol":
                    raise _type_error(f"operator {op} does not apply to symbols (use cat)", term)
                if cls == "float" and op not in ("+", "-", "*", "/", "^"):
                    raise _type_error(f"operator {op} does not apply to floats", term)
                return cls
            case ast.Functor():
                return self._functor_type(term, types)
            case ast.Aggregate(function=function, target=target):
                if function == "count" or target is None:
                    return "int"
                cls = self.type_of(target, types)
                if cls == "symbol" and function == "sum":
                    raise _type_error("sum does not apply to symbols", term)
                return cls
        raise AssertionError(term)

    def _functor_type(self, term: ast.Functor, types: Mapping[str, TypeClass]) -> TypeClass | None:
        args = [self.type_of(a, types) for a in term.args]
        arity = {
            "cat": None,
            "strlen": 1,
            "substr": 3,
            "to_number": 1,
            "to_float": 1,
            "to_string": 1,
            "to_unsigned": 1,
            "min": None,
            "max": None,
        }
        expected = arity.get(term.name, -1)
        if expected == -1:
            raise _type_error(f"unknown function {term.name}", term)
        if (expected is not None and len(args) != expected) or (expected is None and len(args) < 1):
            raise _type_error(f"{term.name} takes {expected or 'at least 1'} argument(s)", term)

        def want(i: int, cls: TypeClass) -> None:
            if args[i] is not None and args[i] != cls:
                raise _type_error(f"argument {i + 1} of {term.name} must be {cls}", term)

        match term.name:
            case "cat":
                for i in range(len(args)):
                    want(i, "symbol")
                return "symbol"
            case "strlen":
                want(0, "symbol")
                return "int"
            case "substr":
                want(0, "symbol")
                want(1, "int")
                want(2, "int")
                return "symbol"
            case "to_number" | "to_unsigned":
                return "int"
            case "to_float":
                return "float"
            case "to_string":
                return "symbol"
        # min / max of several values
        known = [a for a in args if a is not None]
        if known and any(k != known[0] for k in known):
            consts = all(
                isinstance(a, ast.Const) or c == "float"
                for a, c in zip(term.args, args, strict=True)
                if c is not None
            )
            if consts and set(known) == {"int", "float"}:
                return "float"
            raise _type_error(f"arguments of {term.name} have different types", term)
        return known[0] if known else None
