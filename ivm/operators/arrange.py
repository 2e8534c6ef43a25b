"""Arrange: maintain a collection's trace indexed by key, shared by every consumer.

The operator passes each batch on (consolidated) and stages it in the trace at its time;
consumers read the trace "strictly before" their time and the batch as the new updates, so
several joins and reduces share one copy of the indexed state (shared arrangements).
"""

from __future__ import annotations

from typing import Any

from ivm.batch import Batch, hash_rows
from ivm.lattice import Time
from ivm.operators.base import KeepsTrace
from ivm.trace import Trace


class Arrange(KeepsTrace):
    kind = "arrange"
    state_key = "trace"

    def __init__(self, *args: Any, key_idx: tuple[int, ...], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.key_idx = key_idx
        self.trace = self.new_trace()
        self.users = 0

    def new_trace(self) -> Trace:
        return Trace(self.dtypes, self.key_idx, self.scope.kinds)

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is None:
            return
        if b.rowhash is not None:
            # consolidated already, with its row hashes (an arrangement's or a reduce's
            # output passed on unchanged): staged as it is
            self.trace.stage(b, time, b.rowhash)
            self.emit(time, b)
            return
        if self.trace.int_row:
            # one int64 column: hashed, consolidated and sorted by one compiled call
            self.emit(time, self.trace.stage_key_batch(b, time))
            return
        h = hash_rows(b.cols, b.diff.shape[0])
        if self.trace.int_cols:
            # several int64 columns: sorted, consolidated and gathered by one compiled call
            self.emit(time, self.trace.stage_int_batch(b, time, h))
            return
        self.emit(time, self.trace.stage_batch(b, time, h))

    def describe(self) -> str:
        keys = [self.schema.names[i] for i in self.key_idx]
        return f"{self.name} by {keys} (shared by {self.users}) rows={self.trace.rows_held()}"
