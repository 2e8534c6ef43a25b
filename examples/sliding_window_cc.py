"""Sliding-window connected components on a power-law edge stream (the shape of CIDR 2013 Fig. 1).

A stream of distinct undirected edges is drawn with power-law endpoint popularity (node of
popularity rank r is picked with probability ∝ r^-0.9; ranks shuffled over node ids).  The
view is the weakly connected components (min-label propagation) of the most recent
``window`` edges.  We count, per loop iteration, the differences the engine processes
(``g.metrics.by_iteration(epoch)``):

* for the initial window — every node's label settles over many iterations, and
* for a small slide (the oldest ``slide`` edges leave, the next ``slide`` edges arrive) —
  only the few labels the change touches are revisited, so each iteration processes orders
  of magnitude fewer differences.

It prints both series and the ratio (differences of a 0.1% slide) / (differences of the
initial computation), which the project requires to be ≤ 1%, checks the final labels
against networkx, and saves the two series as a PNG plot (log scale, like Fig. 1).

The plot goes to ``--out``; by default ``bench/results/sliding_window_cc.png`` in the
repository (the directory where the benchmarks keep their results), so running the example
never writes into ``examples/``.

Run:  python examples/sliding_window_cc.py [--nodes 20000] [--window 60000] [--slides 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import ivm
from ivm.library.graphs import connected_components

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "bench" / "results" / "sliding_window_cc.png"


def power_law_stream(n: int, count: int, seed: int, alpha: float = 0.9) -> np.ndarray:
    """``count`` distinct loop-free undirected edges, endpoints ∝ rank^-alpha, in order."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, n + 1, dtype=np.float64) ** -alpha
    cdf = np.cumsum(p[rng.permutation(n)])
    cdf /= cdf[-1]
    parts, seen, have = [], np.zeros(0, dtype=np.int64), 0
    while have < count:
        k = 2 * (count - have) + 100
        s = np.minimum(np.searchsorted(cdf, rng.random(k)), n - 1)
        d = np.minimum(np.searchsorted(cdf, rng.random(k)), n - 1)
        s, d = s[s != d], d[s != d]
        key = np.minimum(s, d) * n + np.maximum(s, d)
        _, first = np.unique(key, return_index=True)  # first occurrence within this draw
        first.sort()
        fresh = first[~np.isin(key[first], seen)]  # and never seen before
        fresh = fresh[: count - have]
        seen = np.concatenate([seen, key[fresh]])
        parts.append(np.column_stack([s[fresh], d[fresh]]))
        have += len(fresh)
    return np.concatenate(parts).astype(np.int64)


def cols(e: np.ndarray) -> dict[str, np.ndarray]:
    return {"src": e[:, 0].copy(), "dst": e[:, 1].copy()}


def plot(initial: dict, slide: dict, slide_edges: int, window: int, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for series, label, marker in (
        (initial, f"initial window ({window:,} edges)", "o"),
        (slide, f"slide of {slide_edges:,} edges", "s"),
    ):
        xs = [k[0] for k in series if len(k) == 1]
        ys = [series[(x,)] for x in xs]
        ax.plot(xs, ys, marker=marker, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("loop iteration")
    ax.set_ylabel("differences processed")
    ax.set_title("Sliding-window connected components (cf. CIDR 2013 Fig. 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def labels_ok(out: ivm.Output, edges: np.ndarray) -> bool:
    import networkx as nx

    want = {}
    for comp in nx.connected_components(nx.Graph(edges.tolist())):
        want.update(dict.fromkeys(comp, min(comp)))
    got = dict(out.counts())
    return {n: lab for (n, lab) in got} == want and len(got) == len(want)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--window", type=int, default=60_000, help="edges in the window")
    ap.add_argument(
        "--slide-frac",
        type=float,
        default=0.001,
        help="slide size as a fraction of the window (0.001 = 0.1%%)",
    )
    ap.add_argument("--slides", type=int, default=3, help="how many slides to run")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="PNG plot path")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)

    slide = max(1, round(a.window * a.slide_frac))
    stream = power_law_stream(a.nodes, a.window + a.slides * slide, a.seed)

    g = ivm.Dataflow("sliding_cc")
    edges = g.input("edges", [("src", "int64"), ("dst", "int64")])
    cc = g.output(connected_components(edges), "cc")

    # The initial window: one epoch.
    t = time.perf_counter()
    edges.insert(cols(stream[: a.window]))
    first = g.step()
    init_s = time.perf_counter() - t
    initial = g.metrics.by_iteration(first.epoch)
    print(
        f"initial window: {a.window:,} edges over {a.nodes:,} nodes, "
        f"{first.differences:,} differences in {len(initial)} loop times, {init_s:.2f}s"
    )

    # Slides: each one epoch removing the oldest `slide` edges and adding the next ones.
    ratios, slides = [], []
    for i in range(a.slides):
        lo = i * slide
        edges.delete(cols(stream[lo : lo + slide]))
        edges.insert(cols(stream[a.window + lo : a.window + lo + slide]))
        rep = g.step()
        slides.append(g.metrics.by_iteration(rep.epoch))
        ratios.append(rep.differences / first.differences)
        print(
            f"slide {i + 1}: -{slide} +{slide} edges ({a.slide_frac:.2%} of the window): "
            f"{rep.differences:,} differences ({ratios[-1]:.3%} of the initial), "
            f"{rep.seconds * 1e3:.0f} ms, {cc.changes().num_rows} label changes"
        )

    print("\ndifferences per loop iteration ('-' = outside the loop):")
    print(f"{'iteration':>9} {'initial':>12} {'slide 1':>10}")
    for key in sorted(set(initial) | set(slides[0])):
        it = "-" if not key else ",".join(map(str, key))
        print(f"{it:>9} {initial.get(key, 0):>12,} {slides[0].get(key, 0):>10,}")

    worst = max(ratios)
    print(
        f"\nwork ratio (slide of {a.slide_frac:.1%}) / (initial): worst {worst:.3%}, "
        f"mean {np.mean(ratios):.3%} -> {'OK' if worst <= 0.01 else 'ABOVE'} the 1% bound"
    )

    final = stream[a.slides * slide : a.slides * slide + a.window]
    correct = labels_ok(cc, final)
    print(f"labels equal networkx's for the final window: {correct}")
    if not correct:
        raise AssertionError("labels differ from networkx")
    if not a.no_plot:
        plot(initial, slides[0], slide, a.window, a.out)
        print(f"plot saved to {a.out}")
    return dict(
        ratios=ratios,
        worst_ratio=worst,
        initial=initial,
        slide=slides[0],
        correct=correct,
        out=None if a.no_plot else str(a.out),
    )


if __name__ == "__main__":
    main()
