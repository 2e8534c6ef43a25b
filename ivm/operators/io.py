"""Inputs users push changes into, and outputs they read changes and contents from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ivm.arrow_arrays import column_array, numeric_array
from ivm.batch import Batch, concat_columns
from ivm.difference import DIFF_MAX, abs_max
from ivm.errors import DiffError, SchemaError
from ivm.lattice import Time
from ivm.operators.base import Operator
from ivm.schema import coerce_column
from ivm.trace import Trace

if TYPE_CHECKING:
    from ivm.dataflow import Dataflow, Scope
    from ivm.schema import Schema
    from ivm.types import Diffs, Rows


def rows_to_columns(op: Operator, rows: Rows) -> tuple[np.ndarray, ...]:
    """Validate and convert user rows (tuples, dict of columns, Arrow) to engine columns."""
    schema = op.schema
    if isinstance(rows, pa.RecordBatch):
        rows = pa.Table.from_batches([rows])
    if isinstance(rows, pa.Table):
        missing = [n for n in schema.names if n not in rows.column_names]
        if missing:
            raise SchemaError(f"{op.name}: Arrow data lacks column(s) {missing}")
        data = {n: rows.column(n).to_pylist() for n in schema.names}
        return tuple(
            coerce_column(data[n], d, n) for n, d in zip(schema.names, schema.dtypes, strict=True)
        )
    if isinstance(rows, dict):
        # exactly the schema's columns (the common case) pass one C-level comparison
        if rows.keys() != set(schema.names):
            extra = set(rows) - set(schema.names)
            missing = [n for n in schema.names if n not in rows]
            raise SchemaError(
                f"{op.name}: columns must be {list(schema.names)}; "
                f"missing {missing}, unexpected {sorted(extra)}"
            )
        cols = [
            coerce_column(rows[n], d, n) for n, d in zip(schema.names, schema.dtypes, strict=True)
        ]
        lens = {len(c) for c in cols}
        if len(lens) > 1:
            raise SchemaError(f"{op.name}: columns of different lengths {sorted(lens)}")
        return tuple(cols)
    try:
        rows = list(rows)
    except TypeError:
        raise SchemaError(
            f"{op.name}: rows must be a list of tuples, a dict of columns or "
            f"an Arrow table, got {type(rows).__name__}"
        ) from None
    width = len(schema)
    for r in rows:
        if not isinstance(r, tuple | list) or len(r) != width:
            raise SchemaError(
                f"{op.name}: row {r!r} does not match schema {schema} ({width} columns)"
            )
    if not rows:
        return tuple(
            coerce_column([], d, n) for n, d in zip(schema.names, schema.dtypes, strict=True)
        )
    return tuple(
        coerce_column([r[i] for r in rows], d, n)
        for i, (n, d) in enumerate(zip(schema.names, schema.dtypes, strict=True))
    )


def coerce_diffs(op: Operator, diffs: Diffs, n: int) -> np.ndarray:
    """User diffs as int64, each within ``±(2**63 - 1)`` (the symmetric range of
    :mod:`ivm.difference`, so a retraction can always be negated)."""
    if type(diffs) is int and -DIFF_MAX <= diffs <= DIFF_MAX:
        # the common case (insert, delete): one diff for every row
        out = np.empty(n, dtype=np.int64)
        out.fill(diffs)
        return out
    if isinstance(diffs, int | np.integer) and not isinstance(diffs, bool):
        if not -DIFF_MAX <= int(diffs) <= DIFF_MAX:
            raise DiffError(
                f"{op.name}: diff {int(diffs)} does not fit a 64-bit integer "
                f"(diffs are within ±(2**63 - 1))"
            )
        return np.full(n, int(diffs), dtype=np.int64)
    arr = np.asarray(diffs)
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        if arr.dtype == object and all(
            isinstance(v, int) and not isinstance(v, bool) for v in arr.tolist()
        ):
            try:
                arr = arr.astype(np.int64)
            except OverflowError:
                raise DiffError(f"{op.name}: diffs must fit a 64-bit integer") from None
        else:
            raise DiffError(f"{op.name}: diffs must be integers, got {arr.dtype}")
    if arr.shape != (n,):
        raise DiffError(f"{op.name}: {arr.size} diffs for {n} rows")
    if n and (
        (arr.dtype.kind == "u" and int(arr.max()) > DIFF_MAX)
        or (arr.dtype.kind == "i" and int(arr.min()) < -DIFF_MAX)
    ):
        raise DiffError(
            f"{op.name}: diffs must fit a 64-bit integer (diffs are within ±(2**63 - 1))"
        )
    return arr.astype(np.int64)


class Input(Operator):
    """A collection users change; changes wait here until the next epoch."""

    kind = "input"
    forwards = True

    def __init__(self, *args: Any, constant: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.pending: list[Batch] = []
        self.constant = constant

    def send(self, rows: Rows, diffs: Diffs) -> None:
        cols = rows_to_columns(self, rows)
        n = len(cols[0]) if cols else 0
        d = coerce_diffs(self, diffs, n)
        if n:
            self.pending.append(Batch(cols, d))

    def snapshot(self) -> object:
        return list(self.pending) if self.constant else None

    def restore(self, snap: object) -> None:
        # the failed epoch's changes are discarded (a step is all or nothing); a constant
        # collection keeps its rows for the next epoch
        self.pending = list(snap) if isinstance(snap, list) else []

    def pending_rows(self) -> int:
        return sum([b.diff.shape[0] for b in self.pending])

    def start_epoch(self, time: Time) -> None:
        for b in self.pending:
            self.push(0, time, b)
        self.pending = []

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        # not consolidated here: every stateful consumer consolidates what it keeps
        if inputs[0] is not None:
            self.emit(time, inputs[0])

    def forward(self, port: int, time: Time, batch: Batch) -> None:
        self.emit(time, batch)


class Output(Operator):
    """The changes of the last epoch and the current contents of a collection."""

    kind = "output"
    #: unmerged changes are added to the contents from this many rows on, however small
    #: the contents (else from an eighth of their rows)
    MIN_UNMERGED = 4096

    def __init__(
        self,
        graph: Dataflow,
        scope: Scope,
        inputs: list[Operator],
        schema: Schema,
        label: str | None = None,
    ) -> None:
        super().__init__(graph, scope, inputs, schema, label)
        self.contents_trace = self._new_contents()
        self._epoch_parts: list[Batch] = []
        self.last_changes: Batch = self.empty_batch()
        #: epochs' changes (consolidated, hashed) not yet added to the contents trace
        self._unmerged: list[Batch] = []
        self._unmerged_rows = 0
        #: the largest ``|diff|`` of each unmerged batch, summed (see :meth:`end_epoch`)
        self._unmerged_bound = 0
        #: :meth:`_arrow_schema`'s answers, by diff column name
        self._arrow_schemas: dict[str | None, pa.Schema | None] = {}

    def process(self, time: Time, inputs: list[Batch | None]) -> None:
        if inputs[0] is not None:
            self._epoch_parts.append(inputs[0])

    def end_epoch(self) -> None:
        """Consolidate the epoch's changes; add them to the contents lazily.

        The contents are read only on request (:meth:`contents`, :meth:`counts`, a
        checkpoint), so the changes of several epochs are added as one run, once they hold
        an eighth of the contents' rows: a small change then sorts and merges a few rows
        into a spine of few, larger runs instead of merging its own run up through every
        level, and the work per step follows the change.  If the unmerged changes' largest
        diffs could add up past 64 bits with the contents', they are added at once, so a
        multiplicity that overflows is still found in the epoch that causes it."""
        if self._epoch_parts:
            self.last_changes = Batch.concat_consolidated(self._epoch_parts)
        else:
            self.last_changes = self.empty_batch()
        self._epoch_parts = []
        b = self.last_changes
        if not len(b):
            return
        self._unmerged.append(b)
        self._unmerged_rows += len(b)
        self._unmerged_bound += abs_max(b.diff)
        trace = self.contents_trace
        if (
            self._unmerged_rows >= max(trace.rows_held() // 8, self.MIN_UNMERGED)
            or self._unmerged_bound + sum(r.bound for r in trace.runs) > DIFF_MAX
        ):
            self._merge_changes()

    def _merge_changes(self) -> None:
        """Add the unmerged changes to the contents trace (and compact it)."""
        parts, self._unmerged = self._unmerged, []
        self._unmerged_rows = self._unmerged_bound = 0
        if parts:
            cols = concat_columns([p.cols for p in parts])
            diff = np.concatenate([p.diff for p in parts])
            no_times = np.zeros((len(diff), 0), dtype=np.int64)
            if all(p.rowhash is not None for p in parts):
                h = np.concatenate([p.rowhash for p in parts])
                if len(parts) == 1:  # consolidated, with its row hashes
                    self.contents_trace.insert_consolidated(cols, no_times, diff, h)
                else:
                    self.contents_trace.insert(cols, no_times, diff, rowhash=h, keyhash=h)
            else:
                self.contents_trace.insert(cols, no_times, diff)
        self.contents_trace.compact()

    def snapshot(self) -> object:
        return (
            self.contents_trace.snapshot(),
            self.last_changes,
            (list(self._unmerged), self._unmerged_rows, self._unmerged_bound),
        )

    def restore(self, snap: object) -> None:
        assert isinstance(snap, tuple)
        self.contents_trace.restore(snap[0])
        self.last_changes = snap[1]
        unmerged, self._unmerged_rows, self._unmerged_bound = snap[2]
        self._unmerged = list(unmerged)
        self._epoch_parts = []

    def consolidated(self) -> Batch:
        self._merge_changes()
        cols, _, diff = self.contents_trace.all_updates()
        return Batch(cols, diff)

    def state(self) -> dict[str, tuple]:
        self._merge_changes()
        return {"contents": self.contents_trace.all_updates()}

    def load_state(self, state: dict[str, tuple]) -> None:
        self.contents_trace = self._new_contents()
        self.contents_trace.insert(*state["contents"])
        self._unmerged, self._unmerged_rows, self._unmerged_bound = [], 0, 0

    def _new_contents(self) -> Trace:
        """An empty trace of the contents (the whole row is the key; no inner times)."""
        return Trace(self.dtypes, tuple(range(len(self.schema))), ())

    # -- reading (user API) ----------------------------------------------------------------
    def _table(self, b: Batch, diff_col: str | None) -> pa.Table:
        if not b.cols and not diff_col:
            return pa.table({"__empty__": pa.array([], pa.int8())})
        fixed = self._arrow_schema(diff_col)
        if fixed is not None:
            # numeric columns only: their Arrow types follow from the dtypes, so the table
            # is built against a schema made once (a step reads its changes every time)
            arrays = [
                numeric_array(c, d, f.type)
                for c, d, f in zip(b.cols, self.dtypes, fixed, strict=False)
            ]
            if diff_col:
                arrays.append(numeric_array(b.diff, _NP_INT64, _INT64))
            return pa.Table.from_arrays(arrays, schema=fixed)
        cols = {
            n: column_array(c, d)
            for n, d, c in zip(self.schema.names, self.schema.dtypes, b.cols, strict=True)
        }
        if diff_col:
            cols[diff_col] = numeric_array(b.diff, _NP_INT64, _INT64)
        return pa.table(cols)

    def _arrow_schema(self, diff_col: str | None) -> pa.Schema | None:
        """The Arrow schema of :meth:`_table`'s result when every column is numeric (None
        when a column holds Python objects, whose Arrow type depends on the values)."""
        cached = self._arrow_schemas.get(diff_col, False)
        if cached is not False:
            return cached
        found: pa.Schema | None = None
        if all(d != np.dtype(object) for d in self.dtypes):
            fields = [
                pa.field(n, pa.from_numpy_dtype(d))
                for n, d in zip(self.schema.names, self.dtypes, strict=True)
            ]
            if diff_col:
                fields.append(pa.field(diff_col, pa.int64()))
            found = pa.schema(fields)
        self._arrow_schemas[diff_col] = found
        return found

    def changes(self) -> pa.Table:
        """The consolidated changes of the last epoch, with a ``__diff__`` column."""
        return self._table(self.last_changes, "__diff__")

    def contents(self) -> pa.Table:
        """The current rows (a row with count n appears n times)."""
        b = self.consolidated()
        if (b.diff < 0).any():
            bad = b.take(np.flatnonzero(b.diff < 0))
            raise SchemaError(
                f"{self.name}: negative multiplicities in output: "
                f"{list(zip(*(c.tolist() for c in bad.cols), strict=True))[:5]}"
            )
        idx = np.repeat(np.arange(len(b)), b.diff)
        return self._table(b.take(idx), None)

    def counts(self) -> dict[tuple, int]:
        """The current contents as ``{row: count}`` (plain Python values)."""
        b = self.consolidated()
        rows = zip(*(c.tolist() for c in b.cols), strict=True) if b.cols else [()] * len(b)
        return {tuple(r): int(d) for r, d in zip(rows, b.diff.tolist(), strict=True)}

    def changed_counts(self) -> dict[tuple, int]:
        b = self.last_changes
        rows = zip(*(c.tolist() for c in b.cols), strict=True) if b.cols else [()] * len(b)
        return {tuple(r): int(d) for r, d in zip(rows, b.diff.tolist(), strict=True)}


_INT64 = pa.int64()
_NP_INT64 = np.dtype(np.int64)
