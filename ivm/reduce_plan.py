"""How a reduce is computed, as a value: the strategy and whether the prefix cache is on.

Every strategy computes the same function of the accumulated input (CIDR 2013 §3.4: the
output accumulates, at each time t, to ``f(A(t))``); they differ in the work a change costs.

* ``ACCUMULABLE`` (:mod:`ivm.operators.accumulate`): COUNT and SUM, updated from the change
  alone (they are linear).  Outside loops only: it keeps one state row per key and assumes
  that all updates of an epoch share one time.
* ``HIERARCHICAL`` (:mod:`ivm.hierarchy`): COUNT, SUM, MIN, MAX in stages over hash buckets,
  so a change re-reads its bucket, not its group.  Correct at any depth (its stages are
  general reduces), chosen outside loops when a MIN or MAX is asked for.
* ``VALUE_COUNTS`` (:mod:`ivm.operators.value_counts`): COUNT, SUM, MIN, MAX outside loops;
  COUNT and SUM as the accumulable plan does, MIN and MAX from the change and a value → count
  map per key, read back only when a change deletes a key's extreme.  State: one row per
  key plus one per distinct (key, value).  Chosen outside loops for a MIN or MAX unless the
  groups are estimated to be large (:data:`LARGE_GROUP_ROWS`).
* ``GENERAL`` (:mod:`ivm.operators.reduce`): any aggregate; re-reads each touched group at
  every interesting time.  With ``prefix_cache`` (one loop deep only), keys with a long
  history keep cached accumulations (:mod:`ivm.operators.prefix_cache`).

:func:`plan_reduce` chooses; :func:`check_plan` refuses a plan that cannot compute the
aggregates asked for, with a :class:`~ivm.errors.PlanError`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ivm.aggregate_spec import Agg, AggFunction
from ivm.errors import PlanError

#: aggregates each strategy can compute (GENERAL: every aggregate of the kernel)
ACCUMULABLE_FUNCTIONS = frozenset({AggFunction.COUNT, AggFunction.SUM})
HIERARCHICAL_FUNCTIONS = frozenset(
    {AggFunction.COUNT, AggFunction.SUM, AggFunction.MIN, AggFunction.MAX}
)


class ReduceStrategy(enum.Enum):
    ACCUMULABLE = "accumulable"
    HIERARCHICAL = "hierarchical"
    VALUE_COUNTS = "value-counts"
    GENERAL = "general"


@dataclass(frozen=True)
class ReducePlan:
    """A reduce's physical plan; ``str(plan)`` is what EXPLAIN prints."""

    strategy: ReduceStrategy
    prefix_cache: bool = False

    def __str__(self) -> str:
        return self.strategy.value + (" + prefix cache" if self.prefix_cache else "")

    @staticmethod
    def of(spec: ReducePlan | ReduceStrategy | str) -> ReducePlan:
        """A plan from a plan, a strategy or a strategy's name (cache off)."""
        if isinstance(spec, ReducePlan):
            return spec
        if isinstance(spec, str):
            try:
                spec = ReduceStrategy(spec)
            except ValueError:
                names = [s.value for s in ReduceStrategy]
                raise PlanError(
                    f"unknown reduce strategy {spec!r}; expected one of {names}"
                ) from None
        if isinstance(spec, ReduceStrategy):
            return ReducePlan(spec)
        raise PlanError(f"a reduce plan is a ReducePlan, ReduceStrategy or name, got {spec!r}")


Specs = Sequence[Agg]

#: estimated rows per group from which MIN/MAX outside loops are hierarchical: a value-counts
#: reduce re-reads a group whose extreme is deleted (every time, for a workload that always
#: deletes it), the hierarchy at most a bucket of ``1/256`` of it and 2 × 16 partials
LARGE_GROUP_ROWS = 4096


def _accumulable(specs: Specs, dtypes: Sequence[str]) -> bool:
    return all(
        fn in ACCUMULABLE_FUNCTIONS and (col is None or dtypes[col] != "bool") for fn, col in specs
    )


def _hierarchical(specs: Specs) -> bool:
    return {fn for fn, _ in specs} <= HIERARCHICAL_FUNCTIONS


def _value_counts(specs: Specs, dtypes: Sequence[str]) -> bool:
    return _hierarchical(specs) and all(
        fn is not AggFunction.SUM or (col is not None and dtypes[col] != "bool")
        for fn, col in specs
    )


def plan_reduce(
    specs: Specs, dtypes: Sequence[str], depth: int, group_rows: float | None = None
) -> ReducePlan:
    """The plan for aggregates ``specs`` over columns ``dtypes`` at loop ``depth``.

    Outside loops: accumulable when every aggregate is linear; when a MIN or MAX is among
    COUNT/SUM/MIN/MAX, value-counts, or hierarchical if ``group_rows`` (an estimate of the
    rows per group, None when unknown) reaches :data:`LARGE_GROUP_ROWS`; otherwise (and
    inside loops) the general reduce, with the prefix cache exactly one loop deep.
    """
    fns = {fn for fn, _ in specs}
    if depth == 0 and _accumulable(specs, dtypes):
        return ReducePlan(ReduceStrategy.ACCUMULABLE)
    if depth == 0 and fns & {AggFunction.MIN, AggFunction.MAX} and _hierarchical(specs):
        if (group_rows is None or group_rows < LARGE_GROUP_ROWS) and _value_counts(specs, dtypes):
            return ReducePlan(ReduceStrategy.VALUE_COUNTS)
        return ReducePlan(ReduceStrategy.HIERARCHICAL)
    return general_plan(depth)


def general_plan(depth: int) -> ReducePlan:
    """The general reduce's default plan: the prefix cache serves one loop deep."""
    return ReducePlan(ReduceStrategy.GENERAL, prefix_cache=depth == 1)


def check_plan(plan: ReducePlan, specs: Specs, dtypes: Sequence[str], depth: int) -> None:
    """Raise :class:`PlanError` if ``plan`` cannot compute ``specs`` at loop ``depth``."""
    asked = ", ".join(fn for fn, _ in specs)
    # the plans that assume one time per epoch: what each computes, and what else to use
    outside_loops = {
        ReduceStrategy.ACCUMULABLE: (_accumulable, "COUNT and SUM (not of bool)", "'hierarchical' or 'general'"),
        ReduceStrategy.VALUE_COUNTS: (_value_counts, "COUNT, SUM (not of bool), MIN and MAX", "'general'"),
    }  # fmt: skip
    if plan.strategy in outside_loops:
        computes, what, instead = outside_loops[plan.strategy]
        if depth != 0:
            raise PlanError(
                f"reduce plan '{plan.strategy.value}' runs only outside loops (it assumes one "
                "time per epoch); use 'general' or 'hierarchical' inside iterate"
            )
        if not computes(specs, dtypes):
            raise PlanError(
                f"reduce plan '{plan.strategy.value}' computes only {what}; asked for "
                f"[{asked}]: use {instead}"
            )
    if plan.strategy is ReduceStrategy.HIERARCHICAL and not _hierarchical(specs):
        raise PlanError(
            f"reduce plan 'hierarchical' combines only COUNT, SUM, MIN and MAX from partials; "
            f"asked for [{asked}]: use 'general'"
        )
    if plan.prefix_cache and depth != 1:
        raise PlanError(
            f"the prefix cache serves reduces exactly one loop deep; this reduce is at depth "
            f"{depth}: plan it without prefix_cache"
        )
