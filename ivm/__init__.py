"""spark-ivm's differential dataflow engine.

Build a :class:`Dataflow`, add inputs, chain collection operators, expose outputs, then push
changes and call :meth:`Dataflow.step` once per epoch.  See docs/engine-api.md.
The engine imports neither Spark, nor sqlglot, nor Delta: the Spark/Delta facade is
``from spark_exec import Session`` (docs/architecture.md).
"""

from __future__ import annotations

from ivm import numba_typeof
from ivm.collection import Collection, InputCollection, iterate
from ivm.dataflow import Dataflow, LoopLimitError, StepReport
from ivm.errors import (
    DiffError,
    EpochError,
    ForeignCollectionError,
    IvmError,
    PlanError,
    SchemaError,
)
from ivm.operators.io import Output
from ivm.schema import Schema

# numba types plain arrays without importing numpy.ma (~15-25 ms of CPU at a process's first kernel call)
numba_typeof.install()

__all__ = [
    "Collection",
    "Dataflow",
    "DiffError",
    "EpochError",
    "ForeignCollectionError",
    "InputCollection",
    "IvmError",
    "LoopLimitError",
    "Output",
    "PlanError",
    "Schema",
    "SchemaError",
    "StepReport",
    "iterate",
]

__version__ = "0.1.0"
