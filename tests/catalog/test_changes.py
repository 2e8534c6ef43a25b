"""The change data feed as (row, __diff__) batches, verified against what deltalake 1.x writes."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from catalog import delta
from catalog.changes import DIFF, VERSION, consolidate, read_changes
from catalog.errors import (
    DeltaOperationError,
    DroppedInputError,
    NotADeltaTableError,
    SchemaChangeError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def bag(t: pa.Table) -> Counter[tuple[object, ...]]:
    """The multiset a (row, __diff__) batch or a plain table stands for."""
    rows = t.drop_columns([c for c in (DIFF, VERSION) if c in t.column_names]).to_pylist()
    diffs = t.column(DIFF).to_pylist() if DIFF in t.column_names else [1] * len(rows)
    out: Counter[tuple[object, ...]] = Counter()
    for r, d in zip(rows, diffs, strict=True):
        out[tuple(r.values())] += d
    return +out if all(v >= 0 for v in out.values()) else out


def diff_of(before: pa.Table, after: pa.Table) -> Counter[tuple[object, ...]]:
    out = bag(after)
    out.subtract(bag(before))
    return Counter({k: v for k, v in out.items() if v})


@pytest.fixture
def table(tmp_path: Path) -> str:
    p = str(tmp_path / "t")
    delta.create_table(p, SCHEMA)
    delta.insert(p, pa.table({"id": [1, 2, 3, 3], "v": ["a", "b", "c", "c"]}, schema=SCHEMA))
    return p


def check_range(p: str, after: int | None, upto: int) -> None:
    before = delta.read_snapshot(p, after) if after is not None else SCHEMA.empty_table()
    changes = read_changes(p, after, upto)
    assert Counter({k: v for k, v in bag(changes).items() if v}) == diff_of(
        before, delta.read_snapshot(p, upto)
    )
    assert changes.schema.names == ["id", "v", DIFF]
    assert changes.schema.field("v").type == pa.string()


def test_cdf_is_enabled_on_created_tables(table: str) -> None:
    assert delta.change_feed_enabled(table)


def test_insert_delete_update_merge_round_trip(table: str) -> None:
    assert delta.current_version(table) == 1
    delta.delete(table, "id = 2")
    delta.update(table, {"v": "'z'"}, "id = 3")
    src = pa.table({"id": [1, 5], "v": ["A", "E"]})
    delta.merge(
        table,
        src,
        "t.id = s.id",
        [
            delta.MergeClause("matched", "update_all"),
            delta.MergeClause("not_matched", "insert_all"),
        ],
    )
    delta.delete(table)  # whole table: delta-rs writes no change files, only removes
    delta.insert(table, pa.table({"id": [9], "v": [None]}, schema=SCHEMA))
    latest = delta.current_version(table)
    assert latest == 6
    for v in range(1, latest + 1):
        check_range(table, v - 1, v)
    check_range(table, None, latest)
    check_range(table, 0, latest)
    check_range(table, 2, 5)
    # the update: two copies of (3, c) became two copies of (3, z)
    assert bag(read_changes(table, 2, 3)) == Counter({(3, "c"): -2, (3, "z"): 2})


def test_unconsolidated_feed_and_versions(table: str) -> None:
    # measured: a no-op update writes no change files, so delta-rs derives the feed from the
    # rewritten file (every row deleted and re-inserted); consolidation cancels it out
    delta.update(table, {"v": "v"}, "id = 1")
    raw = read_changes(table, 1, 2, consolidated=False, with_version=True)
    assert sum(raw.column(DIFF).to_pylist()) == 0 and raw.num_rows >= 2
    assert set(raw.column(VERSION).to_pylist()) == {2}
    assert read_changes(table, 1, 2).num_rows == 0


def test_second_writer_with_deltalake_directly(table: str) -> None:
    # another process appends, overwrites a partition of rows, and merges with delta-rs
    write_deltalake(table, pa.table({"id": [7], "v": ["x"]}, schema=SCHEMA), mode="append")
    write_deltalake(
        table,
        pa.table({"id": [8], "v": ["y"]}, schema=SCHEMA),
        mode="overwrite",
        predicate="id >= 7",
    )
    dt = DeltaTable(table)
    (
        dt.merge(
            pa.table({"id": [1, 8], "v": ["q", "r"]}, schema=SCHEMA),
            "t.id = s.id",
            source_alias="s",
            target_alias="t",
        )
        .when_matched_delete()
        .execute()
    )
    write_deltalake(table, pa.table({"id": [0], "v": ["all"]}, schema=SCHEMA), mode="overwrite")
    latest = delta.current_version(table)
    for v in range(2, latest + 1):
        check_range(table, v - 1, v)
    check_range(table, 1, latest)


def test_table_without_change_feed(tmp_path: Path) -> None:
    p = str(tmp_path / "nocdf")
    write_deltalake(p, pa.table({"id": [1, 2]}))
    write_deltalake(p, pa.table({"id": [3]}), mode="append")
    DeltaTable(p).delete("id = 1")
    assert not delta.change_feed_enabled(p)
    # derived from added/removed files: right once consolidated
    assert bag(read_changes(p, 0, 2)) == Counter({(3,): 1, (1,): -1})


def test_consolidate_keeps_nulls_apart_and_drops_zeros() -> None:
    t = pa.table({"a": [None, None, 1, 1], "b": ["x", "x", None, None], DIFF: [1, 1, 1, -1]})
    assert consolidate(t).to_pylist() == [{"a": None, "b": "x", DIFF: 2}]
    nested = pa.table({"l": [[1], [1], [2]], DIFF: [1, 1, 1]})
    assert sorted(map(str, consolidate(nested).to_pylist())) == [
        "{'l': [1], '__diff__': 2}",
        "{'l': [2], '__diff__': 1}",
    ]


@pytest.mark.parametrize("seed", range(40))
def test_small_consolidation_equals_arrow_grouping(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small tables are consolidated in Python: the same rows (in some order), types and
    nullability as Arrow's grouping (forced by ``SMALL_ROWS = 0``), NULLs and zeros included."""
    import datetime as dt

    import numpy as np

    from catalog import changes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, changes.SMALL_ROWS + 1))

    def pick(values: list[object]) -> list[object]:
        return [values[i] for i in rng.integers(0, len(values), n)]

    t = pa.table(
        {
            "i": pa.array(pick([None, 1, 2, -(1 << 31)]), pa.int32() if seed % 2 else pa.int64()),
            "s": pa.array(pick([None, "a", "b", ""]), pa.string()),
            "b": pa.array(pick([None, True, False]), pa.bool_()),
            "d": pa.array(pick([None, dt.date(2020, 1, 1), dt.date(1970, 1, 1)]), pa.date32()),
            "y": pa.array(pick([b"x", b"", None]), pa.binary()),
            DIFF: pa.array(rng.integers(-2, 3, n), pa.int64()),
        },
        schema=pa.schema(
            [
                pa.field("i", pa.int32() if seed % 2 else pa.int64()),
                pa.field("s", pa.string()),
                pa.field("b", pa.bool_()),
                pa.field("d", pa.date32()),
                pa.field("y", pa.binary()),
                pa.field(DIFF, pa.int64(), nullable=False),
            ]
        ),
    )
    keys = None if seed % 3 else ["s", "i"]
    small = consolidate(t, keys=keys)
    monkeypatch.setattr(changes, "SMALL_ROWS", 0)
    arrow = consolidate(t, keys=keys)
    assert small.schema.equals(arrow.schema, check_metadata=True)
    assert sorted(map(repr, small.to_pylist())) == sorted(map(repr, arrow.to_pylist()))


