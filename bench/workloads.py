"""Seed-deterministic workloads W1/W2/W3, to the definitions of ``../shared/peers/workloads.py``.

This is an independent implementation (vectorized with numpy) of the same workload
*definitions* the peer harness uses, so the engine is measured on data of the same shape and
size as the peers were; the streams are not byte-identical to the peers'.

W1 ``wcc``    weakly connected components (label = smallest node id of the component, edges
              undirected) over a sliding window of the most recent edges of a power-law edge
              stream: endpoint popularity ∝ rank^-0.9, ranks assigned to node ids by a random
              permutation; every undirected edge occurs at most once in the stream, no loops.
              Step i removes the window's 100 oldest edges and adds the next 100.
W2 ``reach``  ``reach(y) :- root(y). reach(y) :- reach(x), edge(x, y).`` over a directed graph
              from the same generator (distinct directed pairs), 10 roots drawn among nodes
              with an out-edge; each step deletes 10 random existing edges and inserts 10 new
              ones (not present at that moment).
W3 ``join``   ``SELECT c.id, c.region, COUNT(*) AS n, SUM(o.amount) AS total FROM orders o
              JOIN customers c ON o.cust = c.id WHERE o.status <> 'cancelled'
              GROUP BY c.id, c.region``; customers (id, name, region of 20), orders (id, cust
              uniform, amount in [1, 1000), status by fixed probabilities); each step inserts
              1,000 orders (fresh ids), deletes 100 live orders and changes the status of 100
              other live orders to a different status.

Shapes: edges are int64 arrays (k, 2); order batches are dicts of columns
(``id``, ``cust``, ``amount``: int64, ``status``: object array of str).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SCALES: dict[str, dict[str, int]] = {
    "tiny": dict(nodes=1_000, window=3_000, orders=5_000, customers=500),  # tests on a cluster
    "small": dict(nodes=5_000, window=15_000, orders=50_000, customers=5_000),
    "medium": dict(nodes=50_000, window=150_000, orders=1_000_000, customers=100_000),
}
N_STEPS = 20
SLIDE = 100  # W1: edges removed and added per step
REACH_CHANGES = 10  # W2: edges deleted and inserted per step
N_ROOTS = 10
N_INSERT, N_DELETE, N_UPDATE = 1_000, 100, 100  # W3 per step
STATUSES = np.array(["pending", "shipped", "delivered", "cancelled"], dtype=object)
STATUS_P = np.array([0.3, 0.3, 0.25, 0.15])
STATUS_CODE = {s: i for i, s in enumerate(STATUSES.tolist())}
REGIONS = np.array([f"region{i:02d}" for i in range(20)], dtype=object)
ALPHA = 0.9  # endpoint popularity ∝ rank^-ALPHA


def check_steps(n_steps: int) -> list[int]:
    """Steps at which outputs are verified: 0 (initial), the middle one, the last one."""
    return sorted({0, max(1, n_steps // 2), n_steps})


# -- power-law edge streams ---------------------------------------------------------------


def popularity(n: int, rng: np.random.Generator) -> np.ndarray:
    """Endpoint probabilities ∝ rank^-ALPHA, ranks shuffled over node ids (so a component's
    smallest id says nothing about its degree)."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -ALPHA
    rank_of_node = rng.permutation(n)
    p = weights[rank_of_node]
    return p / p.sum()


def _pair_key(src: np.ndarray, dst: np.ndarray, n: int, undirected: bool) -> np.ndarray:
    if undirected:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    return src * np.int64(n) + dst


