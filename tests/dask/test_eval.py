"""Per-partition prediction and NDCG curves equal the one-process results of LightGBM."""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
import pytest

from ltr.dask.evaluate import lightgbm_conventions, ndcg_curves, predict_partitioned
from ltr.dask.partitions import scatter_ranking_data
from ltr.data.ranking_data import RankingData
from tests.dask.conftest import random_ranking_data


@pytest.fixture(scope="module")
def trained() -> tuple[lgb.LGBMRanker, Any, Any]:
    train, valid = random_ranking_data(1, n_queries=120), random_ranking_data(2, n_queries=70)
    ranker = lgb.LGBMRanker(n_estimators=15, num_leaves=7, min_child_samples=5, verbosity=-1, deterministic=True)
    ranker.fit(
        train.features, train.labels, group=train.group_sizes,
        eval_X=(valid.features,), eval_y=(valid.labels,), eval_group=[valid.group_sizes],
        eval_names=["valid"], eval_at=[1, 5, 10],
    )
    return ranker, train, valid


def _hard_cases(seed: int) -> RankingData:
    """Random queries plus the cases where NDCG conventions differ: all-zero queries (IDCG = 0),
    one-row queries, and lists shorter than the largest cut-off."""
    data = random_ranking_data(seed, n_queries=90)
    labels = data.labels.copy()
    for q in (0, 7, 8, 40):
        labels[data.offsets[q] : data.offsets[q + 1]] = 0
    return RankingData.from_group_sizes(
        data.features, labels, data.qids, data.group_sizes, feature_names=data.feature_names
    )


# A custom label_gain that never decreases with the label (two labels share a gain): LightGBM
# builds its ideal list from the highest label down, which is the maximum DCG only for such gains.
@pytest.mark.parametrize(
    "label_gain", [None, (0.0, 0.5, 3.0, 3.0, 10.0)], ids=["default_gain", "custom_gain"]
)
def test_whole_split_curves_equal_lightgbm_train_evals_result(client: Any, label_gain: Any) -> None:
    train, valid = _hard_cases(11), _hard_cases(12)
    ks = [1, 3, 10, 50]  # 50 is longer than every list (1-40 rows): LightGBM truncates
    params: dict[str, Any] = {
        "objective": "lambdarank", "metric": "ndcg", "eval_at": ks, "num_leaves": 3,
        "learning_rate": 0.2, "min_data_in_leaf": 5, "verbosity": -1, "num_threads": 1,
        "deterministic": True, "seed": 0,
    }  # fmt: skip
    if label_gain is not None:
        params["label_gain"] = list(label_gain)
    dtrain = lgb.Dataset(train.features, train.labels, group=train.group_sizes)
    dvalid = lgb.Dataset(valid.features, valid.labels, group=valid.group_sizes, reference=dtrain)
    record: dict[str, dict[str, list[float]]] = {}
    booster = lgb.train(
        params, dtrain, num_boost_round=12, valid_sets=[dvalid], valid_names=["valid"],
        callbacks=[lgb.record_evaluation(record)],
    )  # fmt: skip

    # The data exercises every convention: zero-IDCG and one-row queries, and tied scores
    # between rows of different labels after round 1 (3 leaves: at most 3 distinct scores).
    sizes = np.diff(valid.offsets)
    top_label = np.maximum.reduceat(valid.labels, valid.offsets[:-1])
    assert (top_label == 0).sum() >= 4
    assert (sizes == 1).any()
    assert sizes.max() < 50
    first = booster.predict(valid.features, num_iteration=1, raw_score=True)
    query = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((valid.labels, first, query))  # neighbours: same query, same score
    tied = (np.diff(query[order]) == 0) & (np.diff(first[order]) == 0)
    assert (tied & (np.diff(valid.labels[order]) != 0)).sum() > 100

    split = scatter_ranking_data(client, valid, n_partitions=3)
    assert split.n_partitions == 3
    (curves,) = ndcg_curves(client, booster, split, ks=ks, n_rounds=12, conventions=[lightgbm_conventions(label_gain)])
    assert sorted(curves) == sorted(ks)
    for k in ks:
        ours, theirs = curves[k], record["valid"][f"ndcg@{k}"]
        assert len(ours) == len(theirs) == 12
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
        assert min(ours) > 0.3  # a real, moving curve
        assert max(ours) < 1.0
        assert len(set(ours)) > 1

    if label_gain is not None:  # the custom gain is used: exp gain gives other values
        (exp_gain,) = ndcg_curves(client, booster, split, ks=ks, n_rounds=12, conventions=[lightgbm_conventions()])
        assert abs(exp_gain[10][-1] - curves[10][-1]) > 1e-3


def test_curves_per_partition_equal_lightgbm_evals_result(client: Any, trained: Any) -> None:
    ranker, _, valid = trained
    split = scatter_ranking_data(client, valid, n_partitions=3)
    (curves,) = ndcg_curves(client, ranker.booster_, split, ks=[1, 5, 10], n_rounds=15, conventions=[lightgbm_conventions()])
    for k in (1, 5, 10):
        np.testing.assert_allclose(curves[k], ranker.evals_result_["valid"][f"ndcg@{k}"], rtol=0, atol=1e-12)


def test_predict_partitioned_equals_local_predict_row_for_row(client: Any, trained: Any) -> None:
    ranker, train, _ = trained
    split = scatter_ranking_data(client, train, n_partitions=5)
    scores = predict_partitioned(client, ranker.booster_, split, num_iteration=9)
    np.testing.assert_array_equal(scores, ranker.booster_.predict(train.features, num_iteration=9))