def test_errors(table: str, tmp_path: Path) -> None:
    with pytest.raises(DeltaOperationError, match="backwards"):
        read_changes(table, 1, 0)
    with pytest.raises(DeltaOperationError, match="does not exist"):
        read_changes(table, 0, 9)
    with pytest.raises(SchemaChangeError, match="'nope'"):
        read_changes(table, 0, 1, schema=pa.schema([("nope", pa.int64())]), name="t")
    with pytest.raises(NotADeltaTableError):
        delta.open_table(tmp_path / "missing")
    with pytest.raises(DeltaOperationError, match="delete"):
        delta.delete(table, "nosuch = 1")
    with pytest.raises(DeltaOperationError, match="unknown column"):
        delta.insert(table, pa.table({"id": [1], "v": ["a"], "extra": [1]}))
    shutil.rmtree(table)
    with pytest.raises(DroppedInputError, match="'edges'"):
        read_changes(table, 0, 1, name="edges")


def test_change_types_sign_the_rows_and_unknown_ones_are_refused() -> None:
    from catalog import changes
    from catalog.capture import Part

    schema = pa.schema([("id", pa.int64())])
    kinds = pa.chunked_array([["insert", "delete", "update_preimage", "update_postimage"]])
    feed = Part(pa.table({"id": [1, 2, 3, 4]}), kinds, 3)
    diff = Part(pa.table({"id": [5, 6]}), "delete", 4)
    out = changes._signed([feed, diff], "p", "t", schema, None, True)
    assert out.column(DIFF).to_pylist() == [1, -1, -1, 1, -1, -1]
    assert out.column(VERSION).to_pylist() == [3, 3, 3, 3, 4, 4]
    assert out.column("id").to_pylist() == [1, 2, 3, 4, 5, 6]
    bad = Part(pa.table({"id": [1, 2, 3]}), pa.chunked_array([["insert", "bogus", None]]), 1)
    with pytest.raises(DeltaOperationError, match="bogus"):
        changes._signed([bad], "p", "t", schema, None, False)
    with pytest.raises(DeltaOperationError, match="bogus"):
        changes._signed([Part(pa.table({"id": [1]}), "bogus", 1)], "p", "t", schema, None, False)


