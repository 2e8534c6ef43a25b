"""Move a dataflow's checkpoint between shard counts (1 → N, N → 1, N → M).

This is how a view moves between the in-process executor and the sharded one: take the
checkpoints of the ``N`` shards (:meth:`Dataflow.state <ivm.dataflow.Dataflow.state>`; one
for the single process), and give each of the ``M`` target dataflows — built by the same
code with ``shard = q of M`` — the rows its exchanges would have routed to it.

Every trace a checkpoint holds is keyed by the columns its shard is chosen by: an
arrangement by its key, a reduce's output and an accumulable reduce's totals by their
leading key columns (equal to the input's key values, so they hash alike), an output's
contents by the whole row.  The operators correspond by build order once the exchanges
(which keep no state) are set aside.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ivm.batch import hash_rows
from ivm.dataflow import Dataflow, _from_arrow, _to_arrow
from ivm.errors import PlanError
from ivm.operators.accumulate import AccumulateReduce
from ivm.operators.arrange import Arrange
from ivm.operators.base import Operator
from ivm.operators.exchange import Exchange, shard_of
from ivm.operators.io import Output
from ivm.operators.reduce import Reduce
from ivm.shard.state_files import read_tables
from ivm.sharding import building


def _stateful_order(g: Dataflow) -> list[Operator]:
    return [op for op in g.ops if not isinstance(op, Exchange)]


def _shard_key(op: Operator, width: int) -> tuple[int, ...]:
    if isinstance(op, Arrange):
        return op.key_idx
    if isinstance(op, Reduce | AccumulateReduce):
        return tuple(range(len(op.key_idx)))
    if isinstance(op, Output):
        return tuple(range(width))
    raise PlanError(f"resharding: {op.name} keeps state the resharder does not know")


def reshard(
    states: Sequence[dict[str, pa.Table]],
    sources: Sequence[Dataflow],
    targets: Sequence[Dataflow],
) -> list[dict[str, pa.Table]]:
    """The checkpoints of ``targets`` (shards ``0..M-1``) holding the state of ``sources``
    (shards ``0..N-1``, whose checkpoints are ``states``)."""
    epoch, src_ops, dst_ops = _check_shards(states, sources, targets)
    m = len(targets)
    out: list[dict[str, pa.Table]] = [
        {
            "__meta__": pa.table(
                {"epoch": [epoch], "ops": [len(t.ops)], "signature": [t.signature()]}
            )
        }
        for t in targets
    ]
    for i, proto in enumerate(src_ops[0]):
        for name in proto.state():
            gathered = _gather(states, [ops[i] for ops in src_ops], name)
            if gathered is None:
                continue
            cols, times, diff = gathered
            key = _shard_key(proto, len(cols))
            dest = shard_of(hash_rows(tuple(cols[j] for j in key), len(diff)), m)
            for q in range(m):
                sel = np.flatnonzero(dest == q)
                out[q][f"{dst_ops[q][i].id}.{name}"] = _to_arrow(
                    tuple(c[sel] for c in cols), times[sel], diff[sel]
                )
    return out


def _check_shards(
    states: Sequence[dict[str, pa.Table]],
    sources: Sequence[Dataflow],
    targets: Sequence[Dataflow],
) -> tuple[int, list[list[Operator]], list[list[Operator]]]:
    """The common epoch of the source checkpoints and the stateful operators of the source
    and target shards, checked: one checkpoint per source, taken from it, targets numbered
    ``0..M-1``, and every dataflow built alike."""
    if len(states) != len(sources) or not sources or not targets:
        raise PlanError("resharding needs one checkpoint per source shard and a target")
    m = len(targets)
    for q, t in enumerate(targets):
        if t.shard.count != m or t.shard.index != q:
            raise PlanError(f"target {q} is {t.shard}, expected shard {q} of {m}")
    epochs = {int(s["__meta__"].column("epoch")[0].as_py()) for s in states}
    if len(epochs) != 1:
        raise PlanError(f"the source checkpoints are at different epochs {sorted(epochs)}")
    for p, (s, g) in enumerate(zip(states, sources, strict=True)):
        if s["__meta__"].column("signature")[0].as_py() != g.signature():
            raise PlanError(f"checkpoint {p} was not taken from source shard {p}")
    src_ops = [_stateful_order(g) for g in sources]
    dst_ops = [_stateful_order(g) for g in targets]
    shape = [(op.kind, str(op.schema)) for op in src_ops[0]]
    for ops in src_ops + dst_ops:
        if [(op.kind, str(op.schema)) for op in ops] != shape:
            raise PlanError("resharding between differently built dataflows")
    return epochs.pop(), src_ops, dst_ops


def _gather(
    states: Sequence[dict[str, pa.Table]], ops: Sequence[Operator], name: str
) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray] | None:
    """The updates of state entry ``name`` of one operator (``ops``: its copy in each source
    shard) over every source checkpoint, times padded to the deepest; None if none has it."""
    cols_parts, time_parts, diff_parts = [], [], []
    for s, op in zip(states, ops, strict=True):
        table = s.get(f"{op.id}.{name}")
        if table is None:
            continue
        cols, times, diff = _from_arrow(table, op, name)
        cols_parts.append(cols)
        time_parts.append(times)
        diff_parts.append(diff)
    if not diff_parts:
        return None
    cols = tuple(np.concatenate([c[j] for c in cols_parts]) for j in range(len(cols_parts[0])))
    depth = max(t.shape[1] for t in time_parts)
    times = np.concatenate(
        [
            t if t.shape[1] == depth else np.zeros((t.shape[0], depth), dtype=np.int64)
            for t in time_parts
        ]
    )
    return cols, times, np.concatenate(diff_parts)


def shard_graphs(build: Callable[[Dataflow], Any], n: int) -> list[Dataflow]:
    """``build`` run as shards ``0..n-1`` of ``n`` (empty dataflows: the resharder's map)."""
    graphs = []
    for p in range(n):
        with building(p, n) as spec:
            g = Dataflow("sharded", shard=spec)
            build(g)
        graphs.append(g)
    return graphs


def merged_checkpoint(
    directory: str | os.PathLike[str], build: Callable[[Dataflow], Any], n: int
) -> dict[str, pa.Table]:
    """The ``n`` shard checkpoints ``<directory>/shard-<p>.arrow`` of ``build`` merged into
    one single-process checkpoint (what :meth:`Dataflow.load_state` of ``build`` takes)."""
    base = Path(directory)
    states = [read_tables(base / f"shard-{p}.arrow") for p in range(n)]
    single = Dataflow("single")
    build(single)
    return reshard(states, shard_graphs(build, n), [single])[0]
