"""The one grouped kernel: per query, a top-K selection by score, then every measure from it.

Compiled with numba (``cache=True``: the one-time compile is stored next to this file and
reused by later processes), parallel over queries. No per-query Python, no dense padding:
each query works on its own slice ``offsets[q]:offsets[q + 1]`` of the flat arrays.

Ordering. Row ``i`` ranks before row ``j`` when ``score[i] > score[j]``, or the scores are equal
and ``tkey[i] > tkey[j]``, or both are equal and ``i < j``. The caller encodes the tie policy in
``tkey`` (zeros: input order; ``-gain``: pessimistic; ``gain``: optimistic; docno ranks:
docno descending). With ``average=True`` the order inside a block of equal scores is not used:
measures are expected values over all orders of the block (see the package docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numpy.typing import NDArray

F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True, inline="always")(fn))


def _jit_parallel(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True, parallel=True)(fn))


@_jit
def _before(s: Any, t: Any, i: int, j: int) -> bool:
    """True when row i ranks before row j (a strict total order)."""
    if s[i] != s[j]:
        return bool(s[i] > s[j])
    if t[i] != t[j]:
        return bool(t[i] > t[j])
    return i < j


@_jit
def _sift_down(heap: Any, size: int, pos: int, s: Any, t: Any) -> None:
    # min-heap by rank order: the root is the row that ranks last among those kept
    while True:
        c = 2 * pos + 1
        if c >= size:
            return
        if c + 1 < size and _before(s, t, heap[c], heap[c + 1]):
            c += 1
        if _before(s, t, heap[pos], heap[c]):
            tmp = heap[pos]
            heap[pos] = heap[c]
            heap[c] = tmp
            pos = c
        else:
            return


@_jit
def _top_k(s: Any, t: Any, lo: int, hi: int, k: int, heap: Any) -> int:
    """Write the first ``min(k, hi - lo)`` rows of ``lo:hi`` in rank order into ``heap``."""
    size = 0
    for i in range(lo, hi):
        if size < k:
            heap[size] = i
            c = size
            size += 1
            while c > 0:
                p = (c - 1) // 2
                if _before(s, t, heap[p], heap[c]):
                    tmp = heap[p]
                    heap[p] = heap[c]
                    heap[c] = tmp
                    c = p
                else:
                    break
        elif _before(s, t, i, heap[0]):
            heap[0] = i
            _sift_down(heap, size, 0, s, t)
    # heap sort: pop the last-ranked row to the back until the array is in rank order
    n = size
    while n > 1:
        n -= 1
        tmp = heap[0]
        heap[0] = heap[n]
        heap[n] = tmp
        _sift_down(heap, n, 0, s, t)
    return size


@_jit
def _block_stop_probs(
    r_vals: Any, m: int, n_pos: int, surv: float, out: Any, out_start: int
) -> None:
    """Expected ERR stop probability at the first ``n_pos`` positions of a tied block.

    ``r_vals[:m]`` are the stop probabilities R of the block's rows (in any order). For a uniform
    random order of the block, the row at block position ``j`` stops the user with probability
    ``surv * (1/m) * sum_x R_x * E_j(x)``, where ``E_j(x)`` is the mean of ``prod (1 - R)`` over
    the ``j``-subsets of the other ``m - 1`` rows (the elementary symmetric mean). Rows are
    grouped by distinct R; ``E_j`` is built by the recurrence
    ``E'_j = (n+1-j)/(n+1) E_j + j/(n+1) a E_{j-1}``, which stays in [0, 1] (no binomials).
    """
    vals = np.sort(r_vals[:m])
    acc = np.zeros(n_pos)
    e = np.empty(n_pos)
    g = 0
    while g < m:
        h = g
        while h < m and vals[h] == vals[g]:
            h += 1
        rg = vals[g]
        count_g = h - g
        if rg > 0.0:
            e[:] = 0.0
            e[0] = 1.0
            size = 0
            for x in range(m):
                if x == g:  # leave out one row of this group
                    continue
                a = 1.0 - vals[x]
                size += 1
                top = min(n_pos - 1, size)
                for j in range(top, 0, -1):
                    e[j] = ((size - j) / size) * e[j] + (j / size) * a * e[j - 1]
            for j in range(n_pos):
                acc[j] += count_g * rg * e[j]
        g = h
    for j in range(n_pos):
        out[out_start + j] = surv * acc[j] / m


@_jit_parallel
def grouped_kernel(
    scores: NDArray[np.float64],
    tkey: NDArray[np.float64],
    gains: NDArray[np.float64],
    rels: NDArray[np.float64],
    stop_r: NDArray[np.float64],
    offsets: NDArray[np.int64],
    ideal_gains: NDArray[np.float64],
    ideal_rels: NDArray[np.float64],
    ideal_offsets: NDArray[np.int64],
    ks: NDArray[np.int64],
    discount: NDArray[np.float64],
    average: bool,
    idcg: NDArray[np.float64],
    dcg: NDArray[np.float64],
    err: NDArray[np.float64],
    prec: NDArray[np.float64],
    rr: NDArray[np.float64],
    n_rel: NDArray[np.int64],
) -> None:
    """Fill ``idcg, dcg, err, prec`` (n_queries x len(ks)), ``rr`` and ``n_rel`` per query.

    ``ks`` ascending; ``discount[p] = 1 / log2(p + 2)`` for ``p < max(ks)``.
    """
    n_q = offsets.shape[0] - 1
    n_k = ks.shape[0]
    k_max = ks[n_k - 1]
    for q in numba.prange(n_q):
        lo = offsets[q]
        hi = offsets[q + 1]
        n = hi - lo
        # ---- ideal: top k_max gains of the judged docs -------------------------------------
        ilo = ideal_offsets[q]
        ihi = ideal_offsets[q + 1]
        cnt = 0
        for i in range(ilo, ihi):
            if ideal_rels[i] > 0.0:
                cnt += 1
        n_rel[q] = cnt
        ibuf = np.empty(min(k_max, ihi - ilo), dtype=np.int64)
        n_ideal = _top_k(ideal_gains, ideal_gains, ilo, ihi, k_max, ibuf)
        run = 0.0
        ki = 0
        for p in range(k_max):
            if p < n_ideal:
                run += ideal_gains[ibuf[p]] * discount[p]
            while ki < n_k and ks[ki] == p + 1:
                idcg[q, ki] = run
                ki += 1
        if n == 0:
            for ki in range(n_k):
                dcg[q, ki] = 0.0
                err[q, ki] = 0.0
                prec[q, ki] = 0.0
            rr[q] = 0.0
            continue
        # ---- ranked: top k_max rows in rank order --------------------------------------------
        buf = np.empty(min(k_max, n), dtype=np.int64)
        n_top = _top_k(scores, tkey, lo, hi, k_max, buf)
        eg = np.empty(n_top)  # expected gain at each position
        er = np.empty(n_top)  # expected binary relevance
        es = np.empty(n_top)  # expected ERR stop probability
        if not average:
            surv = 1.0
            for p in range(n_top):
                i = buf[p]
                eg[p] = gains[i]
                er[p] = rels[i]
                es[p] = surv * stop_r[i]
                surv *= 1.0 - stop_r[i]
        else:
            surv = 1.0
            a = 0
            while a < n_top:
                sa = scores[buf[a]]
                b = a
                while b < n_top and scores[buf[b]] == sa:
                    b += 1
                # block = positions a..b-1 of the top; it may continue past the top if b == n_top
                m = b - a
                boundary = b == n_top and n > n_top
                if boundary:
                    m = 0
                    for i in range(lo, hi):
                        if scores[i] == sa:
                            m += 1
                    members = np.empty(m, dtype=np.int64)
                    c = 0
                    for i in range(lo, hi):
                        if scores[i] == sa:
                            members[c] = i
                            c += 1
                else:
                    members = buf[a:b].copy()
                gsum = 0.0
                rsum = 0.0
                rv = np.empty(m)
                for c in range(m):
                    gsum += gains[members[c]]
                    rsum += rels[members[c]]
                    rv[c] = stop_r[members[c]]
                for p in range(a, b):
                    eg[p] = gsum / m
                    er[p] = rsum / m
                if m == 1:
                    es[a] = surv * rv[0]
                else:
                    _block_stop_probs(rv, m, b - a, surv, es, a)
                for c in range(m):
                    surv *= 1.0 - rv[c]
                a = b
        run_g = 0.0
        run_r = 0.0
        run_e = 0.0
        ki = 0
        for p in range(k_max):
            if p < n_top:
                run_g += eg[p] * discount[p]
                run_r += er[p]
                run_e += es[p] / (p + 1)
            while ki < n_k and ks[ki] == p + 1:
                dcg[q, ki] = run_g
                prec[q, ki] = run_r / ks[ki]
                err[q, ki] = run_e
                ki += 1
        # ---- reciprocal rank of the first relevant row (whole list) ------------------------
        best = -1
        for i in range(lo, hi):
            if rels[i] > 0.0 and (best < 0 or _before(scores, tkey, i, best)):
                best = i
        if best < 0:
            rr[q] = 0.0
        elif not average:
            rank = 1
            for i in range(lo, hi):
                if i != best and _before(scores, tkey, i, best):
                    rank += 1
            rr[q] = 1.0 / rank
        else:
            sb = scores[best]
            above = 0
            m = 0
            r = 0
            for i in range(lo, hi):
                if scores[i] > sb:
                    above += 1
                elif scores[i] == sb:
                    m += 1
                    if rels[i] > 0.0:
                        r += 1
            # first relevant row of the block at block position j: P(j) = C(m-j-1, r-1) / C(m, r)
            pj = r / m
            acc = 0.0
            for j in range(m - r + 1):
                acc += pj / (above + 1 + j)
                if m - j - 1 > 0:
                    pj *= (m - j - r) / (m - j - 1)
            rr[q] = acc
