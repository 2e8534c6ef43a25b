"""SQL text → relational plan: :func:`plan_sql` runs the analysis passes and translation."""

from __future__ import annotations

from sql_frontend import plan as p
from sql_frontend.analyze import CatalogLike, analyze, catalog_schema
from sql_frontend.translate import Translator


def plan_sql(sql: str, catalog: CatalogLike) -> p.Node:
    """The relational plan of one Spark SQL query over ``catalog``.

    >>> from sql_frontend.plan import explain
    >>> print(explain(plan_sql("SELECT a FROM t WHERE a > 1", {"t": [("a", "bigint")]})))
    Project #0:a [a:BIGINT]
      Filter gt(#0:a, cast(1 as BIGINT)) [a:BIGINT]
        Scan t [a:BIGINT]
    """
    tree = analyze(sql, catalog)
    return Translator(catalog_schema(catalog)).query(tree, {})
