"""`diversify`: greedy MMR-style re-ranking of every query's list; `score_order`: the plain one.

Data layout: flat per-row arrays; the rows of query ``i`` are ``offsets[i]:offsets[i + 1]``
(int64, ``n_queries + 1`` entries, from 0 to ``n_rows``, non-decreasing; LightGBM's query
boundaries). An *order* is an int64 permutation of ``0..n_rows-1`` whose slice
``offsets[i]:offsets[i + 1]`` holds the rows of query ``i`` from the top rank down.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltr.compiled import kernels
from ltr.metrics.diversity import as_categories, as_features, check_offsets, unit_rows
from ltr.metrics.offsets import row_queries
from ltr.rerank.similarity import check_similarity


def score_order(scores: NDArray[np.floating], offsets: NDArray[np.integer]) -> NDArray[np.int64]:
    """Every query's rows by score descending, equal scores by row index ascending.

    One ``numpy.lexsort`` over (query id, -score), stable, so ties keep row order.

    Parameters
    ----------
    scores : float array, shape (n_rows,)
        Higher ranks first. NaN or infinite scores are an error.
    offsets : int array, shape (n_queries + 1,)
        Query boundaries (see the module docstring).

    Returns
    -------
    int64 array, shape (n_rows,)
        ``order[offsets[i]:offsets[i + 1]]``: the rows of query ``i``, top first.

    Examples
    --------
    >>> score_order(np.array([1.0, 3.0, 3.0, 0.5, 2.0]), np.array([0, 3, 5])).tolist()
    [1, 2, 0, 4, 3]
    """
    s = _check_scores(scores)
    off = check_offsets(offsets, s.shape[0])
    return _score_order(s, off)


def order_as_scores(order: NDArray[np.int64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Scores that rank every query's rows exactly in ``order``: ``0, -1, -2, ...`` from the top.

    No ties, so every measure and tie convention sees exactly that order.

    Examples
    --------
    >>> (-order_as_scores(np.array([1, 2, 0, 4, 3]), np.array([0, 3, 5]))).tolist()  # positions
    [2.0, 0.0, 1.0, 1.0, 0.0]
    """
    sizes = np.diff(offsets)
    position = np.arange(order.shape[0]) - np.repeat(offsets[:-1], sizes)
    scores = np.empty(order.shape[0], dtype=np.float64)
    scores[order] = -position.astype(np.float64)
    return scores


