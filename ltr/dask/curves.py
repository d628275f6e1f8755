"""NDCG after every boosting round of a trained model, by the metrics kernel (the Dask trainer).

The raw scores are accumulated tree by tree, as LightGBM's own score buffer (the score after
round ``i`` is the sum of trees ``0..i``, in that order), and each round is scored by
:func:`ltr.metrics.table.measure_arrays`: ``n_rounds`` kernel calls, no per-query loop. The
trees' outputs come from LightGBM's leaf indices (``pred_leaf``, in blocks of trees) and the
leaves' values, the same doubles ``predict(raw_score=True)`` adds.

The local trainer gets its curves from LightGBM during training
(:mod:`ltr.training.round_metric`); in data-parallel training each machine evaluates its own share of
the rows only, so the Dask trainer recomputes both curves (LightGBM's conventions and the run's)
after training, partition by partition, summed on the client. Those sums add in another order
than the one summation of a split's per-query values its headline takes
(:func:`ltr.metrics.summary.mean_of_known`), so a round's value can differ from that mean by an
ulp; the best round's point, the one a curve ends on, is therefore recomputed from the per-query
values (:func:`ltr.dask.evaluate.ndcg_at_round`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from ltr.metrics import MetricConventions
from ltr.metrics.table import measure_arrays

#: Leaf indices fetched from LightGBM at once, at the most (rows x trees of one block).
LEAF_BLOCK = 1 << 24


def tree_outputs(booster: lgb.Booster, features: NDArray[np.float32], n_trees: int) -> Iterator[NDArray[np.float64]]:
    """Each of the first ``n_trees`` trees' raw output on every row, tree by tree."""
    n_rows = features.shape[0]
    if booster.params.get("linear_tree") or n_rows == 0:  # a leaf's output depends on the row
        for i in range(n_trees):
            yield np.asarray(booster.predict(features, start_iteration=i, num_iteration=1, raw_score=True))
        return
    block = max(1, min(n_trees, LEAF_BLOCK // n_rows))
    for start in range(0, n_trees, block):
        count = min(block, n_trees - start)
        leaves = np.asarray(
            booster.predict(features, start_iteration=start, num_iteration=count, pred_leaf=True)
        ).reshape(n_rows, count)
        for j in range(count):
            tree = start + j
            values = np.array([booster.get_leaf_output(tree, leaf) for leaf in range(int(leaves[:, j].max()) + 1)])
            yield values[leaves[:, j]]


def ndcg_sums_per_round(
    booster: lgb.Booster,
    features: NDArray[np.float32],
    labels: NDArray[np.integer],
    offsets: NDArray[np.int64],
    *,
    ks: Sequence[int],
    conventions: Sequence[MetricConventions],
    n_rounds: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Sum and count over the queries of NDCG@k after each round under each of ``conventions``,
    both shape (len(conventions), n_rounds, len(ks)); the trees are walked once for all.

    NaN (``zero_idcg="skip"``) is left out of both, so ``sums / counts`` is the mean NDCG@k;
    sums and counts of disjoint sets of queries (partitions) add up to those of their union.
    """
    shape = (len(conventions), n_rounds, len(ks))
    sums = np.zeros(shape, dtype=np.float64)
    counts = np.zeros(shape, dtype=np.int64)
    raw = np.zeros(features.shape[0], dtype=np.float64)
    if offsets.shape[0] <= 1:
        return sums, counts
    for i, tree in enumerate(tree_outputs(booster, features, n_rounds)):
        raw += tree
        for c, convention in enumerate(conventions):
            ndcg = measure_arrays(labels, raw, offsets, ks=ks, conventions=convention, full_ap=False).ndcg
            known = ~np.isnan(ndcg)
            sums[c, i] = np.where(known, ndcg, 0.0).sum(axis=0)
            counts[c, i] = known.sum(axis=0)
    return sums, counts
