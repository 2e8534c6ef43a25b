"""Front half of the pipeline: text -> parse -> check -> stratify -> plan, no dataflow.

:func:`analyze` validates a program completely (every error it can have, with a position)
and tells its input and output schemas, so a caller can check the tables a program reads
before building anything. :meth:`Analysis.explain` renders the strata and rule plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from datalog.check import CheckedProgram, RelationInfo, check
from datalog.errors import UnsupportedError
from datalog.parser import parse
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
    plan_rule,
)
from datalog.stratify import Stratum, stratify

#: An engine schema: ``(column, dtype)`` pairs.
Schema = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Analysis:
    """A program parsed, checked, stratified and planned; no dataflow yet."""

    checked: CheckedProgram
    strata: tuple[Stratum, ...]
    plans: tuple[RulePlan, ...]

    @property
    def relations(self) -> Mapping[str, RelationInfo]:
        return self.checked.relations

    @property
    def input_schemas(self) -> Mapping[str, Schema]:
        """Engine schema of every ``.input`` relation."""
        return MappingProxyType({n: self.relations[n].schema for n in self.checked.inputs})

    @property
    def output_schemas(self) -> Mapping[str, Schema]:
        """Engine schema of every ``.output`` relation."""
        return MappingProxyType({n: self.relations[n].schema for n in self.checked.outputs})

    def explain(self) -> str:
        """The strata and every rule's evaluation plan, as text."""
        lines: list[str] = []
        by_head: dict[str, list[RulePlan]] = {}
        for p in self.plans:
            by_head.setdefault(p.rule.head.relation, []).append(p)
        for i, stratum in enumerate(self.strata, 1):
            kind = "recursive, one iterate scope" if stratum.recursive else "non-recursive"
            lines.append(f"stratum {i}: {', '.join(stratum.relations)} ({kind})")
            for rel in stratum.relations:
                info = self.relations[rel]
                tags = [
                    t
                    for t, on in (
                        ("input", info.is_input),
                        ("output", info.is_output),
                        (
                            f"{len(self.checked.facts.get(rel, ()))} facts",
                            rel in self.checked.facts,
                        ),
                    )
                    if on
                ]
                cols = ", ".join(f"{c}: {t}" for c, t in zip(info.columns, info.types, strict=True))
                lines.append(f"  {rel}({cols})" + (f"  [{', '.join(tags)}]" if tags else ""))
                for p in by_head.get(rel, []):
                    lines.append(f"    rule {p.rule}  (line {p.rule.pos.line})")
                    lines.extend(_explain_plan(p.body, "      "))
                    lines.append(f"      head {rel}({', '.join(map(str, p.head))})")
        return "\n".join(lines)


def _explain_plan(plan: ConjunctionPlan, indent: str) -> list[str]:
    out: list[str] = []
    match plan.start:
        case Scan(atom=atom):
            out.append(f"{indent}scan {atom}")
        case Unit():
            out.append(f"{indent}unit")
        case Seed(vars=vs):
            out.append(f"{indent}seed distinct outer ({', '.join(vs)})")
    for step in plan.steps:
        match step:
            case Join(atom=atom, on=on):
                how = f"on {', '.join(on)}" if on else "cross product"
                out.append(f"{indent}join {atom} {how}")
            case Filter(literal=lit):
                out.append(f"{indent}filter {lit}")
            case Bind(var=var, term=term):
                out.append(f"{indent}bind {var} = {term}")
            case AntiJoin(atom=atom, on=on):
                out.append(f"{indent}antijoin {atom} on {', '.join(on) or '()'}")
            case AggregateStep(var=var, aggregate=agg, keys=keys, inner=inner):
                target = "" if agg.target is None else f" {inner.target}"
                out.append(
                    f"{indent}aggregate {var} = {agg.function}{target} group by ({', '.join(keys)})"
                )
                out.extend(_explain_plan(inner, indent + "  "))
    return out


def analyze(text: str) -> Analysis:
    """Parse, check, stratify and plan ``text`` (every error raised here has a position).

    >>> a = analyze('''.decl e(x: number, y: symbol)  .input e
    ...                 .decl p(y: symbol)             .output p
    ...                 p(y) :- e(_, y).''')
    >>> dict(a.input_schemas), dict(a.output_schemas)
    ({'e': (('x', 'int64'), ('y', 'str'))}, {'p': (('y', 'str'),)})
    """
    checked = check(parse(text))
    for info in checked.relations.values():
        if info.arity == 0:
            pos = info.decl.pos
            raise UnsupportedError.at(
                f"relation {info.name!r} has no attributes; nullary relations are not supported",
                pos,
                info.name,
            )
    strata = stratify(checked.relations, (r.rule for r in checked.rules))
    plans = tuple(plan_rule(r.rule) for r in checked.rules)
    return Analysis(checked, strata, plans)
