"""Per-document feature contributions of a run's model, and their centring per query.

Conventions (every function of :mod:`ltr.explain`):

- ``contributions``: float64, shape ``(n_rows, n_features)``; row ``i`` column ``j`` is feature
  ``j``'s exact TreeSHAP contribution to document ``i``'s model score (LightGBM's own
  ``Booster.predict(X, pred_contrib=True)``: the trees the run logged, up to its best round).
- ``expected_value``: float64, shape ``(n_rows,)``; the model's mean output over its training
  data (the same for every row), so that ``contributions.sum(axis=1) + expected_value`` is the
  model's score of each row (``Booster.predict(X)``, what ``ltr predict`` writes), up to the
  rounding of a sum of float64s.
- ``offsets``: int64, shape ``(n_queries + 1,)``; rows of query ``q`` are
  ``offsets[q]:offsets[q + 1]``, every query has at least one row
  (:class:`ltr.data.ranking_data.RankingData`).
- **Centred** contributions are each minus its query's mean over the query's documents: a row of
  them sums to the document's score minus the query's mean score (``expected_value`` cancels).
  Ranking compares documents of one list, so the centred values are what moves a document
  within its list; a feature that adds the same to every document of a list moves nothing.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray


def contributions(booster: lgb.Booster, features: NDArray[np.float32]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(contributions, expected_value)`` of every row of ``features`` (shape ``(n_rows,
    n_features)``, the model's columns): LightGBM's exact TreeSHAP (module docstring)."""
    raw = booster.predict(features, pred_contrib=True)
    out = np.asarray(raw, dtype=np.float64)
    if out.ndim != 2 or out.shape[1] != features.shape[1] + 1:  # pragma: no cover - a multiclass model: not a ranker
        raise ValueError(f"pred_contrib gave shape {out.shape} for {features.shape[1]} features: not a single-output model")
    return out[:, :-1], out[:, -1].copy()


def query_means(values: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each query's mean of ``values`` (shape ``(n_rows,)`` or ``(n_rows, n_columns)``) over its
    rows: shape ``(n_queries,)`` or ``(n_queries, n_columns)``."""
    sizes = np.diff(offsets)
    sums = np.add.reduceat(values, offsets[:-1], axis=0) if sizes.size else values[:0]
    return sums / (sizes if values.ndim == 1 else sizes[:, None])


def centre(contributions: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """``contributions`` minus each query's mean row (module docstring: centred contributions)."""
    sizes = np.diff(offsets)
    out = np.repeat(query_means(contributions, offsets), sizes, axis=0)
    return np.subtract(contributions, out, out=out)  # one array of the batch's size, not two


def query_importance(centred: NDArray[np.float64], offsets: NDArray[np.int64], *, overwrite: bool = False) -> NDArray[np.float64]:
    """Each query's mean absolute centred contribution per feature: shape ``(n_queries,
    n_features)``; a one-document query's row is 0 (nothing moves it within its list).
    ``overwrite``: take the absolute values in ``centred`` itself (no copy of the batch)."""
    return query_means(np.abs(centred, out=centred) if overwrite else np.abs(centred), offsets)
