"""A Datalog program compiled into an ``ivm`` dataflow, through the relational plan SQL uses.

``text`` is analysed (:mod:`datalog.analysis`: parse, check, stratify, plan each rule),
lowered to one plan node per relation (:mod:`datalog.lower`, where Datalog's semantics —
sets, no NULLs, Soufflé's expressions, aggregates' empty groups — are written as plan nodes)
and compiled by :func:`sql_frontend.compile.compile_plans`, the compiler of SQL views:

* ``.input rel``: the collection given in ``inputs[rel]`` (e.g. bound by the session to the
  catalog table of that name, columns renamed to the declaration's), else a new dataflow input
  named ``rel``. Rows of the input are facts; duplicates count once.
* ``.output rel``: ``dataflow.output(collection, output_prefix + rel)``.

A recursive SCC is one ``Recursive`` plan group, i.e. one ``ivm.iterate`` over all its
relations with ``distinct`` inside the loop; recursive min/max reduce inside the loop (see
``datalog.stratify`` for the semantics).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import ivm
from datalog.analysis import Analysis, Schema, analyze
from datalog.errors import DatalogTypeError
from datalog.lower import lower_program
from sql_frontend import plan as p
from sql_frontend.compile import compile_plans


@dataclass(frozen=True)
class CompiledProgram:
    """A program wired into a dataflow.

    ``relations`` holds every relation's collection (at the root scope, columns named as
    declared), ``inputs`` the collections used for the ``.input`` relations (columns renamed
    to the declaration's), ``new_inputs`` the dataflow inputs created for the ``.input``
    relations that were not given (push changes there), ``outputs`` the dataflow outputs of
    the ``.output`` relations, ``plans`` every relation's relational plan, ``explain`` the
    strata and rule plans, :attr:`relational_explain` the plans as EXPLAIN prints them.
    """

    analysis: Analysis
    relations: Mapping[str, ivm.Collection]
    inputs: Mapping[str, ivm.Collection]
    new_inputs: Mapping[str, ivm.InputCollection]
    outputs: Mapping[str, ivm.Output]
    explain: str = field(repr=False)
    plans: Mapping[str, p.Node] = field(default_factory=dict, repr=False)

    @property
    def input_schemas(self) -> Mapping[str, Schema]:
        return self.analysis.input_schemas

    @property
    def output_schemas(self) -> Mapping[str, Schema]:
        return self.analysis.output_schemas

    def relational_explain(self, relation: str) -> str:
        """The relational plan of ``relation`` (the same printer as SQL views')."""
        return "== Relational plan ==\n" + p.explain(self.plans[relation])


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
    given, created = _inputs(analysis, dataflow, dict(inputs or {}))
    plans = lower_program(analysis, max_iterations)
    names = list(plans)
    collections = compile_plans([plans[n] for n in names], dataflow, given)
    compiled = dict(zip(names, collections, strict=True))
    relations = _Named(compiled, {n: analysis.relations[n].columns for n in names})
    outputs = {
        rel: dataflow.output(relations[rel], output_prefix + rel)
        for rel in analysis.checked.outputs
    }
    return CompiledProgram(
        analysis,
        relations,
        MappingProxyType(given),
        MappingProxyType(created),
        MappingProxyType(outputs),
        analysis.explain(),
        MappingProxyType(plans),
    )


def _inputs(
    analysis: Analysis, g: ivm.Dataflow, given: dict[str, ivm.Collection]
) -> tuple[dict[str, ivm.Collection], dict[str, ivm.InputCollection]]:
    """The collection of every ``.input`` relation (columns named as declared), and those of
    them created here because ``given`` has none."""
    for name in given:
        info = analysis.relations.get(name)
        if info is None or not info.is_input:
            raise DatalogTypeError(
                f"input {name!r} is given but the program has no .input {name}", construct=name
            )
    out: dict[str, ivm.Collection] = {}
    created: dict[str, ivm.InputCollection] = {}
    for name in analysis.checked.inputs:
        info = analysis.relations[name]
        coll = given.get(name)
        if coll is None:
            coll = created[name] = g.input(name, info.schema)
            out[name] = coll
            continue
        dtypes = tuple(d for _, d in info.schema)
        if tuple(coll.schema.dtypes) != dtypes:
            pos = info.decl.pos
            raise DatalogTypeError.at(
                f"input {name!r} has dtypes {tuple(coll.schema.dtypes)}, but "
                f"the .decl says {dtypes}",
                pos,
                name,
            )
        same = tuple(coll.schema.names) == tuple(info.columns)
        out[name] = coll if same else coll.rename(list(info.columns))
    return out, created


class _Named(Mapping[str, ivm.Collection]):
    """The relations' collections with their declared column names (renamed on first use,
    so that a relation nobody reads by name costs no operator)."""

    def __init__(self, compiled: dict[str, ivm.Collection], columns: dict[str, tuple[str, ...]]):
        self.compiled, self.columns = compiled, columns
        self.done: dict[str, ivm.Collection] = {}

    def __getitem__(self, rel: str) -> ivm.Collection:
        if rel not in self.done:
            coll = self.compiled[rel]
            same = tuple(coll.schema.names) == self.columns[rel]
            self.done[rel] = coll if same else coll.rename(list(self.columns[rel]))
        return self.done[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.compiled)

    def __len__(self) -> int:
        return len(self.compiled)


__all__ = ["Analysis", "CompiledProgram", "analyze", "compile_program"]
