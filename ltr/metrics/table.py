"""`per_query_table`: every measure of every query, from flat arrays and query offsets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics._kernel import grouped_kernel
from ltr.metrics.conventions import MetricConventions
from ltr.metrics.strata import Strata

_DEFAULT_CONVENTIONS = MetricConventions()
_DEFAULT_STRATA = Strata()


def metric_columns(ks: Sequence[int]) -> list[str]:
    """Names of the metric columns of a table built with ``ks``, in table order."""
    cols: list[str] = []
    for k in ks:
        cols += [f"idcg_at_{k}", f"dcg_at_{k}", f"ndcg_at_{k}", f"err_at_{k}", f"p_at_{k}"]
    return [*cols, "rr"]


def per_query_table(
    labels: NDArray[np.integer],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    *,
    ks: Sequence[int] = (5, 10),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    strata: Strata = _DEFAULT_STRATA,
    ideal_labels: NDArray[np.integer] | None = None,
    ideal_offsets: NDArray[np.int64] | None = None,
    tie_keys: NDArray[np.generic] | None = None,
) -> pd.DataFrame:
    """One row per query with its list length, stratum and every measure at every ``k``.

    Parameters
    ----------
    labels : int array, shape (n_rows,)
        Graded relevance of every ranked row; rows of query ``i`` are ``offsets[i]:offsets[i+1]``.
    scores : float array, shape (n_rows,)
        Model scores (higher ranks first). NaN is an error.
    offsets : int64 array, shape (n_queries + 1,)
        Query boundaries: starts at 0, non-decreasing, ends at ``n_rows``. An empty query (judged
        but nothing ranked) has list length 0 and scores 0 on every measure.
    qids : array, shape (n_queries,)
        Query ids, copied to the ``qid`` column.
    ks : sequence of int
        Cut-offs (>= 1); columns appear in this order.
    conventions : MetricConventions
        Gain, ties, zero-IDCG policy and the binary relevance threshold.
    strata : Strata
        List-length strata for the ``stratum`` column.
    ideal_labels, ideal_offsets : optional
        The judgments IDCG and ``n_relevant`` are computed from, per query (trec_eval: all judged
        docs, retrieved or not). Default: ``labels`` and ``offsets``.
    tie_keys : array, shape (n_rows,), optional
        Secondary key for ``ties="docno_desc"``: the larger key ranks first among equal scores
        (pass the rank of each docno in sorted order).

    Returns
    -------
    pandas.DataFrame
        Columns ``qid, list_len, stratum, n_relevant``, then per ``k``
        ``idcg_at_k, dcg_at_k, ndcg_at_k, err_at_k, p_at_k``, then ``rr``; rows in input order.

    Examples
    --------
    >>> t = per_query_table(np.array([2, 3, 1, 0, 2]), np.array([5.0, 4, 3, 2, 1]),
    ...                     np.array([0, 5]), np.array([7]), ks=[5])
    >>> round(float(t.loc[0, "ndcg_at_5"]), 6)
    0.838647
    """
    labels_a = _as_int_labels(labels, "labels")
    scores_a = np.ascontiguousarray(scores, dtype=np.float64)
    offsets_a = _check_offsets(offsets, labels_a.shape[0], "offsets")
    n_q = offsets_a.shape[0] - 1
    qids_a = np.asarray(qids)
    if qids_a.shape != (n_q,):
        raise ValueError(f"qids have shape {qids_a.shape}; offsets describe {n_q} queries")
    if scores_a.shape != labels_a.shape:
        raise ValueError(f"scores have shape {scores_a.shape}, labels {labels_a.shape}")
    if np.isnan(scores_a).any():
        row = int(np.flatnonzero(np.isnan(scores_a))[0])
        q = int(np.searchsorted(offsets_a, row, side="right") - 1)
        raise ValueError(f"score at row {row} (qid {qids_a[q]}) is NaN")
    k_list = [int(k) for k in ks]
    if not k_list or any(k < 1 for k in k_list) or len(set(k_list)) != len(k_list):
        raise ValueError(f"ks={list(ks)} must be distinct integers >= 1")

    if (ideal_labels is None) != (ideal_offsets is None):
        raise ValueError("give ideal_labels and ideal_offsets together")
    if ideal_labels is None:
        ideal_a, ideal_off = labels_a, offsets_a
    else:
        ideal_a = _as_int_labels(ideal_labels, "ideal_labels")
        ideal_off = _check_offsets(ideal_offsets, ideal_a.shape[0], "ideal_offsets")  # type: ignore[arg-type]
        if ideal_off.shape != offsets_a.shape:
            raise ValueError(
                f"ideal_offsets describe {ideal_off.shape[0] - 1} queries, offsets {n_q}"
            )

    c = conventions
    gains = c.gains_of(labels_a)
    ideal_gains = gains if ideal_a is labels_a else c.gains_of(ideal_a)
    rels = (labels_a >= c.rel_threshold).astype(np.float64)
    ideal_rels = rels if ideal_a is labels_a else (ideal_a >= c.rel_threshold).astype(np.float64)
    # ERR stop probability R = gain / (g_max + 1), g_max the largest gain in the data
    g_max = max(float(gains.max(initial=0.0)), float(ideal_gains.max(initial=0.0)))
    stop_r = gains / (g_max + 1.0)

    if c.ties == "docno_desc":
        if tie_keys is None:
            raise ValueError('ties="docno_desc" needs tie_keys (e.g. the rank of each docno)')
        tkey = np.ascontiguousarray(tie_keys, dtype=np.float64)
        if tkey.shape != labels_a.shape:
            raise ValueError(f"tie_keys have shape {tkey.shape}, labels {labels_a.shape}")
    elif c.ties == "pessimistic":
        tkey = -gains
    elif c.ties == "optimistic":
        tkey = gains
    else:  # stable, average: input order (average does not use it)
        tkey = np.zeros_like(scores_a)

    ks_sorted = np.array(sorted(k_list), dtype=np.int64)
    k_max = int(ks_sorted[-1])
    discount = 1.0 / np.log2(np.arange(2, k_max + 2, dtype=np.float64))
    shape = (n_q, ks_sorted.shape[0])
    idcg = np.empty(shape)
    dcg = np.empty(shape)
    err = np.empty(shape)
    prec = np.empty(shape)
    rr = np.empty(n_q)
    n_rel = np.empty(n_q, dtype=np.int64)
    grouped_kernel(
        scores_a, tkey, gains, rels, stop_r, offsets_a,
        ideal_gains, ideal_rels, ideal_off,
        ks_sorted, discount, c.ties == "average",
        idcg, dcg, err, prec, rr, n_rel,
    )  # fmt: skip

    list_len = np.diff(offsets_a)
    positive = idcg > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg = np.where(positive, dcg / np.where(positive, idcg, 1.0), 0.0)
    fill = {"zero": 0.0, "one": 1.0, "skip": np.nan}[c.zero_idcg]
    ndcg[~positive] = fill
    ndcg[list_len == 0] = 0.0  # nothing ranked: 0, whatever the zero-IDCG policy

    data: dict[str, object] = {
        "qid": qids_a,
        "list_len": list_len,
        "stratum": strata.label_of(strata.assign(list_len)),
        "n_relevant": n_rel,
    }
    for k in k_list:
        j = int(np.searchsorted(ks_sorted, k))
        data[f"idcg_at_{k}"] = idcg[:, j]
        data[f"dcg_at_{k}"] = dcg[:, j]
        data[f"ndcg_at_{k}"] = ndcg[:, j]
        data[f"err_at_{k}"] = err[:, j]
        data[f"p_at_{k}"] = prec[:, j]
    data["rr"] = rr
    return pd.DataFrame(data)


def _as_int_labels(labels: NDArray[np.generic], name: str) -> NDArray[np.int64]:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind in "iub":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{row}] = {arr[row]!r} is not an integer label")
        return np.ascontiguousarray(arr, dtype=np.int64)
    raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")


def _check_offsets(offsets: NDArray[np.integer], n_rows: int, name: str) -> NDArray[np.int64]:
    off = np.ascontiguousarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.shape[0] < 1:
        raise ValueError(f"{name} must be 1-D with n_queries + 1 entries, got shape {off.shape}")
    if off[0] != 0 or off[-1] != n_rows:
        raise ValueError(f"{name} must run from 0 to n_rows={n_rows}, got {off[0]}..{off[-1]}")
    if off.shape[0] > 1 and (np.diff(off) < 0).any():
        q = int(np.flatnonzero(np.diff(off) < 0)[0])
        raise ValueError(f"{name} decrease at query {q}: {off[q]} -> {off[q + 1]}")
    return off
