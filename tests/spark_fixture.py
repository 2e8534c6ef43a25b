"""The one session-scoped local SparkSession of the test run.

Import the fixture into a test package's conftest (``from spark_fixture import spark``); Spark
allows one session per process, so every package shares it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from spark_exec.spark_session import local_spark

    session = local_spark(tmp_path_factory.mktemp("spark-warehouse"))
    yield session
    session.stop()
