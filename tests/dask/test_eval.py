"""Per-partition prediction and NDCG curves equal the one-process results."""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
import pytest

from ltr.dask_eval import lightgbm_ndcg_curves, lightgbm_ndcg_per_query, predict_partitioned
from ltr.dask_partitions import scatter_ranking_data
from ltr.metrics import MetricConventions, per_query_table
from tests.dask.conftest import random_ranking_data

# LightGBM's ndcg@k in our terms (see ltr/gap.py): exp gain, ties in row order, IDCG = 0 -> 1.
LIGHTGBM = MetricConventions(gain="exp", label_gain=None, ties="stable", zero_idcg="one", rel_threshold=1)


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


def test_vectorised_ndcg_equals_our_kernel_with_lightgbm_conventions() -> None:
    data = random_ranking_data(7, n_queries=80)
    # Coarse scores: many ties, broken by row order under LightGBM's conventions.
    scores = np.round(data.features[:, 0].astype(np.float64))
    ours = lightgbm_ndcg_per_query(data.labels, scores, data.group_sizes, ks=[1, 3, 10, 100])
    table = per_query_table(
        data.labels, scores, data.offsets, data.qids, ks=(1, 3, 10, 100), conventions=LIGHTGBM
    )
    for j, k in enumerate((1, 3, 10, 100)):
        np.testing.assert_allclose(ours[:, j], table[f"ndcg_at_{k}"].to_numpy(), rtol=0, atol=1e-12)


def test_curves_per_partition_equal_lightgbm_evals_result(client: Any, trained: Any) -> None:
    ranker, _, valid = trained
    split = scatter_ranking_data(client, valid, n_partitions=3)
    curves = lightgbm_ndcg_curves(client, ranker.booster_, split, ks=[1, 5, 10], n_rounds=15)
    for name in ("ndcg@1", "ndcg@5", "ndcg@10"):
        np.testing.assert_allclose(curves[name], ranker.evals_result_["valid"][name], rtol=0, atol=1e-12)


def test_predict_partitioned_equals_local_predict_row_for_row(client: Any, trained: Any) -> None:
    ranker, train, _ = trained
    split = scatter_ranking_data(client, train, n_partitions=5)
    scores = predict_partitioned(client, ranker.booster_, split, num_iteration=9)
    np.testing.assert_array_equal(scores, ranker.booster_.predict(train.features, num_iteration=9))
