"""The relational plan: immutable, typed, closed.

Every node is a frozen dataclass with tuple fields that validates itself when built and derives
its output ``schema`` (a tuple of ``(name, SqlType)``). Columns are referred to by position.
There is one traversal API: :meth:`Node.children`, :meth:`Node.with_children`, :func:`walk`
and :func:`transform_up`. :func:`explain` renders a plan as indented text (shared subplans,
which are equal nodes, are rendered each time they occur).

>>> from sql_frontend.sql_types import BIGINT
>>> s = Scan("t", (("a", BIGINT),))
>>> print(explain(Distinct(s)))
Distinct [a:BIGINT]
  Scan t [a:BIGINT]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from functools import cached_property
from typing import TypeVar

from ivm.errors import PlanError
from sql_frontend import scalar as sc
from sql_frontend.scalar import Scalar
from sql_frontend.sql_types import SqlType

Schema = tuple[tuple[str, SqlType], ...]
Equalities = tuple[tuple[int, int, int, int], ...]
"""A :class:`MultiJoin`'s ``conds``: ``(i, ci, j, cj)``, column ``ci`` of input ``i`` equals
column ``cj`` of input ``j``."""
E = TypeVar("E", bound=StrEnum)


class JoinKind(StrEnum):
    """How a :class:`Join` pairs its sides: SQL's join types; semi and anti keep left rows."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    SEMI = "semi"
    ANTI = "anti"
    CROSS = "cross"


class SetKind(StrEnum):
    """The set operation of a :class:`SetOp`."""

    UNION = "union"
    INTERSECT = "intersect"
    EXCEPT = "except"


class AggFunc(StrEnum):
    """The function of an :class:`AggCall`."""

    COUNT = "count"
    COUNT_STAR = "count_star"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    AVG = "avg"
    # recomputed per affected group (a function of the group's whole multiset)
    SUM_DISTINCT = "sum_distinct"
    AVG_DISTINCT = "avg_distinct"
    COUNT_DISTINCT_TUPLE = "count_distinct_tuple"
    MAX_BY = "max_by"
    MIN_BY = "min_by"
    PERCENTILE = "percentile"
    COLLECT_LIST = "collect_list"
    COLLECT_SET = "collect_set"


JOIN_KINDS = tuple(k.value for k in JoinKind)
SET_KINDS = tuple(k.value for k in SetKind)
AGG_FUNCS = tuple(f.value for f in AggFunc)
INCREMENTAL_AGGS = frozenset(
    {AggFunc.COUNT, AggFunc.COUNT_STAR, AggFunc.SUM, AggFunc.MIN, AggFunc.MAX, AggFunc.AVG}
)
"""Aggregates maintained from their changes (also the aggregates a window can run)."""
HOLISTIC_AGGS = frozenset(AggFunc) - INCREMENTAL_AGGS
"""Aggregates with no incremental form: their Aggregate is recomputed per affected group."""


class WindowFunc(StrEnum):
    """A ranking or offset function of a :class:`WindowCall` (its other functions are the
    :data:`INCREMENTAL_AGGS`, run over the window's frame)."""

    ROW_NUMBER = "row_number"
    RANK = "rank"
    DENSE_RANK = "dense_rank"
    LAG = "lag"
    LEAD = "lead"
    NTILE = "ntile"
    FIRST_VALUE = "first_value"
    LAST_VALUE = "last_value"
    PERCENT_RANK = "percent_rank"
    CUME_DIST = "cume_dist"


WINDOW_FUNCS = (
    *(f.value for f in WindowFunc),
    *(a.value for a in AggFunc if a in INCREMENTAL_AGGS),
)
FRAMED_WINDOW_FUNCS = INCREMENTAL_AGGS | {WindowFunc.FIRST_VALUE, WindowFunc.LAST_VALUE}
"""The window functions that take an explicit frame (``ROWS/RANGE BETWEEN ...``)."""
ORDERED_WINDOW_FUNCS = frozenset(WindowFunc) - FRAMED_WINDOW_FUNCS
"""The window functions that need an ORDER BY."""


