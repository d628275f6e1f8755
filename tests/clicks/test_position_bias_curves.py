"""The position-bias curve a training learned (LightGBM's unbiased lambdarank, XGBoost's
``lambdarank_unbiased``), read from the library and logged beside the run's propensities and
the synthetic log's true examination curve (``data/position_bias.json`` and ``.png``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.experiment import run as pipeline
from ltr.metrics.clicks.position_bias import lightgbm_bias, position_bias_report, xgboost_bias
from ltr.metrics.clicks.propensity import PropensityEstimate
from ltr.training import lightgbm_log
from ltr.training.backends.xgboost import XGBoostTrainer
from ltr.training.lightgbm_log import BiasFactorLog
from ltr.training.local import fit_ranker

CLICKS = ("data=synthetic_clicks", "data.n_queries=300", "fit.num_boost_round=15", "fit.early_stopping_rounds=15")


def test_the_bias_factor_table_is_read_from_lightgbm_debug_lines() -> None:
    log = BiasFactorLog()
    lines = [
        "[LightGBM] [Debug]        position    bias_factor", "[LightGBM] [Debug]               0       0.5",
        "[LightGBM] [Debug]               1      -0.25", "[LightGBM] [Debug] Trained a tree with leaves = 7",
        "[LightGBM] [Debug]        position    bias_factor", "[LightGBM] [Debug]               0       0.75",
        "[LightGBM] [Debug]               1       0.125", "[LightGBM] [Debug]               2          -1",
    ]  # fmt: skip
    for line in lines:
        log(line)
    assert log.finish() == {0: 0.75, 1: 0.125, 2: -1.0}  # the last table, complete when training ended
    bias = lightgbm_bias(log.factors)
    np.testing.assert_array_equal(bias.relative, np.exp([0.0, 0.125 - 0.75, -1.0 - 0.75]))


def test_the_report_normalises_to_position_one_and_nulls_what_the_library_does_not_track() -> None:
    given = np.array([1.0, 0.5, 0.25])
    propensity = PropensityEstimate(given, given, given, "given")
    report = position_bias_report(
        propensity, xgboost_bias([2.0, 1.0, 0.0, 0.0]), training="xgboost", truth=np.array([0.8, 0.4, 0.2, 0.1])
    )
    assert report["positions"] == [1, 2, 3]
    assert report["learned"] == [1.0, 0.5, None]  # ti+ 0: a position XGBoost holds nothing for
    assert report["truth"] == [1.0, 0.5, 0.25]
    assert report["propensity"] == [1.0, 0.5, 0.25]
    none = position_bias_report(propensity, None, training="naive", note="learns none")
    assert none["learned"] is None
    assert none["learned_note"] == "learns none"
    assert none["truth"] is None


def _lightgbm_factors_of(params: dict[str, object], splits: object, rounds: int) -> dict[int, float]:
    """LightGBM's last bias-factor table, read by a logger of this test's own."""
    lines: list[str] = []

    class Capture:
        def info(self, msg: str) -> None:
            lines.append(str(msg))

        def warning(self, msg: str) -> None:
            lines.append(str(msg))

    train = splits.train  # type: ignore[attr-defined]
    data = lgb.Dataset(
        train.features, train.labels, group=np.diff(train.offsets), position=train.positions, params=dict(params)
    )
    lgb.register_logger(Capture())
    try:
        lgb.train({**params, "verbosity": 2}, data, num_boost_round=rounds)
    finally:
        lightgbm_log.install()
    text = "\n".join(lines)
    last = text.rsplit("bias_factor", 1)[1]
    return {int(p): float(v) for p, v in re.findall(r"\[Debug\]\s+(\d+)\s+(\S+)\s*$", last.split("Trained")[0], re.M)}


def test_lightgbm_learned_bias_is_what_the_library_reports(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg(*CLICKS, "model.position_bias=true")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10, 5], seed=cfg.seed)
    assert result.position_bias is not None
    theirs = _lightgbm_factors_of(result.params, splits, result.n_rounds)
    assert splits.train.positions is not None
    assert len(theirs) == len(np.unique(splits.train.positions))
    np.testing.assert_array_equal(result.position_bias.raw[list(theirs)], list(theirs.values()))
    assert result.position_bias.relative[0] == 1.0


def test_xgboost_learned_bias_is_its_ti_plus(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = small_cfg(*CLICKS, "model=xgboost", "model.lambdarank_unbiased=true")
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    result = XGBoostTrainer(cfg.model, cfg.fit).fit(splits, eval_at=[10, 5], seed=cfg.seed)
    assert result.position_bias is not None
    train = splits.train
    assert train.positions is not None
    query = np.repeat(np.arange(train.n_queries), np.diff(train.offsets))
    order = np.lexsort((train.positions, query))  # each query's rows in position order
    dtrain = xgb.DMatrix(train.features[order], label=train.labels[order].astype(np.float32))
    dtrain.set_group(np.diff(train.offsets))
    booster = xgb.train(result.params, dtrain, num_boost_round=result.n_rounds)
    ti_plus = np.asarray(json.loads(booster.save_config())["learner"]["objective"]["ti+"], dtype=np.float64)
    np.testing.assert_array_equal(np.nan_to_num(result.position_bias.raw, nan=0.0), ti_plus)
    assert result.position_bias.relative[0] == 1.0


@pytest.mark.parametrize(
    ("overrides", "library"),
    [(("model.position_bias=true",), "lightgbm"), (("model=xgboost", "model.lambdarank_unbiased=true"), "xgboost"), ((), None)],
)
def test_a_click_run_logs_the_learned_curve_beside_its_propensities_and_the_truth(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, tmp_path: Path, overrides: tuple[str, ...], library: str | None
) -> None:
    pipeline.run(small_cfg(*CLICKS, "tracking.log_model=false", *overrides))
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    folder = tmp_path / "artifacts"
    folder.mkdir()
    report = json.loads(Path(client.download_artifacts(run.info.run_id, "data/position_bias.json", str(folder))).read_text())
    assert Path(client.download_artifacts(run.info.run_id, "data/position_bias.png", str(folder))).stat().st_size > 0
    n = len(report["positions"])
    exact = [1 / p for p in report["positions"]]  # the simulator's curve (examination_eta=1), the propensities given
    np.testing.assert_allclose(report["truth"], exact, rtol=1e-15)
    np.testing.assert_allclose(report["propensity"], exact, rtol=1e-15)
    assert report["learned_library"] == library
    if library is None:
        assert report["learned"] is None
        assert "learns no position bias" in report["learned_note"]
        return
    learned = np.array([np.nan if v is None else v for v in report["learned"]])
    raw = np.array([np.nan if v is None else v for v in report["learned_raw"]])
    assert len(learned) == n
    assert learned[0] == 1.0
    if library == "lightgbm":
        np.testing.assert_allclose(learned, np.exp(raw - raw[0]), rtol=1e-12)
    else:
        np.testing.assert_allclose(learned, raw / raw[0], rtol=1e-12)
    # clicks fall with the position: what was learned at positions 2-5 lies below position 1
    assert np.nanmax(learned[1:5]) < 1.0
