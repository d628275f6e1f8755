"""`top_rows`: the row a ranking puts first in every query, under the metrics' tie conventions.

Used to name the top-ranked document of each query in the per-query tables (``top_doc_id``).
Ties in the highest score are broken as the metric conventions order a tied block:
``stable`` and ``average`` take the first tied row in input order (``average`` scores the
expected value over the block's orders; the table names its first row), ``pessimistic`` the
tied row with the lowest label, ``optimistic`` the one with the highest (the first in input
order among equal labels), ``docno_desc`` the tied row with the largest tie key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics.conventions import TIES


def top_rows(
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    *,
    labels: NDArray[np.integer] | None = None,
    ties: str = "stable",
    tie_keys: NDArray[np.integer] | None = None,
) -> NDArray[np.int64]:
    """Index of the first-ranked row of every query, shape (n_queries,); -1 for an empty query.

    Parameters
    ----------
    scores : float array, shape (n_rows,), higher ranks first (NaN is an error)
    offsets : int64 array, shape (n_queries + 1,), query boundaries
    labels : int array, shape (n_rows,); needed for ``ties="pessimistic"`` / ``"optimistic"``
    ties : one of the metric conventions' ``ties`` (see the module docstring)
    tie_keys : int array, shape (n_rows,); needed for ``ties="docno_desc"``

    Examples
    --------
    >>> s, off = np.array([1.0, 3.0, 3.0, 0.5]), np.array([0, 3, 4])
    >>> top_rows(s, off).tolist(), top_rows(s, off, labels=np.array([0, 2, 1, 0]), ties="pessimistic").tolist()
    ([1, 3], [2, 3])
    """
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = scores.shape[0]
    if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] != 0 or offsets[-1] != n:
        raise ValueError(f"offsets must run from 0 to n_rows={n}")
    if np.isnan(scores).any():
        raise ValueError(f"score at row {int(np.argmax(np.isnan(scores)))} is NaN")
    if ties not in TIES:
        raise ValueError(f"ties={ties!r} is not one of {', '.join(map(repr, TIES))}")
    sizes = np.diff(offsets)
    out = np.full(sizes.shape[0], -1, dtype=np.int64)
    full = np.flatnonzero(sizes > 0)
    if n == 0 or full.shape[0] == 0:
        return out
    starts = offsets[:-1][full]
    best = np.maximum.reduceat(scores, starts)
    is_top = scores == np.repeat(best, sizes[full])
    rows = np.arange(n, dtype=np.int64)
    if ties in ("stable", "average"):
        key = rows
    elif ties in ("pessimistic", "optimistic"):
        if labels is None:
            raise ValueError(f"ties={ties!r} needs the labels")
        lab = np.asarray(labels, dtype=np.int64)
        lab = lab - lab.min() if ties == "pessimistic" else lab.max() - lab
        key = lab * (n + 1) + rows  # lowest (pessimistic) / highest label first, then row order
    else:
        if tie_keys is None:
            raise ValueError("ties='docno_desc' needs tie_keys")
        tk = np.asarray(tie_keys, dtype=np.int64)
        key = (tk.max() - tk) * (n + 1) + rows  # the largest tie key first
    key = np.where(is_top, key, np.iinfo(np.int64).max)
    out[full] = np.minimum.reduceat(key, starts) % (n + 1)
    return out


#: The per-query table column naming the top-ranked document.
TOP_DOC_ID = "top_doc_id"


def with_top_doc_ids(
    table: pd.DataFrame,
    doc_ids: NDArray[np.object_] | None,
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    *,
    labels: NDArray[np.integer],
    ties: str,
) -> pd.DataFrame:
    """``table`` (one row per query of ``offsets``) with a last column ``top_doc_id``: the id of
    the row `top_rows` ranks first (``ties`` as the table's conventions); ``table`` itself when
    ``doc_ids`` is None."""
    if doc_ids is None:
        return table
    rows = top_rows(scores, offsets, labels=labels, ties=ties)
    return table.assign(**{TOP_DOC_ID: np.asarray(doc_ids, dtype=object)[rows]})
