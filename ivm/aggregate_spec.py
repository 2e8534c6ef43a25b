"""The aggregates of ``reduce`` as types (issue 13, item 5).

Users write an aggregate as a tuple (``("count",)``, ``("sum", "price")``; docs/engine-api.md);
:meth:`Collection.reduce <ivm.collection.Collection.reduce>` converts each into an :class:`Agg`
— an :class:`AggFunction` and the input column's position — and everything below it (the
kernels, the planner, the hierarchical and accumulating reduces) works on those.  An unknown
function is refused there, once.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from ivm.errors import PlanError

__all__ = ["AGG_FUNCTIONS", "Agg", "AggFunction"]


class AggFunction(StrEnum):
    """An aggregate function of the engine (SQL's NULL rules: NULLs are ignored)."""

    COUNT = "count"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    COUNT_DISTINCT = "count_distinct"

    @classmethod
    def of(cls, name: str) -> AggFunction:
        """The function called ``name``; :class:`PlanError` naming the known ones if none."""
        try:
            return cls(name)
        except ValueError:
            raise PlanError(
                f"unknown aggregate {name!r}; expected one of {AGG_FUNCTIONS}"
            ) from None


#: the names of the aggregate functions, as users write them
AGG_FUNCTIONS = tuple(f.value for f in AggFunction)


class Agg(NamedTuple):
    """One aggregate of a reduce: ``func`` over input column ``col`` (None: ``count(*)``)."""

    func: AggFunction
    col: int | None = None

    @staticmethod
    def of(func: str, col: int | None = None) -> Agg:
        return Agg(AggFunction.of(func), col)

    def __str__(self) -> str:
        return self.func.value if self.col is None else f"{self.func.value}(#{self.col})"
