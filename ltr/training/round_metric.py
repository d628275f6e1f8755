"""Our NDCG@k after every boosting round, as a LightGBM evaluation function (``feval``).

LightGBM calls :class:`RoundNdcg` after each round with its scores of an evaluated data set
(the running sum of the trees, the doubles ``predict(num_iteration=round)`` returns). It scores
them with the metrics kernel under the run's conventions and returns ``ndcg_at_k`` (our key,
beside LightGBM's own ``ndcg@k``) for every cut-off. The mean is taken exactly as the run's
summary takes it (:func:`ltr.metrics.summary.mean_of_known`, on the same table cut-offs), so the
value at the best round *is* the run's ``valid/ndcg_at_k``, bit for bit; early stopping watches
it. One kernel call per data set and round: no per-query loop.

A run that re-ranks (``rerank=...``) reports the order the *model* makes, as a strict order
(equal scores in row order, :func:`ltr.rerank.score_order`), which is how its
``{split}/pre_rerank/...`` table is computed: with ``model_order=True`` every round also gives
``pre_rerank/ndcg_at_k``, computed from the very scores that table is computed from
(:func:`ltr.rerank.order_as_scores` of that order), so at the best round it is the run's
``{split}/pre_rerank/ndcg_at_k`` bit for bit. (The re-ranked order itself is not computed per
round: one re-ranking of a split costs about as much as tens of boosting rounds; README
"Re-ranking".)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from ltr.compiled import kernels
from ltr.metrics import MetricConventions
from ltr.metrics.summary import mean_of_known
from ltr.metrics.table import measure_arrays
from ltr.rerank import order_as_scores, score_order
from ltr.training.settings import CURVE_PREFIX, PRE_RERANK_PREFIX, curve_name, is_our_curve

__all__ = ["CURVE_PREFIX", "PRE_RERANK_PREFIX", "RoundNdcg", "curve_name", "is_our_curve"]


@dataclass
class RoundNdcg:
    """``feval`` for ``lgb.train``: our mean NDCG@k (``ks``) on each registered data set.

    ``table_ks``: the cut-offs the run's per-query tables are computed with (a superset of
    ``ks``); the kernel is called with the same ones so each value equals the table's.
    ``model_order``: also report ``pre_rerank/ndcg_at_k`` (see the module docstring).
    """

    ks: Sequence[int]
    table_ks: Sequence[int]
    conventions: MetricConventions
    model_order: bool = False
    _sets: dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]] = field(default_factory=dict)
    seconds: float = 0.0  # spent in __call__ so far (all sets, all rounds)
    _latest: dict[int, NDArray[np.float64]] = field(default_factory=dict)  # this round's scores
    _best: dict[int, NDArray[np.float64]] = field(default_factory=dict)  # the best round's

    def __post_init__(self) -> None:
        # numba and the kernels' module load here, before the boosting loop: a stop signal that
        # lands inside a C extension's import comes out as ImportError, and a signal mid-training
        # is the common case (the run still ends KILLED then: ltr.runtime.stops.as_stop)
        # (and numba compiles every kernel here, once, on the first run after an install)
        kernels.compiled("ltr.metrics._kernel")

    def mark_best(self) -> None:
        """The round just evaluated is the best so far: keep its scores (:meth:`best_scores`)."""
        for key, latest in self._latest.items():
            self._latest[key] = self._best.get(key, np.empty_like(latest))
            self._best[key] = latest

    def best_scores(self, dataset: lgb.Dataset) -> NDArray[np.float64] | None:
        """LightGBM's scores of ``dataset`` at the round last marked best (the sum of the trees
        up to it, computed on the binned rows), or None if no round was marked."""
        return self._best.get(id(dataset))

    def register(self, dataset: lgb.Dataset, labels: NDArray[np.integer], offsets: NDArray[np.int64]) -> lgb.Dataset:
        """Score ``dataset`` (an evaluated set passed to ``lgb.train``) with these labels and
        query offsets (the same rows, in the same order)."""
        self._sets[id(dataset)] = (np.asarray(labels, dtype=np.int64), np.asarray(offsets, dtype=np.int64))
        return dataset

    def __call__(self, preds: NDArray[np.float64], eval_data: lgb.Dataset) -> list[tuple[str, float, bool]]:
        start = time.perf_counter()
        labels, offsets = self._sets[id(eval_data)]
        buffer = self._latest.get(id(eval_data))
        if buffer is None or buffer.shape != preds.shape:
            buffer = self._latest[id(eval_data)] = np.empty(preds.shape, dtype=np.float64)
        np.copyto(buffer, preds)  # LightGBM reuses its array for the next round
        if offsets.shape[0] <= 1:
            prefixes = ("", PRE_RERANK_PREFIX) if self.model_order else ("",)
            return [(prefix + curve_name(k), float("nan"), True) for prefix in prefixes for k in self.ks]
        out = self._means(labels, preds, offsets, "")
        if self.model_order:
            strict = order_as_scores(score_order(preds, offsets), offsets)
            out += self._means(labels, strict, offsets, PRE_RERANK_PREFIX)
        self.seconds += time.perf_counter() - start
        return out

    def _means(
        self, labels: NDArray[np.int64], scores: NDArray[np.float64], offsets: NDArray[np.int64], prefix: str
    ) -> list[tuple[str, float, bool]]:
        ndcg = measure_arrays(labels, scores, offsets, ks=self.table_ks, conventions=self.conventions, full_ap=False).ndcg
        out = []
        for k in self.ks:
            total, n_known = mean_of_known(ndcg[:, list(self.table_ks).index(k)])
            out.append((prefix + curve_name(k), total / n_known if n_known else float("nan"), True))
        return out
