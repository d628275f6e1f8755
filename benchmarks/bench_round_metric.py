"""Benchmark: the cost of our per-round NDCG (``RoundNdcg``) beside LightGBM's built-in metric.

MSLR-WEB10K-sized synthetic data (10,000 queries, about 1.2M rows, 136 features, labels 0-4
with MSLR's label shares, list lengths 1 to 400), generated here with a fixed seed and split
by query 60/20/20 (train / valid / test, as MSLR's folds). The same model is trained the same
number of rounds (no early stopping) four times, evaluating valid and test every round with:

- nothing (``metric="None"``): the training cost alone;
- LightGBM's ``ndcg@5,10`` (``metric="ndcg"``);
- ours alone (``metric="None"`` + ``feval=RoundNdcg``: NDCG@5/@10 under the default
  conventions, the kernel on the same table cut-offs);
- both, which is what ``ltr train`` does (LightGBM's for the ``iter/*/lightgbm/*`` curves and
  the gap note, ours for early stopping and ``iter/*/ndcg_at_k``).

Reports wall time per configuration, the per-round evaluation cost of each metric (its run
minus the training-only run, divided by the rounds) and checks that the models are identical.

Usage::

    .venv/bin/python benchmarks/bench_round_metric.py [--rounds 50] [--threads 2] [--features 136]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from ltr.metrics import MetricConventions
from ltr.training.round_metric import RoundNdcg

LABEL_SHARES = np.array([0.52, 0.32, 0.13, 0.02, 0.01])  # MSLR-WEB10K's grades 0..4, roughly


def make_data(n_queries: int, n_features: int, seed: int) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.int64]]:
    """Features, labels and group sizes; labels depend on a few features so the model learns."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(rng.lognormal(4.4, 0.9, n_queries).astype(np.int64), 1, 400)
    n = int(sizes.sum())
    x = rng.standard_normal((n, n_features), dtype=np.float32)
    signal = x[:, :5] @ np.array([1.0, 0.7, 0.5, 0.3, 0.2], dtype=np.float32) + rng.standard_normal(n, dtype=np.float32)
    cuts = np.quantile(signal, np.cumsum(LABEL_SHARES)[:-1])
    labels = np.searchsorted(cuts, signal).astype(np.int64)
    return x, labels, sizes


def offsets_of(sizes: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def train(data: dict[str, Any], *, rounds: int, threads: int, lightgbm_metric: bool, ours: bool) -> tuple[float, str]:
    params = {
        "objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1, "deterministic": True,
        "force_col_wise": True, "num_threads": threads, "verbosity": -1, "seed": 1,
        "metric": "ndcg" if lightgbm_metric else "None", "eval_at": [5, 10],
    }
    train_set = lgb.Dataset(data["train"][0], data["train"][1], group=data["train"][2], free_raw_data=False)
    train_set.construct()  # binning is not what is measured
    feval = RoundNdcg(ks=(5, 10), table_ks=(5, 10), conventions=MetricConventions()) if ours else None
    sets = []
    for name in ("valid", "test"):
        x, y, g = data[name]
        ds = lgb.Dataset(x, y, group=g, reference=train_set)
        ds.construct()
        if feval is not None:
            feval.register(ds, y, offsets_of(g))
        sets.append(ds)
    start = time.perf_counter()
    booster = lgb.train(params, train_set, num_boost_round=rounds, valid_sets=sets, valid_names=["valid", "test"], feval=feval)
    trees = booster.model_to_string().split("\nparameters:\n")[0]  # without the metric settings
    return time.perf_counter() - start, trees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--queries", type=int, default=10_000)
    args = parser.parse_args()

    x, y, sizes = make_data(args.queries, args.features, seed=7)
    offsets = offsets_of(sizes)
    cut = [0, int(0.6 * args.queries), int(0.8 * args.queries), args.queries]
    data = {
        name: (x[offsets[a] : offsets[b]], y[offsets[a] : offsets[b]], sizes[a:b])
        for name, a, b in zip(("train", "valid", "test"), cut[:-1], cut[1:], strict=True)
    }
    print(
        f"{args.queries} queries, {x.shape[0]:,} rows, {args.features} features; valid "
        f"{data['valid'][0].shape[0]:,} rows + test {data['test'][0].shape[0]:,} rows evaluated each "
        f"round; {args.rounds} rounds, {args.threads} threads"
    )
    train(data, rounds=2, threads=args.threads, lightgbm_metric=False, ours=True)  # numba compile / cache load
    configs = {
        "training only": (False, False),
        "LightGBM ndcg@5,10": (True, False),
        "ours ndcg_at_5,10": (False, True),
        "both (ltr train)": (True, True),
    }
    walls: dict[str, float] = {}
    models: set[str] = set()
    for name, (theirs, ours) in configs.items():
        walls[name], model = train(data, rounds=args.rounds, threads=args.threads, lightgbm_metric=theirs, ours=ours)
        models.add(model)
    base = walls["training only"]
    print(f"{'evaluation':<22} {'wall s':>8} {'eval ms/round':>14}")
    for name, wall in walls.items():
        extra = "" if name == "training only" else f"{(wall - base) / args.rounds * 1000:14.1f}"
        print(f"{name:<22} {wall:8.2f} {extra:>14}")
    print(f"identical models: {len(models) == 1}")


if __name__ == "__main__":
    main()
