"""Settings come from arguments, then ``IVM_*`` variables, then the config file, then defaults
(issue 18, item 7); bad values are typed errors naming their source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catalog.errors import RefreshBusyError
from catalog.locks import group_lock
from ivm import limits as ivm_limits
from spark_exec.config import UNSET, ConfigError, load_settings

REPO = Path(__file__).resolve().parents[2]
IVM = str(Path(sys.executable).parent / "ivm")  # the console command


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ivm.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_defaults_without_any_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./ivm.toml here
    s = load_settings(environ={})
    assert s.spark_master == "local[*]"
    assert s.shuffle_partitions == (os.cpu_count() or 1)
    assert s.max_iterations == ivm_limits.DEFAULT_MAX_ITERATIONS
    assert s.memory_budget == ivm_limits.default_memory_budget()
    assert s.lock_timeout == 300.0
    assert s.config_file is None
    assert {source for _, _, source in s.describe()} == {"default"}


def test_argument_beats_environment_beats_file(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        """
        warehouse = "wh-from-file"
        [spark]
        master = "local[3]"
        shuffle_partitions = 5
        [spark.conf]
        "spark.driver.memory" = "2g"
        [limits]
        max_iterations = 50
        memory_budget = "1GiB"
        [refresh]
        lock_timeout = 7
        """,
    )
    env = {"IVM_SPARK_MASTER": "local[1]", "IVM_MAX_ITERATIONS": "60"}
    s = load_settings({"max_iterations": 70, "memory_budget": UNSET}, config_file=cfg, environ=env)
    assert s.max_iterations == 70 and s.sources["max_iterations"] == "argument"
    assert s.spark_master == "local[1]"
    assert s.sources["spark_master"] == "environment IVM_SPARK_MASTER"
    assert s.shuffle_partitions == 5 and s.sources["shuffle_partitions"] == f"file {cfg}"
    assert s.memory_budget == 2**30
    assert s.lock_timeout == 7.0
    assert s.spark_settings() == {
        "spark.sql.shuffle.partitions": "5",
        "spark.default.parallelism": "5",
        "spark.driver.memory": "2g",
    }
    # a relative warehouse in a file is relative to the file, wherever the caller runs
    assert s.warehouse == str((tmp_path / "wh-from-file").resolve())


def test_config_file_from_environment_and_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = write_config(tmp_path, "[limits]\nmax_state_rows = 1000\n")
    assert load_settings(environ={"IVM_CONFIG": str(cfg)}).max_state_rows == 1000
    monkeypatch.chdir(tmp_path)
    found = load_settings(environ={})
    assert found.max_state_rows == 1000 and found.config_file == str(cfg)


@pytest.mark.parametrize(
    ("overrides", "env", "expected"),
    [
        ({}, {"IVM_MEMORY_BUDGET": "none"}, None),
        ({}, {"IVM_MEMORY_BUDGET": "512MB"}, 512 * 10**6),
        ({}, {"IVM_MEMORY_BUDGET": "1.5GiB"}, int(1.5 * 2**30)),
        ({"memory_budget": None}, {"IVM_MEMORY_BUDGET": "1GiB"}, None),  # explicit: no limit
        ({"memory_budget": 4096}, {}, 4096),
    ],
)
def test_memory_budget_forms(overrides: dict, env: dict, expected: int | None) -> None:
    assert load_settings(overrides, environ=env).memory_budget == expected


def test_spark_conf_from_environment() -> None:
    env = {"IVM_SPARK_CONF": "spark.a=1; spark.b = two\n"}
    assert load_settings(environ=env).spark_conf == {"spark.a": "1", "spark.b": "two"}


@pytest.mark.parametrize(
    ("env", "toml", "needle"),
    [
        ({"IVM_MEMORY_BUDGET": "lots"}, None, "environment IVM_MEMORY_BUDGET"),
        ({"IVM_SHUFFLE_PARTITIONS": "0"}, None, "must be at least 1"),
        ({"IVM_LOCK_TIMEOUT": "-3"}, None, "0 or more"),
        ({"IVM_SPARK_CONF": "no-equals-sign"}, None, "is not key=value"),
        ({}, "[limits]\nmax_iteration = 5\n", "'limits.max_iteration'"),
        ({}, "[spark]\nmaster = 3\n", "'[spark.master]'"),
        ({}, "colour = 'blue'\n", "unknown key"),
        ({}, "[spark\n", "not valid TOML"),
        ({"IVM_EXECUTOR": "gpu"}, None, "environment IVM_EXECUTOR: 'gpu' is not usable"),
        ({"IVM_SHARDS": "0"}, None, "must be at least 1"),
        ({"IVM_EXECUTOR_MEMORY_BUDGET": "none"}, None, "the policy needs a budget"),
        ({"IVM_EXECUTOR_LARGE_CHANGE_ROWS": "many"}, None, "IVM_EXECUTOR_LARGE_CHANGE_ROWS"),
        ({}, "[executor]\nshard = 2\n", "'executor.shard'"),
        ({}, "[executor]\ndefault = 'cluster'\n", "'[executor.default]'"),
    ],
)
def test_bad_values_name_their_source(
    tmp_path: Path, env: dict, toml: str | None, needle: str
) -> None:
    cfg = write_config(tmp_path, toml) if toml is not None else None
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        load_settings(config_file=cfg, environ=env)


def test_missing_config_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_settings(environ={"IVM_CONFIG": str(tmp_path / "absent.toml")})


def test_session_takes_warehouse_limits_and_lock_timeout_from_the_file(tmp_path: Path) -> None:
    from spark_exec.session import Session

    cfg = write_config(
        tmp_path,
        """
        warehouse = "wh"
        [limits]
        max_iterations = 12
        [refresh]
        lock_timeout = 0.2
        """,
    )
    s = Session(config=cfg)
    assert s.warehouse == (tmp_path / "wh").resolve()
    assert s.limits.max_iterations == 12
    s.sql(
        "CREATE TABLE t (k INT, v INT) USING delta; INSERT INTO t VALUES (1, 2);"
        "CREATE MATERIALIZED VIEW m AS SELECT k, SUM(v) AS s FROM t GROUP BY k"
    )
    s.sql("INSERT INTO t VALUES (1, 3)")
    group = s.catalog.views()[0].group
    # another holder has the group's writer lock: the refresh waits 0.2 s (from the file), then
    # gives up with the typed error
    with group_lock(s.catalog.warehouse, group), pytest.raises(RefreshBusyError):
        s.refresh()


def ivm_config(tmp_path: Path, args: list[str], env: dict[str, str]) -> tuple[str, dict]:
    """``ivm ARGS config`` in ``tmp_path``: its output, and its lines by setting."""
    out = subprocess.run(
        [IVM, *args, "config"],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        check=True,
    ).stdout
    return out, {line.split()[0]: line for line in out.splitlines()[1:]}


def test_cli_config_command_shows_values_and_sources(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "[spark]\nshuffle_partitions = 9\n")
    args = ["--config", str(cfg), "--max-iterations", "0"]
    out, lines = ivm_config(tmp_path, args, {"IVM_SPARK_MASTER": "local[1]"})
    assert "local[1]" in lines["spark_master"] and "environment IVM_SPARK_MASTER" in out
    assert "9" in lines["shuffle_partitions"] and f"file {cfg}" in lines["shuffle_partitions"]
    assert "none" in lines["max_iterations"] and "[argument]" in lines["max_iterations"]


def test_cli_bad_setting_exits_with_a_user_error(tmp_path: Path) -> None:
    env = {**os.environ, "IVM_MEMORY_BUDGET": "plenty", "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [IVM, "config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 1
    assert "ConfigError" in run.stderr and "IVM_MEMORY_BUDGET" in run.stderr
    assert "Traceback" not in run.stderr


def test_spark_session_gets_master_and_conf_from_settings(tmp_path: Path) -> None:
    """A new process: the SparkSession the Session starts follows the settings."""
    cfg = write_config(
        tmp_path,
        """
        [spark]
        master = "local[1]"
        shuffle_partitions = 3
        [spark.conf]
        "spark.sql.ansi.enabled" = true
        """,
    )
    code = textwrap.dedent(
        f"""
        import json
        from spark_exec.session import Session
        s = Session(warehouse={str(tmp_path / "wh")!r}, config={str(cfg)!r})
        spark = s.spark
        print(json.dumps([spark.sparkContext.master,
                          spark.conf.get("spark.sql.shuffle.partitions"),
                          spark.conf.get("spark.sql.ansi.enabled")]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == ["local[1]", "3", "true"]
