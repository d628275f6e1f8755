"""Prediction and LightGBM's NDCG curves, partition by partition on a Dask cluster.

Queries are independent, so a split's scores and its mean per-query NDCG are sums over its
whole-query partitions: each worker scores the partitions it holds, the client concatenates
scores (a row per row) or adds per-partition sums (a number per round and cut-off).

Why the curves are computed here and not by LightGBM: ``DaskLGBMRanker`` evaluates an
``eval_set`` on every worker's *local* partitions only and returns the model (and its
``evals_result_``) of one worker, so its curves would cover that worker's share of the
validation queries, not the split. :func:`lightgbm_ndcg_curves` recomputes LightGBM's own
``ndcg@k`` (exp gain or ``label_gain``, ties broken by row order, a query with IDCG@k = 0 scores
1) for every round on the whole split.

Each task builds its own ``Booster`` from the model text: tasks on one worker run in threads
and share deserialised objects, and concurrent ``Booster.predict`` calls with different
``start_iteration`` on one booster race (LightGBM keeps the iteration range in the booster).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
from dask.delayed import delayed
from numpy.typing import NDArray

from ltr.dask_partitions import PartitionedSplit

# LightGBM's default label_gain: 2**label - 1 for labels 0..30.
DEFAULT_LABEL_GAIN: tuple[float, ...] = tuple(float(2**i - 1) for i in range(31))


def _predict_block(
    features: NDArray[np.float32], model_text: str, num_iteration: int
) -> NDArray[np.float64]:
    if features.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    booster = lgb.Booster(model_str=model_text)
    return np.asarray(booster.predict(features, num_iteration=num_iteration), dtype=np.float64)


def predict_partitioned(
    client: Any, booster: lgb.Booster, split: PartitionedSplit, *, num_iteration: int
) -> NDArray[np.float64]:
    """Scores of every row of ``split``, predicted on the workers partition by partition.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster that holds ``split``.
    booster : lightgbm.Booster
        A local model (``DaskLGBMRanker.to_local().booster_``); it is broadcast to the workers.
    split : PartitionedSplit
    num_iteration : int
        Use the first ``num_iteration`` trees (1-based best iteration, as ``TrainResult``).

    Returns
    -------
    float64 array, shape (split.n_rows,)
        In row order; equal row for row to ``booster.predict(features, num_iteration=...)`` on
        the whole split in one process (a tree's output depends on its row only).
    """
    model = client.scatter(booster.model_to_string(num_iteration=-1), broadcast=True, hash=False)
    blocks = [
        delayed(_predict_block, pure=True)(part[0], model, num_iteration)
        for part in split.partitions()
    ]
    scores = client.gather(client.compute(blocks))
    return np.concatenate(scores) if scores else np.zeros(0, dtype=np.float64)


def lightgbm_ndcg_per_query(
    labels: NDArray[np.integer],
    scores: NDArray[np.floating],
    group_sizes: NDArray[np.integer],
    *,
    ks: Sequence[int],
    label_gain: Sequence[float] = DEFAULT_LABEL_GAIN,
) -> NDArray[np.float64]:
    """LightGBM's ``ndcg@k`` of every query, vectorised (no per-query loop).

    Conventions as LightGBM's ``NDCGMetric``: gain ``label_gain[label]``, discount
    ``1 / log2(2 + rank)`` for 0-based rank, rows of equal score keep their input order (stable
    sort), ``k`` beyond the list length truncates, and a query with IDCG@k = 0 scores 1.

    Returns
    -------
    float64 array, shape (n_queries, len(ks))

    Examples
    --------
    >>> lightgbm_ndcg_per_query(np.array([0, 1, 0]), np.array([0.5, 0.5, 0.1]),
    ...                         np.array([2, 1]), ks=[1]).tolist()
    [[0.0], [1.0]]
    """
    sizes = np.asarray(group_sizes, dtype=np.int64)
    n_queries = len(sizes)
    query = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    gain_table = np.asarray(label_gain, dtype=np.float64)
    gains = gain_table[np.asarray(labels, dtype=np.int64)]
    # np.lexsort is stable: by query, then score descending, ties in input order.
    order = np.lexsort((-np.asarray(scores, dtype=np.float64), query))
    ideal = np.lexsort((-gains, query))
    rank = np.arange(len(query), dtype=np.int64) - starts[query]  # rank of sorted position
    discount = 1.0 / np.log2(2.0 + rank)
    out = np.empty((n_queries, len(ks)), dtype=np.float64)
    for j, k in enumerate(ks):
        top = rank < k
        dcg = np.bincount(query[top], weights=(gains[order] * discount)[top], minlength=n_queries)
        idcg = np.bincount(query[top], weights=(gains[ideal] * discount)[top], minlength=n_queries)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[:, j] = np.where(idcg > 0, dcg / idcg, 1.0)
    return out


def _curve_block(
    features: NDArray[np.float32],
    labels: NDArray[np.int32],
    group_sizes: NDArray[np.int64],
    model_text: str,
    n_rounds: int,
    ks: tuple[int, ...],
    label_gain: tuple[float, ...],
) -> NDArray[np.float64]:
    """Sum over the partition's queries of ndcg@k after every round, shape (n_rounds, len(ks))."""
    sums = np.zeros((n_rounds, len(ks)), dtype=np.float64)
    if features.shape[0] == 0:
        return sums
    booster = lgb.Booster(model_str=model_text)
    raw = np.zeros(features.shape[0], dtype=np.float64)
    for i in range(n_rounds):
        # Tree by tree, as LightGBM's own score buffer: raw score after round i = sum of trees 0..i.
        raw += booster.predict(features, start_iteration=i, num_iteration=1, raw_score=True)
        sums[i] = lightgbm_ndcg_per_query(labels, raw, group_sizes, ks=ks, label_gain=label_gain).sum(axis=0)
    return sums


def lightgbm_ndcg_curves(
    client: Any,
    booster: lgb.Booster,
    split: PartitionedSplit,
    *,
    ks: Sequence[int],
    n_rounds: int,
    label_gain: Sequence[float] | None = None,
) -> dict[str, list[float]]:
    """LightGBM's ``ndcg@k`` on the whole ``split`` after every round, computed per partition.

    Parameters
    ----------
    client : distributed.Client
    booster : lightgbm.Booster
        The local model; its first ``n_rounds`` trees are evaluated.
    split : PartitionedSplit
    ks : cut-offs; keys of the result are ``ndcg@{k}`` (LightGBM's metric names)
    n_rounds : int
        Number of rounds (trees) to evaluate.
    label_gain : the model's ``label_gain``; None: LightGBM's default ``2**label - 1``.

    Returns
    -------
    dict
        ``{"ndcg@k": [value after round 1, ..., after round n_rounds]}``: the mean over all
        queries of the split, the shape of ``LGBMRanker.evals_result_[name]``.
    """
    ks = tuple(int(k) for k in ks)
    gain = DEFAULT_LABEL_GAIN if label_gain is None else tuple(float(g) for g in label_gain)
    model = client.scatter(booster.model_to_string(num_iteration=-1), broadcast=True, hash=False)
    blocks = [
        delayed(_curve_block, pure=True)(features, labels, groups, model, n_rounds, ks, gain)
        for features, labels, groups, _ in split.partitions()
    ]
    total = np.sum(client.gather(client.compute(blocks)), axis=0) / split.n_queries
    return {f"ndcg@{k}": total[:, j].tolist() for j, k in enumerate(ks)}
