"""The change data feed of each refresh's commit is exactly the diff of the view's rows before
and after it, read with a plain ``deltalake`` reader, with a keyed view's changed rows as
``update_preimage`` / ``update_postimage`` pairs (oracle: tests/feed_oracle.py), over
randomized change sequences with inserts, deletes and updates."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from feed_oracle import Feed, Row, bag, expected_feed, feed_of

from catalog import delta, view_table
from catalog.changes import DIFF
from spark_exec import Session


def plain_rows(path: str, version: int) -> list[dict[str, Any]]:
    dt = DeltaTable(path, version=version)
    if "deletionVectors" in (dt.protocol().reader_features or []):
        return pa.table(dt.scan()).to_pylist()
    return dt.to_pyarrow_table().to_pylist()


def plain_feed(path: str, version: int, columns: list[str]) -> Feed:
    cdf = pa.table(DeltaTable(path).load_cdf(starting_version=version, ending_version=version))
    assert set(cdf.column("_commit_version").to_pylist()) <= {version}
    return feed_of(cdf.to_pylist(), columns)


def change_batch(old: Counter[Row], new: Counter[Row], columns: list[str]) -> pa.Table:
    """The view's change from ``old`` to ``new`` as the engine hands it over (+ __diff__)."""
    diff = Counter(new)
    diff.subtract(old)
    rows = [(r, d) for r, d in diff.items() if d]
    cols: dict[str, Any] = {c: [r[i] for r, _ in rows] for i, c in enumerate(columns)}
    return pa.table({**cols, DIFF: pa.array([d for _, d in rows], pa.int64())})


SCHEMAS = {
    "keyed": (pa.schema([("k", pa.int64()), ("n", pa.int64()), ("s", pa.string())]), ("k",)),
    "global": (pa.schema([("n", pa.int64()), ("s", pa.string())]), ()),
    "bag": (pa.schema([("k", pa.int64()), ("s", pa.string())]), None),
}


def random_view(kind: str, rng: np.random.Generator, old: Counter[Row]) -> Counter[Row]:
    """The view's next rows: some rows kept, some changed in place, some gone, some new."""
    if kind == "global":
        return Counter({(int(rng.integers(0, 4)), str(rng.integers(0, 3))): 1})
    if kind == "keyed":
        rows = dict((r[0], r) for r in old)
        for k in rng.choice(60, size=int(rng.integers(1, 12)), replace=False).tolist():
            action = rng.integers(0, 4)
            if action == 0:
                rows.pop(k, None)
            elif action == 1 and k in rows:  # same key, same row: no change
                continue
            else:
                s = None if rng.random() < 0.1 else f"s{rng.integers(0, 3)}"
                rows[k] = (k, int(rng.integers(0, 3)), s)
        return Counter(rows.values())
    new = Counter(old)
    for _ in range(int(rng.integers(1, 10))):
        r = (int(rng.integers(0, 8)), f"s{rng.integers(0, 2)}")
        new[r] = max(0, new[r] + int(rng.integers(-2, 3)))
    return +new


@pytest.mark.parametrize("storage", ["copy_on_write", "deletion_vectors"])
@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_feed_is_the_diff_with_updates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, storage: str
) -> None:
    if storage == "deletion_vectors":
        monkeypatch.setattr(view_table, "COW_MAX_BYTES", 0)
    schema, key = SCHEMAS[kind]
    columns = schema.names
    positions = None if key is None else [columns.index(c) for c in key]
    path = str(tmp_path / "v")
    view_table.create_view_table(path, schema, view="v")
    rng = np.random.default_rng(sorted(SCHEMAS).index(kind) * 10 + len(storage))
    old: Counter[Row] = Counter()
    kinds: Counter[str] = Counter()
    for epoch in range(1, 25):
        new = random_view(kind, rng, old)
        batch = change_batch(old, new, columns)
        result = view_table.commit_view_changes(
            path, batch, view="v", epoch=epoch, input_versions={"t": epoch}, key=key
        )
        if new == old:
            assert result is None
            continue
        assert result is not None
        version = result.version
        assert bag(plain_rows(path, version - 1), columns) == old
        assert bag(plain_rows(path, version), columns) == new
        feed = plain_feed(path, version, columns)
        assert feed == expected_feed(old, new, positions), f"epoch {epoch}"
        kinds.update(k for (_, k), n in feed.items() for _ in range(n))
        view_table.maintain(path)
        old = new
    if kind == "bag":
        assert set(kinds) == {"insert", "delete"}
    else:  # the sequence did exercise updates (and, keyed, inserts and deletes)
        assert kinds["update_preimage"] == kinds["update_postimage"] > 3
        assert kind == "global" or (kinds["insert"] > 0 and kinds["delete"] > 0)
    if storage == "deletion_vectors":
        assert view_table.uses_deletion_vectors(path)


