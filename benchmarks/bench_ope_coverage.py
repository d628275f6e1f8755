"""Measurement: how often the 95 % intervals of the off-policy estimates cover the exact truth.

For each seed, the synthetic click log (:func:`ltr.data.feedback.clicks.generate_click_log`: one logged
session per query, position-based clicks with examination ``(1 / (p + 1)) ** eta``) is the
logged data; three candidate rankers re-rank each query's logged documents:

- ``good``: the true grade plus N(0, 1) noise (close to the logger, without its popularity bias);
- ``popular``: the document's popularity plus N(0, 1) noise (what a model trained on raw clicks learns);
- ``random``: a uniformly random order (large weights: documents come up from deep positions).

The exact expected CTR@k (share of sessions with a click on the top k) of each ranker under the
log's own click model is ``mean_q 1 - prod_{d in top k} (1 - e(r_d) a(g_d))``, from the true
grades (:func:`ltr.data.feedback.clicks.attractiveness`) and the examination curve; the script counts the
seeds whose 95 % BCa bootstrap interval (:func:`ltr.online.ope.off_policy_estimates`, known
propensities ``(1/rank)^eta``, no clipping unless ``--clip``) covers it, per estimator and ranker.

Usage::

    .venv/bin/python benchmarks/bench_ope_coverage.py [--seeds 50] [--queries 2000] [--k 10] [--clip C]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from ltr.config.groups.data import SyntheticClicksDataConfig
from ltr.data.feedback.clicks import (
    attractiveness,
    examination_curve,
    generate_click_log,
    rank_within_queries,
)
from ltr.online.ope import ESTIMATORS, NO_INTERVAL, at_least_one, off_policy_estimates

RANKERS = ("good", "popular", "random")


def ranker_scores(name: str, labels: NDArray[np.integer], popularity: NDArray[np.floating], seed: int) -> NDArray[np.float64]:
    rng = np.random.default_rng([seed, 0x5C0E, RANKERS.index(name)])
    n = labels.shape[0]
    if name == "good":
        return np.asarray(labels + rng.standard_normal(n), dtype=np.float64)
    if name == "popular":
        return np.asarray(popularity + rng.standard_normal(n), dtype=np.float64)
    return rng.random(n)


def exact_ctr(labels: NDArray[np.integer], scores: NDArray[np.float64], offsets: NDArray[np.int64], cfg: SyntheticClicksDataConfig, k: int) -> float:
    """``mean_q 1 - prod_{top k}(1 - e(r) a(g))``: the CTR@k an A/B test of the ranking would see."""
    ranks = rank_within_queries(scores, offsets).astype(np.int64)
    exam = examination_curve(int(np.diff(offsets).max()), eta=float(cfg.examination_eta))
    p = np.where(ranks < k, exam[ranks], 0.0) * attractiveness(labels, click_noise=cfg.click_noise, click_max=cfg.click_max)
    query = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    return float(at_least_one(p, query, offsets.shape[0] - 1).mean())


def one_seed(seed: int, *, n_queries: int, k: int, clip: float | None, n_bootstrap: int) -> dict[tuple[str, str], tuple[bool, float, float, float]]:
    """(covered, estimate, truth, interval width) per (estimator, ranker) of one seed."""
    cfg = SyntheticClicksDataConfig(n_queries=n_queries)
    log = generate_click_log(cfg, seed=seed)
    data = log.data
    assert data.positions is not None
    props = examination_curve(int(data.group_sizes.max()), eta=float(cfg.examination_eta))
    popularity = data.features[:, -1]
    out = {}
    for ranker in RANKERS:
        scores = ranker_scores(ranker, data.labels, popularity, seed)
        truth = exact_ctr(data.labels, scores, data.offsets, cfg, k)
        result = off_policy_estimates(
            {"click": log.clicks}, data.positions, scores, data.offsets, propensities=props, k=k, clip=clip,
            n_bootstrap=n_bootstrap, seed=seed,
        )  # fmt: skip
        for estimator in ESTIMATORS:
            e = result.estimates[estimator, "ctr"]
            out[estimator, ranker] = (e.low <= truth <= e.high, e.value, truth, e.high - e.low)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--clip", type=float, default=None)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    covered: dict[tuple[str, str], int] = {}
    errors: dict[tuple[str, str], list[float]] = {}
    widths: dict[tuple[str, str], list[float]] = {}
    for seed in range(args.seeds):
        for key, (hit, value, truth, width) in one_seed(seed, n_queries=args.queries, k=args.k, clip=args.clip, n_bootstrap=args.bootstrap).items():
            covered[key] = covered.get(key, 0) + int(hit)
            errors.setdefault(key, []).append(value - truth)
            widths.setdefault(key, []).append(width)
    print(f"95 % intervals covering the exact CTR@{args.k} over {args.seeds} seeds ({args.queries} queries, clip={args.clip}):")
    print("(covered / seeds, mean estimate - truth, mean interval width)")
    print(f"{'estimator':<10}" + "".join(f"{r:>34}" for r in RANKERS))
    for estimator in ESTIMATORS:
        cells = [
            f"no interval (bias {np.mean(errors[estimator, r]):+.4f})" if estimator in NO_INTERVAL else
            f"{covered[estimator, r]}/{args.seeds} (bias {np.mean(errors[estimator, r]):+.4f}, width {np.mean(widths[estimator, r]):.3f})"
            for r in RANKERS
        ]  # fmt: skip
        print(f"{estimator:<10}" + "".join(f"{c:>34}" for c in cells))
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
