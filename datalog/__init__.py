"""Datalog (Soufflé syntax) → stratified rules → an ``ivm`` differential dataflow.

The pipeline, one module per stage::

    text ─lexer─▶ tokens ─parser─▶ ast.Program ─check─▶ CheckedProgram ─stratify─▶ strata
         ─plan─▶ RulePlans ─compile─▶ ivm collections (one iterate scope per recursive SCC)

Entry points: :func:`compile_program` (into an existing ``ivm.Dataflow``), :func:`analyze`
(everything but the dataflow: validate a program, learn its input/output schemas),
:func:`parse`.
"""

from datalog.analysis import Analysis, analyze
from datalog.compile import CompiledProgram, compile_program
from datalog.errors import (
    ArityError,
    DatalogError,
    DatalogSyntaxError,
    DatalogTypeError,
    StratificationError,
    UndeclaredRelationError,
    UnsafeVariableError,
    UnsupportedError,
)
from datalog.parser import parse

__all__ = [
    "Analysis",
    "ArityError",
    "CompiledProgram",
    "DatalogError",
    "DatalogSyntaxError",
    "DatalogTypeError",
    "StratificationError",
    "UndeclaredRelationError",
    "UnsafeVariableError",
    "UnsupportedError",
    "analyze",
    "compile_program",
    "parse",
]
