"""The greedy diversity re-ranker, compiled with numba (see :func:`ltr.rerank.diversify`).

``cache=True``: the one-time compile is stored next to this file and reused by later processes.
Parallel over chunks of queries; each query works on its own slice ``offsets[q]:offsets[q + 1]``
and writes only that slice of the output, with scratch space reused within a chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numpy.typing import NDArray

F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def _jit_parallel(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True, parallel=True)(fn))


@_jit
def _similarity(unit: Any, cats: Any, use_cats: bool, i: int, j: int) -> float:
    """Similarity of rows i and j: same category (1 or 0), or the clipped dot of unit rows."""
    if use_cats:
        return 1.0 if cats[i] == cats[j] else 0.0
    acc = 0.0
    for c in range(unit.shape[1]):
        acc += unit[i, c] * unit[j, c]
    return min(1.0, max(-1.0, acc))


@_jit
def _one_query(
    q: int,
    scores: Any,
    offsets: Any,
    base: Any,
    unit: Any,
    cats: Any,
    use_cats: bool,
    alpha: float,
    depth: int,
    out: Any,
    pool: Any,
    rel: Any,
    max_sim: Any,
) -> None:
    lo = offsets[q]
    hi = offsets[q + 1]
    n = hi - lo
    for p in range(lo, hi):
        out[p] = base[p]
    m = min(depth, n)
    if m <= 1:
        return
    # min-max normalised scores over the whole query; halves so that top - bottom cannot overflow
    top = 0.5 * scores[base[lo]]
    bottom = 0.5 * scores[base[hi - 1]]
    span = top - bottom
    for j in range(m):
        r = base[lo + j]
        pool[j] = r
        rel[j] = (0.5 * scores[r] - bottom) / span if span > 0.0 else 1.0
    # position 0: the highest score; every other candidate's max similarity starts from it
    first = pool[0]
    for j in range(1, m):
        max_sim[j] = _similarity(unit, cats, use_cats, first, pool[j])
    for p in range(1, m):
        best = p
        best_adj = rel[p] * (1.0 - alpha * max_sim[p])
        for j in range(p + 1, m):
            adj = rel[j] * (1.0 - alpha * max_sim[j])
            if adj > best_adj:
                better = True
            elif adj < best_adj:
                better = False
            else:
                sj = scores[pool[j]]
                sb = scores[pool[best]]
                better = sj > sb or (sj == sb and pool[j] < pool[best])
            if better:
                best = j
                best_adj = adj
        if best != p:
            tmp_i = pool[p]
            pool[p] = pool[best]
            pool[best] = tmp_i
            tmp_f = rel[p]
            rel[p] = rel[best]
            rel[best] = tmp_f
            tmp_f = max_sim[p]
            max_sim[p] = max_sim[best]
            max_sim[best] = tmp_f
        placed = pool[p]
        for j in range(p + 1, m):
            s = _similarity(unit, cats, use_cats, placed, pool[j])
            if s > max_sim[j]:
                max_sim[j] = s
    for j in range(m):
        out[lo + j] = pool[j]


@_jit_parallel
def diversify_kernel(
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    base: NDArray[np.int64],
    unit: NDArray[np.float64],
    cats: NDArray[np.int64],
    use_cats: bool,
    alpha: float,
    depth: int,
    n_chunks: int,
    scratch_len: int,
    out: NDArray[np.int64],
) -> None:
    """Write the diversified order of every query into ``out`` (n_rows,).

    ``base`` is the score order (score descending, row ascending within each query); ``unit``
    the unit feature rows (read unless ``use_cats``) and ``cats`` the category codes (read when
    ``use_cats``). Only the first ``min(depth, n_q)`` rows of each query's score order are
    re-ranked; ``scratch_len >= min(depth, longest list)``.
    """
    n_q = offsets.shape[0] - 1
    for chunk in numba.prange(n_chunks):
        q0 = chunk * n_q // n_chunks
        q1 = (chunk + 1) * n_q // n_chunks
        pool = np.empty(scratch_len, dtype=np.int64)
        rel = np.empty(scratch_len)
        max_sim = np.empty(scratch_len)
        for q in range(q0, q1):
            _one_query(
                q, scores, offsets, base, unit, cats, use_cats, alpha, depth, out, pool, rel,
                max_sim,
            )  # fmt: skip
