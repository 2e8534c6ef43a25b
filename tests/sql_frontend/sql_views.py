"""The catalogue of view definitions checked against Spark (tables in harness.TABLES), kept
as fixture files in ``tests/fixtures/sql_views/`` (see :mod:`fixture_cases`):

* ``views.sql`` and ``scalar_functions.sql`` — every view, checked against Spark SQL after
  random changes;
* ``materialized.sql`` — views other views read by name (views over views): the harness
  compiles them first, in this order, into the same dataflow and gives their collections to
  later views as inputs; Spark sees them as temp views;
* ``recursive.sql`` — views whose SQL Spark cannot run the same way (set-semantics recursion
  on cyclic data), compared with a Python reference instead.
"""

from __future__ import annotations

from fixture_cases import FIXTURES, named_queries

VIEWS: dict[str, str] = {
    **named_queries(FIXTURES / "sql_views" / "views.sql"),
    # issue 16's UTF-8, collation, to_char, AES and XPath functions
    **named_queries(FIXTURES / "sql_views" / "scalar_functions.sql"),
}
MATERIALIZED: dict[str, str] = named_queries(FIXTURES / "sql_views" / "materialized.sql")
RECURSIVE_VIEWS: dict[str, str] = named_queries(FIXTURES / "sql_views" / "recursive.sql")
