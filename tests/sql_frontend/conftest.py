"""The SQL front end's tests: Spark is the oracle, in the run's one SparkSession
(``tests/spark_fixture.py``: the same session whichever package starts it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: delta_mirror

from spark_fixture import spark

__all__ = ["spark"]
