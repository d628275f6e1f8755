"""`per_query_table`: every measure of every query, from flat arrays and query offsets.

:func:`per_query_columns` gives the same columns as numpy arrays (the stratum aside) and
:func:`as_table` makes the table of them: pandas is imported only where a table is made, so
``ltr evaluate``'s JSON and terminal output never import it (issue 31).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ltr.compiled import kernels
from ltr.errors import ScoreError, qid_text
from ltr.metrics.conventions import UNJUDGED, MetricConventions
from ltr.metrics.offsets import row_queries
from ltr.metrics.strata import EMPTY_LABEL, Strata

if TYPE_CHECKING:
    import pandas as pd

_DEFAULT_CONVENTIONS = MetricConventions()
_DEFAULT_STRATA = Strata()


def metric_columns(ks: Sequence[int]) -> list[str]:
    """Names of the metric columns of a table built with ``ks``, in table order."""
    cols: list[str] = []
    for k in ks:
        cols += [f"idcg_at_{k}", f"dcg_at_{k}", f"ndcg_at_{k}", f"err_at_{k}", f"p_at_{k}", f"rr_at_{k}"]
        cols += [f"recall_at_{k}", f"ap_at_{k}"]
    return [*cols, "rr", "ap"]


def per_query_table(
    labels: NDArray[np.integer] | NDArray[np.floating],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    *,
    ks: Sequence[int] = (5, 10),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    strata: Strata = _DEFAULT_STRATA,
    ideal_labels: NDArray[np.integer] | NDArray[np.floating] | None = None,
    ideal_offsets: NDArray[np.int64] | None = None,
    tie_keys: NDArray[np.generic] | None = None,
    max_gain: float | None = None,
    full_ap: bool = True,
    qid_names: NDArray[np.object_] | None = None,
) -> pd.DataFrame:
    """One row per query with its list length, stratum and every measure at every ``k``.

    Parameters
    ----------
    labels : int array, shape (n_rows,)
        Graded relevance of every ranked row; rows of query ``i`` are ``offsets[i]:offsets[i+1]``.
    scores : float array, shape (n_rows,)
        Model scores (higher ranks first). NaN is an error.
    offsets : int64 array, shape (n_queries + 1,)
        Query boundaries: starts at 0, non-decreasing, ends at ``n_rows``. An empty query (judged
        but nothing ranked) has list length 0 and scores 0 on every measure.
    qids : array, shape (n_queries,)
        Query ids, copied to the ``qid`` column.
    ks : sequence of int
        Cut-offs (>= 1); columns appear in this order.
    conventions : MetricConventions
        Gain, ties, zero-IDCG policy and the binary relevance threshold.
    strata : Strata
        List-length strata for the ``stratum`` column.
    ideal_labels, ideal_offsets : optional
        The judgments IDCG and ``n_relevant`` are computed from, per query (trec_eval: all judged
        docs, retrieved or not). Default: ``labels`` and ``offsets``.
    tie_keys : array, shape (n_rows,), optional
        Secondary key for ``ties="docno_desc"``: the larger key ranks first among equal scores
        (pass the rank of each docno in sorted order).
    max_gain : float, optional
        The largest gain in the data, for ERR's stop probability ``gain / (max_gain + 1)``.
        Default: the largest gain of ``labels`` / ``ideal_labels`` (see :func:`largest_gain`).
        Pass the value of the whole split when the table is built part by part, so the parts'
        tables concatenate to the whole split's table.
    full_ap : bool
        Compute ``ap`` (AP over the whole list; default). It is the one measure that looks past
        the top ``max(ks)`` of every list: on long lists with many relevant rows it costs 3-4x
        all the others together; False leaves the column out (callers that need NDCG only).
    qid_names : object array of str, shape (n_queries,), optional
        Every query's qid as the input wrote it, when ``qids`` are the numbers a reader gave
        string qids (:attr:`ltr.data.ranking_data.RankingData.qid_names`): an error message
        names a query by it (:func:`ltr.errors.qid_text`), never by its number. The table keeps
        ``qids``.

    Returns
    -------
    pandas.DataFrame
        Columns ``qid, list_len, stratum`` (categorical of the stratum display labels, e.g.
        ``"11-50"``; ``"empty"`` for an empty list), ``n_relevant``, then per ``k``
        ``idcg_at_k, dcg_at_k, ndcg_at_k, err_at_k, p_at_k, rr_at_k, recall_at_k, ap_at_k``,
        then ``rr`` and ``ap`` (without ``full_ap``: no ``ap``); rows in input order.

    Examples
    --------
    >>> t = per_query_table(np.array([2, 3, 1, 0, 2]), np.array([5.0, 4, 3, 2, 1]),
    ...                     np.array([0, 5]), np.array([7]), ks=[5])
    >>> round(float(t.loc[0, "ndcg_at_5"]), 6)
    0.838647
    """
    columns = per_query_columns(
        labels, scores, offsets, qids, ks=ks, conventions=conventions, ideal_labels=ideal_labels,
        ideal_offsets=ideal_offsets, tie_keys=tie_keys, max_gain=max_gain, full_ap=full_ap, qid_names=qid_names,
    )  # fmt: skip
    return as_table(columns, strata)


def per_query_columns(
    labels: NDArray[np.integer] | NDArray[np.floating],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    *,
    ks: Sequence[int] = (5, 10),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    ideal_labels: NDArray[np.integer] | NDArray[np.floating] | None = None,
    ideal_offsets: NDArray[np.int64] | None = None,
    tie_keys: NDArray[np.generic] | None = None,
    max_gain: float | None = None,
    full_ap: bool = True,
    qid_names: NDArray[np.object_] | None = None,
) -> dict[str, NDArray[np.generic]]:
    """The columns of :func:`per_query_table` but ``stratum``, as numpy arrays by name, in
    table order (the same parameters, without ``strata``); :func:`as_table` makes the table.

    Examples
    --------
    >>> c = per_query_columns(np.array([2, 3, 1, 0, 2]), np.array([5.0, 4, 3, 2, 1]),
    ...                       np.array([0, 5]), np.array([7]), ks=[5])
    >>> list(c)[:4], round(float(c["ndcg_at_5"][0]), 6)
    (['qid', 'list_len', 'n_relevant', 'idcg_at_5'], 0.838647)
    """
    qids_a = np.asarray(qids)
    n_q = np.asarray(offsets).shape[0] - 1
    if qids_a.shape != (n_q,):
        raise ValueError(f"qids have shape {qids_a.shape}; offsets describe {n_q} queries")
    m = measure_arrays(
        labels, scores, offsets, ks=ks, conventions=conventions, ideal_labels=ideal_labels,
        ideal_offsets=ideal_offsets, tie_keys=tie_keys, max_gain=max_gain, qids=qids_a, full_ap=full_ap,
        qid_names=qid_names,
    )
    data: dict[str, NDArray[np.generic]] = {"qid": qids_a, "list_len": m.list_len, "n_relevant": m.n_relevant}
    for j, k in enumerate(m.ks):
        data[f"idcg_at_{k}"] = m.idcg[:, j]
        data[f"dcg_at_{k}"] = m.dcg[:, j]
        data[f"ndcg_at_{k}"] = m.ndcg[:, j]
        data[f"err_at_{k}"] = m.err[:, j]
        data[f"p_at_{k}"] = m.precision[:, j]
        data[f"rr_at_{k}"] = m.rr_at[:, j]
        data[f"recall_at_{k}"] = m.recall[:, j]
        data[f"ap_at_{k}"] = m.ap_at[:, j]
    data["rr"] = m.rr
    if full_ap:
        data["ap"] = m.ap
    return data


def as_table(columns: Mapping[str, NDArray[np.generic]], strata: Strata = _DEFAULT_STRATA) -> pd.DataFrame:
    """The per-query table of ``columns`` (:func:`per_query_columns`, or a selection of them that
    keeps ``list_len``): a ``stratum`` column inserted after ``list_len``, the rest in order."""
    import pandas as pd  # only where a table is made (module docstring)

    list_len = np.asarray(columns["list_len"])
    data: dict[str, object] = {}
    for name, values in columns.items():
        data[name] = values
        if name == "list_len":
            # categorical of the display labels: str values, built from codes without string copies
            data["stratum"] = pd.Categorical.from_codes(
                strata.assign(list_len) + 1, categories=pd.Index([EMPTY_LABEL, *strata.labels])
            )
    return pd.DataFrame(data)


@dataclass(frozen=True, slots=True)
class MeasureArrays:
    """Every measure of every query as arrays (what `per_query_table` puts in columns).

    ``ks`` in the order asked for; ``idcg``, ``dcg``, ``ndcg``, ``err``, ``precision``, ``rr_at``,
    ``recall``, ``ap_at`` have shape (n_queries, len(ks)), column ``j`` for ``ks[j]``;
    ``list_len``, ``n_relevant``, ``rr``, ``ap`` shape (n_queries,) (``ap`` all NaN when built
    with ``full_ap=False``).
    """

    ks: tuple[int, ...]
    list_len: NDArray[np.int64]
    n_relevant: NDArray[np.int64]
    idcg: NDArray[np.float64]
    dcg: NDArray[np.float64]
    ndcg: NDArray[np.float64]
    err: NDArray[np.float64]
    precision: NDArray[np.float64]
    rr: NDArray[np.float64]
    rr_at: NDArray[np.float64]
    recall: NDArray[np.float64]
    ap_at: NDArray[np.float64]
    ap: NDArray[np.float64]


def check_scores_not_nan(
    scores: NDArray[np.floating],
    offsets: NDArray[np.integer],
    qids: NDArray[np.generic] | None = None,
    qid_names: NDArray[np.object_] | None = None,
) -> None:
    """Raise :class:`ltr.errors.ScoreError` naming the first NaN of ``scores`` (flat, one per
    row; ``offsets``: the queries' boundaries): its row and its query, by ``qid_names`` (as
    written), else ``qids``, else its position.

    >>> check_scores_not_nan(np.array([0.5, np.nan]), np.array([0, 1, 2]), np.array([7, 9]))
    Traceback (most recent call last):
    ...
    ltr.errors.ScoreError: score at row 1 (qid 9) is NaN
    """
    nan = np.isnan(scores)
    if not nan.any():
        return
    row = int(np.argmax(nan))
    q = int(np.searchsorted(offsets, row, side="right") - 1)
    if qid_names is not None:  # the qid as written, not the number a reader gave it
        where = f"qid {qid_text(q, qid_names)}"
    else:
        where = f"qid {qids[q]}" if qids is not None else f"query {q}"
    raise ScoreError(f"score at row {row} ({where}) is NaN")


def measure_arrays(
    labels: NDArray[np.integer] | NDArray[np.floating],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    *,
    ks: Sequence[int] = (5, 10),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    ideal_labels: NDArray[np.integer] | NDArray[np.floating] | None = None,
    ideal_offsets: NDArray[np.int64] | None = None,
    tie_keys: NDArray[np.generic] | None = None,
    max_gain: float | None = None,
    qids: NDArray[np.generic] | None = None,
    full_ap: bool = True,
    qid_names: NDArray[np.object_] | None = None,
) -> MeasureArrays:
    """The measures of `per_query_table` as arrays, without building a table (same arguments,
    same values; for callers that score many rankings of the same queries, e.g. every round).
    ``qids`` only name a query in error messages; ``qid_names`` (one per query, as written),
    when given, name it instead: ``qid 'q-b'``, not the number a reader gave it.
    ``full_ap=False`` leaves out AP over the whole list (``ap`` is NaN), the one measure that
    may sort a whole list rather than its top ``max(ks)``; every other value is the same.
    A NaN score raises :class:`ltr.errors.ScoreError` (a ``ValueError`` and a ``DataError``:
    one line in every command); other arguments it cannot take, ``ValueError``."""
    if conventions.gain == "value":  # real gains as codes into a gain table: the kernel as is
        labels, ideal_labels, conventions = value_codes(labels, ideal_labels, conventions)
    labels_a = _as_int_labels(labels, "labels")
    scores_a = np.ascontiguousarray(scores, dtype=np.float64)
    offsets_a = _check_offsets(offsets, labels_a.shape[0], "offsets")
    n_q = offsets_a.shape[0] - 1
    if scores_a.shape != labels_a.shape:
        raise ValueError(f"scores have shape {scores_a.shape}, labels {labels_a.shape}")
    check_scores_not_nan(scores_a, offsets_a, qids, qid_names)
    k_list = [int(k) for k in ks]
    if not k_list or any(k < 1 for k in k_list) or len(set(k_list)) != len(k_list):
        raise ValueError(f"ks={list(ks)} must be distinct integers >= 1")

    if (ideal_labels is None) != (ideal_offsets is None):
        raise ValueError("give ideal_labels and ideal_offsets together")
    if ideal_labels is None:
        ideal_a, ideal_off = labels_a, offsets_a
    else:
        ideal_a = _as_int_labels(ideal_labels, "ideal_labels")
        ideal_off = _check_offsets(ideal_offsets, ideal_a.shape[0], "ideal_offsets")  # type: ignore[arg-type]
        if ideal_off.shape != offsets_a.shape:
            raise ValueError(
                f"ideal_offsets describe {ideal_off.shape[0] - 1} queries, offsets {n_q}"
            )

    kernel = kernels.load("ltr.metrics._kernel", small=labels_a.shape[0] + ideal_a.shape[0] <= INTERPRET_MAX_ROWS)
    c = conventions
    lut, g_max = _gain_table(c, labels_a, ideal_a)
    stop_scale = 1.0 / ((g_max if max_gain is None else float(max_gain)) + 1.0)
    label_order = np.argsort(-lut, kind="stable").astype(np.int64)
    mode = {
        "average": kernel.MODE_INPUT,
        "stable": kernel.MODE_INPUT,
        "pessimistic": kernel.MODE_PESSIMISTIC,
        "optimistic": kernel.MODE_OPTIMISTIC,
        "docno_desc": kernel.MODE_TIE_KEYS,
    }[c.ties]
    if c.ties == "docno_desc":
        if tie_keys is None:
            raise ValueError('ties="docno_desc" needs tie_keys (e.g. the rank of each docno)')
        tkey = np.ascontiguousarray(tie_keys, dtype=np.float64)
        if tkey.shape != labels_a.shape:
            raise ValueError(f"tie_keys have shape {tkey.shape}, labels {labels_a.shape}")
    else:
        tkey = np.zeros(1)

    ks_sorted = np.array(sorted(k_list), dtype=np.int64)
    k_max = int(ks_sorted[-1])
    discount = c.discounts(k_max)
    longest = 0
    if n_q:
        longest = max(int(np.diff(offsets_a).max()), int(np.diff(ideal_off).max()))
    scratch_len = max(1, min(k_max, longest))
    # many small chunks balance the load (list lengths vary a lot); scratch is per chunk
    n_chunks = min(n_q, 64 * kernels.threads(kernel))
    # A DCG sums at most max(gain) * sum(discount). When that could overflow float64 (exp gain
    # of labels near 1023, huge explicit gains), the kernel runs on gains scaled by an exact
    # power of two 2**-shift: every ratio (NDCG, ERR's stop probabilities, gain order) is then
    # bit-identical to the unscaled computation, and DCG/IDCG are scaled back (inf only when
    # the value itself is beyond float64). Ordinary inputs: shift 0, nothing changes.
    shift = 0
    bound = float(lut.max(initial=0.0)) * float(discount.sum())
    if not bound < _SAFE_SUM:
        exponent = math.frexp(float(lut.max()))[1] + math.frexp(float(discount.sum()))[1]
        shift = max(0, exponent + 1 - _SAFE_EXP)
        lut = np.ldexp(lut, -shift)
        stop_scale = math.ldexp(stop_scale, shift)
    shape = (n_q, ks_sorted.shape[0])
    idcg = np.empty(shape)
    dcg = np.empty(shape)
    err = np.empty(shape)
    prec = np.empty(shape)
    rr = np.empty(n_q)
    rr_at = np.empty(shape)
    n_rel = np.empty(n_q, dtype=np.int64)
    recall = np.empty(shape)
    ap_at = np.empty(shape)
    ap = np.empty(n_q) if full_ap else np.full(n_q, np.nan)
    kernel.grouped_kernel(
        labels_a, scores_a, offsets_a, ideal_a, ideal_off, tkey,
        lut, label_order, lut.shape[0] <= HIST_MAX_LABELS, int(c.rel_threshold), stop_scale, mode, c.ties == "average",
        ks_sorted, discount, n_chunks, scratch_len, idcg, dcg, err, prec, rr, rr_at, n_rel,
        full_ap, recall, ap_at, ap,
    )  # fmt: skip

    list_len = np.diff(offsets_a)
    rearranged = bool(np.any(np.diff(discount) > 0.0))  # weights that grow somewhere down the list
    if rearranged:
        idcg = rearranged_idcg(ideal_a, ideal_off, list_len, lut, ks_sorted, discount)
    positive = idcg > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg = np.where(positive, dcg / np.where(positive, idcg, 1.0), 0.0)
    if rearranged:  # the best order's DCG is IDCG bit for bit; another order that ties it may differ in rounding
        np.minimum(ndcg, 1.0, out=ndcg)
    if shift:
        with np.errstate(over="ignore"):
            idcg = np.ldexp(idcg, shift)
            dcg = np.ldexp(dcg, shift)
    fill = {"zero": 0.0, "one": 1.0, "skip": np.nan}[c.zero_idcg]
    ndcg[~positive] = fill
    ndcg[list_len == 0] = 0.0  # nothing ranked: 0, whatever the zero-IDCG policy
    # recall and AP of a query with nothing relevant: the same policy, per query
    no_rel = (n_rel == 0) & (list_len > 0)
    if no_rel.any():
        recall[no_rel] = fill
        ap_at[no_rel] = fill
        if full_ap:
            ap[no_rel] = fill

    order = [int(np.searchsorted(ks_sorted, k)) for k in k_list]
    return MeasureArrays(
        ks=tuple(k_list), list_len=list_len, n_relevant=n_rel, idcg=idcg[:, order], dcg=dcg[:, order],
        ndcg=ndcg[:, order], err=err[:, order], precision=prec[:, order], rr=rr, rr_at=rr_at[:, order],
        recall=recall[:, order], ap_at=ap_at[:, order], ap=ap,
    )


def rearranged_idcg(
    ideal_labels: NDArray[np.int64],
    ideal_offsets: NDArray[np.int64],
    list_len: NDArray[np.int64],
    lut: NDArray[np.float64],
    ks: NDArray[np.int64],
    discount: NDArray[np.float64],
) -> NDArray[np.float64]:
    """IDCG@k (n_queries x len(ks), ``ks`` ascending) as the best DCG@k any order of the list
    reaches, for position weights in any order: the largest gains paired with the largest
    weights of positions ``1..min(k, L)`` (the rearrangement inequality), ``L`` the longer of the
    ranked list (``list_len``) and the judged documents; each weight's gain is added in position
    order, as the kernel adds a ranking's, so the DCG of that best order is this IDCG bit for bit.
    For weights that never grow (``log2_rank_plus_1``, ``jarvelin``, decreasing explicit weights)
    it is the kernel's IDCG. ``lut``: the gain of each label >= 0 (a negative label: gain 0).

    >>> lut = np.array([0.0, 1.0])
    >>> rearranged_idcg(np.array([1, 0]), np.array([0, 2]), np.array([2]), lut, np.array([1, 2]), np.array([0.5, 1.0])).tolist()
    [[0.5, 1.0]]
    """
    n_q = ideal_offsets.shape[0] - 1
    sizes = np.diff(ideal_offsets)
    query = row_queries(ideal_offsets)
    gains = np.where(ideal_labels >= 0, lut[np.maximum(ideal_labels, 0)], 0.0)
    order = np.lexsort((-gains, query))  # per query (queries stay in order), gain descending
    rank = np.arange(gains.shape[0], dtype=np.int64) - np.repeat(ideal_offsets[:-1], sizes)
    k_max = int(ks[-1])
    keep = rank < k_max
    gains, rank, query = gains[order][keep], rank[keep], query[keep]
    length = np.maximum(list_len, sizes)
    out = np.zeros((n_q, ks.shape[0]))
    for ki, k in enumerate(ks.tolist()):
        reach = np.minimum(length, k)[query]  # positions 1..reach of the row's query count at k
        rows = np.flatnonzero(rank < reach)
        rows = rows[np.argsort(reach[rows], kind="stable")]
        distinct, starts = np.unique(reach[rows], return_index=True)
        position = np.empty(rows.shape[0], dtype=np.int64)
        for r, lo, hi in zip(distinct.tolist(), starts.tolist(), [*starts[1:].tolist(), rows.shape[0]], strict=True):
            # per distinct reach (at most k of them), not per query: the positions by weight, largest first
            by_weight = np.argsort(-discount[:r], kind="stable")
            position[lo:hi] = by_weight[rank[rows[lo:hi]]]
        summed = np.lexsort((position, query[rows]))  # each query's terms in position order
        picked = rows[summed]
        out[:, ki] = np.bincount(query[picked], weights=gains[picked] * discount[position[summed]], minlength=n_q)
    return out


#: DCG bound below which gains are used unscaled (2**1000: far from float64's 2**1024).
_SAFE_EXP = 1000
_SAFE_SUM = 2.0**_SAFE_EXP

#: Up to this many label values, the ideal order is a counting sort (else a top-k heap).
HIST_MAX_LABELS = 256
#: Up to this many rows (ranked plus judged), the kernel runs interpreted when numba is not loaded
#: yet (:mod:`ltr.compiled.kernels`): 0.05-0.2 s there (ties cost most) against about 1 s for numba's
#: import and cache load on the 2-core machine of ``benchmarks/``.
INTERPRET_MAX_ROWS = 10_000

#: Largest label value the gain lookup table covers (labels index it directly).
MAX_LABEL = 1_000_000


def value_codes(
    labels: NDArray[np.generic],
    ideal_labels: NDArray[np.generic] | None,
    conventions: MetricConventions,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | None, MetricConventions]:
    """Real-valued labels (``gain="value"``) as integer codes into a table of their distinct
    values, and the conventions that read them: ``label_gain`` = the values (ascending), the
    binary threshold moved to the first code whose value is >= ``rel_threshold``. The kernel
    then sums exactly the values as gains. NaN and negative labels at or below `UNJUDGED`
    mark unjudged rows (gain 0, never relevant); any other negative value is an error.

    Examples
    --------
    >>> codes, _, c = value_codes(np.array([12.5, 0.0, 3.0, 12.5]), None, MetricConventions(gain="value"))
    >>> codes.tolist(), c.label_gain, c.rel_threshold
    ([2, 0, 1, 2], (0.0, 3.0, 12.5), 1)
    """
    arrays = [np.asarray(labels, dtype=np.float64)]
    if ideal_labels is not None:
        arrays.append(np.asarray(ideal_labels, dtype=np.float64))
    judged = [~np.isnan(a) & (a > UNJUDGED) for a in arrays]
    for name, a, j in zip(("labels", "ideal_labels"), arrays, judged, strict=False):
        bad = j & ~((a >= 0) & np.isfinite(a))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{row}] = {a[row]!r}: a value gain must be finite and >= 0")
    table = np.unique(np.concatenate([a[j] for a, j in zip(arrays, judged, strict=True)]))
    if table.shape[0] == 0:
        table = np.zeros(1)
    codes = []
    for a, j in zip(arrays, judged, strict=True):
        c = np.full(a.shape[0], UNJUDGED, dtype=np.int64)
        c[j] = np.searchsorted(table, a[j])
        codes.append(c)
    threshold = int(np.searchsorted(table, float(conventions.rel_threshold), side="left"))
    coded = replace(conventions, gain="linear", label_gain=tuple(float(v) for v in table), rel_threshold=threshold)
    return codes[0], (codes[1] if ideal_labels is not None else None), coded


def largest_gain(
    labels: NDArray[np.integer], conventions: MetricConventions = _DEFAULT_CONVENTIONS
) -> float:
    """The largest gain of ``labels`` under ``conventions``: what ERR normalises by.

    The largest gain of a split is the maximum of its parts' values, so a table built part by
    part with ``per_query_table(..., max_gain=max(largest_gain(part) for part in parts))``
    equals the table of the whole split.
    """
    if conventions.gain == "value":
        labels, _, conventions = value_codes(labels, None, conventions)
    labels_a = _as_int_labels(labels, "labels")
    return _gain_table(conventions, labels_a, labels_a)[1]


def _gain_table(
    c: MetricConventions, labels: NDArray[np.integer], ideal: NDArray[np.integer]
) -> tuple[NDArray[np.float64], float]:
    """Gain per label value ``0..max label`` and the largest gain ``g_max`` (ERR: ``1 / (g_max + 1)``)."""
    l_max = 0
    for arr in (labels, ideal):
        if arr.size:
            l_max = max(l_max, int(arr.max()))
    if l_max > MAX_LABEL:
        raise ValueError(f"label {l_max} is above the supported maximum {MAX_LABEL}")
    lut = c.gains_of(np.arange(l_max + 1, dtype=np.int64))
    if c.label_gain is None:
        g_max = float(lut[-1])  # exp and linear gains grow with the label
    else:  # explicit gains need not grow: take the largest gain of a label that occurs
        present = np.zeros(l_max + 1, dtype=bool)
        for arr in (labels, ideal):
            present |= np.bincount(arr[arr >= 0], minlength=l_max + 1) > 0  # not: unjudged
        g_max = float(lut[present].max(initial=0.0))
    return np.ascontiguousarray(lut, dtype=np.float64), g_max


def _as_int_labels(labels: NDArray[np.generic], name: str) -> NDArray[np.int64]:
    # one dtype for the kernel: every extra dtype is another (slow) numba compile
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind in "iub":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{row}] = {arr[row]!r} is not an integer label")
        return np.ascontiguousarray(arr, dtype=np.int64)
    raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")


def _check_offsets(offsets: NDArray[np.integer], n_rows: int, name: str) -> NDArray[np.int64]:
    off = np.ascontiguousarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.shape[0] < 1:
        raise ValueError(f"{name} must be 1-D with n_queries + 1 entries, got shape {off.shape}")
    if off[0] != 0 or off[-1] != n_rows:
        raise ValueError(f"{name} must run from 0 to n_rows={n_rows}, got {off[0]}..{off[-1]}")
    if off.shape[0] > 1 and (np.diff(off) < 0).any():
        q = int(np.flatnonzero(np.diff(off) < 0)[0])
        raise ValueError(f"{name} decrease at query {q}: {off[q]} -> {off[q + 1]}")
    return off