class EdgeSource:
    """Draws new distinct, loop-free edges from the power-law popularity, in stream order.

    ``taken`` holds the keys already used (kept by the caller's rules: W1 never reuses an
    edge, W2 releases a deleted edge so it may be drawn again).
    """

    def __init__(self, n: int, rng: np.random.Generator, undirected: bool) -> None:
        self.n, self.rng, self.undirected = n, rng, undirected
        self.p = popularity(n, rng)
        self.cdf = np.cumsum(self.p)
        self.taken: set[int] = set()

    def _sample(self, k: int) -> np.ndarray:
        u = self.rng.random(k)
        return np.minimum(np.searchsorted(self.cdf, u, side="right"), self.n - 1).astype(np.int64)

    def draw(self, count: int) -> np.ndarray:
        out: list[np.ndarray] = []
        have = 0
        while have < count:
            k = int((count - have) * 1.25) + 64
            s, d = self._sample(k), self._sample(k)
            ok = s != d
            s, d = s[ok], d[ok]
            key = _pair_key(s, d, self.n, self.undirected)
            # first occurrence within this draw, in stream order
            _, first = np.unique(key, return_index=True)
            first.sort()
            s, d, key = s[first], d[first], key[first]
            if self.taken:
                fresh = np.fromiter(
                    (int(x) not in self.taken for x in key.tolist()), dtype=bool, count=len(key)
                )
                s, d, key = s[fresh], d[fresh], key[fresh]
            take = min(count - have, len(key))
            self.taken.update(key[:take].tolist())
            out.append(np.column_stack([s[:take], d[:take]]))
            have += take
        return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 2), np.int64)

    def release(self, edges: np.ndarray) -> None:
        for k in _pair_key(edges[:, 0], edges[:, 1], self.n, self.undirected).tolist():
            self.taken.discard(int(k))


# -- W1 -------------------------------------------------------------------------------------


