"""Datalog outputs kept as Delta view tables: after every epoch a plain ``deltalake`` reader
sees exactly the relation, time travel gives the previous one, and the commit's change data
feed equals the epoch's change (see tests/delta_mirror.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from datalog_harness import Maintained, run_random
from delta_mirror import DeltaMirror
from test_programs import CC_MIN_LABEL, POINTS_TO, SHORTEST_PATHS, TC, edge_gen

ARROW = {"int64": pa.int64(), "float64": pa.float64(), "str": pa.string(), "bool": pa.bool_()}


def mirror_of(m: Maintained, root: Path, cow_max_bytes: int | None) -> DeltaMirror:
    outputs = {}
    for name, out in m.prog.outputs.items():
        schema = pa.schema(
            [
                pa.field(n, ARROW[d])
                for n, d in zip(out.schema.names, out.schema.dtypes, strict=True)
            ]
        )
        outputs[name] = (out, schema)
    return DeltaMirror(root, outputs, cow_max_bytes=cow_max_bytes)


def check_with_delta(
    m: Maintained, root: Path, cow_max_bytes: int | None
) -> Callable[[Maintained], None]:
    mirror = mirror_of(m, root, cow_max_bytes)

    def extra(_: Maintained) -> None:
        failures = mirror.publish_and_check()
        assert not failures, "\n".join(failures[:10])

    return extra


@pytest.mark.parametrize("cow_max_bytes", [None, 0], ids=["copy-on-write", "deletion-vectors"])
def test_transitive_closure_as_view_tables(tmp_path: Path, cow_max_bytes: int | None) -> None:
    m = Maintained(TC)
    run_random(
        m,
        random.Random(5),
        6,
        {"edge": edge_gen(8)},
        extra_check=check_with_delta(m, tmp_path, cow_max_bytes),
    )


@pytest.mark.parametrize("program", ["cc", "sp", "pt"])
def test_more_programs_as_view_tables(tmp_path: Path, program: str) -> None:
    text, gen = {
        "cc": (CC_MIN_LABEL, {"edge": edge_gen(10)}),
        "sp": (SHORTEST_PATHS, None),
        "pt": (POINTS_TO, None),
    }[program]
    m = Maintained(text)
    if gen is None:
        gen = {name: _gen_for(m, name) for name in m.prog.new_inputs}
    run_random(m, random.Random(7), 8, gen, extra_check=check_with_delta(m, tmp_path, 0))


def _gen_for(m: Maintained, name: str) -> Callable[[random.Random], tuple[object, ...]]:
    dtypes = m.prog.new_inputs[name].schema.dtypes

    def gen(rng: random.Random) -> tuple[object, ...]:
        def one(d: str) -> object:
            if d == "int64":
                return rng.randrange(8)
            return rng.random() * 4 if d == "float64" else f"s{rng.randrange(5)}"

        return tuple(one(d) for d in dtypes)

    return gen
