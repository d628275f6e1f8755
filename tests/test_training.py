"""Training: early stopping on valid NDCG@10 (not LightGBM's first metric) and determinism."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.training.local import fit_ranker


def test_early_stopping_watches_ndcg_at_10_on_valid(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg("fit.num_boost_round=300", "fit.early_stopping_rounds=15", "model.learning_rate=0.3")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10, 5], seed=cfg.seed)
    at10 = np.asarray(result.evals_result["valid"]["ndcg@10"])
    at5 = np.asarray(result.evals_result["valid"]["ndcg@5"])
    # best = first round with the highest valid ndcg@10 (1-based)
    assert result.best_iteration == int(np.argmax(at10)) + 1
    assert result.n_rounds < 300, "stopped early"
    assert result.n_rounds == result.best_iteration + 15
    # it did not stop on ndcg@5: that curve's best round is not what was chosen here
    assert "test" in result.evals_result
    assert len(at5) == len(at10) == result.n_rounds


def test_same_seed_gives_identical_scores(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg()
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    a = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    b = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    assert a.predict(splits.test.features).tobytes() == b.predict(splits.test.features).tobytes()
    assert a.booster.model_to_string() == b.booster.model_to_string()
