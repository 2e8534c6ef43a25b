"""Datalog → the relational plan SQL compiles through (:mod:`sql_frontend.plan`).

Each relation becomes one plan node; :func:`sql_frontend.compile.compile_plans` turns them into
``ivm`` collections, so Datalog and SQL share the compiler, recursion (``Recursive``), the SCC
utility (:mod:`sql_frontend.scc`, via :mod:`datalog.stratify`) and EXPLAIN. What differs from
SQL is stated by the plan itself:

* **Set semantics.** A relation is ``Distinct(input ∪ facts ∪ rules)`` (no ``Distinct`` over a
  single part that already is a set); a recursive SCC is one ``Recursive`` group whose bindings
  are ``distinct`` (``UNION``), so the fixed point is the least model.
* **No NULLs.** Columns are ``NOT NULL`` types (``BIGINT``/``DOUBLE``/``STRING NOT NULL``: the
  Datalog type bridge, :func:`sql_type`), held by the engine in ``int64``/``float64``/``str``.
* **Soufflé's expressions.** Terms and constraints are :class:`~sql_frontend.scalar.Native`
  expressions evaluated by :mod:`datalog.expr`. A partial operation that fails (``1 / 0``, a
  bad ``to_number``) leaves the row without a value: a ``Project(drop_failed=True)`` drops the
  binding (the rule does not fire), a ``Filter`` does not keep it.
* **Aggregates** (Soufflé): ``count``/``sum`` of a group without matches are 0 (the bindings
  without a match are the ``anti`` join of the outer binding with the aggregate, given 0);
  ``min``/``max`` give no value. A global aggregate groups by a constant, so that an empty
  body yields no row (SQL's one-row rule does not apply).

The rule's evaluation order is :mod:`datalog.plan`'s (joins on shared variables, filters and
binds as soon as bound, anti-joins, aggregates); this module only writes it as plan nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from datalog import ast
from datalog import plan as dp
from datalog.analysis import Analysis
from datalog.check import RelationInfo, TypeClass
from datalog.expr import as_array, compile_condition, compile_term
from datalog.stratify import precedence_edges
from sql_frontend import plan as p
from sql_frontend.plan import AggFunc, JoinKind
from sql_frontend.scalar import Native, Ref, Scalar
from sql_frontend.sql_types import BIGINT, BOOLEAN, DOUBLE, STRING, SqlType

_SQL_OF_CLASS: Mapping[TypeClass, SqlType] = {
    "int": BIGINT.without_nulls(),
    "float": DOUBLE.without_nulls(),
    "symbol": STRING.without_nulls(),
}


def sql_type(cls: TypeClass) -> SqlType:
    """The Datalog type bridge: a type class as a (NOT NULL) SQL type of the plan."""
    return _SQL_OF_CLASS[cls]


def columns_of(info: RelationInfo) -> p.Schema:
    """A relation's plan schema: its declared columns, NOT NULL."""
    return tuple((c, sql_type(k)) for c, k in zip(info.columns, info.classes, strict=True))


def lower_program(analysis: Analysis, max_iterations: int | None = None) -> dict[str, p.Node]:
    """Every relation of the program as a plan node (``.input`` relations are ``Scan`` s of
    their name). ``max_iterations`` caps every recursive group."""
    return _Lowering(analysis, max_iterations).program()


@dataclass
class _Binding:
    """A plan whose column i holds variable ``vars[i]`` (None: a column no variable needs)."""

    node: p.Node
    vars: list[str | None]

    def index(self, var: str) -> int:
        return self.vars.index(var)

    @property
    def columns(self) -> dict[str, int]:
        return {v: i for i, v in enumerate(self.vars) if v is not None}

    def refs(self, idx: Sequence[int]) -> tuple[Ref, ...]:
        return tuple(Ref(i, self.node.schema[i][1]) for i in idx)

    def compact(self) -> _Binding:
        """The binding without its unneeded columns (before it is arranged)."""
        keep = [i for i, v in enumerate(self.vars) if v is not None]
        if len(keep) == len(self.vars):
            return self
        return _Binding(_project(self.node, keep), [self.vars[i] for i in keep])


