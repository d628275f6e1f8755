"""NDCG estimated from clicks: the naive click value and the inverse-propensity-weighted (IPS) one.

Conventions (beside those of :mod:`ltr.metrics`)
-------------------------------------------------
Positions are the 0-based positions at which the logged ranking showed each row (0 = first).
A propensity ``P(p)`` is the probability that a row shown at position ``p`` is examined,
relative to the top (``P(0) = 1``); it is clipped from below at ``min_propensity``, which caps
every weight at ``1 / min_propensity``.

- **Naive click NDCG@k**: our NDCG@k of the model's ranking with the clicks (0/1) as labels.
  Clicks follow position, so it rewards a model for reproducing the logged order.
- **IPS click NDCG@k**: the same with each click weighted by ``1 / P(position)`` as a linear
  gain (``gain = click / P``). Under a position-based click model ``E[click / P] =
  P(click | examined)``, so the IPS DCG is an unbiased estimate of the DCG with the documents'
  true attractiveness as gains; the NDCG is the ratio of the estimated DCG to the estimated
  ideal DCG of the same weighted clicks.

Queries without a click say nothing about the ranking: both estimates skip them
(``zero_idcg="skip"``), and ``clicks_truth`` gives the true-relevance value on the same queries,
so the three numbers are comparable. Ties follow the caller's ``ties`` convention.

Estimated propensities (``estimate_propensities``): the click-through rate by position divided
by that of position 0, made non-increasing. On randomized sessions (each position shows
documents of the same expected relevance) this is the examination curve (Joachims et al., 2017);
on logged sessions it also contains the logger's relevance-by-position, so it overstates the
bias: a documented, conservative fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics.conventions import MetricConventions
from ltr.metrics.strata import Strata
from ltr.metrics.summary import summarize
from ltr.metrics.table import per_query_table

_DEFAULT_CONVENTIONS = MetricConventions()
_DEFAULT_STRATA = Strata()


def propensity_table(
    values: Sequence[float] | NDArray[np.float64], n_positions: int, *, min_propensity: float = 0.01
) -> NDArray[np.float64]:
    """Propensities of positions ``0..n_positions-1`` from a list (its last value extends).

    Examples
    --------
    >>> propensity_table([1.0, 0.5, 0.2], 5, min_propensity=0.25).tolist()
    [1.0, 0.5, 0.25, 0.25, 0.25]
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("propensities must be a non-empty list, one per position from 0")
    if np.any(~np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr > 1):
        raise ValueError(f"propensities must lie in (0, 1], got {arr.tolist()[:10]}")
    if not 0 < min_propensity <= 1:
        raise ValueError(f"min_propensity must lie in (0, 1], got {min_propensity}")
    n = max(int(n_positions), 1)
    out = np.full(n, arr[-1])
    out[: min(n, arr.size)] = arr[:n]
    return np.asarray(np.maximum(out, min_propensity), dtype=np.float64)


def estimate_propensities(
    clicks: NDArray[np.integer],
    positions: NDArray[np.integer],
    *,
    n_positions: int,
    rows: NDArray[np.bool_] | None = None,
    min_propensity: float = 0.01,
) -> NDArray[np.float64]:
    """Click-through rate by position relative to position 0, non-increasing, clipped.

    Parameters
    ----------
    clicks, positions : int arrays, shape (n_rows,)
    n_positions : length of the returned table
    rows : bool array, shape (n_rows,), optional
        The rows to estimate from (e.g. those of randomized sessions); default all.
    min_propensity : lower clip (also used where a position has no impressions)

    Examples
    --------
    >>> estimate_propensities(np.array([1, 1, 0, 1, 0, 0]), np.array([0, 0, 1, 1, 2, 2]),
    ...                       n_positions=3, min_propensity=0.1).tolist()
    [1.0, 0.5, 0.1]
    """
    c = np.asarray(clicks, dtype=np.float64)
    pos = np.asarray(positions, dtype=np.int64)
    if rows is not None:
        c, pos = c[rows], pos[rows]
    n = max(int(n_positions), 1)
    keep = pos < n
    shown = np.bincount(pos[keep], minlength=n).astype(np.float64)
    clicked = np.bincount(pos[keep], weights=c[keep], minlength=n)
    ctr = np.divide(clicked, shown, out=np.zeros(n), where=shown > 0)
    if ctr[0] <= 0:
        raise ValueError("no clicks at position 0: cannot estimate propensities relative to the top")
    rel = np.minimum.accumulate(ctr / ctr[0])
    return np.clip(rel, min_propensity, 1.0)


