"""The refresh pipeline (catalog.pipeline): typed checkpoint metadata, old checkpoints, shape.

The fixture warehouse ``tests/fixtures/main_checkpoint_2026_11_23`` was written by the code
of 2026-11-23 (before catalog.pipeline existed: ``spark_exec/groups.py``): a SQL view ``agg``
and a Datalog view ``reach`` over ``t``, each checkpoint a base plus one logged epoch.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog.pipeline.meta import (
    BaseKey,
    CheckpointFormatError,
    GroupMeta,
    LogKey,
    decode_key,
    encode_key,
)
from spark_exec.session import Session

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "main_checkpoint_2026_11_23"
PIPELINE = ROOT / "catalog" / "pipeline"


def _copy_fixture(tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    shutil.copytree(FIXTURE, wh)
    return wh


def _oracle(rows: list[tuple[int, int]]) -> tuple[Counter[tuple[int, ...]], set[tuple[int, int]]]:
    """``agg`` (k, sum(v), count(*)) and ``reach`` (transitive closure) from ``t``'s rows."""
    sums: dict[int, list[int]] = {}
    for k, v in rows:
        sums.setdefault(k, [0, 0])
        sums[k][0] += v
        sums[k][1] += 1
    agg = Counter((k, s, n) for k, (s, n) in sums.items())
    reach = set(rows)
    while True:
        more = {(a, c) for a, b in reach for b2, c in rows if b == b2} - reach
        if not more:
            return agg, reach
        reach |= more


def _views(s: Session) -> tuple[Counter[tuple[int, ...]], set[tuple[int, int]]]:
    agg = Counter(tuple(r.values()) for r in s.read("agg").to_pylist())
    reach = {tuple(r.values()) for r in s.read("reach").to_pylist()}
    return agg, reach  # type: ignore[return-value]


def test_checkpoint_written_by_the_old_code_loads_and_replays(tmp_path: Path) -> None:
    s = Session(warehouse=_copy_fixture(tmp_path))
    s.sql("INSERT INTO t VALUES (4, 1), (1, 7)")
    reports = s.refresh()
    assert {r.view for r in reports} == {"agg", "reach"}
    by_view = {r.view: r for r in reports}
    agg = by_view["agg"]
    assert not agg.recomputed, agg  # the old checkpoint was used, not thrown away
    assert agg.replayed_epochs == 1, agg  # its base loaded and its logged epoch replayed
    # Datalog views compile through the relational plan since 2026-11-25
    # (docs/design/2026-11-25-datalog-on-the-relational-plan.md): the old dataflow's
    # checkpoint does not fit the new one, so the group is recomputed once, from its inputs
    assert by_view["reach"].recomputed
    for r in reports:
        assert r.epoch == 3
    rows = [(1, 2), (2, 3), (2, 5), (3, 1), (4, 1), (1, 7)]
    assert _views(s) == _oracle(rows)


def _agg_manifest(wh: Path) -> Path:
    group = wh / "_ivm" / "checkpoints" / "default" / "agg"
    current = json.loads((group / "CURRENT").read_text())
    return group / current["dir"] / "manifest.json"


def test_unknown_metadata_format_is_refused_with_the_repair(tmp_path: Path) -> None:
    wh = _copy_fixture(tmp_path)
    path = _agg_manifest(wh)
    manifest = json.loads(path.read_text())
    manifest["meta"]["format"] = 99
    path.write_text(json.dumps(manifest))
    s = Session(warehouse=wh)
    s.sql("INSERT INTO t VALUES (4, 1)")
    with pytest.raises(CheckpointFormatError, match="FULL"):
        s.refresh("agg")
    assert s.refresh("agg", full=True)[0].recomputed
    rows = [(1, 2), (2, 3), (2, 5), (3, 1), (4, 1)]
    assert _views(s)[0] == _oracle(rows)[0]


def test_unknown_state_entry_is_refused() -> None:
    for bad in ("x/1", "l/one/t", "l/3/", "s/", "state"):
        with pytest.raises(CheckpointFormatError, match="unknown state entry"):
            decode_key(bad, "g")


@given(
    st.one_of(
        st.builds(BaseKey, st.text(min_size=1)),
        st.builds(LogKey, st.integers(0, 2**40), st.text(min_size=1)),
    )
)
def test_state_keys_round_trip(key: BaseKey | LogKey) -> None:
    assert decode_key(encode_key(key)) == key