def _project(node: p.Node, idx: Sequence[int]) -> p.Node:
    """``node`` reduced to columns ``idx`` (itself for the identity)."""
    if list(idx) == list(range(node.width)):
        return node
    exprs = tuple(Ref(i, node.schema[i][1]) for i in idx)
    return p.Project(node, exprs, tuple(node.schema[i][0] for i in idx))


def _native(
    text: str, fn: Callable[..., tuple[Any, Any]], width: int, node: p.Node, t: SqlType, **kw: Any
) -> Native:
    """A Datalog expression over every column of ``node`` (compiled against its layout)."""
    args = tuple(Ref(i, node.schema[i][1]) for i in range(width))
    return Native(text, fn, args, t, **kw)


def _with(node: p.Node, expr: Native, name: str) -> p.Node:
    """``node`` plus a column ``expr`` (a row where it fails is dropped)."""
    refs = tuple(Ref(i, node.schema[i][1]) for i in range(node.width))
    names = (*(n for n, _ in node.schema), name)
    return p.Project(node, (*refs, expr), names, drop_failed=expr.partial)


def _constant(value: object, cls: TypeClass, node: p.Node) -> Native:
    """A constant column (NOT NULL, the class's dtype) alongside ``node``."""

    def fn(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, None]:
        return as_array(np.full(n, value, dtype=object), cls), None

    return Native(repr(value), fn, (), sql_type(cls), key=(value, cls))


def _union(parts: Sequence[p.Node]) -> p.Node:
    """UNION ALL of ``parts``."""
    out = parts[0]
    for part in parts[1:]:
        out = p.SetOp(p.SetKind.UNION, True, out, part)
    return out


def _is_set(node: p.Node) -> bool:
    """Whether ``node`` is known to hold each row once."""
    if isinstance(node, p.Distinct | p.Values | p.Recursive | p.RecRef):
        return True
    if isinstance(node, p.Project) and not node.drop_failed:
        idx = [e.index for e in node.exprs if isinstance(e, Ref)]
        injective = len(idx) == len(node.exprs) == node.input.width == len(set(idx))
        return injective and _is_set(node.input)
    return False


