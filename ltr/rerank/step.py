"""The re-ranking step after prediction (``rerank=...``) and the diversity columns it adds.

``rerank=uncertainty`` raises items whose score is uncertain (:func:`uncertainty_scores`: a
count-based bonus from the popularity column); it adds no diversity column, and the run's
``tail_at_k`` columns show what it did to the long tail's exposure.

With ``rerank=diversify`` every evaluated split's scores are replaced by the order
:func:`ltr.rerank.diversify` makes of them, expressed as scores (``0, -1, -2, ...`` down each
query's list: no ties, so every measure and tie convention sees exactly that order). The per-query
tables of the run then describe the final order, and gain diversity columns (``ild_at_k``; with
``rerank.category_feature`` also ``coverage_at_k`` and ``alpha_ndcg_at_k``); the model's own order
gets the same table, logged under ``{split}/pre_rerank/...``, so the cost of diversity is one
subtraction. Both are strict orders: equal model scores are taken in row order, as the re-ranker
takes them (`ltr.rerank.score_order`), so ``rerank.alpha=0`` reproduces ``pre_rerank`` exactly;
with tied model scores ``pre_rerank`` can differ from a run without re-ranking, whose tie
convention (``eval.ties``) averages over tied orders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.config.choices import RerankKind, Similarity
from ltr.config.schema import RerankConfig
from ltr.data.ranking_data import RankingData
from ltr.metrics.diversity import alpha_ndcg, category_coverage, intra_list_diversity
from ltr.rerank import diversify, order_as_scores, score_order


@dataclass(frozen=True, slots=True)
class Reranked:
    """One split after the re-ranking step: ``scores`` / ``model_scores`` give the final order and
    the model's order (strictly decreasing within each query: equal model scores in row order,
    as the re-ranker breaks them); ``before`` / ``after`` are the diversity columns of the
    model's order and of the final order (one row per query, in query order)."""

    scores: NDArray[np.float64]
    model_scores: NDArray[np.float64]
    before: pd.DataFrame
    after: pd.DataFrame


def item_features(cfg: RerankConfig, data: RankingData) -> NDArray[np.float64]:
    """The feature columns cosine similarity and ILD compare (``rerank.features``; all if null)."""
    columns = list(cfg.features) if cfg.features is not None else list(range(data.n_features))
    return np.ascontiguousarray(data.features[:, columns], dtype=np.float64)


def item_categories(cfg: RerankConfig, data: RankingData) -> NDArray[np.int64] | None:
    """Each row's category code from ``rerank.category_feature`` (integer values, or
    ``category_bins`` quantile bins of the split's values); None when no column is set."""
    if cfg.category_feature is None:
        return None
    values = np.asarray(data.features[:, cfg.category_feature], dtype=np.float64)
    if cfg.category_bins is not None:
        edges = np.quantile(values, np.linspace(0, 1, cfg.category_bins + 1)[1:-1])
        return np.searchsorted(edges, values, side="right").astype(np.int64)
    return np.unique(values, return_inverse=True)[1].astype(np.int64).ravel()


def diversity_columns(
    cfg: RerankConfig, data: RankingData, order: NDArray[np.int64], ks: tuple[int, ...],
    features: NDArray[np.float64], categories: NDArray[np.int64] | None,
) -> pd.DataFrame:  # fmt: skip
    """``ild_at_k`` (and ``coverage_at_k``, ``alpha_ndcg_at_k`` with ``categories``) of ``order``;
    ``features`` and ``categories`` as `item_features` and `item_categories` give them."""
    columns: dict[str, NDArray[np.float64]] = {}
    for k in ks:
        columns[f"ild_at_{k}"] = intra_list_diversity(order, data.offsets, features, k=k)
    if categories is not None:
        for k in ks:
            columns[f"coverage_at_{k}"] = category_coverage(order, data.offsets, categories, k=k)
        for k in ks:
            columns[f"alpha_ndcg_at_{k}"] = alpha_ndcg(
                order, data.offsets, categories, data.labels, k=k, alpha=cfg.alpha_ndcg_alpha
            )
    return pd.DataFrame(columns)


