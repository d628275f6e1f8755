"""`idcg_report`: the distribution of IDCG@k over the queries of a split."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the tables' type only: reading one needs no pandas import (ltr train's checks)
    import pandas as pd


@dataclass(frozen=True, slots=True)
class IdcgReport:
    """Histogram of IDCG@k and the shares that tell whether NDCG@k can separate models.

    Attributes
    ----------
    k : the cut-off
    bin_edges : float64, shape (bins + 1,); ``counts[i]`` counts ``bin_edges[i] <= idcg <
        bin_edges[i + 1]`` (the last bin is closed), as `numpy.histogram`
    counts : int64, shape (bins,); sums to ``n_queries``
    share_zero : share of queries with IDCG@k = 0 (nothing relevant: NDCG is a policy, not a measure)
    share_le_one : share with IDCG@k <= 1 (at most one marginally relevant doc up top: easy to max out)
    share_shorter_than_k : share with fewer than k ranked docs (NDCG@k is really NDCG@len there)
    n_queries : number of queries
    """

    k: int
    bin_edges: NDArray[np.float64]
    counts: NDArray[np.int64]
    share_zero: float
    share_le_one: float
    share_shorter_than_k: float
    n_queries: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (lists and Python floats)."""
        return {
            "k": self.k,
            "bin_edges": [float(e) for e in self.bin_edges],
            "counts": [int(c) for c in self.counts],
            "share_zero": self.share_zero,
            "share_le_one": self.share_le_one,
            "share_shorter_than_k": self.share_shorter_than_k,
            "n_queries": self.n_queries,
        }


def idcg_report(table: pd.DataFrame, k: int, *, bins: int = 30) -> IdcgReport:
    """Build the `IdcgReport` of ``table`` (from `per_query_table`, which must have ``k``).

    The histogram spans ``[0, max IDCG@k]`` (``[0, 1]`` when every IDCG is 0).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"list_len": [3, 20, 5], "idcg_at_10": [0.0, 4.5, 1.0]})
    >>> r = idcg_report(t, 10, bins=3)
    >>> r.counts.tolist(), r.share_zero, r.share_le_one, r.share_shorter_than_k
    ([2, 0, 1], 0.3333333333333333, 0.6666666666666666, 0.6666666666666666)
    """
    col = f"idcg_at_{k}"
    if col not in table.columns:
        have = sorted(c.removeprefix("idcg_at_") for c in table.columns if c.startswith("idcg_at_"))
        raise ValueError(f"the table has no {col}; it was built with k in {have}")
    if bins < 1:
        raise ValueError(f"bins={bins} must be >= 1")
    idcg = table[col].to_numpy(dtype=np.float64)
    lens = table["list_len"].to_numpy()
    n = int(idcg.shape[0])
    top = float(idcg.max()) if n and float(idcg.max()) > 0 else 1.0
    counts, edges = np.histogram(idcg, bins=bins, range=(0.0, top))
    return IdcgReport(
        k=int(k),
        bin_edges=edges.astype(np.float64),
        counts=counts.astype(np.int64),
        share_zero=float(np.mean(idcg == 0.0)) if n else 0.0,
        share_le_one=float(np.mean(idcg <= 1.0)) if n else 0.0,
        share_shorter_than_k=float(np.mean(lens < k)) if n else 0.0,
        n_queries=n,
    )


#: Share of queries with IDCG@k <= 1 above which `low_idcg_note` speaks up ("dominate").
LOW_IDCG_DOMINATES = 0.5


def low_idcg_note(table: pd.DataFrame | Mapping[str, NDArray[Any]], k: int, *, split: str = "") -> str | None:
    """One line when queries with IDCG@k <= 1 dominate ``table`` (more than half), else None.

    Such a query has at most one marginally relevant document in its ideal top k: its NDCG@k is
    near 1 as soon as that document comes first (or 0, or the zero-IDCG policy, when there is
    none), so these queries pull the mean towards their own values and it loses its power to
    tell rankings apart. The line gives the mean NDCG@k, its value on those queries and on the
    rest, and the mean ERR@k (already logged), the steadier figure there: it is not normalised
    by the ideal, so a query with one marginal document adds little to it. ``table`` needs
    ``idcg_at_k``, ``ndcg_at_k`` and ``err_at_k`` (a DataFrame, or the columns by name).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"idcg_at_10": [1.0, 1.0, 0.0, 7.0], "ndcg_at_10": [1.0, 1.0, 0.0, 0.5],
    ...                   "err_at_10": [0.1, 0.1, 0.0, 0.4]})
    >>> print(low_idcg_note(t, 10))
    75 % of the queries have IDCG@10 <= 1 (one marginally relevant document at most): they pull the mean nDCG@10 0.6250 towards their own 0.6667 (the other 25 %: 0.5000); ERR@10 0.1500 is the steadier figure here
    >>> t = pd.DataFrame({"idcg_at_10": [1.0] * 39 + [3.0], "ndcg_at_10": [1.0] * 40, "err_at_10": [0.5] * 40})
    >>> low_idcg_note(t, 10).split(" (one")[0], low_idcg_note(t, 10).split("(the other ")[1][:4]
    ('98 % of the queries have IDCG@10 <= 1', '2 %:')
    """
    idcg = np.asarray(table[f"idcg_at_{k}"], dtype=np.float64)
    if idcg.size == 0:
        return None
    low = idcg <= 1.0
    share = float(low.mean())
    if share <= LOW_IDCG_DOMINATES:
        return None
    ndcg = np.asarray(table[f"ndcg_at_{k}"], dtype=np.float64)
    err = np.asarray(table[f"err_at_{k}"], dtype=np.float64)
    rest = f"{_mean(ndcg[~low]):.4f}" if (~low).any() else "none"
    where = f"{split}: " if split else ""
    percent = round(share * 100)  # the two shares printed add up to 100
    return (
        f"{where}{percent} % of the queries have IDCG@{k} <= 1 (one marginally relevant document at most): "
        f"they pull the mean nDCG@{k} {_mean(ndcg):.4f} towards their own {_mean(ndcg[low]):.4f} "
        f"(the other {100 - percent} %: {rest}); ERR@{k} {_mean(err):.4f} is the steadier figure here"
    )


def _mean(values: NDArray[np.float64]) -> float:
    known = values[~np.isnan(values)]
    return float(known.mean()) if known.size else float("nan")