def _as_member(node: object, field: str, vocabulary: type[E], what: str) -> None:
    """Store ``node.field`` (a member or its string) as a member of ``vocabulary``: the plan
    accepts the strings at its boundary and holds the enum members."""
    value = getattr(node, field)
    try:
        member = vocabulary(value)
    except ValueError:
        known = tuple(m.value for m in vocabulary)
        raise PlanError(f"unknown {what} {value!r}; known: {known}") from None
    object.__setattr__(node, field, member)


def _check_refs(what: str, e: Scalar, width: int) -> None:
    bad = [i for i in sc.refs(e) if not 0 <= i < width]
    if bad:
        raise PlanError(f"{what} {e} reads column(s) {bad} of an input with {width} columns")


def _check_cols(what: str, cols: tuple[int, ...], width: int) -> None:
    bad = [i for i in cols if not 0 <= i < width]
    if bad:
        raise PlanError(f"{what} reads column(s) {bad} of an input with {width} columns")


def _cols(cols: tuple[int, ...]) -> str:
    """Column positions as EXPLAIN prints them: ``[#0, #2]``."""
    return "[" + ", ".join(f"#{c}" for c in cols) + "]"


def _items(items: tuple[object, ...]) -> str:
    """Sort keys, aggregates or window calls as EXPLAIN prints them: ``[a, b]``."""
    return "[" + ", ".join(map(str, items)) + "]"


def _fmt_schema(schema: Schema) -> str:
    return "[" + ", ".join(f"{n}:{t}" for n, t in schema) + "]"


class Node:
    """Base of plan nodes (all are frozen dataclasses)."""

    def children(self) -> tuple[Node, ...]:
        return tuple(
            getattr(self, f.name)
            for f in fields(self)  # type: ignore[arg-type]
            if isinstance(getattr(self, f.name), Node)
        )

    def with_children(self, children: tuple[Node, ...]) -> Node:
        names = [
            f.name
            for f in fields(self)  # type: ignore[arg-type]
            if isinstance(getattr(self, f.name), Node)
        ]
        if len(names) != len(children):
            raise PlanError(f"{type(self).__name__} takes {len(names)} children")
        if all(getattr(self, n) is c for n, c in zip(names, children, strict=True)):
            return self
        return replace(self, **dict(zip(names, children, strict=True)))  # type: ignore[type-var]

    @property
    def schema(self) -> Schema:
        raise NotImplementedError

    @property
    def width(self) -> int:
        return len(self.schema)

    def label(self) -> str:
        """One line describing this node (without children) for EXPLAIN: by default the name
        of its class; nodes with fields worth showing say more."""
        return type(self).__name__


class _DeclaredSchema(Node):
    """A leaf whose schema is its ``columns`` field."""

    columns: Schema

    @cached_property
    def schema(self) -> Schema:
        return self.columns


class _InputSchema(Node):
    """A node whose rows have the columns of its ``input``."""

    input: Node

    @cached_property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True)
class Scan(_DeclaredSchema):
    """A base table or a materialized view read as an input of the dataflow."""

    table: str
    columns: Schema

    def label(self) -> str:
        return f"Scan {self.table}"


@dataclass(frozen=True)
class Filter(_InputSchema):
    """Rows of ``input`` for which ``predicate`` is TRUE (NULL and FALSE drop the row)."""

    input: Node
    predicate: Scalar

    def __post_init__(self) -> None:
        _check_refs("Filter predicate", self.predicate, self.input.width)

    def label(self) -> str:
        return f"Filter {self.predicate}"