def uncertainty_bonus(popularity: NDArray[np.floating]) -> NDArray[np.float64]:
    """Each row's exploration bonus ``1 - q``, ``q`` the quantile rank of its popularity among
    the rows (0 for the most popular, near 1 for the least; equal values share their mean rank).

    Examples
    --------
    >>> uncertainty_bonus(np.array([5.0, 1.0, 3.0, 3.0])).tolist()
    [0.0, 1.0, 0.5, 0.5]
    """
    values = np.asarray(popularity, dtype=np.float64)
    n = values.shape[0]
    if n < 2:
        return np.zeros(n)
    ranks = pd.Series(values).rank(method="average").to_numpy() - 1.0  # 0 .. n-1
    return np.asarray(1.0 - ranks / (n - 1))


def ensemble_spread(member_scores: NDArray[np.floating], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each row's disagreement among the members of a bagged ensemble, as a bonus in [0, 1].

    ``member_scores`` has shape (n_members, n_rows): every member's scores of the same rows.
    Each member's scores are min-max normalised within each query (so members of different
    scales weigh the same), the standard deviation over members is taken per row, and divided
    by its largest value in the split (all 0 when the members agree everywhere). The
    alternative to :func:`uncertainty_bonus` that the README's "The long tail" measures.

    Examples
    --------
    Two members, one query of three rows; normalised they give [0, 1, 0.5] and [0, 0.5, 1]:
    stds 0, 0.25, 0.25, so bonuses 0, 1, 1.

    >>> ensemble_spread(np.array([[1.0, 3.0, 2.0], [0.0, 1.0, 2.0]]), np.array([0, 3])).tolist()
    [0.0, 1.0, 1.0]
    """
    members = np.asarray(member_scores, dtype=np.float64)
    normalised = np.stack([uncertainty_scores(m, offsets, np.zeros_like(m), alpha=0.0) for m in members])
    spread = normalised.std(axis=0)
    top = float(spread.max()) if spread.size else 0.0
    return spread / top if top > 0 else np.zeros_like(spread)


def uncertainty_scores(
    scores: NDArray[np.float64], offsets: NDArray[np.int64], bonus: NDArray[np.float64], *, alpha: float
) -> NDArray[np.float64]:
    """``score + alpha * bonus`` with the scores min-max normalised within each query (a query
    whose scores are all equal gets 0 for every row, so only the bonus orders it).

    Examples
    --------
    >>> uncertainty_scores(np.array([2.0, 4.0, 1.0]), np.array([0, 2, 3]), np.array([1.0, 0.0, 0.5]), alpha=0.5).tolist()
    [0.5, 1.0, 0.25]
    """
    sizes = np.diff(offsets)
    lo = np.repeat(np.minimum.reduceat(scores, offsets[:-1]), sizes)
    hi = np.repeat(np.maximum.reduceat(scores, offsets[:-1]), sizes)
    span = hi - lo
    norm = np.divide(scores - lo, span, out=np.zeros_like(scores), where=span > 0)
    return np.asarray(norm + alpha * bonus)


def rerank_split(
    cfg: RerankConfig, data: RankingData, scores: NDArray[np.float64], ks: tuple[int, ...],
    popularity: NDArray[np.floating] | None = None,
) -> Reranked:  # fmt: skip
    """Re-rank one split's scored lists as ``cfg`` says (see the module docstring);
    ``popularity``: each row's popularity (``rerank=uncertainty`` needs it)."""
    model_order = score_order(scores, data.offsets)
    if cfg.kind == RerankKind.uncertainty:
        if popularity is None:
            raise ValueError("rerank=uncertainty needs the rows' popularity (data.popularity_feature)")
        raised = uncertainty_scores(scores, data.offsets, uncertainty_bonus(popularity), alpha=cfg.alpha)
        empty = pd.DataFrame(index=pd.RangeIndex(data.n_queries))
        return Reranked(
            order_as_scores(score_order(raised, data.offsets), data.offsets),
            order_as_scores(model_order, data.offsets), empty, empty,
        )  # fmt: skip
    features, categories = item_features(cfg, data), item_categories(cfg, data)
    if cfg.similarity == Similarity.category:
        assert categories is not None  # checked: similarity=category needs category_feature
        order = diversify(scores, data.offsets, categories, alpha=cfg.alpha, similarity="category", depth=cfg.depth)
    else:
        order = diversify(scores, data.offsets, features, alpha=cfg.alpha, depth=cfg.depth)
    return Reranked(
        order_as_scores(order, data.offsets),
        order_as_scores(model_order, data.offsets),
        diversity_columns(cfg, data, model_order, ks, features, categories),
        diversity_columns(cfg, data, order, ks, features, categories),
    )
