"""Sharded-execution tests reuse the SQL and Datalog test corpora (no Spark needed here)."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for sub in ("sql_frontend", "datalog", "."):  # "." (tests/): fixture_cases
    path = str((_TESTS / sub).resolve())
    if path not in sys.path:
        sys.path.append(path)
