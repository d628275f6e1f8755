"""A sweep's jobs in one process reuse LightGBM's binned data, and get the models a fresh build gives."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.experiment import run as pipeline
from ltr.training import binned
from ltr.training.local import fit_ranker

#: num_leaves, learning_rate, min_child_samples: in this order, the first two steps reuse the
#: binned data; a smaller min_child_samples must rebuild it (LightGBM's feature pre-filter).
SWEEP = [(7, 0.1, 20), (15, 0.1, 20), (15, 0.3, 20), (15, 0.3, 2), (31, 0.05, 2), (7, 0.1, 20)]


def test_reused_binned_data_gives_bit_identical_models(
    small_cfg: Callable[..., DictConfig], caplog: pytest.LogCaptureFixture
) -> None:
    cfg = small_cfg("fit.num_boost_round=25")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    binned._last.clear()
    reused = []
    for leaves, rate, min_child in SWEEP:
        model = cfg.model.copy()
        model.num_leaves, model.learning_rate, model.min_child_samples = leaves, rate, min_child
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ltr.training.binned"):
            cached = fit_ranker(splits, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key="same data")
        reused.append(any("binned data: reused" in r.message for r in caplog.records))
        fresh = fit_ranker(splits, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key=None)
        assert cached.booster.model_to_string() == fresh.booster.model_to_string(), (leaves, rate, min_child)
        assert cached.curves == fresh.curves
    # reused while only training parameters changed; rebuilt when min_child_samples changed
    assert reused == [False, True, True, False, True, False]


def test_pipeline_reuses_binned_data_only_for_the_same_data(
    small_cfg: Callable[..., DictConfig], caplog: pytest.LogCaptureFixture
) -> None:
    binned._last.clear()
    with caplog.at_level(logging.INFO, logger="ltr.training.binned"):
        first = pipeline.run(small_cfg("tracking=none", "model.num_leaves=7"))
        second = pipeline.run(small_cfg("tracking=none", "model.num_leaves=15"))
        other = pipeline.run(small_cfg("tracking=none", "model.num_leaves=15", "data.n_queries=200"))
    messages = [r.message for r in caplog.records if r.message.startswith("binned data")]
    assert [m.split(":")[1].split()[0] for m in messages] == ["built", "reused", "built"]
    off = pipeline.run(small_cfg("tracking=none", "model.num_leaves=15", "fit.reuse_binned_data=false"))
    assert second.metrics == {**off.metrics, **{k: v for k, v in second.metrics.items() if k.endswith("_seconds")}}
    assert first.metrics["valid/ndcg_at_10"] != second.metrics["valid/ndcg_at_10"]
    assert other.metrics["valid/n_queries"] != second.metrics["valid/n_queries"]
