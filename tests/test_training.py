"""Training: early stopping on our valid NDCG@10 (not LightGBM's first metric) and determinism."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.data.splits import Splits
from ltr.metrics import per_query_table, summarize
from ltr.training.local import TrainResult, fit_ranker, training_scores_are_predictions


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


def _assert_best_scores_are_predictions(result: TrainResult, splits: Splits) -> None:
    assert set(result.best_scores) == {"valid", "test"}
    for name in ("valid", "test"):
        predicted = result.booster.predict(
            getattr(splits, name).features, num_iteration=result.best_iteration
        )
        assert result.best_scores[name].dtype == np.float64
        assert (
            result.best_scores[name].tobytes() == np.asarray(predicted, dtype=np.float64).tobytes()
        )


@pytest.mark.parametrize(
    "overrides",
    [
        ("fit.early_stopping_rounds=5", "model.learning_rate=0.3"),  # stops early: best < last
        (
            "fit.early_stopping_rounds=5",
            "model.learning_rate=0.3",
            "fit.early_stopping_metric=ndcg@5",
        ),
        ("fit.early_stopping_rounds=null",),  # every round; the best may be any of them
        ("model=pointwise",),  # boost_from_average: the average is in the first tree
        ("model=rank_xendcg",),
        ("+model.params.data_sample_strategy=goss",),
        ("+model.params.linear_tree=true",),
        ("data=synthetic_clicks", "data.n_queries=300", "model.position_bias=true"),
    ],
    ids=[
        "early-stop",
        "lightgbm-metric",
        "all-rounds",
        "pointwise",
        "xendcg",
        "goss",
        "linear-tree",
        "position-bias",
    ],
)
def test_scores_kept_at_the_best_round_are_the_models_predictions(
    small_cfg: Callable[..., DictConfig], overrides: tuple[str, ...]
) -> None:
    """The evaluated splits' scores LightGBM computed at the best round while training stand in
    for a prediction only because they are the same doubles (gbdt: each round adds its tree)."""
    cfg = small_cfg("fit.num_boost_round=30", *overrides)
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    _assert_best_scores_are_predictions(result, splits)


@pytest.mark.parametrize("boosting", ["dart", "rf"])
def test_boosting_that_reweights_trees_predicts_instead(
    small_cfg: Callable[..., DictConfig], boosting: str
) -> None:
    """DART re-weights earlier trees and rf averages them: their training scores of round i are
    not what the final model predicts at i (last bits differ), so none are kept."""
    extra = (
        ("+model.params.bagging_fraction=0.5", "+model.params.bagging_freq=1")
        if boosting == "rf"
        else ()
    )
    cfg = small_cfg("fit.num_boost_round=15", f"+model.params.boosting={boosting}", *extra)
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    assert result.best_scores == {}
    assert not training_scores_are_predictions({"boosting_type": boosting})
    assert training_scores_are_predictions({"boost": "gbdt"})
    assert training_scores_are_predictions({})
