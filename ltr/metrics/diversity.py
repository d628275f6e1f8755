"""Diversity of ranked lists, per query: intra-list diversity, category coverage, alpha-nDCG.

Every measure reads an *order*: an int64 permutation of the rows whose slice
``offsets[i]:offsets[i + 1]`` lists query ``i``'s rows from the top rank down (what
:func:`ltr.rerank.diversify` returns; ``numpy.lexsort`` gives the score order). Only the top
``min(k, n_q)`` rows of a query count. Each function returns one float64 per query, computed
with whole-array numpy (sorts, ``bincount``, ``reduceat``): no per-query Python, no numba.

Conventions (written once, here)
--------------------------------
Positions are 1-based; the discount at position ``r`` is ``1 / log2(r + 1)``.

Intra-list diversity (ILD@k)
    The mean over the ``m (m - 1) / 2`` pairs of the top ``m = min(k, n_q)`` rows of
    ``1 - cos(x_i, x_j)``, with the cosine of :mod:`ltr.rerank.similarity` (0 when either
    feature vector is all zero, so such a pair counts as fully dissimilar, 1). In [0, 2]; in
    [0, 1] for non-negative features. A list of fewer than 2 rows has no pair: ILD 0.
    Computed without the pairs: ``sum_{i<j} u_i . u_j = (|sum u|^2 - sum |u|^2) / 2`` over the
    unit rows ``u``, so the cost is ``O(m d)`` per query (equal to the pairwise mean within a
    few ulps, clipped to [0, 2]).
Category coverage@k
    Distinct categories among the top ``k`` rows divided by ``min(k, C_q)``, with ``C_q`` the
    number of distinct categories in the query's whole list, or ``n_categories`` when given
    (then categories the list misses count as missed). This is subtopic recall (S-recall, Zhai,
    Cohen and Lafferty 2003: subtopics covered / subtopics of the query) with each row covering
    one category, normalised by the most ``k`` rows can cover, ``min(k, C_q)``, so that 1 is
    reachable at every ``k``. An empty list scores 0.
alpha-nDCG@k (Clarke et al. 2008)
    Each row covers exactly one category (its code) and is relevant when ``label > 0`` (binary
    relevance, as ndeval). The row at position ``r`` gains ``rel * (1 - alpha)^c``, ``c`` the
    number of relevant rows of its category above it; ``alpha-DCG@k`` sums gain / log2(r + 1)
    over ``r <= k``. The ideal is built from the query's rows by the greedy of ndeval: each next
    position takes the row of largest marginal gain. Finding the exact ideal is NP-hard in
    general (rows covering several subtopics); with one category per row, as here, the greedy
    is exact: it places the gains ``(1 - alpha)^j, j < m_c`` of every category ``c`` (``m_c``
    relevant rows) in descending order, the best any order can do, and is computed that way.
    ``alpha-nDCG@k = alpha-DCG@k / ideal``, 0 when the ideal is 0 (no relevant row). ``alpha = 0``
    is nDCG@k with binary gains; ``alpha`` is in [0, 1].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.offsets import row_queries


def intra_list_diversity(
    order: NDArray[np.integer],
    offsets: NDArray[np.integer],
    features: NDArray[np.generic],
    *,
    k: int,
) -> NDArray[np.float64]:
    """ILD@k of every query: mean ``1 - cosine`` over the pairs of its top ``min(k, n_q)`` rows.

    Parameters
    ----------
    order : int array, shape (n_rows,)
        Each query's rows, top first (see the module docstring).
    offsets : int array, shape (n_queries + 1,)
        Query boundaries: from 0 to ``n_rows``, non-decreasing.
    features : float array, shape (n_rows, d)
        The item representation (a chosen subset of feature columns), indexed by row.
    k : int
        Cut-off, >= 1.

    Returns
    -------
    float64 array, shape (n_queries,)
        In [0, 2]; 0 for a list of fewer than 2 rows.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> intra_list_diversity(np.array([0, 1, 2]), np.array([0, 3]), x, k=3).round(6).tolist()
    [0.666667]
    """
    off = check_offsets(offsets)
    n_rows = int(off[-1])
    order_a = _check_order(order, off)
    unit = unit_rows(as_features(features, n_rows))
    k_i = _check_k(k)
    n_q = off.shape[0] - 1
    qid, rank = _positions(off)
    top = rank < k_i
    rows = order_a[top]
    m = np.bincount(qid[top], minlength=n_q)
    u = unit[rows]
    sq = np.bincount(qid[top], weights=(u * u).sum(axis=1), minlength=n_q)
    total = np.zeros((n_q, unit.shape[1]))
    filled = m > 0
    if filled.any():
        starts = np.concatenate([[0], np.cumsum(m)[:-1]])[filled]
        total[filled] = np.add.reduceat(u, starts, axis=0)
    pair_dot = (total * total).sum(axis=1) - sq  # twice the sum of u_i . u_j over pairs i < j
    n_pairs2 = (m * (m - 1)).astype(np.float64)  # twice the number of pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        ild = np.where(m >= 2, 1.0 - pair_dot / np.where(m >= 2, n_pairs2, 1.0), 0.0)
    # rounding of the sums can step just outside [0, 2] (all rows alike: -1e-16)
    return np.asarray(np.clip(ild, 0.0, 2.0), dtype=np.float64)


def category_coverage(
    order: NDArray[np.integer],
    offsets: NDArray[np.integer],
    categories: NDArray[np.integer],
    *,
    k: int,
    n_categories: int | None = None,
) -> NDArray[np.float64]:
    """Coverage@k of every query: distinct categories in its top ``k`` over ``min(k, C_q)``.

    Parameters
    ----------
    order : int array, shape (n_rows,)
        Each query's rows, top first (see the module docstring).
    offsets : int array, shape (n_queries + 1,)
        Query boundaries: from 0 to ``n_rows``, non-decreasing.
    categories : int array, shape (n_rows,)
        Category code of every row (any int64 values).
    k : int
        Cut-off, >= 1.
    n_categories : int, optional
        The number of categories of the whole catalogue (codes must then be in
        ``0..n_categories-1``): the normaliser becomes ``min(k, n_categories)``. Default:
        ``C_q``, the distinct categories of the query's whole list.

    Returns
    -------
    float64 array, shape (n_queries,)
        In [0, 1]; 0 for an empty list.

    Examples
    --------
    >>> cats = np.array([5, 5, 6, 7])
    >>> category_coverage(np.array([0, 1, 2, 3]), np.array([0, 4]), cats, k=2).tolist()
    [0.5]
    >>> category_coverage(np.array([0, 2, 1, 3]), np.array([0, 4]), cats, k=2).tolist()
    [1.0]
    """
    off = check_offsets(offsets)
    n_rows = int(off[-1])
    order_a = _check_order(order, off)
    cats = as_categories(categories, n_rows)
    k_i = _check_k(k)
    n_q = off.shape[0] - 1
    if n_categories is not None:
        if isinstance(n_categories, np.generic):
            n_categories = n_categories.item()
        if isinstance(n_categories, bool) or not isinstance(n_categories, int):
            raise ValueError(f"n_categories={n_categories!r} must be an integer >= 1")
        if n_categories < 1:
            raise ValueError(f"n_categories={n_categories} must be >= 1")
        outside = (cats < 0) | (cats >= n_categories)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"categories[{row}] = {cats[row]} is outside 0..{n_categories - 1} "
                f"(n_categories={n_categories})"
            )
    qid, rank = _positions(off)
    top = rank < k_i
    covered = _distinct_per_group(qid[top], cats[order_a[top]], n_q)
    if n_categories is None:
        present = _distinct_per_group(qid, cats, n_q)  # rows of a query = its positions
    else:
        present = np.full(n_q, int(n_categories), dtype=np.int64)
    norm = np.minimum(k_i, present).astype(np.float64)
    empty = np.diff(off) == 0
    cov = np.where(empty, 0.0, covered / np.where(norm > 0, norm, 1.0))
    return np.asarray(cov, dtype=np.float64)


def alpha_ndcg(
    order: NDArray[np.integer],
    offsets: NDArray[np.integer],
    categories: NDArray[np.integer],
    labels: NDArray[np.generic],
    *,
    k: int,
    alpha: float = 0.5,
) -> NDArray[np.float64]:
    """alpha-nDCG@k of every query (Clarke et al. 2008), one category per row, binary relevance.

    Parameters
    ----------
    order : int array, shape (n_rows,)
        Each query's rows, top first (see the module docstring).
    offsets : int array, shape (n_queries + 1,)
        Query boundaries: from 0 to ``n_rows``, non-decreasing.
    categories : int array, shape (n_rows,)
        The one category (subtopic) each row covers.
    labels : array, shape (n_rows,)
        Relevance labels; a row is relevant when ``label > 0``.
    k : int
        Cut-off, >= 1.
    alpha : float
        Redundancy penalty in [0, 1] (0.5 as in the TREC Web track).

    Returns
    -------
    float64 array, shape (n_queries,)
        In [0, 1]; 0 when the ideal alpha-DCG@k is 0 (no relevant row, or an empty list).

    Examples
    --------
    Relevant rows of categories [a, a, b]: gains 1, 1/2, 1 at positions 1, 2, 3; the ideal
    [a, b, a] gains 1, 1, 1/2.

    >>> order, offsets = np.array([0, 1, 2]), np.array([0, 3])
    >>> v = alpha_ndcg(order, offsets, np.array([0, 0, 1]), np.array([1, 1, 1]), k=3)
    >>> bool(np.isclose(v[0], (1 + 0.5 / np.log2(3) + 1 / 2) / (1 + 1 / np.log2(3) + 0.5 / 2)))
    True
    """
    off = check_offsets(offsets)
    n_rows = int(off[-1])
    order_a = _check_order(order, off)
    cats = as_categories(categories, n_rows)
    rel = _relevant(labels, n_rows)
    k_i = _check_k(k)
    alpha = alpha.item() if isinstance(alpha, np.generic) else alpha  # repr 0.5, not np.float64(0.5)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise ValueError(f"alpha={alpha!r} must be a number in [0, 1]")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha={alpha!r} must be in [0, 1]")
    keep = 1.0 - float(alpha)
    n_q = off.shape[0] - 1
    qid, rank = _positions(off)
    # one code per (query, category) pair: rows of different queries never share a code
    by_pair = np.lexsort((cats, qid))
    new_pair = np.ones(n_rows, dtype=bool)
    new_pair[1:] = (qid[by_pair][1:] != qid[by_pair][:-1]) | (
        cats[by_pair][1:] != cats[by_pair][:-1]
    )
    pair = np.empty(n_rows, dtype=np.int64)
    pair[by_pair] = np.cumsum(new_pair) - 1

    # ranked: relevant rows in the top k; c = relevant rows of the same pair above, in rank order
    pos = np.flatnonzero((rank < k_i) & rel[order_a])
    rows = order_a[pos]
    srt = np.lexsort((pos, pair[rows]))  # by pair, then position
    above = np.empty(pos.shape[0], dtype=np.int64)
    above[srt] = _index_in_runs(pair[rows][srt])
    gain = np.power(keep, above) / np.log2(rank[pos] + 2.0)
    dcg = np.bincount(qid[pos], weights=gain, minlength=n_q)

    # ideal (greedy = exact here): the j-th relevant row of a pair gains keep**j; each query's
    # gains in descending order, i.e. by j ascending
    rel_rows = np.flatnonzero(rel)
    srt = np.lexsort((rel_rows, pair[rel_rows]))
    level = np.empty(rel_rows.shape[0], dtype=np.int64)
    level[srt] = _index_in_runs(pair[rel_rows][srt])
    q_rel = qid[rel_rows]  # a row's query is the query of its position (same slices)
    srt = np.lexsort((level, q_rel))
    ideal_rank = _index_in_runs(q_rel[srt])
    in_top = ideal_rank < k_i
    ideal_gain = np.power(keep, level[srt][in_top]) / np.log2(ideal_rank[in_top] + 2.0)
    idcg = np.bincount(q_rel[srt][in_top], weights=ideal_gain, minlength=n_q)

    positive = idcg > 0.0
    out = np.where(positive, dcg / np.where(positive, idcg, 1.0), 0.0)
    return np.asarray(out, dtype=np.float64)


def _index_in_runs(keys: NDArray[np.int64]) -> NDArray[np.int64]:
    """0-based index of every entry within its run of equal consecutive ``keys``."""
    n = keys.shape[0]
    idx = np.arange(n, dtype=np.int64)
    if n == 0:
        return idx
    start = np.zeros(n, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    start[new] = idx[new]
    out: NDArray[np.int64] = idx - np.maximum.accumulate(start)
    return out


def _distinct_per_group(
    group: NDArray[np.int64], values: NDArray[np.int64], n_groups: int
) -> NDArray[np.int64]:
    """Number of distinct ``values`` per ``group`` id (0..n_groups-1)."""
    if group.shape[0] == 0:
        return np.zeros(n_groups, dtype=np.int64)
    srt = np.lexsort((values, group))
    g = group[srt]
    v = values[srt]
    new = np.ones(g.shape[0], dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
    return np.bincount(g[new], minlength=n_groups).astype(np.int64)


def _positions(off: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Query id and 0-based rank of every position ``0..n_rows-1``."""
    qid = row_queries(off)
    rank = np.arange(int(off[-1]), dtype=np.int64) - off[qid]
    return qid, rank


