"""Run a Declarative Pipelines project with Spark's own ``spark-pipelines`` CLI.

This is the full-recompute baseline and oracle of issue 18: the same project our runner
(:func:`spark_exec.pipelines.run_pipeline`) maintains incrementally is run, unchanged, by the
real ``spark-pipelines run`` (pyspark's ``pipelines`` extra: a local Spark Connect server, with
delta-spark's jars), which recomputes every materialized view in full.

The project reads its sources by name from our warehouse; ``spark-pipelines`` has no access to
that catalog, so the copy it runs gets one extra Python file defining each source as a temporary
view (``@dp.temporary_view``) over a Parquet copy of the source's current rows, which
:func:`export_sources` writes with delta-spark (not with our own Delta reader, so that the
oracle does not share it).  The datasets then resolve the same names to the same rows.  (A
Delta source cannot be read inside the run: ``spark-pipelines``' Spark Connect server does not
find delta-spark's data source in jars passed with ``--jars``.)  The materialized views are
written as Parquet tables under the run's own warehouse directory and read back with pyarrow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.dataset as pds

from spark_exec.delta_jars import require_java
from spark_exec.pipelines import find_spec, load_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCES_FILE = "zz_spark_ivm_sources.py"
SOURCE_VIEW = """
@dp.temporary_view(name={name!r})
def _source_{i}() -> DataFrame:
    return SparkSession.active().read.parquet({path!r})
"""


@dataclass(frozen=True)
class SparkPipelinesRun:
    """One ``spark-pipelines run``: the materialized views it wrote, and its wall time."""

    views: dict[str, pa.Table]
    seconds: float
    log: str


class SparkPipelinesError(RuntimeError):
    """``spark-pipelines run`` failed; the message carries the end of its output."""


def export_sources(spark: SparkSession, tables: Mapping[str, str], work: Path) -> dict[str, str]:
    """Each Delta table's current rows as a Parquet directory under ``work``, written by Spark."""
    out = {}
    for name, path in tables.items():
        target = (work / "sources" / name).resolve()
        spark.read.format("delta").load(str(path)).write.mode("overwrite").parquet(str(target))
        out[name] = str(target)
    return out


def prepare(project: Path, work: Path, sources: Mapping[str, str]) -> Path:
    """A copy of ``project`` under ``work`` whose sources are views over Parquet directories."""
    import yaml

    copy = work / "project"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(project, copy)
    spec = find_spec(copy)
    libraries = [lib for lib in load_spec(spec).libraries if lib.endswith("/**")]
    if not libraries:
        raise SparkPipelinesError(f"{spec}: the spec includes no library directory")
    doc = yaml.safe_load(spec.read_text())
    doc["storage"] = (work / "storage").resolve().as_uri()  # spark-pipelines wants a URI
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    code = [
        "from pyspark import pipelines as dp",
        "from pyspark.sql import DataFrame, SparkSession",
        *(
            SOURCE_VIEW.format(name=name, i=i, path=str(Path(path).resolve()))
            for i, (name, path) in enumerate(sources.items())
        ),
    ]
    (copy / libraries[0][: -len("/**")] / SOURCES_FILE).write_text("\n".join(code))
    return spec


def run(spec: Path, work: Path, views: list[str], *, timeout: float = 900) -> SparkPipelinesRun:
    """``spark-pipelines run --spec spec``, then read each of ``views`` back."""
    require_java()
    # spark-pipelines' catalog lives in memory, so each run starts from nothing: a location
    # left by the last run would be refused.  Every run recomputes in full anyway.
    warehouse = (work / "spark-warehouse").resolve()
    for d in (warehouse, work / "storage"):
        shutil.rmtree(d, ignore_errors=True)
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    conf = {
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.sql.shuffle.partitions": str(os.cpu_count() or 1),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    cmd = [str(bin_dir / "spark-pipelines")]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += ["run", "--spec", str(spec)]
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=spec.parent, env=env, capture_output=True, text=True, timeout=timeout
    )
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Run is COMPLETED" not in log:
        raise SparkPipelinesError(f"spark-pipelines run failed ({proc.returncode}):\n{log[-4000:]}")
    out = {v: pds.dataset(warehouse / v, format="parquet").to_table() for v in views}
    return SparkPipelinesRun(out, seconds, log)
