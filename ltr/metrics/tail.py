"""Long-tail exposure: the share of a list's top-k attention that goes to tail items.

An item is in the *tail* when its popularity (any per-row column: sales, views, a popularity
feature) lies below the ``tail_quantile`` of the popularity of all rows considered; the rest is
the head. Position ``p`` (0-based) of a ranked list gets the exposure of nDCG's discount,
``1 / log2(p + 2)``; ``tail_at_k`` of a query is the tail's share of the exposure of its top
``min(k, list length)`` positions (0: only head items at the top, 1: only tail items).
Everything is numpy over the flat ``order`` array and query ``offsets``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.offsets import row_queries


def tail_items(popularity: NDArray[np.floating], *, tail_quantile: float) -> NDArray[np.bool_]:
    """True for the rows whose popularity lies strictly below the ``tail_quantile`` quantile.

    Examples
    --------
    The 0.6 quantile of 1, 2, 3, 50, 1000 is ``3 + 0.4 * (50 - 3) = 21.8``:

    >>> tail_items(np.array([1.0, 50.0, 2.0, 3.0, 1000.0]), tail_quantile=0.6).tolist()
    [True, False, True, True, False]
    """
    if not 0.0 < tail_quantile < 1.0:
        raise ValueError(f"tail_quantile must lie in (0, 1), got {tail_quantile}")
    values = np.asarray(popularity, dtype=np.float64)
    return np.asarray(values < np.quantile(values, tail_quantile))


def tail_exposure(
    order: NDArray[np.integer], offsets: NDArray[np.integer], is_tail: NDArray[np.bool_], *, k: int
) -> NDArray[np.float64]:
    """The tail's share of the top-``k`` exposure of every query.

    Parameters
    ----------
    order : int array, shape (n_rows,)
        ``order[offsets[i]:offsets[i + 1]]``: the rows of query ``i``, top first
        (:func:`ltr.rerank.score_order`).
    offsets : int array, shape (n_queries + 1,)
    is_tail : bool array, shape (n_rows,)
        Per row (by row index, not by position): in the tail or not.
    k : the cut-off, >= 1

    Returns
    -------
    float64 array, shape (n_queries,)

    Examples
    --------
    Tail rows 1 and 2; query 0 ranks rows 1, 0 (tail first): ``1 / (1 + 1/log2(3))``; query 1
    ranks rows 3, 2 (tail second): ``(1/log2(3)) / (1 + 1/log2(3))``:

    >>> tail = np.array([False, True, True, False])
    >>> tail_exposure(np.array([1, 0, 3, 2]), np.array([0, 2, 4]), tail, k=2).round(6).tolist()
    [0.613147, 0.386853]
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    position = np.arange(offsets[-1]) - np.repeat(offsets[:-1], sizes)
    weight = np.where(position < k, 1.0 / np.log2(position + 2.0), 0.0)
    query = row_queries(offsets)
    tail = np.asarray(is_tail, dtype=np.bool_)[np.asarray(order)]
    total = np.bincount(query, weights=weight, minlength=sizes.shape[0])
    share = np.bincount(query, weights=weight * tail, minlength=sizes.shape[0])
    return np.divide(share, total, out=np.zeros_like(share), where=total > 0)