def _weighted_labels(weights: NDArray[np.float64]) -> tuple[NDArray[np.int64], tuple[float, ...]]:
    """Real-valued gains as integer labels into a gain table (so the grouped kernel serves them)."""
    table, labels = np.unique(weights, return_inverse=True)
    if table[0] != 0.0:  # label 0 must mean "no gain" for the binary measures
        table = np.concatenate([[0.0], table])
        labels = labels + 1
    return labels.astype(np.int64), tuple(float(g) for g in table)


def click_tables(
    clicks: NDArray[np.integer],
    positions: NDArray[np.integer],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    *,
    propensities: NDArray[np.float64],
    ks: Sequence[int] = (5, 10),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    strata: Strata = _DEFAULT_STRATA,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-query tables of the naive and the IPS-weighted click measures (see the module docstring).

    Returns
    -------
    (naive, ips) : two `per_query_table` frames; queries without a click have NaN NDCG.

    Examples
    --------
    >>> # one query, clicks at positions 0 and 2 (propensities 1 and 0.25); the model ranks the
    >>> # deep click first: naive DCG@3 = 1 + 1/log2(3), IPS DCG@3 = 4 + 1/log2(3) = its ideal.
    >>> naive, ips = click_tables(np.array([1, 0, 1]), np.array([0, 1, 2]), np.array([2.0, 1, 3]),
    ...                           np.array([0, 3]), np.array([5]), ks=[3],
    ...                           propensities=np.array([1.0, 0.5, 0.25]))
    >>> round(float(naive.loc[0, "ndcg_at_3"]), 4), round(float(ips.loc[0, "ndcg_at_3"]), 4)
    (1.0, 1.0)
    """
    c = np.asarray(clicks)
    pos = np.asarray(positions, dtype=np.int64)
    if c.shape != pos.shape:
        raise ValueError(f"clicks have shape {c.shape}, positions {pos.shape}")
    if pos.size and int(pos.max()) >= propensities.shape[0]:
        raise ValueError(f"position {int(pos.max())} has no propensity ({propensities.shape[0]} given)")
    if np.any((c != 0) & (c != 1)):
        raise ValueError("clicks must be 0 or 1")
    base = replace(conventions, zero_idcg="skip", rel_threshold=1)
    naive = per_query_table(
        c.astype(np.int64), scores, offsets, qids, ks=ks, strata=strata,
        conventions=replace(base, gain="linear", label_gain=None), full_ap=False,
    )
    labels, gains = _weighted_labels(c / propensities[pos])
    ips = per_query_table(
        labels, scores, offsets, qids, ks=ks, strata=strata, conventions=replace(base, label_gain=gains), full_ap=False,
    )
    return naive, ips


def click_summary(
    naive: pd.DataFrame, ips: pd.DataFrame, truth: pd.DataFrame, *, strata: Strata = _DEFAULT_STRATA
) -> dict[str, float]:
    """NDCG summaries keyed ``clicks/...`` (naive), ``clicks_ips/...`` and ``clicks_truth/...``.

    ``truth`` is the true-relevance per-query table of the same queries in the same order; it is
    summarised over the queries with at least one click, where the click estimates are defined.
    Also ``clicks/n_queries_with_clicks``.
    """
    ndcg_cols = [c for c in naive.columns if str(c).startswith("ndcg_at_")]
    clicked = ~np.isnan(naive[ndcg_cols[0]].to_numpy(dtype=np.float64)) if ndcg_cols else np.zeros(0, bool)
    out: dict[str, float] = {"clicks/n_queries_with_clicks": float(clicked.sum())}
    for prefix, table in (("clicks", naive), ("clicks_ips", ips), ("clicks_truth", truth[clicked])):
        cols = ["list_len", *[c for c in ndcg_cols if c in table.columns]]
        summary = summarize(table[cols], strata=strata)
        out.update({f"{prefix}/{k}": v for k, v in summary.items() if k.startswith("ndcg_at_")})
    return out