@dataclass(frozen=True)
class Project(Node):
    """One output column per expression over ``input``'s columns.

    ``drop_failed``: a row on which a partial expression (:class:`~.scalar.Native`) has no
    value is dropped — Datalog's reading of a failed partial operation (no binding, the rule
    does not fire). Without it a partial expression is refused (SQL raises instead)."""

    input: Node
    exprs: tuple[Scalar, ...]
    names: tuple[str, ...]
    drop_failed: bool = False

    def __post_init__(self) -> None:
        if len(self.exprs) != len(self.names):
            raise PlanError("Project needs one name per expression")
        for e in self.exprs:
            _check_refs("Project expression", e, self.input.width)
            if not self.drop_failed and sc.is_partial(e):
                raise PlanError(f"Project of the partial {e} must say drop_failed")

    @cached_property
    def schema(self) -> Schema:
        return tuple((n, e.type) for n, e in zip(self.names, self.exprs, strict=True))

    @property
    def is_identity(self) -> bool:
        return len(self.exprs) == self.input.width and all(
            isinstance(e, sc.Ref) and e.index == i for i, e in enumerate(self.exprs)
        )

    def label(self) -> str:
        return (
            "Project "
            + ", ".join(
                f"{e}" if isinstance(e, sc.Ref) and e.name == n else f"{e} AS {n}"
                for e, n in zip(self.exprs, self.names, strict=True)
            )
            + (" (rows where an expression fails are dropped)" if self.drop_failed else "")
        )


@dataclass(frozen=True)
class Generate(Node):
    """Spark's ``Generate``: each row of ``input`` followed by each row the table function
    ``generator`` (``explode``, ``stack``, ``json_tuple`` ...; :mod:`.expressions.generators`)
    yields from ``args`` over it; the output is the input columns then ``names``. ``outer``:
    a row for which the generator yields nothing is kept once, its generated columns NULL.

    A linear operator (a flat-map): an input row's difference is its generated rows'
    difference, so the node is maintained per change, whatever else the view does."""

    input: Node
    generator: str
    args: tuple[Scalar, ...]
    names: tuple[str, ...]
    types: tuple[SqlType, ...]
    outer: bool = False

    def __post_init__(self) -> None:
        if len(self.names) != len(self.types):
            raise PlanError("Generate needs one name per generated column")
        for e in self.args:
            _check_refs("Generate argument", e, self.input.width)

    @cached_property
    def schema(self) -> Schema:
        return self.input.schema + tuple(zip(self.names, self.types, strict=True))

    def label(self) -> str:
        args = ", ".join(map(str, self.args))
        outer = " outer" if self.outer else ""
        return f"Generate {self.generator}({args}){outer} (per change: a flat-map)"


@dataclass(frozen=True)
class Join(Node):
    """``left`` joined with ``right``: equality of ``left_keys[i]`` and ``right_keys[i]`` (SQL
    equality: NULL keys never match; ``<=>`` where ``null_safe[i]``: NULL matches NULL) and
    ``residual`` over the concatenated row (left columns
    then right columns). semi/anti output only the left columns. ``null_aware`` (anti only,
    one key, no residual) is NOT IN: a left row is dropped when its key matches, when its key
    is NULL and the right side is not empty, or when the right side holds a NULL key."""

    left: Node
    right: Node
    kind: JoinKind
    left_keys: tuple[int, ...] = ()
    right_keys: tuple[int, ...] = ()
    residual: Scalar | None = None
    null_aware: bool = False
    null_safe: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        _as_member(self, "kind", JoinKind, "join kind")
        if len(self.left_keys) != len(self.right_keys):
            raise PlanError("Join needs as many left keys as right keys")
        if self.null_safe and (len(self.null_safe) != len(self.left_keys) or self.null_aware):
            raise PlanError("Join null_safe needs one flag per key, and no null-aware join")
        _check_cols("Join left key", self.left_keys, self.left.width)
        _check_cols("Join right key", self.right_keys, self.right.width)
        if self.residual is not None:
            _check_refs("Join residual", self.residual, self.left.width + self.right.width)
        if self.null_aware and (
            self.kind != "anti" or len(self.left_keys) != 1 or self.residual is not None
        ):
            raise PlanError("a null-aware join is an anti join on one key without residual")
        if self.kind == "cross" and (self.left_keys or self.residual is not None):
            raise PlanError("a cross join has no condition")

    @cached_property
    def schema(self) -> Schema:
        if self.kind in ("semi", "anti"):
            return self.left.schema
        return self.left.schema + self.right.schema

    def label(self) -> str:
        safe = self.null_safe or (False,) * len(self.left_keys)
        keys = ", ".join(
            f"#{a} {'<=>' if ns else '='} #{self.left.width + b}"
            for a, b, ns in zip(self.left_keys, self.right_keys, safe, strict=True)
        )
        parts = [f"Join {self.kind}" + (" null-aware" if self.null_aware else "")]
        if keys:
            parts.append(f"keys [{keys}]")
        if self.residual is not None:
            parts.append(f"residual {self.residual}")
        return " ".join(parts)