@pytest.mark.parametrize("seed", range(12))
def test_small_consolidation_of_distinct_rows(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct rows with nonzero diffs (a small change's usual shape) are returned as they
    are; a NULL or zero diff among them, or one repeated row, still goes through the sums —
    the same rows as Arrow's grouping either way."""
    import numpy as np

    from catalog import changes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, changes.SMALL_ROWS + 1))
    ids = rng.permutation(1000)[:n].tolist()
    diffs: list[int | None] = [int(d) for d in rng.choice([-2, -1, 1, 3], n)]
    if seed % 3 == 1:
        diffs[int(rng.integers(0, n))] = None if seed % 2 else 0
    if seed % 3 == 2 and n > 1:
        ids[-1] = ids[0]
    t = pa.table(
        {"s": [f"r{i % 7}" for i in ids], "id": pa.array(ids, pa.int64()), DIFF: diffs},
        schema=pa.schema([("s", pa.string()), ("id", pa.int64()), (DIFF, pa.int64())]),
    )
    small = consolidate(t)
    monkeypatch.setattr(changes, "SMALL_ROWS", 0)
    arrow = consolidate(t.filter(pa.array([d is not None for d in diffs])))  # NULL: no change
    assert small.schema.equals(arrow.schema)
    assert sorted(map(repr, small.to_pylist())) == sorted(map(repr, arrow.to_pylist()))
    if seed % 3 == 0:
        assert small.to_pylist() == t.to_pylist()  # the table itself, in its order


@pytest.mark.parametrize("seed", range(24))
def test_distinct_rows_are_their_own_consolidation(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows past the small path: distinct rows with nonzero diffs (integers, strings,
    binaries, booleans, dates) are returned as they are; a repeated row, a zero diff, a NULL
    key, a float column, or rows distinct only in a column not compared go through Arrow's
    grouping — the same rows as Arrow's grouping every time."""
    import datetime as dt

    import numpy as np

    from catalog import changes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(changes.SMALL_ROWS + 1, 1500))
    a = rng.permutation(5 * n)[:n]  # distinct: every row is
    b = rng.integers(-3, 3, n)
    d = rng.choice([-1, 1, 2], n)
    case = seed % 6
    if case == 1:  # one repeated row
        a[n - 1] = a[0]
        b[n - 1] = b[0]
    if case == 2:
        d[n // 2] = 0
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=int(x % 9)) for x in b]
    region = [f"region {x % 20}" for x in a]  # repeats across rows, distinct with a
    cols: dict[str, pa.Array] = {
        "a": pa.array(a, pa.int64()),
        "s": pa.array(region, pa.large_string() if seed % 2 else pa.string()),
        "b": pa.array(b, pa.int32()),
        "y": pa.array([r.encode() for r in region], pa.binary()),
        "t": pa.array(b > 0, pa.bool_()),
        "day": pa.array(days, pa.date32()),
        DIFF: pa.array(d, pa.int64()),
    }
    if case == 3:
        cols["s"] = pa.array([None, *region[1:]], pa.string())
    if case == 4:
        cols["b"] = pa.array(b.astype(float), pa.float64())
    t = pa.table(cols)
    if case == 5:  # two chunks, the same strings encoded in each
        t = pa.concat_tables([t.slice(0, n // 2), t.slice(n // 2)])
    keys = ["s", "b", "day"] if seed % 4 == 3 else None  # a subset of the columns
    if keys is None:
        names = [c for c in t.column_names if c != DIFF]
        assert changes._distinct_rows(t, names, DIFF) == (case in (0, 5))
    got = consolidate(t, keys=keys)
    monkeypatch.setattr(changes, "_distinct_rows", lambda *_: False)
    want = consolidate(t, keys=keys)
    assert got.schema.equals(want.schema)
    assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist()))
