"""Why our NDCG differs from LightGBM's for the same scores: an exact decomposition.

LightGBM's ``ndcg@k`` = our NDCG with ``zero_idcg="one"`` and ``ties="stable"``. Going from our
conventions to LightGBM's one knob at a time splits the difference into two parts:

- ``zero_idcg``: queries with nothing relevant (IDCG@k = 0) score 1 instead of 0 (or instead of
  being skipped);
- ``ties``: tied scores are broken by input row order instead of our tie policy.

Gain and discount are not a factor when both use the same; if ours differ (``linear`` gain, the
``jarvelin`` discount) the remainder is shown as ``gain and discount``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics.conventions import MetricConventions
from ltr.metrics.table import per_query_table


@dataclass(frozen=True, slots=True)
class LightgbmGap:
    """Mean NDCG@k under ours and LightGBM's conventions, and the parts of the difference."""

    k: int
    ours: float
    lightgbm: float
    from_zero_idcg: float
    from_ties: float
    from_gain: float
    n_queries: int
    n_zero_idcg: int
    n_single_doc: int
    n_tied_queries: int

    def explain(self, split: str) -> str:
        return (
            f"{split} nDCG@{self.k}: ours {self.ours:.4f}, LightGBM's conventions {self.lightgbm:.4f} "
            f"(difference {self.lightgbm - self.ours:+.4f}). "
            f"{self.n_zero_idcg} of {self.n_queries} queries have nothing relevant in their labels "
            f"(LightGBM scores them 1): {self.from_zero_idcg:+.4f}. "
            f"{self.n_tied_queries} queries have tied scores (LightGBM keeps row order): {self.from_ties:+.4f}. "
            + (f"Gain and discount: {self.from_gain:+.4f}. " if self.from_gain else "")
            + f"{self.n_single_doc} single-document queries score 1 under both if relevant."
        )


def gap_parts(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    k: int,
    ours: MetricConventions,
) -> pd.DataFrame:
    """Per query what :func:`lightgbm_gap` needs: NDCG@k under the four conventions, IDCG@k
    under LightGBM's, the list length and whether the query has tied scores.

    Queries are independent, so the parts of a split (e.g. Dask partitions) can be computed
    separately, concatenated and passed to :func:`gap_from_parts`.
    """
    theirs = MetricConventions(gain="exp", ties="stable", zero_idcg="one", rel_threshold=ours.rel_threshold)
    # ours in all but ties and zero_idcg: the rest of the gap is gain and discount
    same_gain = replace(
        theirs, gain=ours.gain, label_gain=ours.label_gain, discount=ours.discount, discount_base=ours.discount_base
    )
    col = f"ndcg_at_{k}"

    def table(conventions: MetricConventions) -> pd.DataFrame:
        return per_query_table(labels, scores, offsets, qids, ks=(k,), conventions=conventions, full_ap=False)

    theirs_table = table(theirs)
    return pd.DataFrame({
        "ours": table(ours)[col].to_numpy(dtype=np.float64),
        "one": table(replace(ours, zero_idcg="one"))[col].to_numpy(dtype=np.float64),
        "stable": table(same_gain)[col].to_numpy(dtype=np.float64),
        "theirs": theirs_table[col].to_numpy(dtype=np.float64),
        "zero_idcg": theirs_table[f"idcg_at_{k}"].to_numpy() == 0,
        "single_doc": np.diff(np.asarray(offsets, dtype=np.int64)) == 1,
        "tied": tied_queries(np.asarray(scores, dtype=np.float64), np.asarray(offsets, dtype=np.int64)),
    })


def gap_from_parts(parts: pd.DataFrame, k: int) -> LightgbmGap:
    """The :class:`LightgbmGap` of the queries in ``parts`` (rows of :func:`gap_parts`)."""
    value_ours, value_one, value_stable, value_theirs = (
        float(np.nanmean(parts[c].to_numpy(dtype=np.float64))) for c in ("ours", "one", "stable", "theirs")
    )
    return LightgbmGap(
        k=k,
        ours=value_ours,
        lightgbm=value_theirs,
        from_zero_idcg=value_one - value_ours,
        from_ties=value_stable - value_one,
        from_gain=value_theirs - value_stable,
        n_queries=len(parts),
        n_zero_idcg=int(parts["zero_idcg"].sum()),
        n_single_doc=int(parts["single_doc"].sum()),
        n_tied_queries=int(parts["tied"].sum()),
    )


def tied_queries(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Per query: has it at least two rows of equal score (vectorised, no per-query loop)."""
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((scores, query))
    same = (query[order][1:] == query[order][:-1]) & (scores[order][1:] == scores[order][:-1])
    out = np.zeros(len(sizes), dtype=bool)
    out[query[order][1:][same]] = True
    return out


def lightgbm_gap(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    k: int,
    ours: MetricConventions,
) -> LightgbmGap:
    """Decompose LightGBM-convention NDCG@k minus ours for ``scores`` (flat arrays, query offsets)."""
    return gap_from_parts(gap_parts(labels, scores, offsets, qids, k, ours), k)
