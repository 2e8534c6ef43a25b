"""Views using issue 16's constructs (aggregates, windows, generators and higher-order
functions), over the differential harness's tables, and the nested types (``nested.sql``);
each must equal Spark SQL's recomputation after every step.  The views are data:
``tests/fixtures/sql_views/aggregates.sql``, ``windows.sql`` (window functions whose result
depends on the order among peers order by every column of the row, so Spark's answer is one
multiset) and ``generators.sql``.
"""

from __future__ import annotations

from fixture_cases import FIXTURES, named_queries

AGGREGATE_VIEWS = named_queries(FIXTURES / "sql_views" / "aggregates.sql")
WINDOW_VIEWS = named_queries(FIXTURES / "sql_views" / "windows.sql")
GENERATOR_VIEWS = named_queries(FIXTURES / "sql_views" / "generators.sql")
NESTED_VIEWS = named_queries(FIXTURES / "sql_views" / "nested.sql")
