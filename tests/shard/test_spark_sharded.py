"""Sharded epochs as Spark barrier stages on ``local-cluster[2,1,1024]`` (2 executor JVMs).

The check runs in its own process (``spark_cluster_check.py``: one SparkContext per
process, and it must not meet the local[2] session of other tests).  It runs a recursive
connected-components view and a 20-iteration ``WITH RECURSIVE`` (SQL) and an SCC program
(Datalog) for three epochs, each epoch one barrier stage of 2 shard engines exchanging
Arrow IPC files, and compares every epoch's changes with the in-process executor.
"""

from __future__ import annotations

import pytest
from cluster_script import run_script


def run_check(*args: str) -> dict:
    return run_script("spark_cluster_check.py", *args)


def test_local_cluster_epochs_equal_in_process() -> None:
    figures = run_check()
    epochs = figures["epochs"]
    assert len(epochs) == 6 and all(e["attempt"] == 0 for e in epochs)
    for e in epochs:
        # each shard holds 50% ± 10% of the arranged rows
        assert all(0.4 <= s <= 0.6 for s in e["shares"]), e
        assert e["rounds"] > 0 and e["bytes"] > 0
        assert "ran on spark local-cluster[2,1,1024]" in e["explain"]
    assert figures["current"] == {"sql": "3-0", "datalog": "3-0"}


@pytest.mark.slow
def test_a_killed_executor_and_a_killed_driver_recover() -> None:
    """Shard 1 SIGKILLs its executor JVM in round 5 of epoch 2 (SQL): the stage fails, the
    driver re-runs the epoch from CURRENT as attempt 1 on a new executor, and the result is
    exact (the check compares it with the in-process executor); CURRENT moves once per
    epoch.  And the driver "dies" after the shards wrote epoch 2 (Datalog) but before
    CURRENT moved: a new driver re-runs the epoch from the old checkpoint — the workers'
    caches hold the unpublished state, which the checkpoint-id check refuses — exactly."""
    figures = run_check("--kill")
    sql = [e for e in figures["epochs"] if e["run"] == "sql"]
    assert [e["attempt"] for e in sql] == [0, 1, 0]
    assert len(sql[1]["failed"]) == 1
    assert figures["current"]["sql"] == "3-0"
    assert figures["crash_left_current"] == "1-0"
    dl = [e for e in figures["epochs"] if e["run"] == "datalog"]
    assert dl[1]["epoch"] == 2 and dl[1]["cache_hits"] == [False, False]
    assert figures["current"]["datalog"] == "3-0"
