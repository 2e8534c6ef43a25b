"""Per registry function, expressions over the harness's tables (random rows with NULLs),
compared with Spark SQL: ``SCALAR_VIEWS`` holds them, a few functions per view, so one Spark
query checks them all. ``test_every_registry_function_has_a_case`` holds the list complete.
The expressions are data: ``tests/fixtures/functions/scalar_t.sql``, ``higher_order_t.sql``
and ``scalar_ev.sql``."""

from __future__ import annotations

from fixture_cases import FIXTURES, expression_lists

T_CASES = {
    **expression_lists(FIXTURES / "functions" / "scalar_t.sql"),
    **expression_lists(FIXTURES / "functions" / "higher_order_t.sql"),
}
EV_CASES = expression_lists(FIXTURES / "functions" / "scalar_ev.sql")


def _views(table: str, cases: dict[str, list[str]], per_view: int = 40) -> dict[str, str]:
    exprs = [e for es in cases.values() for e in es]
    out = {}
    for i in range(0, len(exprs), per_view):
        cols = ", ".join(f"{e} AS c{j}" for j, e in enumerate(exprs[i : i + per_view]))
        out[f"fn_{table}_{i // per_view}"] = f"SELECT {cols} FROM {table}"
    return out


SCALAR_VIEWS = {**_views("t", T_CASES), **_views("ev", EV_CASES)}
