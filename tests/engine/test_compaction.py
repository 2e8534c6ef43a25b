"""Compaction: state follows the live data, not the history of changes.

1,000 epochs of churn (deletes and inserts each epoch) on inputs of fixed live size flow
through arrangements shared by a join and a reduce, a distinct, and a min-label loop.
Periodically a fresh dataflow built by the same code is fed the live inputs in one epoch;
every trace of the churned dataflow must hold at most twice the rows of the fresh one
(counted with ``g.arrangement_rows()``), and at the end the checkpointed contents of every
trace must equal the fresh dataflow's exactly (compaction loses nothing and keeps nothing).
"""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa

import ivm
from ivm.library.graphs import EDGE, NODE_LABEL, propagate_min_label

X_LIVE, X_KEYS = 200, 20
E_LIVE, E_NODES = 30, 20
EPOCHS = 1000
CHECK_EVERY = 100


def build() -> tuple[ivm.Dataflow, dict[str, ivm.InputCollection], list[ivm.Output]]:
    g = ivm.Dataflow()
    x = g.input("x", [("k", "int64"), ("v", "int64")])
    y = g.input("y", [("k", "int64"), ("w", "int64")])
    e = g.input("edges", EDGE)
    s = g.input("seeds", NODE_LABEL)
    outs = [
        g.output(x.join(y, on=[("k", "k")]).count("w"), "join_count"),
        g.output(x.reduce("k", [("count",), ("sum", "v"), ("min", "v"), ("max", "v")]), "agg"),
        g.output(x.project("v").distinct(), "distinct_v"),
        g.output(propagate_min_label(e, s), "labels"),
    ]
    return g, {"x": x, "y": y, "edges": e, "seeds": s}, outs


def recompute(live: dict[str, set]) -> tuple[ivm.Dataflow, list[ivm.Output]]:
    """The same dataflow built afresh and run once over the live rows: the state and
    outputs the maintained one must match."""
    fg, finputs, fouts = build()
    for name, rows in live.items():
        finputs[name].insert(sorted(rows))
    fg.step()
    return fg, fouts


def table_counter(t: pa.Table) -> Counter:
    return Counter(tuple(r.values()) for r in t.to_pylist())


def test_state_stays_within_twice_the_live_data() -> None:
    rng = random.Random(5)
    g, inputs, outs = build()
    live: dict[str, set[tuple[int, int]]] = {
        "x": set(),
        "y": {(k, k % 3) for k in range(X_KEYS)},
        "edges": set(),
        "seeds": {(n, n) for n in range(E_NODES)},
    }
    fresh_v = iter(range(10**9))
    while len(live["x"]) < X_LIVE:
        live["x"].add((rng.randrange(X_KEYS), next(fresh_v)))
    while len(live["edges"]) < E_LIVE:
        live["edges"].add((rng.randrange(E_NODES), rng.randrange(E_NODES)))
    for name, rows in live.items():
        inputs[name].insert(sorted(rows))
    g.step()

    worst = 0.0
    for epoch in range(2, EPOCHS + 1):
        # churn: 20 x rows, 1 y row, 2 edges replaced; live sizes stay fixed
        dels = rng.sample(sorted(live["x"]), 20)
        ins = [(rng.randrange(X_KEYS), next(fresh_v)) for _ in range(20)]
        live["x"] -= set(dels)
        live["x"] |= set(ins)
        inputs["x"].delete(dels)
        inputs["x"].insert(ins)
        k = rng.randrange(X_KEYS)
        old = next(r for r in live["y"] if r[0] == k)
        new = (k, (old[1] + 1) % 3)
        live["y"] = (live["y"] - {old}) | {new}
        inputs["y"].update([old], [new])
        edel = rng.sample(sorted(live["edges"]), 2)
        live["edges"] -= set(edel)
        eins: set[tuple[int, int]] = set()
        while len(eins) < 2:
            cand = (rng.randrange(E_NODES), rng.randrange(E_NODES))
            if cand not in live["edges"]:
                eins.add(cand)
        live["edges"] |= eins
        inputs["edges"].delete(edel)
        inputs["edges"].insert(sorted(eins))
        g.step()
        assert len(live["x"]) == X_LIVE and len(live["edges"]) == E_LIVE

        if epoch % CHECK_EVERY == 0 or epoch == EPOCHS:
            fg, fouts = recompute(live)
            held, fresh = g.arrangement_rows(), fg.arrangement_rows()
            assert held.keys() == fresh.keys()
            for name, n in held.items():
                assert n <= 2 * fresh[name], (
                    f"epoch {epoch}: {name} holds {n} rows, the live data needs "
                    f"{fresh[name]}; all: {held} vs fresh {fresh}"
                )
                if fresh[name]:
                    worst = max(worst, n / fresh[name])
            assert sum(held.values()) <= 2 * sum(fresh.values())
            for out, fout in zip(outs, fouts, strict=True):
                assert out.counts() == fout.counts(), out.name

    # the history is fully compacted away: every checkpointed trace equals the fresh one
    fg, _ = recompute(live)
    state, fstate = g.state(), fg.state()
    assert state.keys() == fstate.keys()
    for key in state:
        if key == "__meta__":
            continue
        assert table_counter(state[key]) == table_counter(fstate[key]), key
    print(f"worst rows-held / live ratio: {worst:.2f}")
    assert worst <= 2.0