def diversify(
    scores: NDArray[np.floating],
    offsets: NDArray[np.integer],
    features_or_categories: NDArray[np.generic],
    *,
    alpha: float,
    similarity: str = "cosine",
    depth: int | None = None,
) -> NDArray[np.int64]:
    """Re-rank every query's list greedily, trading score for dissimilarity to what is above.

    Greedy (maximal marginal relevance, multiplicative form). Within a query:

    1. Scores are min-max normalised over the query's whole list:
       ``rel = (s - min_q s) / (max_q s - min_q s)`` in [0, 1], and ``rel = 1`` for every row
       when all scores of the query are equal. Raw LightGBM scores can be negative, and a
       negative score times a penalty factor below 1 would *rise*; on [0, 1] the penalty only
       ever lowers. The normalisation is monotone, so the result does not change under any
       increasing affine map of a query's scores (``a * s + b``, ``a > 0``). The query's
       lowest-scored rows have ``rel = 0``: nothing to trade, they stay at the bottom of the
       re-ranked part.
    2. Position 1 is the row of highest score.
    3. Each next position takes the remaining row maximising
       ``rel * (1 - alpha * max_sim)``, where ``max_sim`` is the MAXIMUM similarity of the row
       to any row already placed (kept per remaining row and updated after each placement:
       ``O(n_q^2 d)`` per query). Ties of that adjusted score go to the higher original score,
       then to the lower row index (deterministic).

    ``alpha = 0`` reproduces `score_order` exactly (score descending, ties by row index
    ascending): the adjusted score is then ``rel`` itself, monotone in the score, and equal
    ``rel`` values fall to the original score and row tie-breaks. With cosine similarity of
    features with negative entries, ``max_sim`` can be negative and the factor exceeds 1
    (a row opposite to everything above is favoured); for non-negative features, or
    categories, ``max_sim`` is in [0, 1].

    Parameters
    ----------
    scores : float array, shape (n_rows,)
        Model scores (higher ranks first), any sign. NaN or infinite scores are an error.
    offsets : int array, shape (n_queries + 1,)
        Query boundaries: from 0 to ``n_rows``, non-decreasing (an empty query is allowed).
    features_or_categories : array
        ``similarity="cosine"``: float matrix (n_rows, d), the item representation (a chosen
        subset of feature columns); ``similarity="category"``: int codes (n_rows,). See
        :mod:`ltr.rerank.similarity`.
    alpha : float
        Weight of the diversity penalty, in [0, 1]: 0 keeps the score order, 1 gives a row
        identical to one above an adjusted score of 0.
    similarity : {"cosine", "category"}
        How two rows compare (see :mod:`ltr.rerank.similarity`).
    depth : int, optional
        Re-rank only the top ``depth`` rows of each query's score order (>= 1): the candidates
        are those rows, and positions past ``depth`` keep the score order, row for row. The
        normalisation in step 1 still uses the whole query. Default: the whole list.

    Returns
    -------
    int64 array, shape (n_rows,)
        ``order[offsets[i]:offsets[i + 1]]``: the rows of query ``i`` in the new ranked order,
        top first.

    Examples
    --------
    Rows 0 and 1 share a category: with ``alpha=0.5``, row 2 (``rel = 0.4``) passes row 1
    (``rel = 0.5``, penalised to ``0.5 * (1 - 0.5 * 1) = 0.25``).

    >>> scores, offsets = np.array([3.0, 2.0, 1.8, 1.0]), np.array([0, 4])
    >>> categories = np.array([7, 7, 8, 9])
    >>> diversify(scores, offsets, categories, alpha=0.0, similarity="category").tolist()
    [0, 1, 2, 3]
    >>> diversify(scores, offsets, categories, alpha=0.5, similarity="category").tolist()
    [0, 2, 1, 3]
    """
    check_similarity(similarity)
    s = _check_scores(scores)
    n_rows = s.shape[0]
    off = check_offsets(offsets, n_rows)
    alpha_f = _check_alpha(alpha)
    depth_i = _check_depth(depth)
    use_cats = similarity == "category"
    if use_cats:
        cats = as_categories(features_or_categories, n_rows)
        unit = np.zeros((1, 1))
    else:
        unit = unit_rows(as_features(features_or_categories, n_rows))
        cats = np.zeros(1, dtype=np.int64)

    base = _score_order(s, off)
    n_q = off.shape[0] - 1
    if n_q == 0 or n_rows == 0:
        return base

    import numba  # here, not at module import: numba's import and cache load take about 1 s

    diversify_kernel = kernels.compiled("ltr.rerank._kernel").diversify_kernel

    longest = int(np.diff(off).max())
    d = longest if depth_i is None else min(depth_i, longest)
    scratch_len = max(1, d)
    # many small chunks balance the load (list lengths vary a lot); scratch is per chunk
    n_chunks = min(n_q, 64 * numba.get_num_threads())
    out = np.empty(n_rows, dtype=np.int64)
    diversify_kernel(s, off, base, unit, cats, use_cats, alpha_f, d, n_chunks, scratch_len, out)
    return out


def _score_order(s: NDArray[np.float64], off: NDArray[np.int64]) -> NDArray[np.int64]:
    qid = row_queries(off)
    # lexsort: the last key is the primary one; the sort is stable, so ties keep row order
    return np.lexsort((-s, qid)).astype(np.int64)


def _check_scores(scores: NDArray[np.generic]) -> NDArray[np.float64]:
    arr = np.asarray(scores)
    if arr.ndim != 1:
        raise ValueError(f"scores must be 1-D (n_rows,), got shape {arr.shape}")
    if arr.dtype.kind not in "iufb":
        raise ValueError(f"scores must be numbers, got dtype {arr.dtype}")
    s = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~np.isfinite(s)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"score at row {row} is {float(s[row])!r}; scores must be finite")
    return s


def _check_alpha(alpha: float) -> float:
    alpha = alpha.item() if isinstance(alpha, np.generic) else alpha  # repr 0.5, not np.float64(0.5)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise ValueError(f"alpha={alpha!r} must be a number in [0, 1]")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha={alpha!r} must be in [0, 1]")
    return float(alpha)


def _check_depth(depth: int | None) -> int | None:
    if depth is None:
        return None
    depth = depth.item() if isinstance(depth, np.generic) else depth
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth={depth!r} must be an integer >= 1 (or None: the whole list)")
    return int(depth)
