"""Views defined by DataFrames (issue 18, item 2): compiled from Spark's analyzed plan, they equal
the SQL-defined view of the same query — and Spark's own answer — after every step of random
inserts, deletes and updates."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spark_exec.session import Session
from sql_frontend.errors import UnsupportedSqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark


def _join_group(spark: SparkSession) -> DataFrame:
    from pyspark.sql import functions as F

    t, u = spark.table("t"), spark.table("u")
    return (
        t.join(u, "k", "left")
        .where(F.col("v") > 5)
        .groupBy("name")
        .agg(
            F.sum("v").alias("sv"),
            F.count("*").alias("n"),
            F.avg("w").alias("aw"),
            F.countDistinct("k").alias("dk"),
        )
    )


def _expressions(spark: SparkSession) -> DataFrame:
    from pyspark.sql import functions as F

    t = spark.table("t")
    return t.select(
        (F.col("v") * 2 + 1).alias("x"),
        F.when(F.col("k") == 1, "one").when(F.col("k") > 3, F.upper("name")).alias("c"),
        F.col("k").isin(1, 2, 3).alias("small"),
        F.coalesce("name", F.lit("none")).alias("nm"),
        F.substring("name", 1, 2).alias("pre"),
        F.col("k").cast("string").alias("ks"),
        F.expr("v % 3 = 0 OR name IS NULL").alias("flag"),
    ).distinct()


def _union_semi_anti(spark: SparkSession) -> DataFrame:
    t, u = spark.table("t"), spark.table("u")
    semi = t.join(u, "k", "left_semi").select("k", "v")
    anti = t.join(u, "k", "left_anti").select("k", (t.v + 1000).alias("v"))
    return semi.union(anti)


def _top_k(spark: SparkSession) -> DataFrame:
    from pyspark.sql import functions as F

    return spark.table("t").orderBy(F.col("v").desc(), F.col("k")).limit(3).select("k", "v")


def _self_join(spark: SparkSession) -> DataFrame:
    from pyspark.sql import functions as F

    a, b = spark.table("t").alias("a"), spark.table("t").alias("b")
    return a.join(b, (F.col("a.k") == F.col("b.k")) & (F.col("a.v") < F.col("b.v"))).select(
        F.col("a.k").alias("k"), F.col("a.v").alias("lo"), F.col("b.v").alias("hi")
    )


CASES: dict[str, tuple[Callable[[SparkSession], DataFrame], str]] = {
    "join_group": (
        _join_group,
        "SELECT name, SUM(v) AS sv, COUNT(*) AS n, AVG(w) AS aw, COUNT(DISTINCT t.k) AS dk "
        "FROM t LEFT JOIN u ON t.k = u.k WHERE v > 5 GROUP BY name",
    ),
    "expressions": (
        _expressions,
        "SELECT DISTINCT v * 2 + 1 AS x, CASE WHEN k = 1 THEN 'one' WHEN k > 3 THEN upper(name) "
        "END AS c, k IN (1, 2, 3) AS small, coalesce(name, 'none') AS nm, "
        "substring(name, 1, 2) AS pre, CAST(k AS STRING) AS ks, "
        "(v % 3 = 0 OR name IS NULL) AS flag FROM t",
    ),
    "union_semi_anti": (
        _union_semi_anti,
        "SELECT k, v FROM t LEFT SEMI JOIN u USING (k) "
        "UNION ALL SELECT k, v + 1000 AS v FROM t LEFT ANTI JOIN u USING (k)",
    ),
    "top_k": (_top_k, "SELECT k, v FROM t ORDER BY v DESC, k LIMIT 3"),
    "self_join": (
        _self_join,
        "SELECT a.k AS k, a.v AS lo, b.v AS hi FROM t a JOIN t b ON a.k = b.k AND a.v < b.v",
    ),
}


def bag(table: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_norm(v) for v in r.values()) for r in table.to_pylist())


def _norm(v: Any) -> Any:
    return round(v, 9) if isinstance(v, float) else v


def spark_bag(spark: SparkSession, query: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_norm(v) for v in r) for r in spark.sql(query).collect())


def random_change(s: Session, rng: random.Random) -> str:
    k = rng.randint(0, 6)
    kind = rng.choice(["insert", "insert", "delete", "update", "insert_u", "delete_u"])
    if kind == "insert":
        name = rng.choice(["'a'", "'bb'", "'ccc'", "NULL"])
        stmt = f"INSERT INTO t VALUES ({k}, {rng.randint(0, 20)}, {name})"
    elif kind == "delete":
        stmt = f"DELETE FROM t WHERE k = {k}"
    elif kind == "update":
        stmt = f"UPDATE t SET v = v + {rng.randint(1, 5)} WHERE k = {k}"
    elif kind == "insert_u":
        stmt = f"INSERT INTO u VALUES ({k}, {rng.random() * 10:.3f})"
    else:
        stmt = f"DELETE FROM u WHERE k = {k}"
    s.sql(stmt)
    return stmt


def test_dataframe_views_equal_sql_views_under_random_changes(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql(
        "CREATE TABLE t (k INT, v BIGINT, name STRING) USING delta;"
        "CREATE TABLE u (k INT, w DOUBLE) USING delta;"
        "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'bb'), (3, 7, NULL), (4, 3, 'a'), (5, 9, 'z');"
        "INSERT INTO u VALUES (1, 1.5), (3, 2.5)"
    )
    for case, (build, sql) in CASES.items():
        s.create_view(f"{case}_df", build(spark))
        s.create_view(f"{case}_sql", sql)
    rng = random.Random(18)
    for step in range(8):
        for case, (_, sql) in CASES.items():
            want = spark_bag(spark, sql)
            assert bag(s.read(f"{case}_df")) == want, f"{case} at step {step}"
            assert bag(s.read(f"{case}_sql")) == want, f"{case} at step {step}"
        for _ in range(rng.randint(1, 3)):
            random_change(s, rng)
        s.refresh()
    # the stored definition is SQL: a new Session refreshes it without Spark
    again = Session(warehouse=tmp_path / "wh")
    again.sql("INSERT INTO t VALUES (6, 30, 'bb')")
    again.refresh()
    for case in CASES:
        assert bag(again.read(f"{case}_df")) == bag(again.read(f"{case}_sql")), case


def test_unsupported_dataframes_are_refused_by_name(spark: SparkSession, tmp_path: Path) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    s = Session(spark=spark, warehouse=tmp_path / "wh")
    s.sql("CREATE TABLE t (k INT, v BIGINT, name STRING) USING delta")
    t = spark.table("t")
    refused = {
        "local data": spark.createDataFrame([(1, 2)], "a INT, b INT"),
        "Spark plan node Window": t.select(
            "k", F.row_number().over(Window.partitionBy("name").orderBy("v")).alias("r")
        ),
        "subset of the columns": t.dropDuplicates(["k"]),
        "files by path": spark.read.format("delta").load(s.table_path("t")),
        "limit() without orderBy()": t.limit(2),
        "try_cast": t.select(F.expr("try_cast(name AS INT)").alias("n")),
    }
    for needle, df in refused.items():
        with pytest.raises(
            UnsupportedSqlError, match=needle.replace("(", r"\(").replace(")", r"\)")
        ):
            s.create_view("bad", df)
    assert s.catalog.views() == ()  # nothing half-created
