"""Datalog (Soufflé syntax) → stratified rules → SQL's relational plan → an ``ivm`` dataflow.

The pipeline, one module per stage::

    text ─lexer─▶ tokens ─parser─▶ ast.Program ─check─▶ CheckedProgram ─stratify─▶ strata
         ─plan─▶ RulePlans ─lower─▶ sql_frontend.plan nodes ─sql_frontend.compile─▶ collections

(:mod:`datalog.lower` states where Datalog's semantics differ from SQL's: set semantics, no
NULLs, a failed partial operation drops the binding.)

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