@given(
    st.builds(
        GroupMeta,
        st.text(min_size=1),
        st.lists(st.text()).map(tuple),
        st.dictionaries(st.text(), st.text()),
        st.none() | st.integers(0, 2**40),
        st.integers(0, 2**40),
        st.lists(st.integers(0, 2**40)).map(tuple),
        st.integers(0, 2**40),
        st.integers(0, 2**40),
    )
)
def test_group_meta_round_trips_through_json(meta: GroupMeta) -> None:
    assert GroupMeta.from_json(json.loads(json.dumps(meta.to_json())), "g") == meta


def test_pipeline_functions_are_short() -> None:
    """Issue 13: no function of the refresh pipeline longer than about 60 lines."""
    assert PIPELINE.is_dir()
    long = []
    for path in sorted(PIPELINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.name}:{node.name} ({lines} lines)")
    assert not long, long


def test_log_is_bounded_by_replay_work() -> None:
    meta = GroupMeta("f", ("v",), base_rows=1_000, log=(2,), log_rows=1, log_work=19_000)
    assert meta.logs_more(1, 1_000)
    assert not meta.logs_more(1, 1_001)  # past the floor of work a cold start replays
    big = GroupMeta("f", ("v",), base_rows=1_000_000, log=(2,), log_rows=1, log_work=200_000)
    assert big.logs_more(1, 50_000)  # a quarter of a large base


def test_an_expensive_epoch_becomes_a_base_not_a_log_entry(tmp_path: Path) -> None:
    """A new process replays the log: an epoch whose engine work is large (here joining two
    chains of a transitive closure: 40,000 new pairs from one edge) is saved as a new base,
    so a cold refresh afterwards replays nothing (issue 15: a cold refresh is cheap)."""
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE e (a BIGINT, b BIGINT)")
    chains = [(i, i + 1) for i in range(200)] + [(i, i + 1) for i in range(1000, 1200)]
    s.sql("INSERT INTO e VALUES " + ", ".join(f"({a}, {b})" for a, b in chains))
    s.datalog(
        ".decl e(a: number, b: number)\n.input e\n.decl reach(a: number, b: number)\n"
        ".output reach\nreach(a, b) :- e(a, b).\nreach(a, c) :- reach(a, b), e(b, c).\n"
    )
    s.sql("INSERT INTO e VALUES (200, 1000)")
    assert s.refresh()[0].differences > 40_000
    cold = Session(warehouse=tmp_path / "wh")
    cold.sql("INSERT INTO e VALUES (5000, 0)")
    (report,) = cold.refresh()
    assert not report.recomputed
    assert report.replayed_epochs == 0
    nodes = [5000, *range(201), *range(1000, 1201)]  # one path through every node
    closure = {(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]}
    assert {tuple(r.values()) for r in cold.read("reach").to_pylist()} == closure


def test_the_warehouse_layout_lists_checkpoint_groups(tmp_path: Path) -> None:
    from catalog.paths import Warehouse

    wh = Warehouse(tmp_path / "wh")
    assert wh.checkpoint_groups() == []
    for group in ("v", "sales.totals"):
        wh.checkpoint_dir(group).mkdir(parents=True)
        assert wh.group_lock_file(group).is_relative_to(wh.internal_dir)
    assert wh.checkpoint_groups() == ["v", "sales.totals"]


def test_view_with_names_from_before_spark_names_keeps_refreshing(tmp_path: Path) -> None:
    """``SELECT k, count(*), sum(v) + 1`` created by main of 2026-11-23 stored ``_col_1`` and
    ``_col_2``; the front end now names them as Spark does (``count(1)``), and the stored
    names stay."""
    from spark_exec import Session

    wh = tmp_path / "wh"
    shutil.copytree(ROOT / "tests" / "fixtures" / "main_unnamed_columns_2026_11_23", wh)
    s = Session(warehouse=wh)
    s.sql("INSERT INTO t VALUES (2, 5)")
    s.refresh()
    rows = sorted(tuple(r.values()) for r in s.read("m").to_pylist())
    assert s.read("m").column_names == ["k", "_col_1", "_col_2"]
    assert rows == [(1, 2, 6), (2, 1, 6)]


