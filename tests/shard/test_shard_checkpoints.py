"""A sharded epoch leaves the group's state in its shard checkpoints, which the group
checkpoint names (issue 17, memory relief): the driver keeps none of it, the next sharded
epoch starts from them, an in-process epoch merges them once, and a crash between the
shards' writes and the commit leaves the previous checkpoint, still whole.

The shards run as threads of this process (``ShardedRefresh.spark`` returning ``None``:
the same shard tasks over the same file transport as on Spark, no cluster); the same path
runs on ``local-cluster`` in ``test_session_sharded.py``.  Every step is compared with a
Session that runs in-process.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from session_cluster_check import NODES, VIEWS, log_files, refresh_commits, rows, step_statements

from catalog.pipeline.meta import GroupMeta
from spark_exec import Session
from spark_exec.executor_policy import ExecutorBudgetError
from spark_exec.sharded import ExecutorPolicy

GROUPS = ("deg", "wcc")  # deg_hist reads deg: one group


def sharded_session(warehouse: Path, **kw: Any) -> Session:
    s = Session(warehouse=warehouse, executor="spark", **kw)
    s.executors.spark = lambda: None  # the shards as threads of this process
    return s


def meta(s: Session, group: str) -> GroupMeta:
    m = s.catalog.checkpoints.manifest(group)
    assert m is not None
    return GroupMeta.from_json(m.meta, group)


def create(sessions: list[Session], edges: list[tuple[int, int]]) -> None:
    for s in sessions:
        s.sql("CREATE TABLE e (src BIGINT, dst BIGINT)")
        s.sql("INSERT INTO e VALUES " + ", ".join(f"({a}, {b})" for a, b in edges))
        for name, (_executor, sql) in VIEWS.items():  # no property: the Session's executor
            s.sql(f"CREATE MATERIALIZED VIEW {name} AS {sql}")


def random_step(rng: random.Random, edges: list[tuple[int, int]]) -> list[str]:
    return step_statements(rng, edges, bulk=False)


def assert_equal(sharded: Session, local: Session) -> None:
    for v in VIEWS:
        assert rows(sharded.read(v)) == rows(local.read(v)), v


def assert_state_in_shards(s: Session, group: str) -> None:
    """The group checkpoint names shard checkpoints, whose files exist, and holds no state
    table; the driver's dataflow holds no rows."""
    ref = meta(s, group).shards
    assert ref is not None and ref.shards == 2
    assert s.catalog.checkpoints.state_keys(group) == ()
    for p in range(2):
        assert (Path(ref.directory) / f"shard-{p}.arrow").is_file()
    built = s._runtime.built[group]
    assert built.shard_ref == ref and sum(built.g.arrangement_rows().values()) == 0