def unit_rows(features: NDArray[np.generic]) -> NDArray[np.float64]:
    """Each row of ``features`` (shape (n_rows, d)) scaled to length 1; an all-zero row stays zero.

    Rows are first divided by their largest absolute entry, so squares neither overflow nor
    underflow: the result is the unit vector even for entries near 1e300 or 1e-300.

    Examples
    --------
    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    x = as_features(features)
    if x.shape[1] == 0:
        return x
    peak = np.abs(x).max(axis=1, keepdims=True)
    scaled = x / np.where(peak > 0.0, peak, 1.0)
    norm = np.sqrt((scaled * scaled).sum(axis=1, keepdims=True))
    out: NDArray[np.float64] = scaled / np.where(norm > 0.0, norm, 1.0)
    return out


def _check_k(k: int) -> int:
    k = k.item() if isinstance(k, np.generic) else k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r} must be an integer >= 1")
    return int(k)


def check_offsets(offsets: NDArray[np.generic], n_rows: int | None = None) -> NDArray[np.int64]:
    """``offsets`` as int64, checked: 1-D integers from 0, non-decreasing, ending at ``n_rows``
    when given."""
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"offsets must be 1-D integers with n_queries + 1 entries, got shape {arr.shape} "
            f"and dtype {arr.dtype}"
        )
    off = np.ascontiguousarray(arr, dtype=np.int64)
    if off[0] != 0:
        raise ValueError(f"offsets must start at 0, got {off[0]}")
    if n_rows is not None and off[-1] != n_rows:
        raise ValueError(f"offsets must run from 0 to n_rows={n_rows}, got {off[0]}..{off[-1]}")
    steps = np.diff(off)
    if (steps < 0).any():
        q = int(np.flatnonzero(steps < 0)[0])
        raise ValueError(f"offsets decrease at query {q}: {off[q]} -> {off[q + 1]}")
    return off


def _check_order(order: NDArray[np.generic], off: NDArray[np.int64]) -> NDArray[np.int64]:
    """``order`` as int64, checked: shape (n_rows,), every query's slice a permutation of its rows."""
    n_rows = int(off[-1])
    arr = np.asarray(order)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"order must be 1-D integers, got shape {arr.shape} and dtype {arr.dtype}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"order has {arr.shape[0]} entries; offsets end at n_rows={n_rows}")
    o = np.ascontiguousarray(arr, dtype=np.int64)
    outside = (o < 0) | (o >= n_rows)
    if outside.any():
        p = int(np.flatnonzero(outside)[0])
        raise ValueError(f"order[{p}] = {o[p]} is not a row (0..{n_rows - 1})")
    qid = row_queries(off)
    foreign = qid[o] != qid
    if foreign.any():
        p = int(np.flatnonzero(foreign)[0])
        raise ValueError(f"order[{p}] = {o[p]} is a row of query {qid[o[p]]}, not of query {qid[p]}")
    counts = np.bincount(o, minlength=n_rows)
    if (counts != 1).any():
        row = int(np.flatnonzero(counts > 1)[0])
        raise ValueError(f"order lists row {row} {counts[row]} times; it must be a permutation")
    return o


