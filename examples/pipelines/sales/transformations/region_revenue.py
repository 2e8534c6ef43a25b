"""Silver to gold, in Python: revenue per region (reads the SQL-defined orders_clean)."""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

spark = globals()["spark"]  # injected by the pipeline runner, as spark-pipelines does


@dp.materialized_view(comment="revenue and order count per region")
def region_revenue() -> DataFrame:
    orders = spark.table("orders_clean")
    customers = spark.table("customers")
    return (
        orders.join(customers, "customer_id")
        .groupBy("region")
        .agg(F.sum("amount").alias("revenue"), F.count("*").alias("orders"))
    )