class _Lowering:
    def __init__(self, analysis: Analysis, max_iterations: int | None) -> None:
        self.analysis = analysis
        self.max_iterations = max_iterations
        self.var_types = {id(r.rule): r.var_types for r in analysis.checked.rules}

    def info(self, rel: str) -> RelationInfo:
        return self.analysis.relations[rel]

    # -- relations ------------------------------------------------------------------------

    def program(self) -> dict[str, p.Node]:
        env: dict[str, p.Node] = {}
        by_head: dict[str, list[dp.RulePlan]] = {}
        for plan in self.analysis.plans:
            by_head.setdefault(plan.rule.head.relation, []).append(plan)
        for stratum in self.analysis.strata:
            members = set(stratum.relations)
            rules = {rel: by_head.get(rel, []) for rel in stratum.relations}
            recursive = {
                rel: [r for r in rules[rel] if stratum.recursive and _reads(r.rule, members)]
                for rel in stratum.relations
            }
            bases = {
                rel: self.relation(
                    rel, [self.rule(r, env) for r in rules[rel] if r not in recursive[rel]]
                )
                for rel in stratum.relations
            }
            if not stratum.recursive:
                env.update(bases)
                continue
            env.update(self.recursive(stratum.relations, bases, recursive, env))
        return env

    def relation(self, rel: str, rule_nodes: list[p.Node]) -> p.Node:
        """The non-recursive part of ``rel``: input, facts and rules, as a set."""
        info = self.info(rel)
        parts: list[p.Node] = []
        if info.is_input:
            parts.append(p.Scan(rel, columns_of(info)))
        facts = self.analysis.checked.facts.get(rel, ())
        if facts:
            rows = dict.fromkeys(r for f in facts if (r := _fact_row(f, info)) is not None)
            parts.append(p.Values(tuple(rows), columns_of(info), f"facts:{rel}"))
        parts.extend(rule_nodes)
        if not parts:
            return p.Empty(columns_of(info))
        if len(parts) == 1 and _is_set(parts[0]):
            return parts[0]
        return p.Distinct(_union(parts))

    def recursive(
        self,
        relations: Sequence[str],
        bases: Mapping[str, p.Node],
        rules: Mapping[str, list[dp.RulePlan]],
        env: Mapping[str, p.Node],
    ) -> dict[str, p.Node]:
        """One ``Recursive`` group for a recursive SCC: each relation starts at its base and
        adds its recursive rules over the current relations, distinct (set semantics)."""
        inner = dict(env)
        inner.update({rel: p.RecRef(rel, columns_of(self.info(rel))) for rel in relations})
        bindings = []
        for rel in relations:
            columns = columns_of(self.info(rel))
            steps = [self.rule(r, inner) for r in rules[rel]]
            step = _union(steps) if steps else p.Empty(columns)
            bindings.append(p.Binding(rel, columns, bases[rel], step, distinct=True))
        group = tuple(bindings)
        return {rel: p.Recursive(group, i, self.max_iterations) for i, rel in enumerate(relations)}

    # -- rules ----------------------------------------------------------------------------

    def rule(self, plan: dp.RulePlan, env: Mapping[str, p.Node]) -> p.Node:
        """A rule's results in its head relation's columns (a bag; the relation is the set)."""
        types: dict[str, TypeClass] = dict(self.var_types[id(plan.rule)])
        binding = self.conjunction(plan.body, env, types, None)
        info = self.info(plan.rule.head.relation)
        exprs: list[Scalar] = []
        for term, cls in zip(plan.head, info.classes, strict=True):
            if isinstance(term, ast.Var) and types[term.name] == cls:
                i = binding.index(term.name)
                exprs.append(Ref(i, binding.node.schema[i][1]))
                continue
            compiled = compile_term(term, binding.columns, types, want=cls)
            exprs.append(
                _native(
                    str(term),
                    _as_class(compiled, cls),
                    binding.node.width,
                    binding.node,
                    sql_type(cls),
                    partial=compiled.partial,
                    key=(term, cls, tuple(binding.vars)),
                )
            )
        drop = any(isinstance(e, Native) and e.partial for e in exprs)
        return p.Project(binding.node, tuple(exprs), info.columns, drop_failed=drop)

    def conjunction(
        self,
        plan: dp.ConjunctionPlan,
        env: Mapping[str, p.Node],
        types: dict[str, TypeClass],
        outer: _Binding | None,
    ) -> _Binding:
        match plan.start:
            case dp.Scan(atom=atom):
                binding = self.scan(atom, env, types)
            case dp.Unit():
                unit = p.Values(((0,),), (("unit", BIGINT.without_nulls()),), "datalog:unit")
                binding = _Binding(unit, ["@unit"])
            case dp.Seed(vars=vs):
                assert outer is not None
                seed = p.Distinct(_project(outer.node, [outer.index(v) for v in vs]))
                binding = _Binding(seed, list(vs))
        for step in plan.steps:
            binding = self.step(binding, step, env, types)
        return binding

    def step(
        self,
        binding: _Binding,
        step: dp.Join | dp.Filter | dp.Bind | dp.AntiJoin | dp.AggregateStep,
        env: Mapping[str, p.Node],
        types: dict[str, TypeClass],
    ) -> _Binding:
        match step:
            case dp.Join(atom=atom, on=on):
                return _join(binding.compact(), self.scan(atom, env, types), on)
            case dp.Filter(literal=lit):
                cond = compile_condition(lit, binding.columns, types)
                node = binding.node
                fn = _condition(cond)
                key = (lit, tuple(binding.vars))
                pred = _native(str(lit), fn, node.width, node, BOOLEAN, key=key)
                return _Binding(p.Filter(node, pred), binding.vars)
            case dp.Bind(var=var, term=term):
                return self.bind(binding, var, term, types)
            case dp.AntiJoin(atom=atom, on=on):
                return self.antijoin(binding.compact(), atom, on, env)
            case dp.AggregateStep():
                return self.aggregate(binding, step, env, types)
        raise AssertionError(step)

    def scan(
        self, atom: ast.Atom, env: Mapping[str, p.Node], types: dict[str, TypeClass]
    ) -> _Binding:
        classes = self.info(atom.relation).classes
        names: list[str | None] = []
        for arg, cls in zip(atom.args, classes, strict=True):
            if isinstance(arg, ast.Var):
                names.append(arg.name)
                types.setdefault(arg.name, cls)
            else:
                names.append(None)  # a wildcard (atoms are normalized)
        return _Binding(env[atom.relation], names)

    def bind(
        self, binding: _Binding, var: str, term: ast.Term, types: dict[str, TypeClass]
    ) -> _Binding:
        want = types.get(var)
        compiled = compile_term(term, binding.columns, types, want=want)
        cls: TypeClass = want or compiled.cls
        types[var] = cls
        node = binding.node
        expr = _native(
            str(term),
            _as_class(compiled, cls),
            node.width,
            node,
            sql_type(cls),
            partial=compiled.partial,
            key=(term, cls, tuple(binding.vars)),
        )
        return _Binding(_with(node, expr, "$" + var), [*binding.vars, var])

    def antijoin(
        self, binding: _Binding, atom: ast.Atom, on: Sequence[str], env: Mapping[str, p.Node]
    ) -> _Binding:
        """Bindings without a fact of the negated atom (its constants and repeated variables
        filter the relation first)."""
        rel = env[atom.relation]
        info = self.info(atom.relation)
        first: dict[str, int] = {}
        tests: list[tuple[int, object, int | None]] = []  # (column, constant, other column)
        for i, arg in enumerate(atom.args):
            if isinstance(arg, ast.Const):
                value = compile_term(arg, {}, {}, want=info.classes[i])([], 1)[0][0]
                tests.append((i, value, None))
            elif isinstance(arg, ast.Var):
                if arg.name in first:
                    tests.append((i, None, first[arg.name]))
                else:
                    first[arg.name] = i
        if tests:
            fn = _matcher(tests)
            text = f"matches {atom}"
            rel = p.Filter(rel, _native(text, fn, rel.width, rel, BOOLEAN, key=(atom, "match")))
        if not on:
            node = p.Join(binding.node, rel, JoinKind.ANTI)  # "no such fact at all"
            return _Binding(node, binding.vars)
        right = _project(rel, [first[v] for v in on])
        keys = tuple(binding.index(v) for v in on)
        node = p.Join(binding.node, right, JoinKind.ANTI, keys, tuple(range(len(on))))
        return _Binding(node, binding.vars)

    def aggregate(
        self,
        outer: _Binding,
        step: dp.AggregateStep,
        env: Mapping[str, p.Node],
        types: dict[str, TypeClass],
    ) -> _Binding:
        """``outer`` plus the aggregate's value per binding (see the module docstring)."""
        agg, keys = step.aggregate, step.keys
        outer = outer.compact()
        inner = self.conjunction(step.inner, env, types, outer)
        cls: TypeClass
        if agg.target is None:
            func, cls, values = AggFunc.COUNT_STAR, "int", inner
        else:
            assert step.inner.target is not None
            values = self.bind(inner, "@target", step.inner.target, types)
            func, cls = AggFunc(agg.function), types.pop("@target")
        reduced = _grouped(values, keys, func, cls)  # keys, then the value
        types[step.var] = cls
        on = tuple(outer.index(k) for k in keys)
        kind = JoinKind.INNER if keys else JoinKind.CROSS
        k = len(keys)
        joined = p.Join(outer.node, reduced, kind, on, tuple(range(k)))
        width = outer.node.width
        node = _project(joined, [*range(width), width + k])
        result = _Binding(node, [*outer.vars, step.var])
        if func not in (AggFunc.COUNT_STAR, AggFunc.SUM, AggFunc.COUNT):
            return result
        missing = p.Join(outer.node, reduced, JoinKind.ANTI, on, tuple(range(k)))
        zero = _constant(0.0 if cls == "float" else 0, cls, missing)
        defaults = _with(missing, zero, "$" + step.var)
        return _Binding(_union([node, defaults]), result.vars)


