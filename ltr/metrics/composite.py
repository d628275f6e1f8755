"""Weighted composite metrics: per-query weighted sums of measures, summarised like any measure.

A composite is a name and weights over columns of a `per_query_table`, e.g.
``{"ndcg_blend": {"ndcg_at_3": 0.4, "ndcg_at_10": 0.6}}`` (config:
``eval.composite.ndcg_blend={ndcg_at_3: 0.4, ndcg_at_10: 0.6}``). Per query the composite is
``sum(weight * part)``; a query with any part NaN (``zero_idcg="skip"``) has a NaN composite and
is left out of its means. The summary keys are those of :func:`ltr.metrics.summary.summarize`:
``ndcg_blend``, ``ndcg_blend/len_1-10``, ... (and ``.../len_empty`` when there are empty lists).

Parts are the measures of the table: ``{idcg,dcg,ndcg,err,p,recall,ap}_at_{k}``, ``rr`` and ``ap``. A part's
cut-off need not be in ``eval.k``: `composite_ks` lists the cut-offs to add to the table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltr.errors import LtrUserError
from ltr.metrics.composite_rules import Composites, check_composites, composite_ks
from ltr.metrics.strata import Strata
from ltr.metrics.summary import stratum_means

__all__ = ["Composites", "check_composites", "composite_columns", "composite_ks", "summarize_composites"]

_DEFAULT_STRATA = Strata()


def composite_columns(table: pd.DataFrame, composites: Composites) -> pd.DataFrame:
    """One column per composite: the weighted sum of its parts, per query (rows as ``table``).

    Examples
    --------
    >>> t = pd.DataFrame({"ndcg_at_3": [1.0, 0.5], "ndcg_at_10": [0.5, np.nan]})
    >>> composite_columns(t, {"blend": {"ndcg_at_3": 0.4, "ndcg_at_10": 0.6}})["blend"].tolist()
    [0.7, nan]
    """
    check_composites(composites)
    out = {}
    for name, parts in composites.items():
        missing = [p for p in parts if p not in table.columns]
        if missing:
            raise LtrUserError(f"eval.composite.{name}: the per-query table has no {missing[0]!r}")
        # part by part, in the composite's order: the same bits whatever the table's memory
        # layout (a matrix product's rounding depends on it), so ltr evaluate --composite and
        # ltr train agree exactly; NaN in any part gives NaN
        total = np.zeros(len(table), dtype=np.float64)
        for part, weight in parts.items():
            total += float(weight) * table[part].to_numpy(dtype=np.float64)
        out[str(name)] = total
    return pd.DataFrame(out, index=table.index)


def summarize_composites(
    table: pd.DataFrame, names: list[str], *, strata: Strata = _DEFAULT_STRATA
) -> dict[str, float]:
    """Mean of each composite column, overall and per stratum (keys as `summarize`).

    Examples
    --------
    >>> t = pd.DataFrame({"list_len": [3, 20, 4], "blend": [0.2, 1.0, 0.4]})
    >>> s = summarize_composites(t, ["blend"])
    >>> round(s["blend"], 4), round(s["blend/len_1-10"], 4), s["blend/len_11-50"]
    (0.5333, 0.3, 1.0)
    """
    return stratum_means(table, names, strata=strata)
