"""A Datalog program whose recursion never converges, for the resource-limit tests."""

from __future__ import annotations


def counter_program(relation: str) -> str:
    """``relation`` holds every ``start`` number and each one's successor, forever: a
    counter that grows by one each iteration until a limit stops it."""
    return f"""
.decl start(x: number)
.input start
.decl {relation}(x: number)
.output {relation}
{relation}(x) :- start(x).
{relation}(y) :- {relation}(x), y = x + 1.
"""
