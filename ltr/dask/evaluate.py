"""Prediction and LightGBM's NDCG curves, partition by partition on a Dask cluster.

Queries are independent, so a split's scores and its mean per-query NDCG are sums over its
whole-query partitions: each worker scores the partitions it holds, the client concatenates
scores (a row per row) or adds per-partition sums (a number per round and cut-off).

Why the curves are computed here and not by LightGBM: in data-parallel training (ours,
:mod:`ltr.dask.network`, as ``DaskLGBMRanker``'s) each machine evaluates an ``eval_set`` on its
*local* partitions only, and the model (and ``evals_result_``) is one machine's, so its
curves would cover that worker's share of the validation queries, not the split. :func:`ndcg_curves` under :func:`lightgbm_conventions`
recomputes LightGBM's own ``ndcg@k`` for every round on the whole split with the per-round loop
:func:`ltr.dask.curves.ndcg_sums_per_round` (the metrics kernel) under
``PRESETS["lightgbm"]`` (exp gain, or the model's ``label_gain``; ties broken by row order; a
query with IDCG@k = 0 scores 1; the model's ``label_gain`` is refused by ``ltr train`` when it
decreases). Each worker scores its partitions after every round and returns only the sums of
their NDCG@k. The curves equal LightGBM's ``evals_result`` to 1e-9 when ``label_gain`` does not
decrease with the label (the default gain always). LightGBM builds the ideal list from the
highest label value down, so for a ``label_gain`` that decreases somewhere its IDCG is not the
maximum DCG; the curves here divide by the maximum DCG and then differ from LightGBM's.

Each task builds its own ``Booster`` from the model text: tasks on one worker run in threads
and share deserialised objects, and concurrent ``Booster.predict`` calls with different
``start_iteration`` on one booster race (LightGBM keeps the iteration range in the booster).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import lightgbm as lgb
import numpy as np
from dask.delayed import delayed
from numpy.typing import NDArray

from ltr.dask.curves import ndcg_sums_per_round
from ltr.dask.partitions import PartitionedSplit
from ltr.metrics import PRESETS, MetricConventions
from ltr.metrics.summary import mean_of_known
from ltr.metrics.table import measure_arrays


def predict_block(
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
        A local model (``TrainResult.booster``); it is broadcast to the workers.
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
        delayed(predict_block, pure=True)(part[0], model, num_iteration)
        for part in split.partitions()
    ]
    scores = client.gather(client.compute(blocks))
    return np.concatenate(scores) if scores else np.zeros(0, dtype=np.float64)


def _curve_block(
    features: NDArray[np.float32],
    labels: NDArray[np.int32],
    group_sizes: NDArray[np.int64],
    model_text: str,
    n_rounds: int,
    ks: tuple[int, ...],
    conventions: tuple[MetricConventions, ...],
) -> NDArray[np.float64]:
    """Sums and counts over the partition's queries of ndcg@k after every round, under each of
    ``conventions``: shape (2, len(conventions), n_rounds, len(ks))."""
    if features.shape[0] == 0:
        return np.zeros((2, len(conventions), n_rounds, len(ks)), dtype=np.float64)
    offsets = np.concatenate([[0], np.cumsum(group_sizes)]).astype(np.int64)
    sums, counts = ndcg_sums_per_round(
        lgb.Booster(model_str=model_text), features, labels, offsets, ks=ks, conventions=conventions, n_rounds=n_rounds
    )
    return np.stack([sums, counts.astype(np.float64)])


def _per_query_block(
    features: NDArray[np.float32],
    labels: NDArray[np.int32],
    group_sizes: NDArray[np.int64],
    model_text: str,
    num_iteration: int,
    ks: tuple[int, ...],
    conventions: MetricConventions,
) -> NDArray[np.float64]:
    """The partition's per-query NDCG@k (one row per query, one column per k) of the model's
    first ``num_iteration`` trees, scored as the run's tables score a split (``predict``)."""
    if features.shape[0] == 0:
        return np.zeros((0, len(ks)), dtype=np.float64)
    offsets = np.concatenate([[0], np.cumsum(group_sizes)]).astype(np.int64)
    scores = predict_block(features, model_text, num_iteration)
    ndcg = measure_arrays(labels, scores, offsets, ks=ks, conventions=conventions, full_ap=False).ndcg
    return np.asarray(ndcg, dtype=np.float64)


