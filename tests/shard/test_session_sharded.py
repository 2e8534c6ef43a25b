"""Where a Session's epochs run: the per-view override, the hybrid policy, and sharded
refreshes on ``local-cluster[2,1,1024]`` equal to in-process ones (issue 17).

The cluster runs happen in their own process (``session_cluster_check.py``), which compares
every view after every step with a second Session that runs in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from cluster_script import run_script

from catalog.changes import DIFF
from catalog.errors import CatalogError
from catalog.pipeline import build_group, plan_groups
from spark_exec import Session
from spark_exec.config import ConfigError
from spark_exec.executor_policy import ExecutorSettingError, ShardedRefresh
from spark_exec.sharded import ExecutorPolicy


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session(warehouse=tmp_path / "wh", executor="auto")
    s.sql("CREATE TABLE e (src BIGINT, dst BIGINT)")
    s.sql("INSERT INTO e VALUES (1, 2), (2, 3), (3, 1)")
    return s


def test_auto_runs_a_one_row_change_in_process(session: Session) -> None:
    session.sql("CREATE MATERIALIZED VIEW deg AS SELECT src, count(*) AS n FROM e GROUP BY src")
    session.sql("INSERT INTO e VALUES (4, 1)")
    [report] = session.refresh()
    assert report.committed and report.placement.executor == "local"
    assert not report.placement.sharded
    assert report.placement.reason.startswith("auto: change of 1 rows")
    text = session.explain("deg")
    assert "executor: auto" in text and "last epoch: ran in-process (auto: change of 1" in text
    logged = json.loads(session.event_log().column("executor").to_pylist()[-1])
    assert logged["executor"] == "local" and logged["shard_rows"] == []
    assert sorted(session.read("deg").to_pylist(), key=lambda r: r["src"]) == [
        {"src": s, "n": 1} for s in (1, 2, 3, 4)
    ]


def test_auto_runs_a_large_initial_load_sharded(session: Session) -> None:
    """The default policy: a 1M-row change (an initial load) goes to the cluster, a 1-row
    change stays in-process, and the view's ``'spark'`` override wins over both."""
    session.sql("CREATE MATERIALIZED VIEW deg AS SELECT src, count(*) AS n FROM e GROUP BY src")
    spec = next(s for s in plan_groups(session.catalog) if s.name == "deg")
    group = build_group(session.catalog, spec)
    n = 1_000_000
    ones = pa.array([1] * n, pa.int64())
    group.send({"e": pa.table({"src": pa.array(range(n)), "dst": pa.array(range(n)), DIFF: ones})})
    where, why = session.executors.choose(group)
    assert (where, why) == ("spark", "auto: change of 1000000 rows >= 1000000")
    small = build_group(session.catalog, spec)
    small.send({"e": pa.table({"src": [1], "dst": [2], DIFF: [1]})})
    assert session.executors.choose(small)[0] == "local"
    tight = ExecutorPolicy(memory_budget_bytes=1 << 20)  # 1 MiB: a 2,000-row state is over
    assert tight.choose(2000, 1) == "spark" and tight.choose(10, 1) == "local"


def test_executor_property_is_checked(session: Session) -> None:
    with pytest.raises(CatalogError, match=r"'ivm\.executor' must be 'auto', 'local' or 'spark'"):
        session.sql(
            "CREATE MATERIALIZED VIEW v TBLPROPERTIES ('ivm.executor' = 'gpu') AS SELECT src FROM e"
        )
    assert not session.catalog.views()
    session.sql(
        "CREATE MATERIALIZED VIEW v TBLPROPERTIES ('ivm.executor' = 'local') AS SELECT src FROM e"
    )
    with pytest.raises(CatalogError, match="ask for different executors"):
        session.sql(
            "CREATE MATERIALIZED VIEW w TBLPROPERTIES ('ivm.executor' = 'spark') AS "
            "SELECT count(*) AS n FROM v"
        )
    assert [v.name for v in session.catalog.views()] == ["v"]
    assert "executor: local" in session.explain("v")
    session.sql("CREATE MATERIALIZED VIEW w WITH (executor = 'local') AS SELECT count(*) FROM v")
    assert "executor: local" in session.explain("w")


