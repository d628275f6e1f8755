"""Measurement: which uncertainty raises the long tail at less nDCG cost, on the default click data.

The count-based bonus of ``rerank=uncertainty`` (:func:`ltr.rerank.step.uncertainty_bonus`:
``1 - q``, ``q`` the popularity quantile rank) against the spread of a small bagged ensemble
(:func:`ltr.rerank.step.ensemble_spread`: the per-row standard deviation of K models'
per-query normalised scores, K models trained on the run's training view with row bagging
``bagging_fraction=0.7, bagging_freq=1`` and K seeds). Both are applied the same way (the
normalised model score plus ``alpha x bonus``, each query re-ordered, a strict order) to the
scores of the run's own model (``ltr train data=synthetic_clicks``: trained on clicks, selected
and judged on the true grades), for a list of alphas; for each the valid and test nDCG@10 and
tail@10 (the tail's share of the top-10 exposure) are printed, and which points of the two
curves lie on the joint nDCG / tail front.

Usage::

    .venv/bin/python benchmarks/bench_tail_uncertainty.py [--members 5] [--alphas 0,0.1,0.2,0.4,0.8,1.6]
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from ltr.config.compose import compose_train
from ltr.data.load import load_click_splits
from ltr.experiment.checks import check_config, popularity_column
from ltr.experiment.sources import rank_split
from ltr.rerank import order_as_scores, score_order
from ltr.rerank.step import ensemble_spread, uncertainty_bonus, uncertainty_scores
from ltr.training.local import fit_ranker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--alphas", default="0,0.1,0.2,0.4,0.8,1.6")
    parser.add_argument("--queries", type=int, default=3000)
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    cfg = compose_train(["data=synthetic_clicks", f"data.n_queries={args.queries}", "fit.show_progress=false", "tracking=none"])
    spec = check_config(cfg)
    data_cfg = spec.config.data
    clicks = load_click_splits(data_cfg, spec.config.split, seed=spec.seed)
    training = clicks.training_view(str(data_cfg.train_labels), str(data_cfg.valid_labels), str(data_cfg.eval_labels))
    evaluation = clicks.view(str(data_cfg.eval_labels))
    t0 = time.perf_counter()
    base = fit_ranker(training, spec.config.model, spec.config.fit, eval_at=list(spec.ks), seed=spec.seed)
    print(f"model: {base.best_iteration} rounds in {time.perf_counter() - t0:.1f} s")
    members = []
    t0 = time.perf_counter()
    for m in range(args.members):
        model = copy.deepcopy(spec.config.model)
        model.params = {**dict(model.params), "bagging_fraction": 0.7, "bagging_freq": 1}
        members.append(fit_ranker(training, model, spec.config.fit, eval_at=list(spec.ks), seed=spec.seed + 1 + m))
    print(f"{args.members} bagged members in {time.perf_counter() - t0:.1f} s")
    none_spec = spec  # rank_split with rerank=none: the table of the order it is given
    rows = []
    for split in ("valid", "test"):
        data = getattr(evaluation, split)
        scores = base.predict(data.features)
        column = popularity_column(data_cfg, data)
        assert column is not None
        bonuses = {
            "count": uncertainty_bonus(data.features[:, column]),
            "ensemble": ensemble_spread(np.stack([m.predict(data.features) for m in members]), data.offsets),
        }
        for kind, bonus in bonuses.items():
            for alpha in alphas:
                raised = uncertainty_scores(scores, data.offsets, bonus, alpha=alpha)
                ordered = order_as_scores(score_order(raised, data.offsets), data.offsets)
                table = rank_split(none_spec, data, ordered).table
                rows.append((split, kind, alpha, float(table["ndcg_at_10"].mean()), float(table["tail_at_10"].mean())))
    print(f"\n{'split':<6} {'bonus':<9} {'alpha':>6} {'nDCG@10':>8} {'tail@10':>8}  front")
    for split in ("valid", "test"):
        points = [r for r in rows if r[0] == split]
        for r in points:
            beaten = any(o[3] >= r[3] and o[4] >= r[4] and (o[3] > r[3] or o[4] > r[4]) for o in points)
            print(f"{r[0]:<6} {r[1]:<9} {r[2]:>6g} {r[3]:>8.4f} {r[4]:>8.4f}  {'' if beaten else '*'}")


if __name__ == "__main__":
    main()
