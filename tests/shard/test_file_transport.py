"""The file transport (Arrow IPC files + a file barrier), one thread per shard."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from shard_harness import Twins

import ivm
from ivm.library.graphs import connected_components
from ivm.shard import ShardGroup

EDGE = [("src", "int64"), ("dst", "int64")]


def build(g: ivm.Dataflow) -> None:
    e = g.input("e", EDGE)
    names = g.input("names", [("id", "int64"), ("name", "str")])
    wcc = connected_components(e)
    g.output(wcc, "wcc")
    # strings and NULL-free objects cross the wire too
    g.output(wcc.join(names, [("node", "id")]).project("name", "label"), "named")


def test_file_transport_equals_one_process(tmp_path: Path) -> None:
    tw = Twins(build, (1,))
    tw.groups[3] = ShardGroup(build, 3, exchange_dir=tmp_path)
    rng = random.Random(3)
    cur: list[tuple[int, int]] = []
    for _ in range(4):
        ins = [(rng.randrange(30), rng.randrange(30)) for _ in range(15)]
        dels = rng.sample(cur, min(len(cur), 4))
        for r in dels:
            cur.remove(r)
        cur.extend(ins)
        tw.insert("e", ins)
        tw.insert("names", [(rng.randrange(30), rng.choice(["ä", "b", ""])) for _ in range(3)])
        if dels:
            tw.delete("e", dels)
        tw.step()
    grp = tw.groups[3]
    assert grp.file_bytes > 0
    assert grp.report()["rounds"] > 0
    # each epoch's files are under their own directory; old rounds were cleaned up
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1-0", "2-1", "3-2", "4-3"]


def test_a_failing_shard_aborts_the_others(tmp_path: Path) -> None:
    def failing(g: ivm.Dataflow) -> None:
        t = g.input("t", [("k", "int64")])

        def boom(k: np.ndarray) -> tuple[np.ndarray]:
            if (k == 13).any():
                raise ValueError("boom")
            return (k,)

        g.output(t.distinct().map(boom, [("k", "int64")]), "out")

    grp = ShardGroup(failing, 3, exchange_dir=tmp_path)
    grp.input("t").insert([(k,) for k in range(10)])
    grp.step()
    grp.input("t").insert([(13,)])
    with pytest.raises(ValueError, match="boom"):
        grp.step()
    assert grp.epoch == 1
    assert (tmp_path / "2-1" / "abort").exists()
    grp.input("t").insert([(11,)])
    grp.step()  # a new attempt directory; the state of the failed epoch was rolled back
    assert sorted(grp.output("out").counts()) == [(k,) for k in range(10)] + [(11,)]
