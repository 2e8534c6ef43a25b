"""The facade and the Spark glue: :class:`Session` (``from spark_exec import Session``), the
``ivm`` command line, the local SparkSession with delta-spark, the ``ivm_delta`` Python data
source, and view/table names in Spark SQL.

Modules: :mod:`spark_exec.session` (``Session``), :mod:`spark_exec.cli` (the ``ivm`` command),
:mod:`spark_exec.spark_session` (``local_spark``), :mod:`spark_exec.delta_jars`
(delta-spark's JVM jars: fetch and locate), :mod:`spark_exec.connector` (JVM connector
detection, ``ensure_delta_format``), :mod:`spark_exec.delta_source` (the Python data source),
:mod:`spark_exec.registry` (names in Spark's catalog, the attach script).  Nothing here is
imported eagerly, so ``import spark_exec`` does not start or import Spark, and Spark workers
that load :mod:`spark_exec.delta_source` do not load the Session; ``Session`` is resolved on
first use (PEP 562), and type checkers see the class itself; so is ``SqlResult``, what
``Session.sql`` returns (:mod:`spark_exec.result`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_exec.result import SqlResult
    from spark_exec.session import Session

__all__ = ["Session", "SqlResult"]


def __getattr__(name: str) -> type[Session] | type[SqlResult]:
    if name == "Session":
        from spark_exec.session import Session

        return Session
    if name == "SqlResult":  # what Session.sql returns
        from spark_exec.result import SqlResult

        return SqlResult
    raise AttributeError(f"module 'spark_exec' has no attribute {name!r}")
