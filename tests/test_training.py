"""Training: early stopping on our valid NDCG@10 (not LightGBM's first metric) and determinism."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.metrics import per_query_table, summarize
from ltr.training.local import fit_ranker


def test_early_stopping_watches_our_ndcg_at_10_on_valid(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg("fit.num_boost_round=300", "fit.early_stopping_rounds=15", "model.learning_rate=0.3")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10, 5], seed=cfg.seed)
    ours = np.asarray(result.curves["valid"]["ndcg_at_10"])
    # best = first round with the highest valid ndcg_at_10 (ours; 1-based)
    assert result.best_iteration == int(np.argmax(ours)) + 1
    assert result.n_rounds < 300, "stopped early"
    assert result.n_rounds == result.best_iteration + 15
    # every curve covers every round trained, on valid and test
    for split in ("valid", "test"):
        assert len(result.curves[split]["ndcg_at_5"]) == len(result.curves[split]["ndcg_at_10"]) == result.n_rounds
        assert len(result.evals_result[split]["ndcg@5"]) == len(result.evals_result[split]["ndcg@10"]) == result.n_rounds
    # each value is our kernel on the model's own scores after that round (the model keeps its
    # trees up to the best round)
    for round_ in (1, result.best_iteration // 2, result.best_iteration):
        scores = result.booster.predict(splits.valid.features, num_iteration=round_)
        table = per_query_table(splits.valid.labels, scores, splits.valid.offsets, splits.valid.qids, ks=[10, 5])
        assert result.curves["valid"]["ndcg_at_10"][round_ - 1] == summarize(table)["ndcg_at_10"]


def test_early_stopping_on_lightgbm_metric_when_asked(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg(
        "fit.num_boost_round=300", "fit.early_stopping_rounds=15", "model.learning_rate=0.3",
        "fit.early_stopping_metric=ndcg@5",
    )
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10, 5], seed=cfg.seed)
    at5 = np.asarray(result.evals_result["valid"]["ndcg@5"])
    assert result.best_iteration == int(np.argmax(at5)) + 1
    assert result.n_rounds == min(300, result.best_iteration + 15)


def test_same_seed_gives_identical_scores(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg()
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    a = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    b = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    assert a.predict(splits.test.features).tobytes() == b.predict(splits.test.features).tobytes()
    assert a.booster.model_to_string() == b.booster.model_to_string()
