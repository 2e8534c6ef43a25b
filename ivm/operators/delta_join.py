"""Delta-query joins: a multiway join with no intermediate state (the blog-post seed).

A binary plan for ``A ⋈ B ⋈ C`` arranges ``A ⋈ B``, which can be far larger than the
inputs (a node of degree d contributes d² pairs to the triangle query).  A delta query
instead writes the change of the result as one rule per input,

    δ(A⋈B⋈C) = δA ⋈ B ⋈ C  +  A' ⋈ δB ⋈ C  +  A' ⋈ B' ⋈ δC,

where ``X`` is an input before this time's changes and ``X'`` after them.  Each rule
starts from one input's changes and looks them up in the arrangements of the others, so
only the inputs are arranged.  Using the new version for inputs ordered before the rule's
own input and the old one for those after is the alt/neu "nudge": updates to several
inputs at the same time are counted exactly once.  Here the old version is the trace
"strictly before" the time (staged updates excluded) and the new one includes them.

Delta joins are planned at the top level of a dataflow (outside loops), where every
update of an epoch is at the same time.
"""

from __future__ import annotations

from typing import Any

from ivm.batch import Batch, take
from ivm.difference import mul_gathered
from ivm.lattice import Time
from ivm.operators.arrange import Arrange
from ivm.operators.base import Operator
from ivm.operators.join import probe


class HalfJoin(Operator):
    """Changes of a stream looked up in an arrangement; keeps no state of its own.

    ``inclusive`` decides whether the arrangement's updates at the same time are seen.
    """

    kind = "half_join"

    def __init__(
        self,
        *args: Any,
        arrangement: Arrange,
        stream_key: tuple[int, ...],
        inclusive: bool,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.arrangement = arrangement
        arrangement.users += 1
        self.stream_key = stream_key
        self.inclusive = inclusive

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is None:
            return
        found = probe(self.arrangement.trace, b, self.stream_key, None if self.inclusive else time)
        if len(found.owner) == 0:
            return
        self.emit(
            time,
            Batch(
                take(b.cols, found.owner) + found.cols,
                mul_gathered(b.diff, found.owner, found.diff),
            ),
        )

    def describe(self) -> str:
        cmp = "<=" if self.inclusive else "<"
        keys = [self.arrangement.schema.names[i] for i in self.arrangement.key_idx]
        return f"{self.name} lookup {self.arrangement.name} by {keys} at times {cmp} t"