def _grouped(values: _Binding, keys: Sequence[str], func: AggFunc, cls: TypeClass) -> p.Node:
    """``func`` of the last column of ``values`` (of every row for count) per ``keys``."""
    node, key_idx = values.node, [values.index(k) for k in keys]
    arg: int | None = None if func == AggFunc.COUNT_STAR else node.width - 1
    if not keys:  # group by a constant: no row when nothing matches
        node = _with(node, _constant(0, "int", node), "$group")
        key_idx = [node.width - 1]
    cols = [*key_idx] + ([] if arg is None else [arg])
    node = _project(node, cols)
    call = p.AggCall(func, None if arg is None else len(key_idx), False, sql_type(cls))
    names = (*(f"$k{i}" for i in range(len(key_idx))), "$agg")
    out: p.Node = p.Aggregate(node, tuple(range(len(key_idx))), (call,), names)
    if not keys:
        out = _project(out, [1])
    return out


def _join(left: _Binding, right: _Binding, on: Sequence[str]) -> _Binding:
    """Join on the shared variables ``on`` (a cross product when none); the right side's
    copies of them are dead columns."""
    lk = tuple(left.index(v) for v in on)
    rk = tuple(right.index(v) for v in on)
    kind = JoinKind.INNER if on else JoinKind.CROSS
    node = p.Join(left.node, right.node, kind, lk, rk)
    return _Binding(node, [*left.vars, *(None if v in on else v for v in right.vars)])


