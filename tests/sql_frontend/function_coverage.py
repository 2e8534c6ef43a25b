"""The share of Spark's deterministic scalar functions the views support, measured.

Spark's side is ``data/spark_functions.json``: every name of ``SHOW SYSTEM FUNCTIONS`` with
its ExpressionInfo group and what its class implements, written by ``python
tests/sql_frontend/function_coverage.py --dump`` (needs pyspark). A function is

- *named* when its name is an identifier (operators such as ``+`` and ``<=>`` are not);
- *non-deterministic* when its class implements ``Nondeterministic`` or it reads the session
  or clock (:data:`CONTEXT`);
- an aggregate, window function or generator by its group or class; *scalar* otherwise.

Ours are the names of ``docs/sql-support.md``'s scalar table (the translator's own functions
and the registry). ``python tests/sql_frontend/function_coverage.py`` prints the figures and
the missing names by group."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).parent / "data" / "spark_functions.json"
CONTEXT = frozenset(
    [
        "curdate",
        "current_catalog",
        "current_database",
        "current_date",
        "current_path",
        "current_schema",
        "current_time",
        "current_timestamp",
        "current_timezone",
        "current_user",
        "localtimestamp",
        "now",
        "session_user",
        "try_reflect",
        "uniform",
        "user",
        "version",
    ]
)
"""Functions whose value depends on the session, the user or the clock."""


def kind(f: dict) -> str:
    group, implements = f.get("group"), f.get("is", [])
    if group == "agg_funcs" or "agg" in implements:
        return "aggregate"
    if group == "window_funcs" or "window" in implements:
        return "window"
    if group == "generator_funcs" or "gen" in implements:
        return "generator"
    return "scalar"


def spark_functions() -> list[dict]:
    """Spark's named deterministic functions."""
    rows = json.loads(DATA.read_text())
    return [
        f
        for f in rows
        if re.fullmatch(r"[a-z_][a-z0-9_]*", f["name"])
        and "nondet" not in f.get("is", [])
        and f["name"] not in CONTEXT
    ]


def ours() -> set[str]:
    from sql_frontend.expressions import registry

    return set(registry.TRANSLATOR_FUNCTIONS) | set(registry.registry_names())


def measure() -> tuple[int, int, dict[str, list[str]]]:
    """(supported, all) deterministic scalar functions, and the missing ones by group."""
    scalar = [f for f in spark_functions() if kind(f) == "scalar"]
    have = ours()
    missing: dict[str, list[str]] = defaultdict(list)
    for f in scalar:
        if f["name"] not in have:
            missing[str(f.get("group"))].append(f["name"])
    return sum(f["name"] in have for f in scalar), len(scalar), dict(missing)


def dump() -> None:
    """Write ``DATA`` from a local Spark."""
    import os

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").getOrCreate()
    jvm = spark._jvm  # type: ignore[attr-defined]
    registry = jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    base = "org.apache.spark.sql.catalyst.expressions."
    kinds = {
        "agg": "aggregate.AggregateFunction",
        "window": "WindowFunction",
        "gen": "Generator",
        "nondet": "Nondeterministic",
    }
    classes = {k: jvm.java.lang.Class.forName(base + v, False, loader) for k, v in kinds.items()}
    out = []
    for (name,) in spark.sql("SHOW SYSTEM FUNCTIONS").collect():
        row: dict = {"name": name}
        ident = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier(name)
        info = registry.lookupFunction(ident)
        if info.isDefined():
            i = info.get()
            row["class"], row["group"] = i.getClassName(), i.getGroup()
            try:
                c = jvm.java.lang.Class.forName(i.getClassName(), False, loader)
                row["is"] = [k for k, kc in classes.items() if kc.isAssignableFrom(c)]
            except Exception:
                row["is"] = []
        out.append(row)
    DATA.write_text(json.dumps(out, indent=0) + "\n")


if __name__ == "__main__":
    if "--dump" in sys.argv:
        dump()
    have, total, missing = measure()
    print(f"{have} of {total} deterministic scalar functions ({100 * have / total:.0f}%)")
    for group, names in sorted(missing.items(), key=lambda kv: -len(kv[1])):
        print(f"missing {group} ({len(names)}): {' '.join(names)}")
