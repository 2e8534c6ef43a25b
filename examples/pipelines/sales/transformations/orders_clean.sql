-- Bronze to silver: orders that count.
CREATE MATERIALIZED VIEW orders_clean
COMMENT 'orders that were not cancelled'
AS SELECT order_id, customer_id, amount
FROM orders
WHERE status <> 'cancelled';