def test_a_key_with_two_removed_copies_is_not_an_update(tmp_path: Path) -> None:
    """Pairing is exactly one removed and one inserted copy per key; anything else stays
    delete/insert (a view whose rows are not unique on the given key)."""
    schema, key = SCHEMAS["keyed"]
    path = str(tmp_path / "v")
    view_table.create_view_table(path, schema, view="v")
    old = Counter({(1, 0, "a"): 1, (1, 1, "b"): 1, (2, 0, "a"): 1})
    new = Counter({(1, 2, "c"): 1, (2, 5, "z"): 1, (3, 0, "x"): 1})
    for epoch, (a, b) in enumerate([(Counter(), old), (old, new)], start=1):
        view_table.commit_view_changes(
            path,
            change_batch(a, b, schema.names),
            view="v",
            epoch=epoch,
            input_versions={},
            key=key,
        )
    got = plain_feed(path, 2, schema.names)
    assert got == Counter(
        {
            ((1, 0, "a"), "delete"): 1,
            ((1, 1, "b"), "delete"): 1,
            ((1, 2, "c"), "insert"): 1,
            ((2, 0, "a"), "update_preimage"): 1,
            ((2, 5, "z"), "update_postimage"): 1,
            ((3, 0, "x"), "insert"): 1,
        }
    )
    info = DeltaTable(path).history(1)[0]["operationMetrics"]
    assert (
        info["num_target_rows_inserted"],
        info["num_target_rows_updated"],
        info["num_target_rows_deleted"],
    ) == (2, 1, 2)


VIEWS = {
    # name: (query, key positions in the output, or None)
    "per_k": ("SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k", [0]),
    "per_kp": (
        "SELECT v % 3 AS p, k, max(v) AS m FROM t WHERE k < 6 GROUP BY k, v % 3",
        [0, 1],
    ),
    "total": ("SELECT count(*) AS n, sum(v) AS s FROM t", []),
    "rows": ("SELECT k, v FROM t WHERE v % 2 = 0", None),
}


def dml(rng: np.random.Generator, step: int) -> str:
    k = int(rng.integers(0, 10))
    match step % 4:
        case 0:
            vals = ", ".join(
                f"({int(rng.integers(0, 10))}, {int(rng.integers(0, 50))})"
                for _ in range(int(rng.integers(1, 5)))
            )
            return f"INSERT INTO t VALUES {vals}"
        case 1:
            return f"UPDATE t SET v = v + {int(rng.integers(1, 4))} WHERE k = {k}"
        case 2:
            return f"DELETE FROM t WHERE k = {k} AND v % 2 = {int(rng.integers(0, 2))}"
        case _:
            return f"DELETE FROM t WHERE k = {k}"


