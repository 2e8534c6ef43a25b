"""Test cases kept as data: SQL fixture files under ``tests/fixtures/`` and their loader.

The format follows sqlglot's optimizer fixtures (``tests/fixtures/optimizer/<rule>.sql``):
cases are parted by blank lines; in a case, ``-- key: value`` lines name and describe it and
the other lines are SQL, one statement a line (a rule's golden case has two: the input and
the expected rewrite).  Any other ``--`` line is a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

_META = re.compile(r"^--\s*([a-z_]+):\s?(.*)$")


@dataclass(frozen=True)
class Case:
    """One case of a fixture file: its ``-- key: value`` fields and its SQL lines."""

    meta: dict[str, str] = field(default_factory=dict)
    sql: tuple[str, ...] = ()
    line: int = 0  # where the case starts in its file, for failure messages

    @property
    def name(self) -> str:
        return self.meta.get("name", f"line {self.line}")


def read_cases(path: Path) -> list[Case]:
    """The cases of fixture file ``path``, in file order (cases without SQL are comments)."""
    cases: list[Case] = []
    meta: dict[str, str] = {}
    sql: list[str] = []
    start = 0
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, raw in enumerate([*lines, ""], 1):
        line = raw.rstrip()
        if not line:
            if sql:
                cases.append(Case(meta, tuple(sql), start))
            meta, sql, start = {}, [], 0
            continue
        start = start or i
        m = _META.match(line)
        if m:
            meta[m.group(1)] = m.group(2)
        elif not line.startswith("--"):
            sql.append(line)
    return cases


def named_queries(path: Path) -> dict[str, str]:
    """``{name: query}`` of a fixture file whose cases are named one-line queries."""
    out: dict[str, str] = {}
    for case in read_cases(path):
        if "name" not in case.meta or len(case.sql) != 1:
            raise ValueError(f"{path}:{case.line}: a case needs a name and one line of SQL")
        if case.name in out:
            raise ValueError(f"{path}:{case.line}: {case.name!r} is defined twice")
        out[case.name] = case.sql[0]
    return out


def expression_lists(path: Path) -> dict[str, list[str]]:
    """``{name: its SQL lines}`` of a fixture file whose cases are named lists of
    expressions, one a line."""
    out: dict[str, list[str]] = {}
    for case in read_cases(path):
        if "name" not in case.meta:
            raise ValueError(f"{path}:{case.line}: a case needs a name")
        if case.name in out:
            raise ValueError(f"{path}:{case.line}: {case.name!r} is defined twice")
        out[case.name] = list(case.sql)
    return out
