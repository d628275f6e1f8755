"""`idcg_report`: the distribution of IDCG@k over the queries of a split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray


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