def as_features(features: NDArray[np.generic], n_rows: int | None = None) -> NDArray[np.float64]:
    """``features`` as a C-contiguous float64 matrix (n_rows, d), checked: 2-D numbers, finite,
    ``n_rows`` rows when given."""
    arr = np.asarray(features)
    if arr.ndim != 2 or arr.dtype.kind not in "iufb":
        raise ValueError(
            f"features must be a 2-D numeric array (n_rows, d), got shape {arr.shape} "
            f"and dtype {arr.dtype}"
        )
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"features have {arr.shape[0]} rows; offsets end at n_rows={n_rows}")
    x = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~np.isfinite(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"features[{row}, {col}] = {float(x[row, col])!r} is not finite")
    return x


def as_categories(categories: NDArray[np.generic], n_rows: int | None = None) -> NDArray[np.int64]:
    """``categories`` as C-contiguous int64 codes (n_rows,), checked: 1-D integers, ``n_rows``
    entries when given."""
    arr = np.asarray(categories)
    if arr.ndim != 1 or arr.dtype.kind not in "iub":
        raise ValueError(
            f"categories must be 1-D integer codes, got shape {arr.shape} and dtype {arr.dtype}"
        )
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"categories have {arr.shape[0]} rows; offsets end at n_rows={n_rows}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _relevant(labels: NDArray[np.generic], n_rows: int) -> NDArray[np.bool_]:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.dtype.kind not in "iufb":
        raise ValueError(f"labels must be 1-D numbers, got shape {arr.shape} and dtype {arr.dtype}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"labels have {arr.shape[0]} rows; offsets end at n_rows={n_rows}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        row = int(np.flatnonzero(np.isnan(arr))[0])
        raise ValueError(f"label at row {row} is NaN")
    out: NDArray[np.bool_] = arr > 0
    return out
