"""Linear, stateless operators: each output update depends on one input update.

map / filter / flat_map / project / concat / negate apply per update, keep the time, and
commute with accumulation, so ``f(sum of updates) == sum of f(updates)`` (CIDR 2013 §3.1).
User functions are vectorized: they get one numpy array per column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ivm.batch import Batch
from ivm.errors import PlanError, SchemaError
from ivm.lattice import Time
from ivm.operators.base import Operator
from ivm.schema import DTYPES


def _check_outputs(op: Operator, out: Any, n: int) -> tuple[np.ndarray, ...]:
    if isinstance(out, np.ndarray) and len(op.schema) == 1:
        out = (out,)
    if not isinstance(out, tuple | list) or len(out) != len(op.schema):
        raise SchemaError(
            f"{op.name}: the function must return {len(op.schema)} column(s) "
            f"{list(op.schema.names)}, got {type(out).__name__}"
        )
    cols = []
    for name, dtype, col in zip(op.schema.names, op.schema.dtypes, out, strict=True):
        arr = np.asarray(col) if not isinstance(col, np.ndarray) else col
        if arr.ndim == 0:
            arr = np.full(
                n, arr.item() if dtype != "str" and dtype != "any" else col, dtype=DTYPES[dtype]
            )
        if len(arr) != n:
            raise SchemaError(f"{op.name}: column {name!r} has {len(arr)} rows, expected {n}")
        want = DTYPES[dtype]
        if arr.dtype != want:
            try:
                arr = arr.astype(want)
            except (TypeError, ValueError) as exc:
                raise SchemaError(f"{op.name}: column {name!r} is not {dtype}: {exc}") from None
        cols.append(arr)
    return tuple(cols)


class _PerBatch(Operator):
    """A one-input linear operator: the output at a time is :meth:`apply` of the input batch
    (applied to each batch as it arrives: ``apply`` commutes with concatenation)."""

    forwards = True

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        b = inputs[0]
        if b is not None:
            self.emit(time, self.apply(b))

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        self.emit(time, self.apply(batch))

    def apply(self, b: Batch) -> Batch:
        raise NotImplementedError


class _UserFunction(_PerBatch):
    """A per-batch operator around a user function of the batch's columns."""

    def __init__(self, *args: Any, fn: Callable[..., Any], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fn = fn


class Map(_UserFunction):
    kind = "map"

    def apply(self, b: Batch) -> Batch:
        return Batch(_check_outputs(self, self.fn(*b.cols), len(b)), b.diff)


class Filter(_UserFunction):
    kind = "filter"

    def apply(self, b: Batch) -> Batch:
        mask = np.asarray(self.fn(*b.cols))
        if mask.ndim == 0:
            mask = np.full(len(b), bool(mask))
        if mask.dtype != np.bool_:
            # SQL predicates may yield NULL (None): only True passes.
            mask = (
                np.fromiter((v is True or v is np.True_ for v in mask), dtype=bool, count=len(mask))
                if mask.dtype == object
                else mask.astype(bool)
            )
        if len(mask) != len(b):
            raise SchemaError(f"{self.name}: predicate returned {len(mask)} values for {len(b)}")
        return b if mask.all() else b.take(np.flatnonzero(mask))


class FlatMap(_UserFunction):
    kind = "flat_map"

    def apply(self, b: Batch) -> Batch:
        result = self.fn(*b.cols)
        if not isinstance(result, tuple) or len(result) != 2:
            raise SchemaError(f"{self.name}: flat_map functions return (parent_index, columns)")
        parent = np.asarray(result[0], dtype=np.int64)
        out = _check_outputs(self, result[1], len(parent))
        return Batch(out, b.diff[parent])


class Project(_PerBatch):
    kind = "project"

    def __init__(self, *args: Any, idx: tuple[int, ...], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.idx = idx

    def apply(self, b: Batch) -> Batch:
        cols = b.cols
        return Batch(tuple([cols[i] for i in self.idx]), b.diff)


class Concat(Operator):
    kind = "concat"
    forwards = True

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        if len(batch.cols) != len(self.schema):
            raise PlanError(f"{self.name}: inputs of different arity")
        self.emit(time, batch)

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        parts = [b for b in inputs if b is not None]
        if not parts:
            return
        for p in parts:
            if len(p.cols) != len(self.schema):
                raise PlanError(f"{self.name}: inputs of different arity")
        self.emit(time, Batch.concat(parts))


class Negate(_PerBatch):
    kind = "negate"

    def apply(self, b: Batch) -> Batch:
        return b.negate()


class Consolidate(_PerBatch):
    kind = "consolidate"
    forwards = False  # consolidates all of a time's updates together

    def apply(self, b: Batch) -> Batch:
        return b.consolidate()
