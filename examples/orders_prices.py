"""Orders priced by as-of joins: processing time and event time.

Two ways to attach a price to an order (the blog-post seed on differentiate/integrate):

* **processing time** — ``orders.join_at_arrival(prices, on)``: an order takes the prices
  as they are when the order arrives; later price changes never revise it (the order is
  differentiated into a momentary blip, joined, and integrated back).
* **event time** — ``orders.asof_join(prices, on, left_time, right_time)``: an order takes,
  per symbol, the price with the greatest time <= the order's time, like DuckDB's
  ``ASOF JOIN`` or pandas' ``merge_asof``; it is kept exact under inserts and deletes of
  both orders and prices.

Run:  python examples/orders_prices.py [--steps 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import random

import ivm


def reference_event_time(orders: set, prices: set) -> dict:
    """Plain Python: each order with the latest price at or before its time."""
    out: dict = {}
    for oid, sym, t in orders:
        cands = [(pt, px) for s, pt, px in prices if s == sym and pt <= t]
        if cands:
            best = max(c[0] for c in cands)
            px = min(c[1] for c in cands if c[0] == best)
            out[(oid, sym, t, sym, best, px)] = 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)

    g = ivm.Dataflow("orders_prices")
    orders = g.input("orders", [("oid", "int64"), ("sym", "str"), ("t", "int64")])
    prices = g.input("prices", [("sym", "str"), ("t", "int64"), ("px", "float64")])
    at_arrival = g.output(orders.join_at_arrival(prices, [("sym", "sym")]), "at_arrival")
    as_of = g.output(orders.asof_join(prices, [("sym", "sym")], "t", "t"), "as_of")

    cur_orders: set = set()
    cur_prices: set = set()
    next_oid = 0
    for step in range(a.steps):
        new_prices = {
            (rng.choice("ABC"), rng.randrange(100), float(rng.randrange(50, 150))) for _ in range(3)
        } - cur_prices
        gone = {rng.choice(sorted(cur_prices))} if cur_prices and step % 3 == 2 else set()
        new_orders = set()
        for _ in range(2):
            new_orders.add((next_oid, rng.choice("ABC"), rng.randrange(100)))
            next_oid += 1
        prices.insert(sorted(new_prices))
        prices.delete(sorted(gone))
        orders.insert(sorted(new_orders))
        cur_prices = (cur_prices | new_prices) - gone
        cur_orders |= new_orders
        before = at_arrival.counts()
        g.step()
        # processing time: rows of earlier orders are never revised
        after = at_arrival.counts()
        assert all(after.get(r) == n for r, n in before.items()), "an order was revised"
        # event time: equal to the plain reference after every step
        assert as_of.counts() == reference_event_time(cur_orders, cur_prices)
        print(
            f"step {step:2d}: +{len(new_orders)} orders, +{len(new_prices)} "
            f"-{len(gone)} prices -> {sum(after.values())} priced at arrival, "
            f"{len(as_of.counts())} priced as of their time"
        )
    print("ok: processing-time rows never revised; event-time rows equal the reference")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