def _as_class(compiled: Any, cls: TypeClass) -> Callable[..., tuple[Any, Any]]:
    def fn(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, Any]:
        values, valid = compiled(cols, n)
        return as_array(values, cls), valid

    return fn


def _condition(cond: Callable[[Sequence[np.ndarray], int], np.ndarray]) -> Callable[..., Any]:
    def fn(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, None]:
        return np.asarray(cond(cols, n), dtype=bool), None

    return fn


def _matcher(tests: Sequence[tuple[int, object, int | None]]) -> Callable[..., Any]:
    """Rows whose columns equal the constants / each other as ``tests`` say."""

    def fn(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, None]:
        keep = np.ones(n, dtype=bool)
        for i, value, j in tests:
            other = value if j is None else cols[j]
            keep &= np.asarray(cols[i] == other, dtype=bool)
        return keep, None

    return fn


def _reads(rule: ast.Rule, relations: set[str]) -> bool:
    """Whether the rule reads (anywhere in its body) one of ``relations``."""
    return any(e.body in relations for e in precedence_edges([rule]))


def _fact_row(fact: ast.Rule, info: RelationInfo) -> tuple[Any, ...] | None:
    row: list[Any] = []
    for arg, cls in zip(fact.head.args, info.classes, strict=True):
        values, valid = compile_term(arg, {}, {}, want=cls)([], 1)
        if valid is not None and not valid[0]:
            return None  # a partial operation failed (e.g. 1/0): no fact, as in rules
        value = as_array(values, cls)[0]
        row.append(value.item() if isinstance(value, np.generic) else value)
    return tuple(row)


__all__ = ["columns_of", "lower_program", "sql_type"]
