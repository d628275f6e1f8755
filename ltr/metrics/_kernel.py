"""The one grouped kernel: per query, a top-K selection by score, then every measure from it.

Compiled with numba (``cache=True``: the one-time compile is stored next to this file and
reused by later processes), parallel over queries. No per-query Python, no dense padding:
each query works on its own slice ``offsets[q]:offsets[q + 1]`` of the flat arrays.

Ordering. Row ``i`` ranks before row ``j`` when ``score[i] > score[j]``, or the scores are equal
and the tie key of ``i`` is larger, or both are equal and ``i < j``. The tie key depends on
``mode``: `MODE_INPUT` none (input order: ``stable``, and ``average``, which does not use the
order inside a tied block), `MODE_PESSIMISTIC` ``-gain``, `MODE_OPTIMISTIC` ``gain``,
`MODE_TIE_KEYS` ``tie_keys[i]`` (docno ranks: docno descending).

Gains come from a lookup table ``lut`` indexed by label (negative labels: gain 0), so the kernel
reads the caller's label array as is and allocates nothing per row: peak extra memory is the
per-query work buffers.
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


MODE_INPUT = 0
MODE_PESSIMISTIC = 1
MODE_OPTIMISTIC = 2
MODE_TIE_KEYS = 3


@_jit
def _gain(labels: Any, lut: Any, i: int) -> float:
    lab = labels[i]
    return float(lut[lab]) if lab >= 0 else 0.0


@_jit
def _before(s: Any, labels: Any, lut: Any, tie_keys: Any, mode: int, i: int, j: int) -> bool:
    """True when row i ranks before row j (a strict total order)."""
    if s[i] != s[j]:
        return bool(s[i] > s[j])
    if mode == MODE_PESSIMISTIC:
        gi = _gain(labels, lut, i)
        gj = _gain(labels, lut, j)
        if gi != gj:
            return gi < gj
    elif mode == MODE_OPTIMISTIC:
        gi = _gain(labels, lut, i)
        gj = _gain(labels, lut, j)
        if gi != gj:
            return gi > gj
    elif mode == MODE_TIE_KEYS and tie_keys[i] != tie_keys[j]:
        return bool(tie_keys[i] > tie_keys[j])
    return i < j


@_jit
def _sift_down(
    heap: Any, size: int, pos: int, s: Any, labels: Any, lut: Any, tk: Any, mode: int
) -> None:
    # min-heap by rank order: the root is the row that ranks last among those kept.
    # Scores are compared inline; `_before` (a call) only settles equal scores.
    while True:
        c = 2 * pos + 1
        if c >= size:
            return
        if c + 1 < size:
            x = heap[c]
            y = heap[c + 1]
            if s[x] > s[y] or (s[x] == s[y] and _before(s, labels, lut, tk, mode, x, y)):
                c += 1
        x = heap[pos]
        y = heap[c]
        if s[x] > s[y] or (s[x] == s[y] and _before(s, labels, lut, tk, mode, x, y)):
            heap[pos] = y
            heap[c] = x
            pos = c
        else:
            return


@_jit
def _top_k(
    s: Any, labels: Any, lut: Any, tk: Any, mode: int, lo: int, hi: int, k: int, heap: Any
) -> int:
    """Write the first ``min(k, hi - lo)`` rows of ``lo:hi`` in rank order into ``heap``."""
    size = 0
    for i in range(lo, hi):
        if size < k:
            heap[size] = i
            c = size
            size += 1
            while c > 0:
                p = (c - 1) // 2
                x = heap[p]
                y = heap[c]
                if s[x] > s[y] or (s[x] == s[y] and _before(s, labels, lut, tk, mode, x, y)):
                    heap[p] = y
                    heap[c] = x
                    c = p
                else:
                    break
        else:
            # most rows score below the last kept one: reject them without a call
            si = s[i]
            sr = s[heap[0]]
            if si < sr:
                continue
            if si > sr or _before(s, labels, lut, tk, mode, i, heap[0]):
                heap[0] = i
                _sift_down(heap, size, 0, s, labels, lut, tk, mode)
    # heap sort: pop the last-ranked row to the back until the array is in rank order
    n = size
    while n > 1:
        n -= 1
        tmp = heap[0]
        heap[0] = heap[n]
        heap[n] = tmp
        _sift_down(heap, n, 0, s, labels, lut, tk, mode)
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


@_jit
def _block_term(above_rel: int, m: int, r: int, t: int) -> float:
    """E[rel_p * (relevant rows at positions <= p)] at block position ``t`` (0-based) of a tied
    block of ``m`` rows, ``r`` relevant, below ``above_rel`` relevant rows, for a uniform random
    order of the block (McSherry and Najork 2008): the row is relevant with probability ``r/m``;
    given that, each of the ``t`` rows before it in the block is relevant with probability
    ``(r-1)/(m-1)``. Untied (``m = 1``): ``above_rel + 1`` for a relevant row, else 0.
    """
    if r == 0:
        return 0.0
    if m == 1:
        return float(above_rel + 1)
    return (r / m) * (above_rel + 1 + t * (r - 1) / (m - 1))


@_jit
def _block_precision_terms(above_rel: int, m: int, r: int, n_pos: int, out: Any, start: int) -> None:
    """`_block_term` at the first ``n_pos`` positions of a block, into ``out[start:]``."""
    for t in range(n_pos):
        out[start + t] = _block_term(above_rel, m, r, t)


@_jit
def _count_relevant(labels: Any, lo: int, hi: int, rel_threshold: int) -> int:
    c = 0
    for i in range(lo, hi):
        if labels[i] >= rel_threshold:
            c += 1
    return c


@_jit
def _ap_by_score_blocks(s: Any, labels: Any, lo: int, hi: int, rel_threshold: int, n_rel: int, average: bool) -> float:
    """`_full_ap_sum` without sorting the list: only the scores of its ``n_rel >= 1`` relevant
    rows are sorted (their distinct values are the blocks that matter), and one pass with a
    binary search counts, per block, the rows above it and in it. Exact for ``average``, and for
    any order when no relevant row ties with another row; else -1 (the caller sorts)."""
    u = np.empty(n_rel)
    c = 0
    for i in range(lo, hi):
        if labels[i] >= rel_threshold:
            u[c] = s[i]
            c += 1
    u.sort()
    rc = np.zeros(n_rel, dtype=np.int64)
    d = 0  # distinct relevant scores, ascending, with their relevant counts
    for j in range(n_rel):
        if d == 0 or u[j] != u[d - 1]:
            u[d] = u[j]
            rc[d] = 1
            d += 1
        else:
            rc[d - 1] += 1
            if not average:
                return -1.0
    cnt = np.zeros(d + 1, dtype=np.int64)  # cnt[b]: rows with u[b-1] < score <= u[b] (b = d: above all)
    eq = np.zeros(d, dtype=np.int64)  # eq[b]: rows with score == u[b]
    for i in range(lo, hi):
        v = s[i]
        a = 0
        b = d
        while a < b:  # a = number of distinct relevant scores below v
            mid = (a + b) >> 1
            if u[mid] < v:
                a = mid + 1
            else:
                b = mid
        cnt[a] += 1
        if a < d and u[a] == v:
            eq[a] += 1
    total = 0.0
    above = 0
    crel = 0
    for b in range(d - 1, -1, -1):  # blocks from the highest score down
        above += cnt[b + 1]
        m = eq[b]
        if m > 1 and not average:
            return -1.0
        for t in range(m):
            total += _block_term(crel, m, rc[b], t) / (above + t + 1)
        crel += rc[b]
    return total


@_jit
def _full_ap_sum(
    s: Any, labels: Any, lut: Any, tk: Any, mode: int, average: bool, lo: int, hi: int, rel_threshold: int, n_rel: int
) -> float:
    """``sum_p E[rel_p * (relevant rows at positions <= p)] / p`` over the whole list ``lo:hi``
    (AP times the number of relevant judgments; ``n_rel`` relevant rows in the list, >= 1).
    `_ap_by_score_blocks` when it applies, else a full sort of the list: numpy's stable sort for
    input order (``stable``), the heap of `_top_k` for the other modes."""
    by_blocks = _ap_by_score_blocks(s, labels, lo, hi, rel_threshold, n_rel, average)
    if by_blocks >= 0.0:
        return by_blocks
    n = hi - lo
    if mode == MODE_INPUT:
        order = np.argsort(-s[lo:hi], kind="mergesort") + lo
    else:
        order = np.empty(n, dtype=np.int64)
        _top_k(s, labels, lut, tk, mode, lo, hi, n, order)
    total = 0.0
    crel = 0
    if not average:
        for p in range(n):
            if labels[order[p]] >= rel_threshold:
                crel += 1
                total += crel / (p + 1)
        return total
    a = 0
    while a < n:
        sa = s[order[a]]
        b = a
        r = 0
        while b < n and s[order[b]] == sa:
            if labels[order[b]] >= rel_threshold:
                r += 1
            b += 1
        if r > 0:
            for t in range(b - a):
                total += _block_term(crel, b - a, r, t) / (a + t + 1)
        crel += r
        a = b
    return total


@_jit
def _expected_rr(above: int, m: int, r: int, cutoff: int) -> float:
    """E[1 / rank of the first relevant row, 0 beyond rank ``cutoff``] for a random order of a
    tied block (RR@cutoff; RR itself with a cutoff past the block).

    The block follows ``above`` rows and holds ``m`` rows, ``r >= 1`` of them relevant. The first
    relevant row is at block position ``j`` (0-based) with ``P(j) = C(m-j-1, r-1) / C(m, r)``:
    ``P(0) = r/m`` and ``P(j+1) / P(j) = (m-j-r) / (m-j-1)``. A block of one relevant row
    (``m = r = 1``) gives ``1 / (above + 1)``: the untied case.
    """
    pj = r / m
    acc = 0.0
    for j in range(m - r + 1):
        if above + 1 + j > cutoff:
            break
        acc += pj / (above + 1 + j)
        if m - j - 1 > 0:
            pj *= (m - j - r) / (m - j - 1)
    return acc


@_jit
def _set_rr(q: int, rr: Any, rr_at: Any, ks: Any, above: int, m: int, r: int) -> None:
    """RR and RR@k of query ``q`` whose first relevant row lies in a block of ``m`` rows
    (``r`` relevant) after ``above`` rows; ``m = 0``: nothing relevant, all 0."""
    if m == 0:
        rr[q] = 0.0
        for ki in range(ks.shape[0]):
            rr_at[q, ki] = 0.0
        return
    rr[q] = _expected_rr(above, m, r, above + m)
    for ki in range(ks.shape[0]):
        rr_at[q, ki] = _expected_rr(above, m, r, ks[ki])


@_jit
def _one_query(
    q: int,
    labels: Any,
    scores: Any,
    offsets: Any,
    ideal_labels: Any,
    ideal_offsets: Any,
    tie_keys: Any,
    lut: Any,
    label_order: Any,
    use_hist: bool,
    rel_threshold: int,
    stop_scale: float,
    mode: int,
    average: bool,
    ks: Any,
    discount: Any,
    idcg: Any,
    dcg: Any,
    err: Any,
    prec: Any,
    rr: Any,
    rr_at: Any,
    n_rel: Any,
    full_ap: bool,
    rec: Any,
    ap_at: Any,
    ap: Any,
    buf: Any,
    eg: Any,
    er: Any,
    es: Any,
    ea: Any,
    ig: Any,
    hist: Any,
) -> None:
    """Every measure of query ``q``; ``buf, eg, er, es, ea, ig`` (>= min(k_max, list length)) and
    ``hist`` (n_labels) are scratch space reused across queries. ``rec``, ``ap_at`` and ``ap``
    are written as sums over the ranked rows divided by ``n_rel[q]``, 0 when ``n_rel[q] == 0``
    (the caller applies the zero policy); ``ap`` only when ``full_ap``."""
    n_k = ks.shape[0]
    k_max = ks[n_k - 1]
    n_labels = lut.shape[0]
    lo = offsets[q]
    hi = offsets[q + 1]
    n = hi - lo
    # ---- ideal: the top k_max gains of the judged docs, into ig -----------------------------
    ilo = ideal_offsets[q]
    ihi = ideal_offsets[q + 1]
    m_ideal = ihi - ilo
    n_ideal = min(k_max, m_ideal)
    cnt = 0
    if use_hist:
        # counting sort of the judged labels; gains come out in label_order (gain descending)
        hist[:] = 0
        for i in range(ilo, ihi):
            lab = ideal_labels[i]
            if lab >= 0:
                hist[lab] += 1
            elif lab >= rel_threshold:
                cnt += 1
        for lab in range(max(rel_threshold, 0), n_labels):
            cnt += hist[lab]
        p = 0
        for o in range(n_labels):
            lab = label_order[o]
            c = hist[lab]
            while c > 0 and p < n_ideal:
                ig[p] = lut[lab]
                p += 1
                c -= 1
            if p == n_ideal:
                break
        for j in range(p, n_ideal):  # negative labels: gain 0, ranked last
            ig[j] = 0.0
    else:
        gains = np.empty(m_ideal)
        for i in range(m_ideal):
            lab = ideal_labels[ilo + i]
            gains[i] = float(lut[lab]) if lab >= 0 else 0.0
            if lab >= rel_threshold:
                cnt += 1
        ibuf = np.empty(n_ideal, dtype=np.int64)
        _top_k(gains, ideal_labels, lut, tie_keys, MODE_INPUT, 0, m_ideal, k_max, ibuf)
        for p in range(n_ideal):
            ig[p] = gains[ibuf[p]]
    n_rel[q] = cnt
    run = 0.0
    ki = 0
    for p in range(k_max):
        if p >= n_ideal:  # nothing left to add: the remaining cut-offs keep this value
            while ki < n_k:
                idcg[q, ki] = run
                ki += 1
            break
        run += ig[p] * discount[p]
        while ki < n_k and ks[ki] == p + 1:
            idcg[q, ki] = run
            ki += 1
    if n == 0:
        for ki in range(n_k):
            dcg[q, ki] = 0.0
            err[q, ki] = 0.0
            prec[q, ki] = 0.0
            rec[q, ki] = 0.0
            ap_at[q, ki] = 0.0
        if full_ap:
            ap[q] = 0.0
        _set_rr(q, rr, rr_at, ks, 0, 0, 0)
        return
    # ---- ranked: the top k_max rows in rank order, expected gain / relevance / stop ---------
    n_top = _top_k(scores, labels, lut, tie_keys, mode, lo, hi, k_max, buf)
    surv = 1.0
    crel = 0  # relevant rows above the current position (average: in the blocks above)
    partial_r = 0  # average: relevant rows of a tied block that continues past the top
    if not average:
        for p in range(n_top):
            i = buf[p]
            g = _gain(labels, lut, i)
            eg[p] = g
            er[p] = 1.0 if labels[i] >= rel_threshold else 0.0
            if labels[i] >= rel_threshold:
                crel += 1
                ea[p] = float(crel)
            else:
                ea[p] = 0.0
            es[p] = surv * g * stop_scale
            surv *= 1.0 - g * stop_scale
    else:
        a = 0
        while a < n_top:
            sa = scores[buf[a]]
            b = a
            while b < n_top and scores[buf[b]] == sa:
                b += 1
            # block = positions a..b-1 of the top; it may continue past the top if b == n_top
            m = b - a
            if b == n_top and n > n_top:
                m = 0
                for i in range(lo, hi):
                    if scores[i] == sa:
                        m += 1
            if m == 1:  # no tie: the common case, without allocations
                i = buf[a]
                g = _gain(labels, lut, i)
                eg[a] = g
                er[a] = 1.0 if labels[i] >= rel_threshold else 0.0
                if labels[i] >= rel_threshold:
                    crel += 1
                    ea[a] = float(crel)
                else:
                    ea[a] = 0.0
                es[a] = surv * g * stop_scale
                surv *= 1.0 - g * stop_scale
                a = b
                continue
            if m > b - a:
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
                g = _gain(labels, lut, members[c])
                gsum += g
                rsum += 1.0 if labels[members[c]] >= rel_threshold else 0.0
                rv[c] = g * stop_scale
            for p in range(a, b):
                eg[p] = gsum / m
                er[p] = rsum / m
            _block_precision_terms(crel, m, int(rsum), b - a, ea, a)
            crel += int(rsum)
            if m > b - a:
                partial_r = int(rsum)
            _block_stop_probs(rv, m, b - a, surv, es, a)
            for c in range(m):
                surv *= 1.0 - rv[c]
            a = b
    run_g = 0.0
    run_r = 0.0
    run_e = 0.0
    run_a = 0.0
    inv_rel = 1.0 / cnt if cnt > 0 else 0.0
    ki = 0
    for p in range(k_max):
        if p >= n_top:  # nothing left to add: the remaining cut-offs keep these values
            while ki < n_k:
                dcg[q, ki] = run_g
                prec[q, ki] = run_r / ks[ki]
                err[q, ki] = run_e
                rec[q, ki] = run_r * inv_rel
                ap_at[q, ki] = run_a * inv_rel
                ki += 1
            break
        run_g += eg[p] * discount[p]
        run_r += er[p]
        run_e += es[p] / (p + 1)
        run_a += ea[p] / (p + 1)
        while ki < n_k and ks[ki] == p + 1:
            dcg[q, ki] = run_g
            prec[q, ki] = run_r / ks[ki]
            err[q, ki] = run_e
            rec[q, ki] = run_r * inv_rel
            ap_at[q, ki] = run_a * inv_rel
            ki += 1
    # ---- average precision over the whole list ---------------------------------------------
    if full_ap:
        r_list = crel if n == n_top else _count_relevant(labels, lo, hi, rel_threshold)
        if n == n_top or (partial_r == 0 and crel == r_list):
            # every relevant row (and its tie block) lies in the top: AP is the sum above
            ap[q] = run_a * inv_rel
        else:
            ap[q] = _full_ap_sum(scores, labels, lut, tie_keys, mode, average, lo, hi, rel_threshold, r_list) * inv_rel
    # ---- reciprocal rank of the first relevant row (whole list) ----------------------------
    # from the top when a relevant row is there (and, for average, its tie block ends inside
    # the top); else by passes over the whole list
    first = -1
    for p in range(n_top):
        if labels[buf[p]] >= rel_threshold:
            first = p
            break
    if first >= 0 and not average:
        _set_rr(q, rr, rr_at, ks, first, 1, 1)
        return
    if first >= 0:
        sb = scores[buf[first]]
        a = first
        while a > 0 and scores[buf[a - 1]] == sb:
            a -= 1
        b = first
        while b < n_top and scores[buf[b]] == sb:
            b += 1
        if b < n_top or n == n_top:
            r = 0
            for p in range(a, b):
                if labels[buf[p]] >= rel_threshold:
                    r += 1
            _set_rr(q, rr, rr_at, ks, a, b - a, r)
            return
    best = -1
    for i in range(lo, hi):
        if labels[i] >= rel_threshold and (
            best < 0 or _before(scores, labels, lut, tie_keys, mode, i, best)
        ):
            best = i
    if best < 0:
        _set_rr(q, rr, rr_at, ks, 0, 0, 0)
    elif not average:
        rank = 1
        for i in range(lo, hi):
            if i != best and _before(scores, labels, lut, tie_keys, mode, i, best):
                rank += 1
        _set_rr(q, rr, rr_at, ks, rank - 1, 1, 1)
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
                if labels[i] >= rel_threshold:
                    r += 1
        _set_rr(q, rr, rr_at, ks, above, m, r)


@_jit_parallel
def grouped_kernel(
    labels: NDArray[np.int64],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    ideal_labels: NDArray[np.int64],
    ideal_offsets: NDArray[np.int64],
    tie_keys: NDArray[np.float64],
    lut: NDArray[np.float64],
    label_order: NDArray[np.int64],
    use_hist: bool,
    rel_threshold: int,
    stop_scale: float,
    mode: int,
    average: bool,
    ks: NDArray[np.int64],
    discount: NDArray[np.float64],
    n_chunks: int,
    scratch_len: int,
    idcg: NDArray[np.float64],
    dcg: NDArray[np.float64],
    err: NDArray[np.float64],
    prec: NDArray[np.float64],
    rr: NDArray[np.float64],
    rr_at: NDArray[np.float64],
    n_rel: NDArray[np.int64],
    full_ap: bool,
    rec: NDArray[np.float64],
    ap_at: NDArray[np.float64],
    ap: NDArray[np.float64],
) -> None:
    """Fill ``idcg, dcg, err, prec, rr_at, rec, ap_at`` (n_queries x len(ks)), ``rr``, ``n_rel``
    and (``full_ap``) ``ap`` per query. Recall and AP are divided by ``n_rel`` (0 where it is 0).

    ``ks`` ascending; ``discount[p]`` the discount of position ``p + 1`` for ``p < max(ks)``; ``lut[label]`` the
    gain of a label >= 0 and ``label_order`` the labels by gain descending (``use_hist``: the
    ideal order comes from a counting sort over labels, else from a top-k heap); ERR's stop
    probability of a row is ``gain * stop_scale``; ``tie_keys`` is read only in
    `MODE_TIE_KEYS`. Queries are cut into ``n_chunks`` contiguous chunks run in parallel, each
    with its own scratch space of ``scratch_len >= min(max(ks), longest list)``.
    """
    n_q = offsets.shape[0] - 1
    for chunk in numba.prange(n_chunks):
        q0 = chunk * n_q // n_chunks
        q1 = (chunk + 1) * n_q // n_chunks
        buf = np.empty(scratch_len, dtype=np.int64)
        eg = np.empty(scratch_len)
        er = np.empty(scratch_len)
        es = np.empty(scratch_len)
        ea = np.empty(scratch_len)
        ig = np.empty(scratch_len)
        hist = np.zeros(lut.shape[0], dtype=np.int64)
        for q in range(q0, q1):
            _one_query(
                q, labels, scores, offsets, ideal_labels, ideal_offsets, tie_keys, lut,
                label_order, use_hist, rel_threshold, stop_scale, mode, average, ks, discount,
                idcg, dcg, err, prec, rr, rr_at, n_rel, full_ap, rec, ap_at, ap, buf, eg, er, es, ea,
                ig, hist,
            )  # fmt: skip
