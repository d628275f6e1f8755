"""``model=xgboost trainer=dask``: ``xgboost.dask.train`` on real LocalClusters of worker processes
(XGBoost's collective needs one process per worker), small data.

What is checked: one worker trains the local trainer's model (bit for bit: same curves, same
best round); two workers give the same model, curves and logged metrics on every run (the
partitions pinned in XGBoost's rank order); XGBoost's own ``ndcg@k`` of every round covers the whole split (it equals
LightGBM's convention, the same as XGBoost's, recomputed on the client from the whole split's
scores); all rounds are trained and the best is picked afterwards; unbiased lambdarank trains
on the positions.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from ltr.config.choices import TrainerKind
from ltr.config.groups.backends import XGBoostModelConfig
from ltr.config.schema import FitConfig, TrainerConfig
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.experiment import run as pipeline
from ltr.training.local import TrainResult
from tests.conftest import compose_train
from tests.dask.conftest import random_ranking_data

pytest.importorskip("xgboost")

from ltr.dask.xgboost_train import XGBoostDaskTrainer, _leaf_sums, round_scores
from ltr.training.backends.xgboost import XGBoostTrainer, xgboost_params

MODEL = XGBoostModelConfig(max_depth=4)
ROUNDS = 12


def _splits(positions: bool = False) -> Splits:
    parts = [random_ranking_data(seed, n_queries=n) for seed, n in ((5, 120), (6, 40), (7, 40))]
    if positions:  # each list shown in a shuffled order: a row's position is not its row
        rng = np.random.default_rng(3)
        train = parts[0]
        ranks = np.concatenate([rng.permutation(int(n)) for n in np.diff(train.offsets)])
        parts[0] = RankingData(train.features, train.labels, train.qids, train.offsets, train.feature_names, train.name, positions=ranks)
    return Splits(*parts)


def _dask_fit(n_workers: int, *, n_partitions: int | None = None, model: XGBoostModelConfig = MODEL, positions: bool = False) -> TrainResult:
    fit = FitConfig(num_boost_round=ROUNDS, early_stopping_rounds=3, show_progress=False)
    cluster = TrainerConfig(kind=TrainerKind.dask, n_workers=n_workers, threads_per_worker=1, n_partitions=n_partitions)
    return XGBoostDaskTrainer(model, fit, cluster=cluster).fit(_splits(positions), eval_at=[5, 10], seed=3)


@pytest.mark.slow
def test_one_worker_trains_the_local_model_bit_for_bit() -> None:
    """One worker holds every row: XGBoost's distributed path is then the one-process one, and
    the curves, the library's values and the best round are the local trainer's (no patience)."""
    dask = _dask_fit(1)
    local = XGBoostTrainer(MODEL, FitConfig(num_boost_round=ROUNDS, early_stopping_rounds=None, show_progress=False)).fit(
        _splits(), eval_at=[5, 10], seed=3
    )
    assert dask.n_rounds == local.n_rounds == ROUNDS
    assert dask.curves == local.curves
    assert dask.evals_result == local.evals_result
    assert dask.best_iteration == local.best_iteration
    assert dask.params["nthread"] == 1
    data = _splits().test
    assert np.array_equal(dask.predict(data.features), local.predict(data.features))


@pytest.mark.slow
def test_two_workers_train_every_round_and_record_curves_of_the_whole_split(caplog: pytest.LogCaptureFixture) -> None:
    """3 partitions on 2 workers (rank 0 holds two). XGBoost's ndcg@k summed over the workers is
    the whole split's: LightGBM's convention (XGBoost's too) of the whole split's scores,
    computed on the client, to float32 precision; one worker's share would be far off. All
    rounds are trained though ``fit.early_stopping_rounds=3`` (one warning), the best is the
    first best of our curve and the model is cut there."""
    with caplog.at_level(logging.WARNING, logger="ltr.dask.train"):
        result = _dask_fit(2, n_partitions=3)
    warned = [r.getMessage() for r in caplog.records if "no early stopping" in r.getMessage()]
    assert len(warned) == 1
    assert "fit.early_stopping_rounds=3 is ignored and all fit.num_boost_round=12 rounds are trained" in warned[0]
    assert result.n_rounds == ROUNDS
    ours = np.array(result.curves["valid"]["ndcg_at_10"])
    assert len(ours) == ROUNDS
    assert result.best_iteration == int(np.argmax(ours)) + 1
    for split in ("valid", "test"):
        for k in (5, 10):
            theirs = np.array(result.evals_result[split][f"ndcg@{k}"])
            recomputed = np.array(result.curves[split][f"lightgbm/ndcg_at_{k}"])
            assert np.max(np.abs(theirs - recomputed)) < 1e-6
    assert result.booster.current_iteration() == result.best_iteration


@pytest.mark.slow
def test_unbiased_lambdarank_trains_on_the_positions() -> None:
    """The rows reach the workers in each list's position order (XGBoost reads a row's position
    as its place in the list); one worker then learns the local trainer's bias curve."""
    model = XGBoostModelConfig(max_depth=4, lambdarank_unbiased=True)
    dask = _dask_fit(1, model=model, positions=True)
    local = XGBoostTrainer(model, FitConfig(num_boost_round=ROUNDS, early_stopping_rounds=None, show_progress=False)).fit(
        _splits(positions=True), eval_at=[5, 10], seed=3
    )
    assert dask.position_bias is not None
    assert local.position_bias is not None
    np.testing.assert_array_equal(dask.position_bias.raw, local.position_bias.raw)
    assert np.isfinite(dask.position_bias.raw[:3]).all()
    assert dask.curves == local.curves


