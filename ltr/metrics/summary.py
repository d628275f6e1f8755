"""`summarize`: means of the per-query table, overall and per stratum, keyed like MLflow keys.

A table here is a pandas DataFrame or its columns as numpy arrays by name
(:func:`ltr.metrics.table.per_query_columns`): the summary reads columns only, so ``ltr
evaluate`` summarises without pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.strata import EMPTY, EMPTY_KEY, Strata

if TYPE_CHECKING:
    import pandas as pd

_DEFAULT_STRATA = Strata()
_METRIC_PREFIXES = (
    "idcg_at_", "dcg_at_", "ndcg_at_", "err_at_", "p_at_", "rr_at_", "recall_at_", "ap_at_",
    "ild_at_", "coverage_at_", "alpha_ndcg_at_", "tail_at_",
)  # fmt: skip
_UNCUT = ("rr", "ap")


def is_metric_column(name: str) -> bool:
    """True for the columns `summarize` averages (``*_at_k`` measures, ``rr`` and ``ap``)."""
    return name in _UNCUT or name.startswith(_METRIC_PREFIXES)


def summarize(table: pd.DataFrame | Mapping[str, NDArray[Any]], *, strata: Strata = _DEFAULT_STRATA) -> dict[str, float]:
    """Mean of every metric column, overall and per stratum, plus counts.

    Keys (the MLflow keys without the split prefix): ``ndcg_at_10``, ``ndcg_at_10/len_1-10``,
    ..., ``n_queries``, ``n_queries/len_1-10``, ..., ``no_result_rate`` (share of queries with
    nothing ranked), ``n_skipped_zero_idcg`` (queries whose NDCG is NaN under
    ``zero_idcg="skip"``). NaN values are left out of means; a mean over no values is not
    emitted. Every stratum of ``strata`` gets its ``n_queries/...`` key, 0 included. Queries with
    an empty list belong to no stratum; when there are any they are reported under
    ``.../len_empty``, so that the count-weighted mean of the strata is the overall mean.
    The stratum of a query is recomputed from ``list_len`` with ``strata``.

    Examples
    --------
    >>> t = {"list_len": np.array([3, 20]), "ndcg_at_10": np.array([0.5, 1.0])}
    >>> summarize(t)["ndcg_at_10/len_11-50"], summarize(t)["n_queries/len_51_plus"]
    (1.0, 0.0)
    """
    lens = np.asarray(table["list_len"])
    n = int(lens.shape[0])
    idx = strata.assign(lens) + 1  # 0 = empty, 1.. = strata
    n_bins = strata.n_strata + 1
    counts = np.bincount(idx, minlength=n_bins)
    keys = (EMPTY_KEY, *strata.keys)
    show = [b for b in range(n_bins) if b != EMPTY + 1 or counts[b] > 0]

    out: dict[str, float] = {"n_queries": float(n)}
    for b in show:
        out[f"n_queries/{keys[b]}"] = float(counts[b])
    out["no_result_rate"] = float(counts[0] / n) if n else 0.0
    names = [str(c) for c in table]  # a DataFrame's columns, a mapping's keys
    ndcg_cols = [c for c in names if c.startswith("ndcg_at_")]
    if ndcg_cols:
        nan_any = np.isnan(np.column_stack([np.asarray(table[c], dtype=np.float64) for c in ndcg_cols])).any(axis=1)
        out["n_skipped_zero_idcg"] = float(nan_any.sum())
    else:
        out["n_skipped_zero_idcg"] = 0.0

    cols = [c for c in names if is_metric_column(c)]
    return out | stratum_means(table, cols, strata=strata)


def mean_of_known(values: NDArray[np.float64]) -> tuple[float, int]:
    """Sum and count of the non-NaN entries of a 1-D array: the one summation every mean uses.

    The known values are copied into one contiguous array and summed by numpy's pairwise sum,
    so the result depends only on the values and their order (not on the columns or strata
    around them): the per-round curves (:mod:`ltr.training.round_metric`) reproduce the run's
    means bit for bit.
    """
    flat = np.asarray(values, dtype=np.float64).ravel()
    known = flat[~np.isnan(flat)]
    return float(known.sum()), int(known.shape[0])


def stratum_means(table: pd.DataFrame | Mapping[str, NDArray[Any]], columns: list[str], *, strata: Strata = _DEFAULT_STRATA) -> dict[str, float]:
    """Mean of each of ``columns``, overall (``col``) and per stratum (``col/len_1-10``, ...).

    NaN values are left out; a mean over no values is not emitted; empty lists are reported
    under ``col/len_empty`` when there are any. Every mean is :func:`mean_of_known` of the
    column (the rows of a stratum in table order).
    """
    if not columns:
        return {}
    lens = np.asarray(table["list_len"])
    idx = strata.assign(lens) + 1  # 0 = empty, 1.. = strata
    n_bins = strata.n_strata + 1
    keys = (EMPTY_KEY, *strata.keys)
    counts = np.bincount(idx, minlength=n_bins)
    show = [b for b in range(n_bins) if b != EMPTY + 1 or counts[b] > 0]
    # rows grouped by stratum, table order kept within each: one slice per stratum
    order = np.argsort(idx, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    out: dict[str, float] = {}
    for col in columns:
        values = np.asarray(table[col], dtype=np.float64)
        total, n_known = mean_of_known(values)
        if n_known:
            out[col] = total / n_known
        grouped = values[order]
        for b in show:
            part_sum, part_n = mean_of_known(grouped[bounds[b] : bounds[b + 1]])
            if part_n:
                out[f"{col}/{keys[b]}"] = part_sum / part_n
    return out