@dataclass(frozen=True)
class AggCall:
    """An aggregate over column ``arg`` of the aggregate's input (None for COUNT(*))."""

    func: AggFunc
    arg: int | None
    distinct: bool
    type: SqlType
    extra: tuple[int, ...] = ()
    """More argument columns (the ordering of max_by/min_by, the rest of a distinct tuple)."""
    param: object = None
    """A constant parameter (the fraction of ``percentile``)."""

    def __post_init__(self) -> None:
        _as_member(self, "func", AggFunc, "aggregate")
        if (self.arg is None) != (self.func == "count_star"):
            raise PlanError("only COUNT(*) has no argument")

    def __str__(self) -> str:
        if self.func == "count_star":
            return "count(*)"
        args = ", ".join(f"#{i}" for i in (self.arg, *self.extra))
        if self.param is not None:
            args += f", {self.param}"
        how = " [recomputed per group]" if self.func in HOLISTIC_AGGS else ""
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{args}){how}"


@dataclass(frozen=True)
class Aggregate(Node):
    """GROUP BY ``group`` columns; output: the group columns then one column per aggregate.
    With no group columns this is a global aggregate: exactly one row, even over no input."""

    input: Node
    group: tuple[int, ...]
    aggs: tuple[AggCall, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_cols("Aggregate group", self.group, self.input.width)
        _check_cols(
            "Aggregate argument",
            tuple(a.arg for a in self.aggs if a.arg is not None),
            self.input.width,
        )
        if len(self.names) != len(self.group) + len(self.aggs):
            raise PlanError("Aggregate needs one name per group column and aggregate")

    @cached_property
    def schema(self) -> Schema:
        types = [self.input.schema[g][1] for g in self.group] + [a.type for a in self.aggs]
        return tuple(zip(self.names, types, strict=True))

    def label(self) -> str:
        return f"Aggregate group {_cols(self.group)} aggs {_items(self.aggs)}"


@dataclass(frozen=True)
class Distinct(_InputSchema):
    """Each row of ``input`` once."""

    input: Node


@dataclass(frozen=True)
class SetOp(Node):
    """UNION / INTERSECT / EXCEPT, ``all`` keeping multiplicities; rows compare with NULLs
    equal. Output names are the left's."""

    kind: SetKind
    all: bool
    left: Node
    right: Node

    def __post_init__(self) -> None:
        _as_member(self, "kind", SetKind, "set operation")
        if self.left.width != self.right.width:
            raise PlanError(
                f"{self.kind.upper()} of {self.left.width} and {self.right.width} columns"
            )

    @cached_property
    def schema(self) -> Schema:
        return self.left.schema

    def label(self) -> str:
        return f"{self.kind.capitalize()}{' All' if self.all else ''}"


@dataclass(frozen=True)
class SortKey:
    """Order by column ``index``; Spark's default puts NULLs first ascending, last descending."""

    index: int
    descending: bool = False
    nulls_first: bool = True

    def __str__(self) -> str:
        return (
            f"#{self.index} {'DESC' if self.descending else 'ASC'} "
            f"NULLS {'FIRST' if self.nulls_first else 'LAST'}"
        )


@dataclass(frozen=True)
class TopK(_InputSchema):
    """Per ``group``, the first ``limit`` rows (after skipping ``offset``) in ``order``."""

    input: Node
    order: tuple[SortKey, ...]
    limit: int
    offset: int = 0
    group: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_cols("TopK order", tuple(k.index for k in self.order), self.input.width)
        _check_cols("TopK group", self.group, self.input.width)
        if self.limit < 0 or self.offset < 0:
            raise PlanError("TopK needs a non-negative limit and offset")

    def label(self) -> str:
        grp = f" group {_cols(self.group)}" if self.group else ""
        off = f" offset {self.offset}" if self.offset else ""
        return f"TopK {self.limit}{off}{grp} order {_items(self.order)}"


@dataclass(frozen=True)
class WindowCall:
    """A window function over column ``arg`` (None for ranking functions and COUNT(*)): a
    :class:`WindowFunc` or an incremental aggregate (a running aggregate, or over a frame)."""

    func: WindowFunc | AggFunc
    arg: int | None
    type: SqlType
    param: object = None
    """lag/lead: (offset, default value); ntile: the bucket count."""
    frame: tuple | None = None
    """An explicit frame ``(kind, start, end)``: kind ``rows``/``range``, bounds an int offset
    (negative = PRECEDING), 0 = CURRENT ROW, None = UNBOUNDED."""

    def __post_init__(self) -> None:
        func = self.func
        if func in INCREMENTAL_AGGS:
            object.__setattr__(self, "func", AggFunc(func))
        elif func not in WINDOW_FUNCS:
            raise PlanError(f"unknown window function {func!r}; known: {WINDOW_FUNCS}")
        else:
            object.__setattr__(self, "func", WindowFunc(func))

    def __str__(self) -> str:
        out = f"{self.func}({'' if self.arg is None else f'#{self.arg}'})"
        if self.param is not None:
            out += f" {self.param}"
        if self.frame is not None:
            out += f" {self.frame[0]} between {self.frame[1]} and {self.frame[2]}"
        return out


@dataclass(frozen=True)
class Window(Node):
    """Adds one column per function, computed over the row's partition. Without ``order``
    aggregates span the whole partition; with it they run from the partition's start to the
    row's last peer (Spark's default frame)."""

    input: Node
    partition: tuple[int, ...]
    order: tuple[SortKey, ...]
    funcs: tuple[WindowCall, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_cols("Window partition", self.partition, self.input.width)
        _check_cols("Window order", tuple(k.index for k in self.order), self.input.width)
        _check_cols(
            "Window argument",
            tuple(f.arg for f in self.funcs if f.arg is not None),
            self.input.width,
        )
        if len(self.names) != len(self.funcs):
            raise PlanError("Window needs one name per function")

    @cached_property
    def schema(self) -> Schema:
        return self.input.schema + tuple(
            (n, f.type) for n, f in zip(self.names, self.funcs, strict=True)
        )

    def label(self) -> str:
        order = _items(self.order)
        return f"Window partition {_cols(self.partition)} order {order} {_items(self.funcs)}"


@dataclass(frozen=True)
class Values(_DeclaredSchema):
    """Constant rows (each once per occurrence): Datalog's facts, the unit relation."""

    rows: tuple[tuple[object, ...], ...]
    columns: Schema
    name: str = "values"

    def __post_init__(self) -> None:
        if any(len(r) != len(self.columns) for r in self.rows):
            raise PlanError(f"Values {self.name}: every row needs {len(self.columns)} values")

    def label(self) -> str:
        shown = ", ".join(map(str, self.rows[:3])) + (", ..." if len(self.rows) > 3 else "")
        return f"Values {self.name} {len(self.rows)} row(s) [{shown}]"


@dataclass(frozen=True)
class Empty(_DeclaredSchema):
    """No rows (the seed of a recursive relation defined only through others)."""

    columns: Schema


@dataclass(frozen=True)
class RecRef(_DeclaredSchema):
    """Inside a recursive binding: the current value of the recursive relation ``name``."""

    name: str
    columns: Schema

    def label(self) -> str:
        return f"RecRef {self.name}"


@dataclass(frozen=True)
class Binding:
    """One relation of a recursive CTE: the least fixed point of
    ``name = seed ∪ step(names...)`` (``distinct``: UNION; else UNION ALL)."""

    name: str
    columns: Schema
    seed: Node
    step: Node
    distinct: bool

    def __post_init__(self) -> None:
        for part in (self.seed, self.step):
            if part.width != len(self.columns):
                raise PlanError(
                    f"recursive CTE {self.name} has {len(self.columns)} columns "
                    f"but a part of it has {part.width}"
                )


@dataclass(frozen=True)
class Recursive(Node):
    """The fixed point of relation ``index`` of a group of (mutually) recursive bindings.

    ``max_iterations`` caps the loop (the result is then the capped iterate, not a fixed
    point): for a program that may not converge (Datalog's recursive min/max)."""

    bindings: tuple[Binding, ...]
    index: int
    max_iterations: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.index < len(self.bindings):
            raise PlanError("Recursive index out of range")

    def children(self) -> tuple[Node, ...]:
        return tuple(n for b in self.bindings for n in (b.seed, b.step))

    def with_children(self, children: tuple[Node, ...]) -> Node:
        if len(children) != 2 * len(self.bindings):
            raise PlanError("Recursive takes a seed and a step per binding")
        bindings = tuple(
            replace(b, seed=children[2 * i], step=children[2 * i + 1])
            for i, b in enumerate(self.bindings)
        )
        return self if bindings == self.bindings else replace(self, bindings=bindings)

    @cached_property
    def schema(self) -> Schema:
        return self.bindings[self.index].columns

    def label(self) -> str:
        b = self.bindings[self.index]
        others = [x.name for x in self.bindings if x is not b]
        mutual = f" (with {', '.join(others)})" if others else ""
        return f"Recursive {b.name}{mutual} {'UNION' if b.distinct else 'UNION ALL'}"


@dataclass(frozen=True)
class _AsOf(Node):
    """An as-of join: ``left``'s rows each paired with (at most) one version of ``right``'s
    matching rows; output the left columns then the right ones."""

    left: Node
    right: Node

    @cached_property
    def schema(self) -> Schema:
        return self.left.schema + self.right.schema


def _check_as_of(
    node: ArrivalJoin | AsofJoin, left_cols: tuple[int, ...], right_cols: tuple[int, ...]
) -> None:
    """What both as-of joins require: inner or left, one right key per left key, the key (and
    time) columns within their side."""
    what = type(node).__name__
    _as_member(node, "kind", JoinKind, "join kind")
    if node.kind not in (JoinKind.INNER, JoinKind.LEFT):
        raise PlanError(f"an as-of join is inner or left, not {node.kind.value!r}")
    if len(node.left_keys) != len(node.right_keys):
        raise PlanError(f"{what} needs as many left keys as right keys")
    _check_cols(f"{what} left key", left_cols, node.left.width)
    _check_cols(f"{what} right key", right_cols, node.right.width)


@dataclass(frozen=True)
class ArrivalJoin(_AsOf):
    """Processing-time as-of join (``JOIN r FOR SYSTEM_TIME AS OF PROCTIME()``): each row of
    ``left`` joins ``right`` as it is when the row arrives; later changes of ``right`` never
    revise it. A retraction of a left row subtracts its join with ``right`` as it is at the
    retraction. ``kind`` is inner or left (an unmatched row is padded with NULLs at arrival);
    keys and residual as in :class:`Join`."""

    kind: JoinKind
    left_keys: tuple[int, ...] = ()
    right_keys: tuple[int, ...] = ()
    residual: Scalar | None = None

    def __post_init__(self) -> None:
        _check_as_of(self, self.left_keys, self.right_keys)
        if self.residual is not None:
            _check_refs("ArrivalJoin residual", self.residual, self.left.width + self.right.width)

    def as_join(self) -> Join:
        """The ordinary join that each arriving (or retracted) left row is put through."""
        return Join(
            self.left, self.right, self.kind, self.left_keys, self.right_keys, self.residual
        )

    def label(self) -> str:
        return "ArrivalJoin" + self.as_join().label()[len("Join") :] + " (processing time)"


@dataclass(frozen=True)
class AsofJoin(_AsOf):
    """Event-time as-of join (DuckDB's ``ASOF JOIN … ON l.k = r.k AND l.t >= r.t``): each
    row of ``left`` is paired, among the rows of ``right`` with equal keys (NULL keys never
    match), with the one whose ``right_time`` is the greatest ``<= left_time`` (ties: the
    smallest row). ``kind`` left keeps unmatched left rows, padded with NULLs."""

    kind: JoinKind
    left_keys: tuple[int, ...]
    right_keys: tuple[int, ...]
    left_time: int
    right_time: int

    def __post_init__(self) -> None:
        left_cols, right_cols = (
            (*self.left_keys, self.left_time),
            (*self.right_keys, self.right_time),
        )
        _check_as_of(self, left_cols, right_cols)

    def label(self) -> str:
        lw = self.left.width
        keys = ", ".join(
            f"#{a} = #{lw + b}" for a, b in zip(self.left_keys, self.right_keys, strict=True)
        )
        return (
            f"AsofJoin {self.kind} keys [{keys}] time #{self.left_time} >= "
            f"#{lw + self.right_time} (event time)"
        )


JOIN_STRATEGIES = ("delta", "binary")


@dataclass(frozen=True)
class MultiJoin(Node):
    """An inner equi-join of three or more ``inputs`` (output: their columns in order).

    ``conds`` are equalities ``(i, ci, j, cj)``: column ``ci`` of input ``i`` equals column
    ``cj`` of input ``j`` (``i < j``; NULLs never match); ``residual`` is applied to the
    joined row. ``strategy`` is ``delta`` (a delta query: only the inputs are arranged,
    :func:`ivm.collection.delta_join`) or ``binary`` (left-deep binary joins, which arrange
    intermediate results). ``arrangements`` and ``note`` are the planner's estimates, shown
    by EXPLAIN."""

    inputs: tuple[Node, ...]
    conds: Equalities
    residual: Scalar | None
    strategy: str
    arrangements: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if len(self.inputs) < 2:
            raise PlanError("MultiJoin needs at least two inputs")
        if self.strategy not in JOIN_STRATEGIES:
            raise PlanError(f"unknown join strategy {self.strategy!r}; known: {JOIN_STRATEGIES}")
        for i, ci, j, cj in self.conds:
            if not 0 <= i < j < len(self.inputs):
                raise PlanError(f"MultiJoin condition {(i, ci, j, cj)} needs inputs i < j")
            _check_cols("MultiJoin key", (ci,), self.inputs[i].width)
            _check_cols("MultiJoin key", (cj,), self.inputs[j].width)
        if self.residual is not None:
            _check_refs("MultiJoin residual", self.residual, sum(n.width for n in self.inputs))

    def children(self) -> tuple[Node, ...]:
        return self.inputs

    def with_children(self, children: tuple[Node, ...]) -> Node:
        if len(children) != len(self.inputs):
            raise PlanError(f"MultiJoin takes {len(self.inputs)} children")
        if all(a is b for a, b in zip(children, self.inputs, strict=True)):
            return self
        return replace(self, inputs=tuple(children))

    @cached_property
    def offsets(self) -> tuple[int, ...]:
        out = [0]
        for n in self.inputs:
            out.append(out[-1] + n.width)
        return tuple(out)

    @cached_property
    def schema(self) -> Schema:
        return tuple(c for n in self.inputs for c in n.schema)

    def as_binary(self) -> Node:
        """The left-deep binary plan: input ``k`` joins the first ``k`` on its equalities with
        them; each residual conjunct is applied as soon as its columns are bound."""
        off = self.offsets
        pending = sc.conjuncts(self.residual)
        acc = self.inputs[0]
        for k in range(1, len(self.inputs)):
            ks = [(off[i] + ci, cj) for i, ci, j, cj in self.conds if j == k]
            ready = [c for c in pending if max(sc.refs(c), default=-1) < off[k + 1]]
            pending = [c for c in pending if c not in ready]
            res = sc.conjunction(ready)
            if not ks and res is None:
                acc = Join(acc, self.inputs[k], JoinKind.CROSS)
            else:
                acc = Join(
                    acc,
                    self.inputs[k],
                    JoinKind.INNER,
                    tuple(a for a, _ in ks),
                    tuple(b for _, b in ks),
                    res,
                )
        return acc

    def label(self) -> str:
        off = self.offsets
        keys = ", ".join(f"#{off[i] + ci} = #{off[j] + cj}" for i, ci, j, cj in self.conds)
        parts = [f"MultiJoin {self.strategy} plan, {len(self.inputs)} inputs keys [{keys}]"]
        if self.residual is not None:
            parts.append(f"residual {self.residual}")
        if self.arrangements:
            parts.append(f"arrangements [{'; '.join(self.arrangements)}]")
        if self.note:
            parts.append(f"({self.note})")
        return " ".join(parts)


def walk(node: Node) -> Iterator[Node]:
    """Every node of the plan, parents before children (shared subplans once per path)."""
    yield node
    for c in node.children():
        yield from walk(c)


def transform_up(node: Node, fn: Callable[[Node], Node | None]) -> tuple[Node, bool]:
    """Rebuild ``node`` bottom-up, replacing each node ``n`` by ``fn(n)`` unless that is None;
    returns the new plan and whether anything changed."""
    changed = False
    kids = []
    for c in node.children():
        new, ch = transform_up(c, fn)
        kids.append(new)
        changed = changed or ch
    node = node.with_children(tuple(kids)) if kids else node
    out = fn(node)
    if out is not None and out is not node:
        return out, True
    return node, changed


def tables(node: Node) -> tuple[str, ...]:
    """Names of the inputs a plan scans, sorted."""
    return tuple(sorted({n.table for n in walk(node) if isinstance(n, Scan)}))


def explain(node: Node) -> str:
    """The plan as indented text, one node per line with its output schema."""
    lines: list[str] = []
    seen_loops: set[tuple[Binding, ...]] = set()

    def go(n: Node, depth: int) -> None:
        pad = "  " * depth
        lines.append(f"{pad}{n.label()} {_fmt_schema(n.schema)}")
        if isinstance(n, Recursive):
            if n.bindings in seen_loops:
                lines.append(f"{pad}  (loop shown above)")
                return
            seen_loops.add(n.bindings)
            for b in n.bindings:
                lines.append(f"{pad}  binding {b.name} {'UNION' if b.distinct else 'UNION ALL'}")
                lines.append(f"{pad}    seed:")
                go(b.seed, depth + 3)
                lines.append(f"{pad}    step:")
                go(b.step, depth + 3)
            return
        for c in n.children():
            go(c, depth + 1)

    go(node, 0)
    return "\n".join(lines)


__all__ = [
    "AggCall",
    "AggFunc",
    "Aggregate",
    "ArrivalJoin",
    "AsofJoin",
    "Binding",
    "Distinct",
    "Empty",
    "Equalities",
    "Filter",
    "Generate",
    "Join",
    "JoinKind",
    "MultiJoin",
    "Node",
    "Project",
    "RecRef",
    "Recursive",
    "Scan",
    "Schema",
    "SetOp",
    "SortKey",
    "TopK",
    "Values",
    "Window",
    "WindowCall",
    "WindowFunc",
    "explain",
    "tables",
    "transform_up",
    "walk",
]
