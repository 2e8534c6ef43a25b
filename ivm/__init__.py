"""spark-ivm's differential dataflow engine.

Build a :class:`Dataflow`, add inputs, chain collection operators, expose outputs, then push
changes and call :meth:`Dataflow.step` once per epoch.  See docs/engine-api.md.
``ivm.Session`` (the Spark/Delta facade) is imported lazily so that the engine itself never
imports Spark.
"""

from __future__ import annotations

from typing import Any

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
    "Session",
    "StepReport",
    "iterate",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Session":
        from spark_exec.session import Session

        return Session
    raise AttributeError(f"module 'ivm' has no attribute {name!r}")
