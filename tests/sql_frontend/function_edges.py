"""Edge-value calls of the registry's functions (NULLs, negatives, zero, empty and unicode
strings, overflow, leap days, invalid arguments), written without expected values:
``test_function_edges.py`` asks Spark for each one's value and type, or its error class, and
holds the engine to the same.  The calls are data: ``tests/fixtures/functions/edges.sql``,
``higher_order_edges.sql`` and ``built_in.sql``."""

from __future__ import annotations

from fixture_cases import FIXTURES, expression_lists

EDGES = {
    **expression_lists(FIXTURES / "functions" / "edges.sql"),
    **expression_lists(FIXTURES / "functions" / "higher_order_edges.sql"),
}
# the functions the SQL translator builds in, outside the registry
BUILT_IN = expression_lists(FIXTURES / "functions" / "built_in.sql")
