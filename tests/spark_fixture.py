"""The one session-scoped local SparkSession of the test run.

Import the fixture into a test package's conftest (``from spark_fixture import spark``); Spark
allows one session per process, so every package shares it, and every package must start it
the same way (with delta-spark): which package's test comes first in a process is not fixed
(pytest-xdist hands tests to its workers as they free up).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The test run's one JVM serves ~1,500 tests; Spark's default 1 GiB driver heap ran out late
#: in a full run (a broadcast in the SQL oracle). Set before the JVM starts, whichever test
#: starts it (pyspark passes PYSPARK_SUBMIT_ARGS to spark-submit).
TEST_DRIVER_MEMORY = "3g"
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {TEST_DRIVER_MEMORY} pyspark-shell")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from spark_exec.spark_session import DEFAULT_CONF, local_spark

    # the JVM's default time zone as UTC too (the SQL oracle's date functions), whichever
    # package's tests start the session: under pytest-xdist each worker starts its own.
    # TieredStopAtLevel=1: the JVM's quick (C1) compiler only.  The tests' Spark work is
    # many small queries on tiny tables, where C2's optimizing compiles are mostly wasted:
    # the JVM's CPU time for an e2e-style script (3 views, 3 refreshes, 18 oracle queries)
    # 92-114 s -> 58-60 s on the 2-core host (A/B, alternated).
    java_options = " ".join(
        [
            DEFAULT_CONF["spark.driver.extraJavaOptions"],
            "-Duser.timezone=UTC",
            "-XX:TieredStopAtLevel=1",
        ]
    )
    session = local_spark(
        tmp_path_factory.mktemp("spark-warehouse"),
        conf={"spark.driver.extraJavaOptions": java_options},
    )
    yield session
    session.stop()
