"""Where epochs run is a setting like the others: ``Session`` arguments (and CLI flags), then
``IVM_EXECUTOR*`` / ``IVM_SHARDS`` variables, then ``[executor]`` in ``ivm.toml``, then the
defaults (issue 17); and a master that cannot run a barrier stage of all the shards at once
is refused by name (docs/executors.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_config import ivm_config, write_config

from spark_exec.config import (
    DEFAULT_EXECUTOR_MEMORY_BUDGET,
    DEFAULT_LARGE_CHANGE_ROWS,
    ConfigError,
    load_settings,
)
from spark_exec.executor_policy import ExecutorSettingError, master_slots
from spark_exec.session import Session
from spark_exec.sharded import ExecutorPolicy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


EXECUTOR_TOML = """
[executor]
default = "auto"
shards = 3
memory_budget = "1GiB"
bytes_per_row = 512
large_change_rows = 5000
"""


def test_executor_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(environ={})
    assert (s.executor, s.shards) == ("local", 2)
    assert ExecutorPolicy.of(s) == ExecutorPolicy()
    assert ExecutorPolicy().memory_budget_bytes == DEFAULT_EXECUTOR_MEMORY_BUDGET
    assert ExecutorPolicy().large_change_rows == DEFAULT_LARGE_CHANGE_ROWS


def test_executor_argument_beats_environment_beats_file(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, EXECUTOR_TOML)
    from_file = load_settings(config_file=cfg, environ={})
    assert (from_file.executor, from_file.shards) == ("auto", 3)
    assert ExecutorPolicy.of(from_file) == ExecutorPolicy(2**30, 512, 5000)
    assert from_file.sources["executor_large_change_rows"] == f"file {cfg}"
    env = {"IVM_SHARDS": "4", "IVM_EXECUTOR": "Spark", "IVM_EXECUTOR_MEMORY_BUDGET": "2GiB"}
    s = load_settings({"executor": "local"}, config_file=cfg, environ=env)
    assert s.executor == "local" and s.sources["executor"] == "argument"
    assert s.shards == 4 and s.sources["shards"] == "environment IVM_SHARDS"
    assert ExecutorPolicy.of(s) == ExecutorPolicy(2 * 2**30, 512, 5000)
    assert load_settings(config_file=cfg, environ=env).executor == "spark"


def test_session_takes_executor_settings_from_file_environment_and_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_config(tmp_path, EXECUTOR_TOML)
    s = Session(warehouse=tmp_path / "wh", config=cfg)
    assert (s.executors.default, s.executors.shards) == ("auto", 3)
    assert s.executors.policy == ExecutorPolicy(2**30, 512, 5000)
    monkeypatch.setenv("IVM_SHARDS", "5")
    mine = ExecutorPolicy(memory_budget_bytes=1 << 20, large_change_rows=10)
    s = Session(warehouse=tmp_path / "wh", config=cfg, executor="spark", executor_policy=mine)
    assert (s.executors.default, s.executors.shards) == ("spark", 5)
    assert s.executors.policy == mine  # an explicit policy wins over the file
    assert s.settings.sources["executor_memory_budget"] == "argument"
    with pytest.raises(ConfigError, match="'executor' from argument"):
        Session(warehouse=tmp_path / "wh", executor="cluster")


def test_cli_executor_flags(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, EXECUTOR_TOML)
    args = ["--config", str(cfg), "--executor", "spark", "--executor-memory-budget", "512MiB"]
    out, lines = ivm_config(tmp_path, args, {"IVM_EXECUTOR_BYTES_PER_ROW": "256"})
    assert "spark" in lines["executor"] and "[argument]" in lines["executor"]
    assert str(512 * 2**20) in lines["executor_memory_budget"]
    assert "3" in lines["shards"] and f"file {cfg}" in lines["shards"]
    assert "256" in lines["executor_bytes_per_row"] and "IVM_EXECUTOR_BYTES_PER_ROW" in out


@pytest.mark.parametrize(
    ("master", "cpus", "slots"),
    [
        ("local", 1, 1),
        ("local[3]", 1, 3),
        ("local[4, 2]", 2, 2),  # 4 cores, tasks of 2 cores each
        ("local[*]", 1, os.cpu_count() or 1),
        ("local-cluster[2,1,1024]", 1, 2),
        ("local-cluster[3, 4, 2048]", 2, 6),
        ("spark://host:7077", 1, None),
        ("yarn", 1, None),
        ("k8s://https://api:6443", 1, None),
    ],
)
def test_master_slots(master: str, cpus: int, slots: int | None) -> None:
    assert master_slots(master, cpus) == slots


def test_more_shards_than_the_local_master_runs_are_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """On the test run's ``local[*]`` session, a barrier stage of more shards than cores
    could never start: the view's first epoch is refused by name, before any state moves,
    and nothing is created; the same view then runs in-process."""
    slots = master_slots(spark.sparkContext.master)
    assert slots is not None
    wh = tmp_path / "wh"
    s = Session(spark=spark, warehouse=wh, executor="spark", shards=slots + 1)
    s.sql("CREATE TABLE t (k BIGINT, v BIGINT); INSERT INTO t VALUES (1, 2), (1, 3), (2, 5)")
    view = "CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k"
    with pytest.raises(ExecutorSettingError, match=rf"set shards to {slots} or less"):
        s.sql(view)
    assert not s.catalog.views()
    local = Session(spark=spark, warehouse=wh, executor="local")
    local.sql(view)
    local.sql("INSERT INTO t VALUES (2, 1)")
    [report] = local.refresh()
    assert report.placement.executor == "local"
    assert sorted(local.read("m").to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "s": 5},
        {"k": 2, "s": 6},
    ]