@pytest.mark.parametrize("seed", [1, 2])
def test_session_views_feed_equals_their_diff(tmp_path: Path, seed: int) -> None:
    """Through the Session: keys come from the views' SQL, DML on the input in random order."""
    rng = np.random.default_rng(seed)
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL)")
    delta.insert(
        s.table_path("t"),
        pa.table({"k": rng.integers(0, 10, 40), "v": rng.integers(0, 50, 40)}),
    )
    for name, (query, _) in VIEWS.items():
        s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    seen: dict[str, Counter[str]] = {name: Counter() for name in VIEWS}
    last = {name: view_table.last_refresh(s.table_path(name)) for name in VIEWS}
    for step in range(12):
        s.sql(dml(rng, int(rng.integers(0, 4)) if step >= 4 else step))
        s.refresh()
        for name, (_, key) in VIEWS.items():
            path = s.table_path(name)
            rec = view_table.last_refresh(path)
            assert rec is not None
            before = last[name]
            if before is not None and rec.version == before.version:
                continue  # nothing changed in this view
            last[name] = rec
            columns = s.read(name).column_names
            old = bag(plain_rows(path, rec.version - 1), columns)
            new = bag(plain_rows(path, rec.version), columns)
            feed = plain_feed(path, rec.version, columns)
            assert feed == expected_feed(old, new, key), f"{name} after step {step}"
            seen[name].update(k for (_, k), n in feed.items() for _ in range(n))
    for name, (_, key) in VIEWS.items():
        if key is None:
            assert "update_preimage" not in seen[name]
        else:
            assert seen[name]["update_postimage"] > 0, f"{name}: no update exercised"


@pytest.mark.parametrize("seed", range(30))
def test_small_update_pairs_equal_arrow_grouping(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small changes pair updates over Python tuples: the same pairs, in the same order, as
    Arrow's grouping (forced by ``SMALL_ROWS = 0``), NULL keys and repeated keys included."""
    from catalog import change_feed as cf
    from catalog import changes

    rng = np.random.default_rng(seed)

    def side(n: int) -> pa.Table:
        k = [None, "a", "b", "c", "d"]
        return pa.table(
            {
                "k": pa.array([k[i] for i in rng.integers(0, len(k), n)], pa.string()),
                "j": pa.array(rng.integers(0, 3, n), pa.int64()),
                "v": pa.array(rng.integers(0, 100, n), pa.int64()),
            }
        )

    removed, added = side(int(rng.integers(0, 20))), side(int(rng.integers(0, 20)))
    key = ("k", "j") if seed % 2 else ("k",)
    small = cf.change_feed(removed, added, key=key)
    monkeypatch.setattr(changes, "SMALL_ROWS", 0)
    arrow = cf.change_feed(removed, added, key=key)
    assert small[1] == arrow[1]
    assert small[0].equals(arrow[0])


@pytest.mark.parametrize("seed", range(24))
def test_sorted_update_pairs_equal_arrow_grouping(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Larger changes pair updates by sorting both sides' keys: the same pairs, in the same
    order, as Arrow's grouping — keys repeated on one side or both, in several chunks, of
    strings, integers and dates; a NULL key is left to Arrow's grouping."""
    import datetime as dt

    from catalog import change_feed as cf

    rng = np.random.default_rng(seed)
    kinds = 300 if seed % 3 else 30  # few kinds: many repeated keys

    def side(n: int) -> pa.Table:
        k = rng.integers(0, kinds, n)
        t = pa.table(
            {
                "k": pa.array([f"key {i}" for i in k], pa.string()),
                "j": pa.array(k % 7, pa.int64()),
                "d": pa.array([dt.date(2021, 1, 1 + int(i % 28)) for i in k], pa.date32()),
                "v": pa.array(rng.integers(0, 100, n), pa.int64()),
            }
        )
        return pa.concat_tables([t.slice(0, n // 3), t.slice(n // 3)]) if seed % 2 else t

    removed, added = side(int(rng.integers(65, 700))), side(int(rng.integers(65, 700)))
    if seed % 8 == 7:
        removed = removed.set_column(0, "k", pa.array([None, *removed["k"].to_pylist()[1:]]))
    key = (("k",), ("k", "j"), ("d", "j"))[seed % 3]
    names = list(key)
    assert (cf._pairs_sorted(removed, added, names) is None) == (seed % 8 == 7 and "k" in key)
    got = cf.change_feed(removed, added, key=key)
    monkeypatch.setattr(cf, "_pairs_sorted", lambda *_: None)
    arrow = cf.change_feed(removed, added, key=key)
    assert got[1] == arrow[1]
    assert got[0].equals(arrow[0])
    if key == ("k",) and kinds == 300:
        assert got[1].updated > 0  # updates exercised
