"""``ivm demo``: tables, four kinds of views, batches of changes, refreshes, checks.

On a fresh warehouse it creates ``customers``, ``orders`` and ``edges``, and the views

* ``revenue_by_region`` — join + aggregate;
* ``customer_orders`` — LEFT OUTER JOIN + aggregate (customers without orders count 0);
* ``big_regions`` — a view over ``revenue_by_region`` (same refresh group);
* ``reach`` — ``WITH RECURSIVE`` reachability from node 0 with ``UNION`` (set semantics on a
  cyclic graph: Spark 4.x cannot run this one, it only accepts ``UNION ALL``);
* ``on_cycle`` — a Datalog program: nodes that reach themselves.

Then it applies batches of inserts, deletes, updates, a MERGE and a commit by a second
writer (delta-rs directly), refreshes after each batch, prints the views through Spark SQL by
name with per-refresh metrics, and checks every view: against Spark SQL recomputing the
view's query where Spark can, against a Python graph search for the recursive ones.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from catalog.object_path import remove_tree

VIEWS = {
    "revenue_by_region": """
        SELECT c.region, count(*) AS orders, sum(o.amount) AS revenue
        FROM orders o JOIN customers c ON o.customer_id = c.id
        GROUP BY c.region""",
    "customer_orders": """
        SELECT c.id, c.name, count(o.id) AS n_orders
        FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
        GROUP BY c.id, c.name""",
    "big_regions": """
        SELECT region, revenue FROM revenue_by_region WHERE revenue > 100000""",
    "reach": """
        WITH RECURSIVE reach(node) AS (
            SELECT dst AS node FROM edges WHERE src = 0
            UNION
            SELECT e.dst FROM reach r JOIN edges e ON r.node = e.src)
        SELECT node FROM reach""",
}

DATALOG = """
.decl edges(src: number, dst: number)
.input edges
.decl path(x: number, y: number)
path(x, y) :- edges(x, y).
path(x, z) :- path(x, y), edges(y, z).
.decl on_cycle(node: number)
.output on_cycle
on_cycle(x) :- path(x, x).
"""

REGIONS = ["north", "south", "east", "west", "central"]
N_CUSTOMERS = 500
N_ORDERS = 50_000
N_NODES = 400


def _norm(v: Any) -> Any:
    if isinstance(v, Decimal):
        return v.normalize()
    if isinstance(v, float):
        return round(v, 6)
    return v


def bag(rows: Any) -> Counter[tuple[Any, ...]]:
    """A multiset of rows (Spark Rows, tuples or dicts), decimals normalized and doubles
    rounded to 6 places, so a maintained view and its recompute compare equal."""
    out: Counter[tuple[Any, ...]] = Counter()
    for r in rows:
        vals = r.values() if isinstance(r, dict) else r
        out[tuple(_norm(v) for v in vals)] += 1
    return out


def _reach(edges: list[tuple[int, int]]) -> set[int]:
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    seen: set[int] = set()
    todo = deque(adj.get(0, []))
    while todo:
        n = todo.popleft()
        if n not in seen:
            seen.add(n)
            todo.extend(adj.get(n, []))
    return seen


def _on_cycle(edges: list[tuple[int, int]]) -> set[int]:
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    out = set()
    for start in adj:
        seen: set[int] = set()
        todo = deque(adj[start])
        while todo:
            n = todo.popleft()
            if n == start:
                out.add(start)
                break
            if n not in seen:
                seen.add(n)
                todo.extend(adj.get(n, []))
    return out


def run_demo(
    warehouse: Path,
    *,
    progress: Callable[[str], AbstractContextManager[Any]],
    refreshing: Callable[[str, Any], AbstractContextManager[Any]] | None = None,
) -> int:
    """The tour.  ``progress(label)`` is shown around slow steps; ``refreshing(label,
    session)`` around the steps that load or refresh views (the command line's progress bar on
    a terminal, spark_exec.cli.refresh_display; ``progress`` when not given)."""
    from spark_exec.session import Session

    def loading(label: str) -> AbstractContextManager[Any]:
        return refreshing(label, s) if refreshing is not None else progress(label)

    started = time.perf_counter()
    if warehouse.exists():
        remove_tree(warehouse)  # a local directory or an object-store prefix
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    s = Session(warehouse=warehouse)
    print(f"warehouse: {s.warehouse}\n")
    _load_tables(s, rng)
    for name, query in VIEWS.items():
        with loading(f"CREATE MATERIALIZED VIEW {name}"):
            s.sql(f"CREATE MATERIALIZED VIEW {name} AS {query}")
    with loading("Datalog program (on_cycle)"):
        s.datalog(DATALOG)
    print("\n" + str(s.sql("SHOW MATERIALIZED VIEWS")) + "\n")
    with progress("starting Spark"):
        spark = s.spark
    failures = 0
    for i, (label, apply) in enumerate(_batches(s, rng), 1):
        print(f"== batch {i}: {label}")
        apply()
        with loading("refresh"):
            reports = s.refresh()
        _print_reports(reports)
        spark.sql("SELECT * FROM revenue_by_region ORDER BY region").show()
        failures += _check(s, spark, progress)
    print(
        f"demo finished in {time.perf_counter() - started:.0f}s: "
        + ("every view matched its oracle" if not failures else f"{failures} MISMATCH(ES)")
    )
    return 1 if failures else 0


def _load_tables(s: Any, rng: np.random.Generator) -> None:
    """Create ``customers``, ``orders`` and ``edges`` and load their first rows."""
    from catalog import delta

    s.sql("""
        CREATE TABLE customers (id BIGINT NOT NULL, name STRING, region STRING);
        CREATE TABLE orders (id BIGINT NOT NULL, customer_id BIGINT, amount DECIMAL(10,2));
        CREATE TABLE edges (src BIGINT NOT NULL, dst BIGINT NOT NULL)""")
    ids = np.arange(N_CUSTOMERS)
    delta.insert(
        s.table_path("customers"),
        pa.table(
            {
                "id": ids,
                "name": [f"customer {i}" for i in ids],
                "region": [REGIONS[i % len(REGIONS)] for i in ids],
            }
        ),
    )
    cents = rng.integers(100, 50_000, N_ORDERS)
    delta.insert(
        s.table_path("orders"),
        pa.table(
            {
                "id": np.arange(N_ORDERS),
                "customer_id": rng.integers(0, N_CUSTOMERS - 20, N_ORDERS),
                "amount": pa.array([Decimal(int(c)) / 100 for c in cents], pa.decimal128(10, 2)),
            }
        ),
    )
    src = rng.integers(0, N_NODES, int(N_NODES * 1.1))
    dst = rng.integers(0, N_NODES, int(N_NODES * 1.1))
    delta.insert(s.table_path("edges"), pa.table({"src": src, "dst": dst}))
    print(
        f"tables: customers {N_CUSTOMERS:,} rows, orders {N_ORDERS:,} rows, edges "
        f"{len(src):,} rows\n"
    )


def _batches(s: Any, rng: np.random.Generator) -> list[tuple[str, Callable[[], object]]]:
    """The batches of changes the tour applies, each with its label."""
    from catalog import delta

    return [
        (
            "insert orders and a customer, add edges",
            lambda: s.sql("""
            INSERT INTO orders VALUES (900001, 3, 1250.00), (900002, 499, 99.99),
                                      (900003, 42, 5.00);
            INSERT INTO customers VALUES (500, 'customer 500', 'north');
            INSERT INTO edges VALUES (0, 1), (1, 0), (5, 0)"""),
        ),
        (
            "delete orders of a customer, delete edges",
            lambda: s.sql("""
            DELETE FROM orders WHERE customer_id = 7;
            DELETE FROM edges WHERE src = 1"""),
        ),
        (
            "update amounts and move a customer",
            lambda: s.sql("""
            UPDATE orders SET amount = amount * 2 WHERE customer_id = 3;
            UPDATE customers SET region = 'west' WHERE id = 42"""),
        ),
        (
            "merge customers",
            lambda: s.sql("""
            MERGE INTO customers AS t
            USING (VALUES (1, 'customer one', 'south'), (501, 'customer 501', 'east'))
                  AS u(id, name, region)
            ON t.id = u.id
            WHEN MATCHED THEN UPDATE SET name = u.name, region = u.region
            WHEN NOT MATCHED THEN INSERT *"""),
        ),
        (
            "a second writer (delta-rs) appends 10,000 orders",
            lambda: delta.insert(
                s.table_path("orders"),
                pa.table(
                    {
                        "id": np.arange(1_000_000, 1_010_000),
                        "customer_id": rng.integers(0, N_CUSTOMERS, 10_000),
                        "amount": pa.array(
                            [Decimal(int(c)) / 100 for c in rng.integers(100, 50_000, 10_000)],
                            pa.decimal128(10, 2),
                        ),
                    }
                ),
            ),
        ),
    ]


def _print_reports(reports: list[Any]) -> None:
    """One line per refreshed view: epoch, rows in, differences, rows written, time."""
    print(
        f"{'view':<18} {'epoch':>5} {'rows in':>8} {'differences':>11} "
        f"{'rows written':>12} {'ms':>7}"
    )
    for r in reports:
        print(
            f"{r.view:<18} {r.epoch!s:>5} {r.rows_in:>8} {r.differences:>11} "
            f"{r.rows_written:>12} {r.seconds * 1000:>7.0f}"
        )


def _check(s: Any, spark: Any, progress: Callable[[str], AbstractContextManager[None]]) -> int:
    failures = 0
    with progress("checking every view"):
        lines = []
        for name in ("revenue_by_region", "customer_orders", "big_regions"):
            got = bag(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect())
            want = bag(tuple(r) for r in spark.sql(VIEWS[name]).collect())
            ok = got == want
            failures += not ok
            lines.append(
                f"  {name:<18} {sum(got.values()):>6} rows  "
                f"{'OK' if ok else 'MISMATCH'} (= Spark SQL recomputation)"
            )
        edges = [tuple(r) for r in spark.sql("SELECT src, dst FROM edges").collect()]
        for name, oracle in (("reach", _reach), ("on_cycle", _on_cycle)):
            got_nodes = Counter(r[0] for r in spark.sql(f"SELECT * FROM {name}").collect())
            want_nodes = Counter(oracle(edges))
            ok = got_nodes == want_nodes
            failures += not ok
            lines.append(
                f"  {name:<18} {sum(got_nodes.values()):>6} rows  "
                f"{'OK' if ok else 'MISMATCH'} (= graph search in Python; Spark 4.x "
                "has no set-semantics recursion)"
            )
    print("\n".join(lines) + "\n")
    return failures