@dataclass
class WccWorkload:
    n_nodes: int
    window: int
    stream: np.ndarray  # (window + steps * SLIDE, 2)
    n_steps: int

    @property
    def initial_edges(self) -> np.ndarray:
        return self.stream[: self.window]

    def step(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(remove, add) of step i (1-based)."""
        lo = (i - 1) * SLIDE
        return self.stream[lo : lo + SLIDE], self.stream[
            self.window + lo : self.window + lo + SLIDE
        ]

    def edges_at(self, i: int) -> np.ndarray:
        return self.stream[i * SLIDE : i * SLIDE + self.window]


def make_wcc(
    scale: str = "small",
    seed: int = 42,
    n_steps: int = N_STEPS,
    nodes: int | None = None,
    window: int | None = None,
) -> WccWorkload:
    cfg = SCALES[scale]
    n = nodes or cfg["nodes"]
    w = window or cfg["window"]
    src = EdgeSource(n, np.random.default_rng([seed, 101]), undirected=True)
    return WccWorkload(n, w, src.draw(w + n_steps * SLIDE), n_steps)


# -- W2 -------------------------------------------------------------------------------------


@dataclass
class ReachWorkload:
    n_nodes: int
    roots: list[int]
    initial_edges: np.ndarray
    steps: list[tuple[np.ndarray, np.ndarray]]  # (remove, add) per step

    def edges_at(self, i: int) -> np.ndarray:
        cur = {tuple(e) for e in self.initial_edges.tolist()}
        for rem, add in self.steps[:i]:
            cur.difference_update(tuple(e) for e in rem.tolist())
            cur.update(tuple(e) for e in add.tolist())
        return np.array(sorted(cur), dtype=np.int64).reshape(-1, 2)


def make_reach(scale: str = "small", seed: int = 42, n_steps: int = N_STEPS) -> ReachWorkload:
    cfg = SCALES[scale]
    n, m = cfg["nodes"], cfg["window"]
    rng = np.random.default_rng([seed, 102])
    src = EdgeSource(n, rng, undirected=False)
    edges = src.draw(m)
    with_out = np.flatnonzero(np.bincount(edges[:, 0], minlength=n) > 0)
    roots = sorted(rng.choice(with_out, size=N_ROOTS, replace=False).tolist())
    live = edges.copy()  # current edge set, as an array we swap-remove from
    steps = []
    for _ in range(n_steps):
        pick = rng.choice(len(live), size=REACH_CHANGES, replace=False)
        rem = live[pick].copy()
        keep = np.ones(len(live), dtype=bool)
        keep[pick] = False
        src.release(rem)
        add = src.draw(REACH_CHANGES)
        live = np.concatenate([live[keep], add])
        steps.append((rem, add))
    return ReachWorkload(n, roots, edges, steps)


# -- W3 -------------------------------------------------------------------------------------


def _orders(rng: np.random.Generator, first_id: int, k: int, n_cust: int) -> dict:
    return dict(
        id=np.arange(first_id, first_id + k, dtype=np.int64),
        cust=rng.integers(0, n_cust, size=k).astype(np.int64),
        amount=rng.integers(1, 1_000, size=k).astype(np.int64),
        status=STATUSES[rng.choice(len(STATUSES), size=k, p=STATUS_P)],
    )


def _take(cols: dict, idx: np.ndarray) -> dict:
    return {k: v[idx] for k, v in cols.items()}


@dataclass
class JoinStep:
    insert: dict
    delete: dict  # full old rows
    update_old: dict  # full old rows
    update_new: dict  # same ids, new status


@dataclass
class JoinWorkload:
    customers: dict  # id, name, region
    orders: dict  # id, cust, amount, status
    steps: list[JoinStep] = field(default_factory=list)

    def orders_at(self, i: int) -> dict:
        """The live orders after step i, as columns (row order unspecified)."""
        cur = {k: v.copy() for k, v in self.orders.items()}
        pos = {int(x): j for j, x in enumerate(cur["id"].tolist())}
        alive = np.ones(len(cur["id"]), dtype=bool)
        for st in self.steps[:i]:
            for x in st.delete["id"].tolist():
                if x in pos:
                    alive[pos[x]] = False
            for x, s in zip(
                st.update_new["id"].tolist(), st.update_new["status"].tolist(), strict=True
            ):
                cur["status"][pos[x]] = s
            base = len(cur["id"])
            cur = {k: np.concatenate([cur[k], st.insert[k]]) for k in cur}
            alive = np.concatenate([alive, np.ones(len(st.insert["id"]), dtype=bool)])
            for j, x in enumerate(st.insert["id"].tolist()):
                pos[x] = base + j
        return _take(cur, np.flatnonzero(alive))


def make_join(scale: str = "small", seed: int = 42, n_steps: int = N_STEPS) -> JoinWorkload:
    cfg = SCALES[scale]
    n_ord, n_cust = cfg["orders"], cfg["customers"]
    rng = np.random.default_rng([seed, 103])
    ids = np.arange(n_cust, dtype=np.int64)
    customers = dict(
        id=ids,
        name=np.array([f"cust{i}" for i in range(n_cust)], dtype=object),
        region=REGIONS[rng.integers(0, len(REGIONS), size=n_cust)],
    )
    orders = _orders(rng, 0, n_ord, n_cust)
    # live state for drawing deletes/updates: parallel arrays, swap-remove on delete
    live = {k: v.copy() for k, v in orders.items()}
    next_id = n_ord
    w = JoinWorkload(customers, orders)
    for _ in range(n_steps):
        pick = rng.choice(len(live["id"]), size=N_DELETE + N_UPDATE, replace=False)
        d_idx, u_idx = pick[:N_DELETE], pick[N_DELETE:]
        delete = _take(live, d_idx)
        old = _take(live, u_idx)
        # a different status for each updated order, uniformly among the other three
        cur_code = np.array([STATUS_CODE[s] for s in old["status"].tolist()], dtype=np.int64)
        shift = rng.integers(1, len(STATUSES), size=N_UPDATE)
        new = dict(old)
        new["status"] = STATUSES[(cur_code + shift) % len(STATUSES)]
        live["status"][u_idx] = new["status"]
        keep = np.ones(len(live["id"]), dtype=bool)
        keep[d_idx] = False
        ins = _orders(rng, next_id, N_INSERT, n_cust)
        next_id += N_INSERT
        live = {k: np.concatenate([live[k][keep], ins[k]]) for k in live}
        w.steps.append(JoinStep(ins, delete, old, new))
    return w
