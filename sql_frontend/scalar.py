"""Scalar expressions of the relational plan: a small, closed, immutable IR.

Expressions refer to the columns of their input relation by position (:class:`Ref`), hold
constants (:class:`Lit`) and apply a named operation (:class:`Call`) with a fixed vocabulary
(the keys of ``sql_frontend.expressions.OPS``). Every node carries its Spark SQL type.

>>> from sql_frontend.sql_types import BIGINT, BOOLEAN
>>> e = Call("gt", (Ref(0, BIGINT, "a"), Lit(1, BIGINT)), BOOLEAN)
>>> str(e)
'gt(#0:a, 1)'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from sql_frontend.sql_types import SqlType


@dataclass(frozen=True)
class Ref:
    """Column ``index`` of the input row (``name`` only for display)."""

    index: int
    type: SqlType
    name: str = ""

    def __str__(self) -> str:
        return f"#{self.index}:{self.name}" if self.name else f"#{self.index}"


@dataclass(frozen=True)
class Lit:
    """A constant; ``None`` is NULL."""

    value: object
    type: SqlType

    def __str__(self) -> str:
        if self.value is None:
            return "NULL"
        if isinstance(self.value, str):
            return repr(self.value)
        return str(self.value)


@dataclass(frozen=True)
class Call:
    """Operation ``op`` applied to ``args``; ``type`` is the result type. ``CAST`` is
    ``Call("cast", (x,), target)``; ``CASE`` is ``Call("case", (c1, v1, ..., else))``."""

    op: str
    args: tuple[Scalar, ...]
    type: SqlType

    def __str__(self) -> str:
        if self.op == "cast":
            return f"cast({self.args[0]} as {self.type})"
        return f"{self.op}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Native:
    """An operation a front end evaluates itself, vectorized: ``fn(columns, n)`` gets the
    values of ``args`` (engine columns, numpy arrays of length ``n``) and returns
    ``(values, valid)``. ``valid`` is None when every row has a value, else a boolean array;
    an expression that may leave rows without a value is ``partial`` and is only allowed
    where the plan says what such a row becomes (``Project(drop_failed=True)`` drops it, a
    ``Filter`` does not keep it). ``dtype`` is the engine dtype of the values; ``text`` is
    what EXPLAIN shows. Datalog's terms and constraints are Natives (``datalog.lower``):
    their semantics are Soufflé's, not SQL's."""

    text: str
    fn: Callable[..., tuple[Any, Any]] = field(compare=False, hash=False)
    args: tuple[Ref, ...]
    type: SqlType
    partial: bool = False
    key: object = None
    """What makes two Natives equal (with ``text`` and ``args``): equal plans share work."""

    @property
    def dtype(self) -> str:
        return self.type.engine_dtype

    def __str__(self) -> str:
        return self.text


Scalar = Ref | Lit | Call | Native


def cast_to(e: Scalar, t: SqlType) -> Scalar:
    """``e`` as type ``t``: itself when it has that type, a typed NULL literal for NULL, else
    an explicit ``cast`` call."""
    if e.type == t:
        return e
    if isinstance(e, Lit) and e.value is None:
        return Lit(None, t)
    return Call("cast", (e,), t)


def walk(e: Scalar) -> Iterator[Scalar]:
    """Every node of ``e``, parents before children."""
    yield e
    if isinstance(e, Call | Native):
        for a in e.args:
            yield from walk(a)


def is_partial(e: Scalar) -> bool:
    """Whether some rows may leave ``e`` without a value (a partial :class:`Native` in it)."""
    return any(isinstance(n, Native) and n.partial for n in walk(e))


def refs(e: Scalar) -> set[int]:
    """The input column positions ``e`` reads."""
    return {n.index for n in walk(e) if isinstance(n, Ref)}


def remap(e: Scalar, fn: Callable[[Ref], Scalar]) -> Scalar:
    """``e`` with every column reference replaced by ``fn(ref)``."""
    match e:
        case Ref():
            return fn(e)
        case Lit():
            return e
        case Call(op, args, t):
            return Call(op, tuple(remap(a, fn) for a in args), t)
        case Native(args=args):
            moved = tuple(fn(a) for a in args)
            if not all(isinstance(a, Ref) for a in moved):
                raise TypeError(f"{e}: a native expression reads columns, not expressions")
            return replace(e, args=moved)  # type: ignore[arg-type]
    raise TypeError(e)


def shift(e: Scalar, offset: int) -> Scalar:
    """``e`` reading column ``i + offset`` where it read ``i``."""
    return remap(e, lambda r: Ref(r.index + offset, r.type, r.name))


def conjuncts(e: Scalar | None) -> list[Scalar]:
    """The AND-ed parts of a predicate."""
    if e is None:
        return []
    if isinstance(e, Call) and e.op == "and":
        return [c for a in e.args for c in conjuncts(a)]
    return [e]


def conjunction(parts: list[Scalar]) -> Scalar | None:
    """AND of ``parts`` (None when empty)."""
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = Call("and", (out, p), out.type)
    return out