def ndcg_at_round(
    client: Any,
    booster: lgb.Booster,
    split: PartitionedSplit,
    *,
    ks: Sequence[int],
    num_iteration: int,
    conventions: MetricConventions,
) -> dict[int, float]:
    """Mean NDCG@k on the whole ``split`` of the model's first ``num_iteration`` trees, taken
    as the run's summary takes its headline ``{split}/ndcg_at_k``: the per-query values of every
    partition, joined in partition order (the split's query order, the per-query table's), then
    :func:`ltr.metrics.summary.mean_of_known` of each column (NaN when no query has a value).

    :func:`ndcg_curves` adds per-partition sums: the same mean to rounding, but another
    summation order, so it can end 1 ulp away from the headline. This value replaces the
    curve's point at the best round (:func:`ltr.dask.train.fit_partitioned`), so the curve ends
    on the headline bit for bit.
    """
    ks = tuple(int(k) for k in ks)
    model = client.scatter(booster.model_to_string(num_iteration=-1), broadcast=True, hash=False)
    blocks = [
        delayed(_per_query_block, pure=True)(features, labels, groups, model, num_iteration, ks, conventions)
        for features, labels, groups, _ in split.partitions()
    ]
    parts = client.gather(client.compute(blocks))
    ndcg = np.concatenate(parts) if parts else np.zeros((0, len(ks)), dtype=np.float64)
    out: dict[int, float] = {}
    for j, k in enumerate(ks):
        total, n_known = mean_of_known(np.ascontiguousarray(ndcg[:, j]))
        out[k] = total / n_known if n_known else float("nan")
    return out


def lightgbm_conventions(label_gain: tuple[float, ...] | None = None) -> MetricConventions:
    """LightGBM's own conventions (``PRESETS["lightgbm"]``), with the model's ``label_gain``."""
    conventions = PRESETS["lightgbm"]
    if label_gain is not None:
        conventions = replace(conventions, label_gain=tuple(float(g) for g in label_gain))
    return conventions


def ndcg_curves(
    client: Any,
    booster: lgb.Booster,
    split: PartitionedSplit,
    *,
    ks: Sequence[int],
    n_rounds: int,
    conventions: Sequence[MetricConventions],
) -> list[dict[int, list[float]]]:
    """Mean NDCG@k on the whole ``split`` after every round, under each of ``conventions``.

    Parameters
    ----------
    client : distributed.Client
    booster : lightgbm.Booster
        The local model; its first ``n_rounds`` trees are evaluated.
    split : PartitionedSplit
    ks : cut-offs
    n_rounds : int
        Number of rounds (trees) to evaluate.
    conventions : one :class:`MetricConventions` per curve family, e.g.
        ``[lightgbm_conventions(label_gain), the run's]``; the trees are walked once for all.

    Returns
    -------
    list of dict
        One per conventions: ``{k: [value after round 1, ..., after round n_rounds]}``, the
        mean over the split's queries of ``per_query_table``'s ``ndcg_at_k`` (NaN of
        ``zero_idcg="skip"`` left out; NaN when no query has a value).
    """
    ks = tuple(int(k) for k in ks)
    conv = tuple(conventions)
    model = client.scatter(booster.model_to_string(num_iteration=-1), broadcast=True, hash=False)
    blocks = [
        delayed(_curve_block, pure=True)(features, labels, groups, model, n_rounds, ks, conv)
        for features, labels, groups, _ in split.partitions()
    ]
    totals = np.sum(client.gather(client.compute(blocks)), axis=0)
    sums, counts = totals[0], totals[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return [{k: means[c, :, j].tolist() for j, k in enumerate(ks)} for c in range(len(conv))]

