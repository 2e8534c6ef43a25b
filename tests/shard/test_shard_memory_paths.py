"""The sharded executor's memory paths (issue 17, memory): files streamed and read back
without copies, inputs split by the exchange they feed, an exchange's parts emitted as
one batch, freed memory returned.  Each is checked for exactness against one process
after every epoch of random inserts and deletes; the bytes it saves are checked where
they are a count (bytes exchanged), the resident memory in ``bench shard-memory``.

The shards run as threads of this process (``SparkShardedExecutor(None, ...)``: the same
shard tasks over the same file transport as on Spark).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ivm
from ivm.batch import Batch
from ivm.shard.memory import release_free_memory
from ivm.shard.state_files import read_tables, write_tables
from spark_exec.sharded import SparkShardedExecutor, input_routing

EDGE = [("src", "int64"), ("dst", "int64")]


def degrees(g: ivm.Dataflow) -> None:
    """Views whose exchanges all key on what the input is split by, but one."""
    e = g.input("e", EDGE)
    g.output(e.count("src"), "deg")
    g.output(e.min("src", "dst"), "first_dst")
    g.output(e.project("dst").distinct(), "dsts")  # exchanged by dst: routed


def only_by_src(g: ivm.Dataflow) -> None:
    e = g.input("e", EDGE)
    g.output(e.count("src"), "deg")
    g.output(e.max("src", "dst"), "last_dst")


def contents(changes: list[Batch]) -> Counter[tuple[Any, ...]]:
    acc: Counter[tuple[Any, ...]] = Counter()
    for b in changes:
        rows = zip(*(c.tolist() for c in b.cols), strict=True)
        for row, d in zip(rows, b.diff.tolist(), strict=True):
            acc[row] += d
    return +acc


def run_epochs(build: Any, n: int, tmp: Path, seed: int) -> list[int]:
    """Random epochs sharded ``n`` ways and in one process; every view's contents equal
    after every epoch; the bytes exchanged per epoch."""
    ex = SparkShardedExecutor(None, build, n, tmp)
    one = ivm.Dataflow("one")
    build(one)
    rng = random.Random(seed)
    live: list[tuple[int, int]] = []
    sharded: dict[str, list[Batch]] = {name: [] for name in one.outputs}
    local: dict[str, list[Batch]] = {name: [] for name in one.outputs}
    exchanged = []
    for size in (400, 60, 60, 1):
        ins = [(rng.randrange(40), rng.randrange(40)) for _ in range(size)]
        dels = rng.sample(live, min(len(live), size // 3))
        for r in dels:
            live.remove(r)
        live.extend(ins)
        ex.insert("e", ins)
        one.inputs["e"].send(ins, 1)
        if dels:
            ex.delete("e", dels)
            one.inputs["e"].send(dels, -1)
        result = ex.step()
        one.step()
        exchanged.append(result.bytes_exchanged)
        for name, o in one.outputs.items():
            sharded[name].append(result.batches[name])
            local[name].append(o.last_changes)
            assert contents(sharded[name]) == contents(local[name]), name
    return exchanged


@pytest.mark.parametrize("n", [2, 3])
def test_inputs_split_by_their_exchange_key_stay_exact(tmp_path: Path, n: int) -> None:
    assert run_epochs(degrees, n, tmp_path, seed=n)  # the dst exchange still routes


@pytest.mark.parametrize("n", [2, 3])
def test_an_input_split_by_its_only_exchange_key_routes_nothing(tmp_path: Path, n: int) -> None:
    assert input_routing(only_by_src, n) == {"e": (0,)}
    assert run_epochs(only_by_src, n, tmp_path, seed=10 + n) == [0, 0, 0, 0]


def test_framed_tables_round_trip_without_copies(tmp_path: Path) -> None:
    tables = {
        "ints": pa.table({"c0": np.arange(1000, dtype=np.int64), "diff": np.ones(1000)}),
        "text": pa.table({"c0": ["ä", "", None], "diff": [1, -1, 2]}),
        "empty": pa.table({"c0": pa.array([], pa.int64()), "diff": pa.array([], pa.int64())}),
    }

    def one_at_a_time() -> Any:
        yield from tables.items()

    path = tmp_path / "t.arrow"
    size = write_tables(path, one_at_a_time())
    assert size == path.stat().st_size
    back = read_tables(path)
    assert list(back) == list(tables)
    for name, t in tables.items():
        assert back[name].equals(t), name
    # the numeric column is a view of the buffer its stream was read into, not a copy
    col = back["ints"].column("c0").to_numpy()
    assert not col.flags.owndata and not col.flags.writeable
    release_free_memory()  # callable anywhere (Arrow's pool, glibc's trim when present)
