"""A small TPC-H database generator (our own, following the spec's shapes) and the 22 queries.

The 8 tables have the standard columns and types (keys BIGINT, money DECIMAL(15,2), dates
DATE). Sizes follow the spec's scale factor rules (customer 150,000·SF, orders 10 per customer
for two customers in three, 1–7 lineitems per order, part 200,000·SF, 4 suppliers per part);
values follow its distributions closely enough that every query's predicates select something
at SF ≈ 0.002, and referential integrity holds (lineitem → orders, partsupp; orders → customer).
Deviations for tiny scales: at least 1,000 parts, suppliers cycle through the nations, and 1% of orders are large (7 lines of
45–50 units) so that Q18 has answers.

:class:`TpchGen` also makes change batches: new orders with their lineitems, and deletions of
existing orders with theirs, the refresh functions RF1 / RF2 of the spec.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

D = "decimal(15,2)"
SCHEMAS: dict[str, list[tuple[str, str]]] = {
    "region": [("r_regionkey", "bigint"), ("r_name", "string"), ("r_comment", "string")],
    "nation": [
        ("n_nationkey", "bigint"),
        ("n_name", "string"),
        ("n_regionkey", "bigint"),
        ("n_comment", "string"),
    ],
    "part": [
        ("p_partkey", "bigint"),
        ("p_name", "string"),
        ("p_mfgr", "string"),
        ("p_brand", "string"),
        ("p_type", "string"),
        ("p_size", "int"),
        ("p_container", "string"),
        ("p_retailprice", D),
        ("p_comment", "string"),
    ],
    "supplier": [
        ("s_suppkey", "bigint"),
        ("s_name", "string"),
        ("s_address", "string"),
        ("s_nationkey", "bigint"),
        ("s_phone", "string"),
        ("s_acctbal", D),
        ("s_comment", "string"),
    ],
    "partsupp": [
        ("ps_partkey", "bigint"),
        ("ps_suppkey", "bigint"),
        ("ps_availqty", "int"),
        ("ps_supplycost", D),
        ("ps_comment", "string"),
    ],
    "customer": [
        ("c_custkey", "bigint"),
        ("c_name", "string"),
        ("c_address", "string"),
        ("c_nationkey", "bigint"),
        ("c_phone", "string"),
        ("c_acctbal", D),
        ("c_mktsegment", "string"),
        ("c_comment", "string"),
    ],
    "orders": [
        ("o_orderkey", "bigint"),
        ("o_custkey", "bigint"),
        ("o_orderstatus", "string"),
        ("o_totalprice", D),
        ("o_orderdate", "date"),
        ("o_orderpriority", "string"),
        ("o_clerk", "string"),
        ("o_shippriority", "int"),
        ("o_comment", "string"),
    ],
    "lineitem": [
        ("l_orderkey", "bigint"),
        ("l_partkey", "bigint"),
        ("l_suppkey", "bigint"),
        ("l_linenumber", "int"),
        ("l_quantity", D),
        ("l_extendedprice", D),
        ("l_discount", D),
        ("l_tax", D),
        ("l_returnflag", "string"),
        ("l_linestatus", "string"),
        ("l_shipdate", "date"),
        ("l_commitdate", "date"),
        ("l_receiptdate", "date"),
        ("l_shipinstruct", "string"),
        ("l_shipmode", "string"),
        ("l_comment", "string"),
    ],
}

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
]
COLORS = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
]
TYPE1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONT1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONT2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
INSTRUCT = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
WORDS = [
    "furiously",
    "quickly",
    "carefully",
    "blithely",
    "slyly",
    "ironic",
    "final",
    "regular",
    "express",
    "pending",
    "bold",
    "even",
    "deposits",
    "packages",
    "accounts",
    "theodolites",
    "pinto",
    "beans",
    "foxes",
    "instructions",
    "dependencies",
    "asymptotes",
]
START = dt.date(1992, 1, 1)
END = dt.date(1998, 8, 2)
CURRENT = dt.date(1995, 6, 17)
C2 = Decimal("0.01")


def _money(cents: int) -> Decimal:
    return Decimal(cents) / 100


class TpchGen:
    """Deterministic TPC-H data at scale factor ``sf`` (seeded), plus RF1/RF2 change batches."""

    def __init__(self, sf: float = 0.002, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.n_part = max(int(200_000 * sf), 1000)
        self.n_supp = max(int(10_000 * sf), 25)
        self.n_cust = max(int(150_000 * sf), 30)
        self.next_order = 1
        self.tables: dict[str, list[tuple]] = {t: [] for t in SCHEMAS}
        self._static()
        for c in range(1, self.n_cust + 1):
            if c % 3 != 0:
                for _ in range(10):
                    o, items = self.make_order(c)
                    self.tables["orders"].append(o)
                    self.tables["lineitem"].extend(items)

    def _comment(self, extra: str | None = None, p: float = 0.0) -> str:
        words = self.rng.sample(WORDS, 4)
        if extra is not None and self.rng.random() < p:
            words.insert(2, extra)
        return " ".join(words)

    def _phone(self, nation: int) -> str:
        r = self.rng
        return f"{nation + 10}-{r.randint(100, 999)}-{r.randint(100, 999)}-{r.randint(1000, 9999)}"

    def _static(self) -> None:
        r, t = self.rng, self.tables
        t["region"] = [(i, n, self._comment()) for i, n in enumerate(REGIONS)]
        t["nation"] = [(i, n, reg, self._comment()) for i, (n, reg) in enumerate(NATIONS)]
        self.price: dict[int, Decimal] = {}
        for pk in range(1, self.n_part + 1):
            m = r.randint(1, 5)
            price = _money(90000 + (pk // 10) % 20001 + 100 * (pk % 1000))
            self.price[pk] = price
            t["part"].append(
                (
                    pk,
                    " ".join(r.sample(COLORS, 5)),
                    f"Manufacturer#{m}",
                    f"Brand#{m}{r.randint(1, 5)}",
                    f"{r.choice(TYPE1)} {r.choice(TYPE2)} {r.choice(TYPE3)}",
                    r.randint(1, 50),
                    f"{r.choice(CONT1)} {r.choice(CONT2)}",
                    price,
                    self._comment(),
                )
            )
        for sk in range(1, self.n_supp + 1):
            nation = (sk - 1) % 25  # every nation has suppliers, even at tiny scales
            comment = self._comment("Customer Complaints", 0.1)
            t["supplier"].append(
                (
                    sk,
                    f"Supplier#{sk:09d}",
                    f"addr{sk}",
                    nation,
                    self._phone(nation),
                    _money(r.randint(-99999, 999999)),
                    comment,
                )
            )
        s = self.n_supp
        for pk in range(1, self.n_part + 1):
            for i in range(4):
                sk = (pk + i * (s // 4 + (pk - 1) // s)) % s + 1
                t["partsupp"].append(
                    (pk, sk, r.randint(1, 9999), _money(r.randint(100, 100000)), self._comment())
                )
        for ck in range(1, self.n_cust + 1):
            nation = r.randint(0, 24)
            t["customer"].append(
                (
                    ck,
                    f"Customer#{ck:09d}",
                    f"addr{ck}",
                    nation,
                    self._phone(nation),
                    _money(r.randint(-99999, 999999)),
                    r.choice(SEGMENTS),
                    self._comment(),
                )
            )

    def supplier_of(self, pk: int, i: int) -> int:
        s = self.n_supp
        return (pk + i * (s // 4 + (pk - 1) // s)) % s + 1

    def make_order(self, custkey: int) -> tuple[tuple, list[tuple]]:
        """One new order of ``custkey`` with 1–7 lineitems (spec §4.2.3 shapes)."""
        r = self.rng
        ok = self.next_order
        self.next_order += 1
        odate = START + dt.timedelta(days=r.randint(0, (END - START).days - 151))
        items, total, statuses = [], Decimal(0), set()
        big = r.random() < 0.01  # a few large orders, so that Q18 selects some at tiny scales
        for ln in range(1, (7 if big else r.randint(1, 7)) + 1):
            pk = r.randint(1, self.n_part)
            qty = Decimal(r.randint(45 if big else 1, 50))
            ext = (qty * self.price[pk]).quantize(C2)
            disc = _money(r.randint(0, 10))
            tax = _money(r.randint(0, 8))
            ship = odate + dt.timedelta(days=r.randint(1, 121))
            commit = odate + dt.timedelta(days=r.randint(30, 90))
            receipt = ship + dt.timedelta(days=r.randint(1, 30))
            flag = r.choice("RA") if receipt <= CURRENT else "N"
            status = "O" if ship > CURRENT else "F"
            statuses.add(status)
            total += (ext * (1 + tax) * (1 - disc)).quantize(C2)
            items.append(
                (
                    ok,
                    pk,
                    self.supplier_of(pk, r.randint(0, 3)),
                    ln,
                    qty,
                    ext,
                    disc,
                    tax,
                    flag,
                    status,
                    ship,
                    commit,
                    receipt,
                    r.choice(INSTRUCT),
                    r.choice(MODES),
                    self._comment(),
                )
            )
        ostatus = "F" if statuses == {"F"} else "O" if statuses == {"O"} else "P"
        order = (
            ok,
            custkey,
            ostatus,
            total,
            odate,
            r.choice(PRIORITIES),
            f"Clerk#{r.randint(1, 1000):09d}",
            0,
            self._comment("special requests", 0.15),
        )
        return order, items

    def rf1(self, n: int) -> dict[str, list[tuple]]:
        """``n`` new orders (of customers that may order) with their lineitems."""
        orders, items = [], []
        for _ in range(n):
            c = self.rng.choice([c for c in range(1, self.n_cust + 1) if c % 3 != 0])
            o, li = self.make_order(c)
            orders.append(o)
            items.extend(li)
        self.tables["orders"].extend(orders)
        self.tables["lineitem"].extend(items)
        return {"orders": orders, "lineitem": items}

    def rf2(self, n: int) -> dict[str, list[tuple]]:
        """Deletes ``n`` random existing orders and their lineitems; returns the deleted rows."""
        victims = self.rng.sample(self.tables["orders"], min(n, len(self.tables["orders"])))
        keys = {o[0] for o in victims}
        gone = [li for li in self.tables["lineitem"] if li[0] in keys]
        self.tables["orders"] = [o for o in self.tables["orders"] if o[0] not in keys]
        self.tables["lineitem"] = [li for li in self.tables["lineitem"] if li[0] not in keys]
        return {"orders": victims, "lineitem": gone}


# The 22 queries with the spec's validation parameters, in Spark SQL (intervals written as
# Spark reads them; Q15's view ``revenue0`` as a CTE). Q11's fraction is 0.005 rather than the
# spec's 0.0001 / SF, which selects nothing with a single supplier per nation.
QUERIES: dict[str, str] = {
    "q01": """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
  sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
  avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
  count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
    "q02": """
select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15
  and p_type like '%BRASS' and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'EUROPE'
  and ps_supplycost = (
    select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100""",
    "q03": """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate,
  o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate, l_orderkey
limit 10""",
    "q04": """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey
              and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority""",
    "q05": """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc""",
    "q06": """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24""",
    "q07": """
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation,
    extract(year from l_shipdate) as l_year, l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')
      or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year""",
    "q08": """
select o_year,
  sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
  select extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
    and o_custkey = c_custkey and c_nationkey = n1.n_nationkey
    and n1.n_regionkey = r_regionkey and r_name = 'AMERICA'
    and s_nationkey = n2.n_nationkey
    and o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p_type = 'ECONOMY ANODIZED STEEL') as all_nations
group by o_year
order by o_year""",
    "q09": """
select nation, o_year, sum(amount) as sum_profit
from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
    and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
    and p_name like '%green%') as profit
group by nation, o_year
order by nation, o_year desc""",
    "q10": """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal,
  n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate >= date '1993-10-01' and o_orderdate < date '1993-10-01' + interval '3' month
  and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc, c_custkey
limit 20""",
    "q11": """
select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
  select sum(ps_supplycost * ps_availqty) * 0.005
  from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY')
order by value desc""",
    "q12": """
select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end)
    as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0
    end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP')
  and l_commitdate < l_receiptdate and l_shipdate < l_commitdate
  and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode""",
    "q13": """
select c_count, count(*) as custdist
from (
  select c_custkey, count(o_orderkey)
  from customer left outer join orders
    on c_custkey = o_custkey and o_comment not like '%special%requests%'
  group by c_custkey) as c_orders (c_custkey, c_count)
group by c_count
order by custdist desc, c_count desc""",
    "q14": """
select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
                    else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month""",
    "q15": """
with revenue0 as (
  select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
  from lineitem
  where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-01-01' + interval '3' month
  group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no
  and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey""",
    "q16": """
select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#45'
  and p_type not like 'MEDIUM POLISHED%' and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
  and ps_suppkey not in (
    select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size""",
    "q17": """
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
    "q18": """
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (
    select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate, o_orderkey
limit 100""",
    "q19": """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12'
    and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#23'
    and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#34'
    and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
    "q20": """
select s_name, s_address
from supplier, nation
where s_suppkey in (
    select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like 'forest%')
      and ps_availqty > (
        select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey
          and l_shipdate >= date '1994-01-01'
          and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name""",
    "q21": """
select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey
              and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey
                  and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100""",
    "q22": """
select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (
  select substring(c_phone, 1, 2) as cntrycode, c_acctbal
  from customer
  where substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17')
    and c_acctbal > (
      select avg(c_acctbal) from customer
      where c_acctbal > 0.00
        and substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17'))
    and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode
order by cntrycode""",
}
