"""Issue 13: no function of the front ends (the SQL and Datalog compilers) is longer than
about 60 lines, unless a comment at its top says why it is kept whole."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = ("sql_frontend", "datalog")
MAX_LINES = 60
KEPT_WHOLE = "# kept whole:"


def _long_functions(source: str) -> list[tuple[str, int, bool]]:
    """(name, lines, kept whole by a comment) of every function longer than MAX_LINES."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            n = node.end_lineno - node.lineno + 1
            if n > MAX_LINES:
                first_body = node.body[0].lineno
                head = lines[node.lineno - 1 : first_body + 1]
                out.append((node.name, n, any(KEPT_WHOLE in x for x in head)))
    return out


def test_front_end_functions_are_short() -> None:
    long = []
    for package in FRONT_ENDS:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, n, kept in _long_functions(path.read_text()):
                if not kept:
                    long.append(f"{path.relative_to(ROOT)}:{name} ({n} lines)")
    assert not long, f"split these into named steps, or say why they are kept whole: {long}"


def test_the_check_sees_a_long_function_and_its_comment() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    assert _long_functions(f"def f():\n{body}") == [("f", MAX_LINES + 1, False)]
    kept = f"def f():\n    {KEPT_WHOLE} one table\n{body}"
    assert _long_functions(kept) == [("f", MAX_LINES + 2, True)]
    assert _long_functions("def f():\n    return 1\n") == []
