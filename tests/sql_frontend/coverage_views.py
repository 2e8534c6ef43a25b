"""Views using issue 16's constructs (aggregates, windows, scalar functions), over the
differential harness's tables; each must equal Spark SQL's recomputation after every step.

Window functions whose result depends on the order among peers (LAG, NTILE, FIRST_VALUE,
frames ...) order by every column of the row, so Spark's answer is one multiset.
"""

from __future__ import annotations

_ALL_T = "v, k, s, x, d, m"  # every column of t: ties are whole-row duplicates only

AGGREGATE_VIEWS = {
    "agg_filter": "SELECT k, count(*) FILTER (WHERE v > 1) AS c, sum(v) FILTER (WHERE x > 0) AS s, "
    "avg(m) FILTER (WHERE s <> 'a') AS a, max(d) FILTER (WHERE v IS NULL) AS mx FROM t GROUP BY k",
    "agg_filter_global": "SELECT count(*) FILTER (WHERE v > 1) AS c, "
    "count(DISTINCT s) FILTER (WHERE k > 2) AS cd FROM t",
    "count_if": "SELECT k, count_if(v > 2) AS a, count_if(s = 'a') AS b FROM t GROUP BY k",
    "count_if_global": "SELECT count_if(v > 2) AS a FROM t",
    "bool_aggs": "SELECT k, bool_and(v > 0) AS a, bool_or(v > 5) AS o, every(x > 0) AS e, "
    "some(s = 'a') AS so FROM t GROUP BY k",
    "bool_filter": "SELECT s, bool_and(v > 0) FILTER (WHERE k > 1) AS a FROM t GROUP BY s",
    "variance": "SELECT k, stddev(x) AS a, stddev_pop(x) AS b, variance(x) AS c, var_pop(x) AS d, "
    "var_samp(v) AS e, stddev_samp(m) AS f FROM t GROUP BY k",
    "variance_global": "SELECT stddev(v) AS a, var_pop(x) AS b, count(*) AS n FROM t",
    "variance_having": "SELECT s FROM t GROUP BY s HAVING stddev_pop(v) > 1",
    "sum_distinct": "SELECT k, sum(DISTINCT v) AS a, avg(DISTINCT v) AS b, sum(DISTINCT m) AS c, "
    "avg(DISTINCT m) AS e, count(*) AS n FROM t GROUP BY k",
    "sum_distinct_global": "SELECT sum(DISTINCT v) AS a, avg(DISTINCT x) AS b FROM t",
    "count_distinct_tuple": "SELECT k, count(DISTINCT v, s) AS a, count(DISTINCT s, d) AS b FROM t "
    "GROUP BY k",
    "count_distinct_tuple_global": "SELECT count(DISTINCT k, v) AS a FROM t",
    "max_by": "SELECT k, max_by(v * 10, v) AS a, min_by(concat(s, '!'), s) AS b, "
    "max_by(d, d) AS c FROM t GROUP BY k",
    "percentile": "SELECT k, percentile(v, 0.25) AS a, median(x) AS b, percentile(m, 1) AS c, "
    "percentile_cont(0.3) WITHIN GROUP (ORDER BY v) AS e, "
    "percentile_cont(0.3) WITHIN GROUP (ORDER BY v DESC) AS f, sum(v) AS g FROM t GROUP BY k",
    "percentile_global": "SELECT median(v) AS a, percentile(x, 0.9) AS b FROM t",
    "percentile_filter": "SELECT s, median(v) FILTER (WHERE k > 1) AS a FROM t GROUP BY s",
    "ev_mixed": "SELECT cat, count_if(ok) AS a, bool_or(ok) AS b, stddev(qty) AS c, "
    "sum(DISTINCT qty) AS e, max_by(id, ts) AS f FROM ev GROUP BY cat",
    "rollup_var": "SELECT k, s, var_pop(v) AS a, count_if(x > 0) AS b FROM t GROUP BY ROLLUP(k, s)",
}

WINDOW_VIEWS = {
    "lag_lead": f"SELECT k, v, lag(v) OVER (PARTITION BY k ORDER BY {_ALL_T}) AS a, "
    f"lead(v, 2, -1) OVER (PARTITION BY k ORDER BY {_ALL_T}) AS b, "
    f"lag(s, 1, 'none') OVER (ORDER BY {_ALL_T}) AS c FROM t",
    "ntile": f"SELECT k, v, ntile(3) OVER (PARTITION BY k ORDER BY {_ALL_T}) AS a, "
    f"ntile(1) OVER (ORDER BY {_ALL_T}) AS b FROM t",
    "first_last": f"SELECT k, v, first_value(v) OVER (PARTITION BY k ORDER BY {_ALL_T}) AS a, "
    f"last_value(s) OVER (PARTITION BY k ORDER BY {_ALL_T}) AS b, "
    f"last_value(v) OVER (PARTITION BY k ORDER BY {_ALL_T} "
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS c FROM t",
    "percent_rank": "SELECT k, v, percent_rank() OVER (PARTITION BY k ORDER BY v) AS a, "
    "cume_dist() OVER (PARTITION BY k ORDER BY v DESC) AS b, "
    "cume_dist() OVER (ORDER BY s) AS c FROM t",
    "rows_frame": f"SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY {_ALL_T} "
    "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS a, "
    f"count(*) OVER (ORDER BY {_ALL_T} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS b, "
    f"avg(x) OVER (PARTITION BY k ORDER BY {_ALL_T} ROWS BETWEEN UNBOUNDED PRECEDING "
    "AND 1 PRECEDING) AS c, "
    f"max(s) OVER (PARTITION BY k ORDER BY {_ALL_T} ROWS BETWEEN 1 FOLLOWING "
    "AND 3 FOLLOWING) AS e FROM t",
    "range_frame": "SELECT k, v, sum(v) OVER (PARTITION BY k ORDER BY v "
    "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS a, "
    "min(x) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN UNBOUNDED PRECEDING "
    "AND UNBOUNDED FOLLOWING) AS b, "
    "count(s) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS c FROM t",
    "window_over_agg": "SELECT k, sum(v) AS s, lag(sum(v)) OVER (ORDER BY k) AS p, "
    "ntile(2) OVER (ORDER BY k) AS n FROM t GROUP BY k",
}
