"""Compilation of a checked, stratified, planned program to an ``ivm`` dataflow.

Each relation becomes one collection with the relation's schema and *set* semantics:
``distinct(concat(input, facts, rule results))``. The pieces:

* ``.input rel``: the collection given in ``inputs[rel]`` (e.g. bound by the session to the
  catalog table of that name), else a new dataflow input named ``rel``. Rows of the input are
  facts; duplicates count once (the ``distinct`` above).
* facts ``rel(1, "a").``: one constant collection per relation (``Dataflow.constant``).
* a rule: its :class:`~datalog.plan.ConjunctionPlan` step by step — a scan projects an atom's
  variables; a join is an ``ivm`` equi-join on the shared variables (a cross product joins on
  no columns); a filter or bind is a vectorized ``filter``/``map`` (``flat_map`` when the
  expression is partial, see ``datalog.expr``); a negation is an ``antijoin``; an aggregate is
  a ``reduce`` grouped by the correlated variables, joined back to the binding (for ``count``
  and ``sum``, bindings without any match get 0, as in Soufflé; ``min``/``max`` of nothing
  produces no binding). The head is a final ``map`` to the relation's columns.
* ``.output rel``: ``dataflow.output(collection, rel)``.

A non-recursive SCC is computed directly. A recursive SCC is one ``ivm.iterate`` over all its
relations: each variable starts at the relation's *base* (input, facts, and rules that read no
relation of the SCC), and the body computes ``distinct(concat(base, recursive rules))`` from
the current variables. ``distinct`` inside the loop gives set semantics, so the fixed point is
the least model; recursive min/max reduce inside the loop (see ``datalog.stratify`` for the
semantics).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

import ivm
from datalog import ast
from datalog.analysis import Analysis, Schema, analyze
from datalog.check import RelationInfo, TypeClass
from datalog.check import dtype_of_class as _dtype
from datalog.errors import DatalogTypeError
from datalog.expr import as_array, compile_condition, compile_term
from datalog.plan import (
    AggregateStep,
    AntiJoin,
    Bind,
    ConjunctionPlan,
    Filter,
    Join,
    RulePlan,
    Scan,
    Seed,
    Unit,
)
from datalog.stratify import Stratum


@dataclass(frozen=True)
class CompiledProgram:
    """A program wired into a dataflow.

    ``relations`` holds every relation's collection (at the root scope), ``inputs`` the
    collections used for the ``.input`` relations (columns renamed to the declaration's),
    ``new_inputs`` the dataflow inputs created for the ``.input`` relations that were not
    given (push changes there), ``outputs`` the dataflow outputs of the ``.output`` relations.
    """

    analysis: Analysis
    relations: Mapping[str, ivm.Collection]
    inputs: Mapping[str, ivm.Collection]
    new_inputs: Mapping[str, ivm.InputCollection]
    outputs: Mapping[str, ivm.Output]
    explain: str = field(repr=False)

    @property
    def input_schemas(self) -> Mapping[str, Schema]:
        return self.analysis.input_schemas

    @property
    def output_schemas(self) -> Mapping[str, Schema]:
        return self.analysis.output_schemas


def compile_program(
    text: str,
    dataflow: ivm.Dataflow,
    inputs: Mapping[str, ivm.Collection] | None = None,
    *,
    max_iterations: int | None = None,
    output_prefix: str = "",
) -> CompiledProgram:
    """Compile a Datalog program into ``dataflow``.

    ``inputs`` may give the collection of any ``.input`` relation (same number of columns and
    dtypes as declared); the others become new dataflow inputs named after the relation.
    Outputs are named ``output_prefix + relation``. ``max_iterations`` caps every recursive
    scope (see ``datalog.stratify``).

    >>> import ivm
    >>> g = ivm.Dataflow()
    >>> prog = compile_program('''
    ...     .decl edge(x: number, y: number)  .input edge
    ...     .decl path(x: number, y: number)  .output path
    ...     path(x, y) :- edge(x, y).
    ...     path(x, z) :- path(x, y), edge(y, z).''', g)
    >>> prog.new_inputs["edge"].insert([(1, 2), (2, 3)]); _ = g.step()
    >>> sorted(prog.outputs["path"].counts())
    [(1, 2), (1, 3), (2, 3)]
    """
    analysis = analyze(text)
    builder = _Builder(analysis, dataflow, dict(inputs or {}), max_iterations)
    relations = builder.build()
    outputs = {
        rel: dataflow.output(relations[rel], output_prefix + rel)
        for rel in analysis.checked.outputs
    }
    return CompiledProgram(
        analysis,
        MappingProxyType(relations),
        MappingProxyType(builder.input_collections),
        MappingProxyType(builder.new_inputs),
        MappingProxyType(outputs),
        analysis.explain(),
    )


# ------------------------------------------------------------------------------- building


@dataclass
class _Binding:
    """A collection whose column i holds the values of variable ``vars[i]``.

    ``None`` marks a column no variable needs (a wildcard of a scanned atom, the right side's
    copy of a join key): scans use the relation's collection as it is, so that joins arrange
    the relation itself and every rule joining a relation on the same columns shares one
    arrangement. Dead columns are projected away only before the binding is arranged (the
    left side of a join or anti-join, an aggregate) and by the head's projection, so a rule
    costs as few operators as possible.
    """

    coll: ivm.Collection
    vars: list[str | None]

    def index(self, var: str) -> int:
        return self.vars.index(var)

    @property
    def columns(self) -> dict[str, int]:
        return {v: i for i, v in enumerate(self.vars) if v is not None}

    def compact(self) -> _Binding:
        """The binding without its unneeded columns."""
        keep = [i for i, v in enumerate(self.vars) if v is not None]
        if len(keep) == len(self.vars):
            return self
        return _Binding(_project(self.coll, keep), [self.vars[i] for i in keep])


def _col(var: str) -> str:
    """Column name for a computed variable; ``$`` keeps it apart from attribute names.

    Other columns keep the names they come with (clashes after a join get the engine's
    ``_r`` suffix): columns are always referenced by position, so no rename is needed.
    """
    return "$" + var


def _project(coll: ivm.Collection, idx: Sequence[int]) -> ivm.Collection:
    """``coll.project(*idx)``, or ``coll`` itself when that is the identity."""
    if list(idx) == list(range(len(coll.schema))):
        return coll
    return coll.project(*idx)


def _named(coll: ivm.Collection, names: Sequence[str]) -> ivm.Collection:
    """``coll.rename(names)``, or ``coll`` itself when it already has those names."""
    if tuple(coll.schema.names) == tuple(names):
        return coll
    return coll.rename(list(names))


class _Builder:
    def __init__(
        self,
        analysis: Analysis,
        dataflow: ivm.Dataflow,
        given: dict[str, ivm.Collection],
        max_iterations: int | None,
    ) -> None:
        self.analysis = analysis
        self.g = dataflow
        self.given = given
        self.max_iterations = max_iterations
        self.input_collections: dict[str, ivm.Collection] = {}
        self.new_inputs: dict[str, ivm.InputCollection] = {}
        self._unit: ivm.Collection | None = None
        self._sets: dict[int, ivm.Collection] = {}  # collections known to hold a set
        self.var_types = {id(r.rule): r.var_types for r in analysis.checked.rules}
        for name in given:
            info = analysis.relations.get(name)
            if info is None or not info.is_input:
                raise DatalogTypeError(
                    f"input {name!r} is given but the program has no .input {name}", construct=name
                )

    @property
    def unit(self) -> ivm.Collection:
        if self._unit is None:
            self._unit = self.g.constant([(0,)], [("unit", "int64")], name="datalog:unit")
        return self._unit

    # -- relations ----------------------------------------------------------------------

    def build(self) -> dict[str, ivm.Collection]:
        env: dict[str, ivm.Collection] = {}
        by_head: dict[str, list[RulePlan]] = {}
        for p in self.analysis.plans:
            by_head.setdefault(p.rule.head.relation, []).append(p)
        for stratum in self.analysis.strata:
            members = set(stratum.relations)
            bases: list[ivm.Collection] = []
            recursive: dict[str, list[RulePlan]] = {}
            for rel in stratum.relations:
                info = self.analysis.relations[rel]
                parts = self._sources(info)
                rec: list[RulePlan] = []
                for p in by_head.get(rel, []):
                    if stratum.recursive and _reads(p.rule, members):
                        rec.append(p)
                    else:
                        parts.append(self._rule(p, env))
                recursive[rel] = rec
                bases.append(self._union(parts, info) if parts else self.g.empty(info.schema))
            if not stratum.recursive:
                env.update(zip(stratum.relations, bases, strict=True))
                continue

            def body(
                variables: list[ivm.Collection],
                stratum: Stratum = stratum,
                bases: list[ivm.Collection] = bases,
                recursive: dict[str, list[RulePlan]] = recursive,
            ) -> list[ivm.Collection]:
                inner = dict(env)
                inner.update(zip(stratum.relations, map(self._mark_set, variables), strict=True))
                out = []
                for rel, base in zip(stratum.relations, bases, strict=True):
                    parts = [base, *(self._rule(p, inner) for p in recursive[rel])]
                    out.append(self._union(parts, self.analysis.relations[rel]))
                return out

            results = [
                self._mark_set(r)
                for r in ivm.iterate(bases, body, max_iterations=self.max_iterations)
            ]
            env.update(zip(stratum.relations, results, strict=True))
        return env

    def _sources(self, info: RelationInfo) -> list[ivm.Collection]:
        parts: list[ivm.Collection] = []
        if info.is_input:
            coll = self.given.get(info.name)
            if coll is None:
                created = self.g.input(info.name, info.schema)
                self.new_inputs[info.name] = created
                coll = created
            else:
                dtypes = tuple(d for _, d in info.schema)
                if tuple(coll.schema.dtypes) != dtypes:
                    pos = info.decl.pos
                    raise DatalogTypeError(
                        f"input {info.name!r} has dtypes {tuple(coll.schema.dtypes)}, but "
                        f"the .decl says {dtypes}",
                        line=pos.line,
                        column=pos.column,
                        construct=info.name,
                    )
                coll = _named(coll, info.columns)
            self.input_collections[info.name] = coll
            parts.append(coll)
        facts = self.analysis.checked.facts.get(info.name, ())
        if facts:
            rows = list(
                dict.fromkeys(row for f in facts if (row := _fact_row(f, info)) is not None)
            )
            parts.append(
                self._mark_set(self.g.constant(rows, info.schema, name=f"facts:{info.name}"))
            )
        return parts

    def _union(self, parts: Sequence[ivm.Collection], info: RelationInfo) -> ivm.Collection:
        """The set union of ``parts`` (``distinct`` unless it is one part known to be a set)."""
        first, *rest = parts
        if not rest and self._is_set(first):
            return self._mark_set(_named(first, info.columns))
        coll = first.concat(*rest) if rest else first
        return self._mark_set(_named(coll.distinct(), info.columns))

    def _mark_set(self, coll: ivm.Collection) -> ivm.Collection:
        self._sets[id(coll)] = coll
        return coll

    def _is_set(self, coll: ivm.Collection) -> bool:
        return self._sets.get(id(coll)) is coll

    # -- rules --------------------------------------------------------------------------

    def _rule(self, plan: RulePlan, env: Mapping[str, ivm.Collection]) -> ivm.Collection:
        types: dict[str, TypeClass] = dict(self.var_types[id(plan.rule)])
        binding = self._conjunction(plan.body, env, types, None)
        info = self.analysis.relations[plan.rule.head.relation]
        terms = [
            compile_term(t, binding.columns, types, want=cls)
            for t, cls in zip(plan.head, info.classes, strict=True)
        ]
        classes = info.classes
        schema = list(info.schema)
        head_vars = [t.name for t in plan.head if isinstance(t, ast.Var)]
        if len(head_vars) == len(plan.head) == len(set(head_vars)) and all(
            types[v] == c for v, c in zip(head_vars, classes, strict=True)
        ):
            # rule results are only concatenated (by position): no names needed
            out = _project(binding.coll, [binding.index(v) for v in head_vars])
            body = plan.body
            if (
                isinstance(body.start, Scan)
                and not body.steps
                and self._is_set(env[body.start.atom.relation])
                and all(isinstance(a, ast.Var) for a in body.start.atom.args)
                and set(binding.vars) <= set(head_vars)
            ):
                self._mark_set(out)  # an injective projection of a set is a set
            return out
        if not any(t.partial for t in terms):

            def head(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
                n = len(cols[0])
                return tuple(
                    as_array(t(cols, n)[0], c) for t, c in zip(terms, classes, strict=True)
                )

            return binding.coll.map(head, schema)

        def head_partial(*cols: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
            n = len(cols[0])
            values, valid = _evaluate_all(terms, cols, n)
            keep = np.nonzero(valid)[0]
            return keep, tuple(as_array(v[keep], c) for v, c in zip(values, classes, strict=True))

        return binding.coll.flat_map(head_partial, schema)

    def _conjunction(
        self,
        plan: ConjunctionPlan,
        env: Mapping[str, ivm.Collection],
        types: dict[str, TypeClass],
        outer: _Binding | None,
    ) -> _Binding:
        match plan.start:
            case Scan(atom=atom):
                binding = self._scan(atom, env, types)
            case Unit():
                binding = _Binding(self.unit, ["@unit"])
            case Seed(vars=vs):
                assert outer is not None
                idx = [outer.index(v) for v in vs]
                coll = _project(outer.coll, idx).distinct()
                binding = _Binding(coll, list(vs))
        for step in plan.steps:
            match step:
                case Join(atom=atom, on=on):
                    left = binding.compact()  # the left side is arranged: no dead columns
                    binding = self._join(left, self._scan(atom, env, types), on)
                case Filter(literal=lit):
                    cond = compile_condition(lit, binding.columns, types)
                    binding = _Binding(binding.coll.filter(_rows(cond)), binding.vars)
                case Bind(var=var, term=term):
                    binding = self._bind(binding, var, term, types)
                case AntiJoin(atom=atom, on=on):
                    binding = self._antijoin(binding.compact(), atom, on, env)
                case AggregateStep():
                    binding = self._aggregate(binding, step, env, types)
        return binding

    def _scan(
        self, atom: ast.Atom, env: Mapping[str, ivm.Collection], types: dict[str, TypeClass]
    ) -> _Binding:
        classes = self.analysis.relations[atom.relation].classes
        names: list[str | None] = []
        for arg, cls in zip(atom.args, classes, strict=True):
            if isinstance(arg, ast.Var):
                names.append(arg.name)
                types.setdefault(arg.name, cls)
            else:
                names.append(None)  # a wildcard (atoms are normalized)
        return _Binding(env[atom.relation], names)

    def _join(self, left: _Binding, right: _Binding, on: Sequence[str]) -> _Binding:
        pairs = [(left.index(v), right.index(v)) for v in on]
        joined = left.coll.join(right.coll, on=pairs)
        # the right side's copies of the shared variables are dead columns (see _Binding)
        names = [*left.vars, *(None if v in on else v for v in right.vars)]
        return _Binding(joined, names)

    def _bind(
        self, binding: _Binding, var: str, term: ast.Term, types: dict[str, TypeClass]
    ) -> _Binding:
        want = types.get(var)
        compiled = compile_term(term, binding.columns, types, want=want)
        cls: TypeClass = want or compiled.cls
        types[var] = cls
        schema = [*_pairs(binding.coll), (_col(var), _dtype(cls))]
        if not compiled.partial:

            def add(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
                return (*cols, as_array(compiled(cols, len(cols[0]))[0], cls))

            coll = binding.coll.map(add, schema)
        else:

            def add_partial(*cols: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
                values, valid = compiled(cols, len(cols[0]))
                keep = np.arange(len(cols[0])) if valid is None else np.nonzero(valid)[0]
                return keep, (*(c[keep] for c in cols), as_array(values[keep], cls))

            coll = binding.coll.flat_map(add_partial, schema)
        return _Binding(coll, [*binding.vars, var])

    def _antijoin(
        self,
        binding: _Binding,
        atom: ast.Atom,
        on: Sequence[str],
        env: Mapping[str, ivm.Collection],
    ) -> _Binding:
        rel = env[atom.relation]
        info = self.analysis.relations[atom.relation]
        consts: list[tuple[int, Any]] = []
        first: dict[str, int] = {}
        same: list[tuple[int, int]] = []
        for i, arg in enumerate(atom.args):
            if isinstance(arg, ast.Const):
                value = compile_term(arg, {}, {}, want=info.classes[i])([], 1)[0][0]
                consts.append((i, value))
            elif isinstance(arg, ast.Var):
                if arg.name in first:
                    same.append((first[arg.name], i))
                else:
                    first[arg.name] = i
        if consts or same:

            def match(*cols: np.ndarray) -> np.ndarray:
                keep = np.ones(len(cols[0]), dtype=bool)
                for i, value in consts:
                    keep &= np.asarray(cols[i] == value, dtype=bool)
                for i, j in same:
                    keep &= np.asarray(cols[i] == cols[j], dtype=bool)
                return keep

            rel = rel.filter(match)
        if not on:
            # "no such fact": compare a constant key with the distinct non-emptiness of rel.
            marker = (
                rel.project(0)
                .map(lambda c: (np.zeros(len(c), dtype=np.int64),), [("k", "int64")])
                .distinct()
            )
            keyed = binding.coll.map(
                lambda *cols: (*cols, np.zeros(len(cols[0]), np.int64)),
                [*_pairs(binding.coll), ("k@", "int64")],
            )
            out = keyed.antijoin(marker, on=[(len(binding.vars), 0)])
            return _Binding(out.project(*range(len(binding.vars))), binding.vars)
        right = rel.project(*(first[v] for v in on))
        coll = binding.coll.antijoin(right, on=[(binding.index(v), j) for j, v in enumerate(on)])
        return _Binding(coll, binding.vars)

    def _aggregate(
        self,
        outer: _Binding,
        step: AggregateStep,
        env: Mapping[str, ivm.Collection],
        types: dict[str, TypeClass],
    ) -> _Binding:
        agg, keys = step.aggregate, step.keys
        outer = outer.compact()
        inner = self._conjunction(step.inner, env, types, outer)
        key_idx = [inner.index(k) for k in keys]
        if agg.target is None:
            values = inner.coll.project(*key_idx) if key_idx else inner.coll
            reduced = values.reduce(tuple(range(len(key_idx))), [("count",)], names=["agg"])
            cls: TypeClass = "int"
        else:
            assert step.inner.target is not None
            target_var = "@target"
            with_target = self._bind(inner, target_var, step.inner.target, types)
            cls = types.pop(target_var)
            values = with_target.coll.project(*key_idx, len(with_target.vars) - 1)
            reduced = values.reduce(
                tuple(range(len(key_idx))), [(agg.function, len(key_idx))], names=["agg"]
            )
        types[step.var] = cls
        result = self._join(outer, _Binding(reduced, [*keys, step.var]), keys).compact()
        if agg.function in ("count", "sum"):
            zero = 0.0 if cls == "float" else 0
            dtype = _dtype(cls)
            if keys:
                missing = outer.coll.antijoin(
                    reduced, on=[(outer.index(k), j) for j, k in enumerate(keys)]
                )
            else:
                marker = reduced.map(
                    lambda *c: (np.zeros(len(c[0]), dtype=np.int64),), [("k", "int64")]
                ).distinct()
                keyed = outer.coll.map(
                    lambda *c: (*c, np.zeros(len(c[0]), dtype=np.int64)),
                    [*_pairs(outer.coll), ("k@", "int64")],
                )
                missing = keyed.antijoin(marker, on=[(len(outer.vars), 0)]).project(
                    *range(len(outer.vars))
                )
            defaults = missing.map(
                lambda *c: (
                    *c,
                    np.full(len(c[0]), zero, dtype=np.float64 if cls == "float" else np.int64),
                ),
                [*_pairs(outer.coll), (_col(step.var), dtype)],
            )
            result = _Binding(result.coll.concat(defaults), result.vars)
        return result


def _pairs(coll: ivm.Collection) -> list[tuple[str, str]]:
    return list(zip(coll.schema.names, coll.schema.dtypes, strict=True))


def _rows(cond: Callable[[Sequence[np.ndarray], int], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda *cols: cond(cols, len(cols[0]))


def _evaluate_all(
    terms: Sequence[Any], cols: Sequence[np.ndarray], n: int
) -> tuple[list[np.ndarray], np.ndarray]:
    values: list[np.ndarray] = []
    valid = np.ones(n, dtype=bool)
    for t in terms:
        v, ok = t(cols, n)
        values.append(v)
        if ok is not None:
            valid &= ok
    return values, valid


def _reads(rule: ast.Rule, relations: set[str]) -> bool:
    """Whether the rule reads (anywhere in its body) one of ``relations``."""
    from datalog.stratify import precedence_edges

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


__all__ = ["Analysis", "CompiledProgram", "analyze", "compile_program"]
