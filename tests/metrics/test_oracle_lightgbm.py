"""Oracle: the ``lightgbm`` preset equals LightGBM's own ``ndcg@k`` (record_evaluation) to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ltr.metrics import PRESETS, per_query_table, summarize

lgb = pytest.importorskip("lightgbm")

EVAL_AT = (1, 3, 5, 10, 20)


def _synthetic(
    seed: int, n_queries: int
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Features, labels 0-4 and group sizes with all-zero queries, single-doc lists, long lists."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n_queries)
    sizes[:3] = [1, 1, 60]
    n = int(sizes.sum())
    x = rng.normal(size=(n, 5))
    # coarse features: many rows share a leaf, so the model's scores tie often
    x[:, :2] = np.round(x[:, :2])
    labels = np.clip(np.round(x[:, 0] + rng.normal(scale=1.0, size=n) + 1), 0, 4).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for q in (0, 3, 4):  # queries with nothing relevant
        labels[offsets[q] : offsets[q + 1]] = 0
    return x, labels, sizes


def _lgb_ndcg(
    params: dict[str, object], rounds: int
) -> tuple[
    dict[str, dict[str, list[float]]],
    list[NDArray[np.float64]],
    list[tuple[NDArray[np.int64], NDArray[np.int64]]],
]:
    x_tr, y_tr, g_tr = _synthetic(1, 60)
    x_va, y_va, g_va = _synthetic(2, 40)
    train = lgb.Dataset(x_tr, y_tr, group=g_tr)
    valid = lgb.Dataset(x_va, y_va, group=g_va, reference=train)
    record: dict[str, dict[str, list[float]]] = {}
    booster = lgb.train(
        {
            "objective": "lambdarank",
            "metric": "ndcg",
            "eval_at": list(EVAL_AT),
            "verbosity": -1,
            "num_threads": 1,
            "seed": 0,
            **params,
        },
        train,
        num_boost_round=rounds,
        valid_sets=[train, valid],
        valid_names=["train", "valid"],
        callbacks=[lgb.record_evaluation(record)],
    )
    scores = [booster.predict(x_tr, raw_score=True), booster.predict(x_va, raw_score=True)]
    return record, scores, [(y_tr, g_tr), (y_va, g_va)]


def _ours(
    labels: NDArray[np.int64], sizes: NDArray[np.int64], scores: NDArray[np.float64]
) -> dict[str, float]:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    table = per_query_table(
        labels, scores, offsets, np.arange(len(sizes)), ks=EVAL_AT, conventions=PRESETS["lightgbm"]
    )
    return summarize(table)


@pytest.mark.parametrize(
    ("params", "rounds"),
    [
        pytest.param(
            {"num_leaves": 4, "learning_rate": 0.3, "min_data_in_leaf": 5}, 8, id="trained"
        ),
        # a single-leaf tree: every score equal, LightGBM keeps input order (stable sort)
        pytest.param({"min_data_in_leaf": 100_000, "min_data_in_bin": 1}, 1, id="constant-score"),
    ],
)
def test_lightgbm_preset_matches_record_evaluation(params: dict[str, object], rounds: int) -> None:
    record, scores, data = _lgb_ndcg(params, rounds)
    for name, sc, (labels, sizes) in zip(("train", "valid"), scores, data, strict=True):
        if params.get("min_data_in_leaf") == 100_000:
            assert np.unique(sc).size == 1
        else:
            assert np.unique(sc).size < sc.size  # ties are exercised
        ours = _ours(labels, sizes, sc)
        for k in EVAL_AT:
            theirs = record[name][f"ndcg@{k}"][-1]
            assert ours[f"ndcg_at_{k}"] == pytest.approx(theirs, abs=1e-9), (name, k)