def test_views_over_a_snapshot_with_equal_rows_count_each_copy(tmp_path: Path) -> None:
    """A snapshot's equal rows reach the engine unconsolidated (read_snapshots): every view
    kind still counts each copy, at creation and after deletes of some copies."""
    s = Session(warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT); CREATE TABLE u (k BIGINT, w BIGINT)")
    rows = [(1, 10), (1, 10), (1, 10), (2, None), (2, None), (3, 5), (1, 11)]
    s.sql(
        "INSERT INTO t VALUES " + ", ".join(f"({k}, {'NULL' if v is None else v})" for k, v in rows)
    )
    s.sql("INSERT INTO u VALUES (1, 7), (1, 7), (3, 8)")
    views = {
        "plain": "SELECT k, v FROM t",
        "dist": "SELECT DISTINCT k, v FROM t",
        "agg": "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo FROM t GROUP BY k",
        "joined": "SELECT t.k, v, w FROM t JOIN u ON t.k = u.k",
    }
    for name, q in views.items():
        (report,) = s.create_view(name, q)
        assert report.peak_rss_bytes > 10 * 2**20  # the report shows the process's peak memory

    def check() -> None:
        t_rows = [tuple(r.values()) for r in s.read("t").to_pylist()]
        u_rows = [tuple(r.values()) for r in s.read("u").to_pylist()]
        groups: dict[object, list[object]] = {}
        for k, v in t_rows:
            groups.setdefault(k, []).append(v)
        want = {
            "plain": Counter(t_rows),
            "dist": Counter(set(t_rows)),
            "agg": Counter(
                (
                    k,
                    len(vs),
                    sum(x for x in vs if x is not None) if any(x is not None for x in vs) else None,
                    min((x for x in vs if x is not None), default=None),
                )
                for k, vs in groups.items()
            ),
            "joined": Counter((k, v, w) for k, v in t_rows for k2, w in u_rows if k == k2),
        }
        for name, expected in want.items():
            got = Counter(tuple(r.values()) for r in s.read(name).to_pylist())
            assert got == expected, name

    check()
    s.sql("DELETE FROM t WHERE k = 2; INSERT INTO t VALUES (1, 10), (4, 1)")
    s.refresh()
    check()


def test_join_count_sum_view_equals_a_recompute_when_single_row_groups_come_and_go(
    tmp_path: Path,
) -> None:
    """Oracle: orders ⋈ customers with COUNT/SUM per customer, most customers with one
    order, changes that delete a customer's only order and insert a new one in the same
    refresh. The accumulate operator once read a key's retracted state row (its runs not yet
    merged) as live, and the next refresh retracted a row the view table did not hold."""
    import numpy as np
    import pyarrow as pa

    from catalog import delta

    rng = np.random.default_rng(0)
    s = Session(warehouse=tmp_path / "wh")
    s.sql(
        "CREATE TABLE customers (id BIGINT NOT NULL, region STRING);"
        "CREATE TABLE orders (id BIGINT NOT NULL, cust BIGINT NOT NULL, amount BIGINT NOT NULL)"
    )
    n_cust, n = 300, 600
    delta.insert(
        s.table_path("customers"),
        pa.table({"id": np.arange(n_cust), "region": [f"r{i % 7}" for i in range(n_cust)]}),
    )
    delta.insert(
        s.table_path("orders"),
        pa.table(
            {
                "id": np.arange(n),
                "cust": rng.integers(0, n_cust, n),
                "amount": rng.integers(1, 1000, n),
            }
        ),
    )
    s.create_view(
        "revenue",
        "SELECT c.region, o.cust, count(*) AS n, sum(o.amount) AS total "
        "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region, o.cust",
    )

    def recompute() -> Counter[tuple[object, ...]]:
        region = {r["id"]: r["region"] for r in s.read("customers").to_pylist()}
        groups: dict[tuple[object, object], list[int]] = {}
        for o in s.read("orders").to_pylist():
            g = groups.setdefault((region[o["cust"]], o["cust"]), [0, 0])
            g[0] += 1
            g[1] += o["amount"]
        return Counter((r, c, k, t) for (r, c), (k, t) in groups.items())

    next_id = n
    for step in range(8):
        half = 40
        delta.insert(
            s.table_path("orders"),
            pa.table(
                {
                    "id": np.arange(next_id, next_id + half),
                    "cust": rng.integers(0, n_cust, half),
                    "amount": rng.integers(1, 1000, half),
                }
            ),
        )
        victims = rng.choice(next_id, half, replace=False)
        delta.delete(s.table_path("orders"), f"id IN ({', '.join(str(int(v)) for v in victims)})")
        next_id += half
        s.refresh()
        got = Counter(tuple(r.values()) for r in s.read("revenue").to_pylist())
        assert got == recompute(), f"step {step}"
