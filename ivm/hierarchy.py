"""Hierarchical MIN/MAX (with COUNT and SUM beside them) outside loops.

MIN and MAX are not linear: the new minimum of a group after a deletion depends on the rest
of the group, so a plain :class:`~ivm.operators.reduce.Reduce` re-reads every touched group
— a one-row change to a group of 100,000 rows reads 100,000 rows.  Here each group is cut
into ``2**LEAF_BITS`` buckets by a hash of the row, and the aggregates are computed in
stages (two-phase aggregation, as Materialize's hierarchical reductions do):

1. per ``(key, bucket)``: the partial aggregates of the bucket's rows;
2. per ``(key, bucket >> FANOUT_BITS)``, repeatedly: the partials combined (counts and sums
   added, minima of minima, maxima of maxima), until one level below the key;
3. per key: the partials combined into the aggregates asked for.

A change re-reads its row's bucket (about ``group size / 256`` rows) and at most
``2**FANOUT_BITS`` partial rows at each level above, so the work follows the change, not
the group.  NULLs are skipped at every level (a bucket of NULLs has a NULL partial, which
the next level skips), so the results equal the plain reduce's.

Buckets are data (they are stored in the arrangements and in checkpoints), so they are
computed with a hash that is the same in every process: the row hash for numeric columns,
and a CRC of ``repr`` for object columns (Python's own string hash is salted per process).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ivm.aggregate_spec import Agg, AggFunction
from ivm.batch import hash_column
from ivm.kernels import mix_hashes
from ivm.operators.aggregates import AggregateKernel
from ivm.reduce_plan import ReducePlan, ReduceStrategy

if TYPE_CHECKING:
    from ivm.collection import Collection

LEAF_BITS = 8
FANOUT_BITS = 4
#: how each aggregate's partials combine at the next level
COMBINE = {
    AggFunction.COUNT: AggFunction.SUM,
    AggFunction.SUM: AggFunction.SUM,
    AggFunction.MIN: AggFunction.MIN,
    AggFunction.MAX: AggFunction.MAX,
}

_SEED = np.uint64(0x9E3779B97F4A7C15)
_MULT = np.uint64(0x94D049BB133111EB)


def stable_row_hash(cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """A 64-bit hash per row that is the same in every process (see the module docstring)."""
    h = np.full(n, _SEED, dtype=np.uint64)
    for col in cols:
        if col.dtype.kind in "iubf":
            part = hash_column(col)
        else:
            part = np.fromiter(
                (zlib.crc32(repr(v).encode()) for v in col), dtype=np.uint64, count=n
            )
        h = mix_hashes(h, part, _MULT)
    return h


def _fresh_name(taken: Sequence[str], base: str) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def _plain(
    c: Collection,
    key_idx: tuple[int, ...],
    specs: Sequence[tuple[str, int | None]],
    names: Sequence[str],
    stands_for: Sequence[tuple[str, str]],
    plan: ReducePlan,
) -> Collection:
    """A plain (re-reading) reduce, used on the small groups of each stage (``stands_for``:
    the user's aggregate of each partial, named in overflow errors)."""
    kernel = AggregateKernel(specs, c.schema.dtypes, names, stands_for)
    return c._reduce(key_idx, kernel, plan)


def hierarchical_reduce(
    c: Collection,
    key_idx: tuple[int, ...],
    specs: Sequence[Agg],
    out_names: Sequence[str],
    plan: ReducePlan | None = None,
) -> Collection:
    """``c.reduce(key, specs)`` in stages over hash buckets (see the module docstring);
    every stage carries ``plan`` (its ``prefix_cache`` applies to the stages)."""
    plan = plan if plan is not None else ReducePlan(ReduceStrategy.HIERARCHICAL)
    names = list(c.schema.names)
    width = len(names)
    bucket = _fresh_name(names, "__bucket")
    partial = [_fresh_name(names, f"__part{j}") for j in range(len(specs))]
    shift = np.uint64(64 - LEAF_BITS)

    def with_bucket(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
        h = stable_row_hash(cols, len(cols[0]))
        return (*cols, (h >> shift).astype(np.int64))

    leaf = c.map(with_bucket, [*zip(names, c.schema.dtypes, strict=True), (bucket, "int64")])
    user = [(fn, name) for (fn, _), name in zip(specs, out_names, strict=True)]
    level = _plain(leaf, (*key_idx, width), specs, partial, user, plan)
    # a level's rows: key columns, bucket, one partial per aggregate
    nk = len(key_idx)
    fanout = FANOUT_BITS
    combine = [(COMBINE[fn], nk + 1 + j) for j, (fn, _) in enumerate(specs)]
    upper = tuple(range(nk + 1))
    bits = LEAF_BITS
    while bits > fanout:
        bits -= fanout

        def coarser(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
            return (*cols[:nk], cols[nk] >> fanout, *cols[nk + 1 :])

        schema = list(zip(level.schema.names, level.schema.dtypes, strict=True))
        level = _plain(level.map(coarser, schema), upper, combine, partial, user, plan)
    return _plain(level, tuple(range(nk)), combine, out_names, user, plan)