@pytest.mark.slow
def test_two_xgboost_runs_on_dask_log_the_same_metrics_and_end_their_curve_on_the_headline(tmp_path: Path) -> None:
    """Two ``ltr train model=xgboost trainer=dask`` runs (2 worker processes, new clusters): every
    logged metric but the training time is the same, bit for bit; the run records its trainer."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = ["model=xgboost", "trainer=dask", "data.n_queries=150", "fit.num_boost_round=10", "fit.show_progress=false"]
    first, second = (
        pipeline.run(compose_train([*overrides, f"tracking.uri={uri}", f"tracking.run_name=run{i}"]), print_summary=False)
        for i in range(2)
    )
    assert first.run_id is not None
    client = MlflowClient(uri)
    runs = [client.get_run(r.run_id) for r in (first, second) if r.run_id is not None]
    metrics = [{k: v for k, v in run.data.metrics.items() if k != "train_seconds"} for run in runs]
    assert metrics[0] == metrics[1]
    assert runs[0].data.tags["ltr.trainer"] == "dask"
    assert runs[0].data.tags["ltr.backend"] == "xgboost"
    logged = runs[0].data.metrics
    assert logged["n_rounds"] == 10
    best = int(logged["best_iteration"])
    history = client.get_metric_history(first.run_id, "iter/valid/ndcg_at_10")
    assert [m.step for m in history] == list(range(1, best + 1))
    assert history[-1].value == logged["valid/ndcg_at_10"]  # bit for bit
    assert max(m.value for m in history) == history[-1].value


@pytest.mark.parametrize(
    "extra",
    [{}, {"max_depth": 8, "subsample": 0.7}, {"num_parallel_tree": 2}, {"booster": "dart", "rate_drop": 0.3}],
    ids=["default", "deep-subsampled", "two-trees-a-round", "dart"],
)
def test_round_scores_are_xgboost_s_predictions_of_every_round(extra: dict[str, object]) -> None:
    """The linear-time per-round scores equal ``predict(iteration_range=(0, i + 1))`` bit for bit,
    rounds of several trees (summed leaves) and dart (one prediction per round) alike; 70 rounds
    cross a block of leaves (64)."""
    import xgboost as xgb

    train, valid = random_ranking_data(5, n_queries=100), random_ranking_data(6, n_queries=60)
    valid.features[::7, 1] = np.nan  # missing values take each split's default side
    params = xgboost_params(XGBoostModelConfig(params=extra), seed=2, num_threads=1)
    dtrain = xgb.DMatrix(train.features, label=train.labels, group=np.diff(train.offsets))
    dvalid = xgb.DMatrix(valid.features)
    booster = xgb.train(params, dtrain, num_boost_round=70)
    scores = list(round_scores(booster, dvalid))
    summed = list(_leaf_sums(booster, dvalid, 70))  # the linear path: every round but dart's
    assert (len(scores), len(summed)) == (70, 0 if extra.get("booster") == "dart" else 70)
    for i, got in enumerate(scores):
        expected = booster.predict(dvalid, iteration_range=(0, i + 1))
        assert np.array_equal(got, expected), i
        assert not summed or np.array_equal(summed[i], expected), i