def test_state_stays_in_shard_checkpoints_and_moves_between_executors_exactly(
    tmp_path: Path,
) -> None:
    rng = random.Random(17)
    edges = [(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(60)]
    sharded = sharded_session(tmp_path / "sharded")
    local = Session(warehouse=tmp_path / "local")
    create([sharded, local], list(edges))
    assert_equal(sharded, local)
    for g in GROUPS:
        assert_state_in_shards(sharded, g)
    # sharded -> sharded (no merge), -> local (merged once), local -> local (logged),
    # -> sharded (split again); new drivers starting from the shard checkpoints, sharded
    # and in-process
    plan = ["spark", "spark", "local", "local", "spark", "new:spark", "spark", "new:local"]
    for step in plan:
        where = step.removeprefix("new:")
        if step.startswith("new:"):
            sharded = sharded_session(tmp_path / "sharded")
        sharded.executors.default = where
        versions = {v: max(log_files(sharded, v)) for v in VIEWS}
        before = {g: sharded.catalog.checkpoints.manifest(g).epoch for g in GROUPS}  # type: ignore[union-attr]
        for statement in random_step(rng, edges):
            for s in (sharded, local):
                s.sql(statement)
        for s in (sharded, local):
            s.refresh()
        assert_equal(sharded, local)
        for r in sharded.last_reports:
            assert r.placement.sharded == (where == "spark"), (where, r)
        for g in GROUPS:
            assert sharded.catalog.checkpoints.manifest(g).epoch == before[g] + 1  # type: ignore[union-attr]
            if where == "spark":
                assert_state_in_shards(sharded, g)
            else:  # merged into the driver: the checkpoint holds the state again
                assert meta(sharded, g).shards is None
                assert sharded._runtime.built[g].shard_ref is None
        for v in VIEWS:
            assert refresh_commits(sharded, v, versions[v]) <= 1
        root = sharded.executors.root
        for g in GROUPS:
            for layout in root.glob(f"{g}/*"):  # one per group definition and shard count
                left = list(layout.glob("checkpoints/*"))
                # the one the last sharded epoch started from (collected at the next), its own
                assert len(left) <= 2, left


@pytest.mark.parametrize("point", ["stepped", "before_checkpoint", "files_written", "renamed"])
def test_crash_between_shard_writes_and_commit_keeps_the_named_checkpoint(
    tmp_path: Path, point: str
) -> None:
    """The driver dies after the shards wrote the epoch's checkpoints and before the group
    checkpoint names them: the group checkpoint still names the previous shard
    checkpoints, which are whole; a new driver re-runs the epoch from them, exactly, with
    the group checkpoint moving once and one Delta version per changed view."""
    rng = random.Random(5)
    edges = [(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(50)]
    warehouse = tmp_path / "sharded"
    local = Session(warehouse=tmp_path / "local")
    first = sharded_session(warehouse)
    create([first, local], list(edges))
    named = {g: meta(first, g).shards for g in GROUPS}
    epochs = {g: local.catalog.checkpoints.manifest(g).epoch for g in GROUPS}  # type: ignore[union-attr]

    class DriverDied(Exception):
        pass

    def die(step: str) -> None:
        if step == point:
            raise DriverDied(step)

    dying = sharded_session(warehouse, refresh_hook=die)
    statements = random_step(rng, edges)
    for s in (dying, local):
        for statement in statements:
            s.sql(statement)
    with pytest.raises(DriverDied):
        dying.refresh("deg")
    after_crash = sharded_session(warehouse)
    ref = meta(after_crash, "deg").shards
    assert ref == named["deg"]  # the commit did not happen: the old shard checkpoints
    assert after_crash.catalog.checkpoints.manifest("deg").epoch == epochs["deg"]  # type: ignore[union-attr]
    assert ref is not None and all(
        (Path(ref.directory) / f"shard-{p}.arrow").is_file() for p in range(2)
    )
    versions = {v: max(log_files(after_crash, v)) for v in VIEWS}
    after_crash.refresh()
    local.refresh()
    assert_equal(after_crash, local)
    for g in GROUPS:
        assert after_crash.catalog.checkpoints.manifest(g).epoch == epochs[g] + 1  # type: ignore[union-attr]
        assert_state_in_shards(after_crash, g)
    changed = {r.view: r.committed for r in after_crash.last_reports}
    assert changed["deg"] and changed["wcc"]
    for v in VIEWS:
        assert refresh_commits(after_crash, v, versions[v]) == int(changed[v])


def test_in_process_epoch_past_the_budget_is_refused_where_sharded_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a memory budget of 1 MiB (1,024 rows of 1 KiB), a 3,000-row initial load is
    refused in-process, naming the budget and what to set, and nothing is written; under
    'auto' the same load runs sharded and the view is exact.  Only a budget that was set is
    enforced: a Session that sets nothing runs in-process as before."""
    assert not Session(warehouse=tmp_path / "plain").executors.enforce_budget
    monkeypatch.setenv("IVM_EXECUTOR_MEMORY_BUDGET", "2GiB")
    assert Session(warehouse=tmp_path / "plain").executors.enforce_budget
    monkeypatch.delenv("IVM_EXECUTOR_MEMORY_BUDGET")
    tight = ExecutorPolicy(memory_budget_bytes=1 << 20, large_change_rows=10**9)
    statements = [
        "CREATE TABLE e (src BIGINT, dst BIGINT)",
        "INSERT INTO e VALUES " + ", ".join(f"({i % 700}, {i % 13})" for i in range(3000)),
    ]
    view = "CREATE MATERIALIZED VIEW deg AS SELECT src, count(*) AS n FROM e GROUP BY src"
    local = Session(warehouse=tmp_path / "local", executor_policy=tight)
    for statement in statements:
        local.sql(statement)
    with pytest.raises(ExecutorBudgetError, match=r"over the executor memory budget of 1 MiB"):
        local.sql(view)
    assert not local.catalog.views()
    auto = sharded_session(tmp_path / "auto", executor_policy=tight)
    auto.executors.default = "auto"
    for statement in statements:
        auto.sql(statement)
    auto.sql(view)
    [report] = auto.last_reports
    assert report.placement.sharded and "> budget 1 MiB" in report.placement.reason
    assert sorted(r["n"] for r in auto.read("deg").to_pylist()) == sorted(
        [5] * 200 + [4] * 500  # 3,000 = 700 x 4 + 200
    )
