-- Reads the Python-defined region_revenue: the runner resolves the order.
CREATE TEMPORARY VIEW big_orders AS
SELECT order_id, customer_id, amount FROM orders_clean WHERE amount >= 100;

CREATE MATERIALIZED VIEW top_regions AS
SELECT region, revenue FROM region_revenue ORDER BY revenue DESC, region LIMIT 2;

CREATE MATERIALIZED VIEW big_order_customers AS
SELECT customer_id, COUNT(*) AS big_orders, SUM(amount) AS big_amount
FROM big_orders GROUP BY customer_id;