def test_session_executor_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'executor' from argument: 'cluster' is not usable"):
        Session(warehouse=tmp_path, executor="cluster")
    with pytest.raises(ConfigError, match="'shards' from argument"):
        Session(warehouse=tmp_path, shards=0)
    with pytest.raises(ExecutorSettingError, match="shards"):
        ShardedRefresh(lambda: None, tmp_path, shards=0)


def run_check(*args: str) -> dict:
    return run_script("session_cluster_check.py", *args)


CLUSTER = "local-cluster[2,1,1024]"


def _check_sharded(p: dict, master: str = CLUSTER) -> None:
    assert p["executor"] == f"spark {master}"
    rows = p["shard_rows"]
    assert len(rows) == 2 and all(0.4 <= r / sum(rows) <= 0.6 for r in rows), rows
    assert p["rounds"] > 0 and p["bytes_exchanged"] > 0


def _check_steps(figures: dict, master: str = CLUSTER) -> None:
    """The SQL group ('spark') ran sharded at every epoch; the recursive view ('auto') ran
    sharded for its initial load and its bulk inserts, in-process for small steps."""
    assert figures["master"] == master
    created = figures["created"]
    _check_sharded(created["deg"], master)
    _check_sharded(created["wcc"], master)
    assert created["wcc"]["reason"].startswith("auto: change of")
    for step in figures["steps"]:
        places = step["placements"]
        _check_sharded(places["deg"], master)
        assert places["deg_hist"] == places["deg"]  # one group, one epoch
        if step["bulk"]:
            _check_sharded(places["wcc"], master)
        else:
            assert places["wcc"]["executor"] == "local", places["wcc"]
    last = f"ran on spark {master}" if figures["steps"][-1]["bulk"] else "ran in-process"
    assert f"last epoch: {last}" in figures["explain"]


def test_session_views_sharded_on_the_sessions_own_cluster_master() -> None:
    """``Session(spark_master='local-cluster[2,1,1024]')``, no separate ``shard_spark``: the
    Session's own SparkSession runs the sharded epochs.  A SQL group of two views
    (``'spark'``) and a recursive connected-components view (``'auto'``) are created and
    refreshed; after each random step (insert, delete, update) every view equals the
    in-process Session's, each changed view gained one Delta version and each group
    checkpoint one epoch (the script checks)."""
    figures = run_check("--steps", "2", "--session-master", CLUSTER)
    assert len(figures["steps"]) == 2
    _check_steps(figures)


@pytest.mark.slow
def test_session_views_sharded_as_tasks_of_a_local_master() -> None:
    """``Session(spark_master='local[2]')``: the 2 shards of a sharded epoch run as the 2
    task slots of the local Spark (Python workers of this machine), exact as in-process."""
    figures = run_check("--steps", "3", "--session-master", "local[2]")
    _check_steps(figures, "local[2]")


@pytest.mark.slow
def test_session_sharded_survives_a_killed_executor_and_driver() -> None:
    """Shard 1 SIGKILLs its executor JVM in round 5 of the recursive view's first bulk
    epoch: the refresh still succeeds (the epoch re-run from the shards' checkpoint as
    attempt 1), the views are exact, the group's CURRENT moved one epoch and each view got
    one Delta version.  More steps follow: bulk inserts move the recursive view and an SCC
    Datalog program (both 'auto') to the cluster, and small changes move them back.  Then
    a second driver process dies between its sharded epoch and the commit, and this
    Session's next refresh is exact."""
    figures = run_check("--steps", "6", "--kill", "--driver-crash", "--datalog")
    failed = [
        (i, v)
        for i, s in enumerate(figures["steps"])
        for v, p in s["placements"].items()
        if p["attempts_failed"]
    ]
    assert failed == [(2, "wcc")]  # the first bulk step, on attempt 1
    assert sum(s["bulk"] for s in figures["steps"]) == 2
    _check_steps(figures)
    # a driver process died after its shards published epoch e+1, before the commit: the
    # catalog kept epoch e, and this Session's next refresh resharded from it, exactly
    _check_sharded(figures["created"]["scc"])  # the SCC program ('auto'): as the CC view
    for step in figures["steps"]:
        scc = step["placements"]["scc"]
        if step["bulk"]:
            _check_sharded(scc)
        else:
            assert scc["executor"] == "local", scc
    crash = figures["crash"]
    assert crash["ok"] and crash["shards_current_after_crash"], crash
    _check_sharded(crash["placement"])
