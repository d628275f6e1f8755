"""Ranking metrics over flat arrays and query offsets: one grouped kernel, explicit conventions.

Data layout
-----------
``labels`` and ``scores`` are flat per-row arrays; the rows of query ``i`` are
``offsets[i]:offsets[i + 1]`` (int64, ``n_queries + 1`` entries, from 0 to ``n_rows``,
non-decreasing). A query with no rows is *empty*: judged, nothing ranked.

Conventions (written once, here)
--------------------------------
Positions are 1-based; the discount at position ``p`` is ``1 / log2(p + 1)`` (``discount=
"log2_rank_plus_1"``, the default), or Järvelin and Kekäläinen's classic ``1 / max(1,
log_b(p))`` (``discount="jarvelin"``, base ``discount_base`` = 2: ``DCG = g_1 + sum_{p >= 2}
g_p / log2(p)``), for DCG and IDCG alike; or explicit position weights (``discount=(1.0, 0.7,
0.5)``: the weight of positions 1, 2, 3; positions beyond the weights weigh 0).

Gain
    ``exp``: ``2**label - 1`` (default, LightGBM); ``linear``: ``label`` (sklearn, trec_eval);
    or an explicit ``label_gain`` table indexed by label; or ``value``: the label is a real value
    >= 0 (revenue, margin) and the gain itself, DCG and IDCG over the same values (the kernel
    reads them as codes into a table of the distinct values: :func:`ltr.metrics.table.value_codes`;
    integer grades under ``value`` equal ``linear``; binary relevance is ``value >= rel_threshold``). Exp gain is defined for labels up to
    1023 (``MAX_EXP_LABEL``; larger labels are an error: use linear gain or a ``label_gain``);
    LightGBM's training default covers 0..30 only, evaluation does not need a table above 30.
    Negative labels (trec_eval's -1 "judged junk") have gain 0 under every convention, and so
    does ``UNJUDGED``, the label of a ranked row without a judgment, which is never relevant.
    When a DCG could overflow float64 the kernel runs on gains scaled by an exact power of two
    (NDCG and ERR unchanged bit for bit; DCG/IDCG scaled back).
DCG@k, IDCG@k, NDCG@k
    ``DCG@k = sum_{p <= min(k, n)} gain(p) / log2(p + 1)`` over the ranked list of length ``n``.
    ``IDCG@k`` is the DCG@k of the ideal order of *all* judgments of the query (``ideal_labels``;
    by default the ranked rows' labels; trec_eval: every judged doc, retrieved or not), so
    ``k > n`` truncates both. ``NDCG@k = DCG@k / IDCG@k``.
Zero IDCG (``zero_idcg``)
    A query with IDCG@k = 0 scores ``zero`` (0, kept in the mean; default), ``one`` (1,
    LightGBM) or ``skip`` (NaN: left out of means, counted as ``n_skipped_zero_idcg``).
Empty lists
    A query with no ranked rows scores 0 on every measure, whatever ``zero_idcg`` says, and is
    counted in ``no_result_rate``. It belongs to no length stratum (see `Strata`).
Binary relevance
    P@k, R@k, AP, RR and ``n_relevant`` use ``label >= rel_threshold`` (default 1). ``n_relevant`` counts
    the judgments (ideal labels). ``P@k = (relevant rows in the top k) / k``, also when
    ``k > n`` (as trec_eval). ``RR = 1 / rank`` of the first relevant row of the whole list
    (0 if none); ``RR@k`` is RR when that rank is at most ``k``, else 0 (ir_measures' ``RR@k``,
    ranx's ``mrr@k``).
Recall and average precision (trec_eval's ``recall_k``, ``map_cut_k``, ``map``)
    ``R@k = (relevant rows in the top k) / n_relevant``; ``AP@k = sum over relevant rows at
    rank p <= k of P@p, / n_relevant``; ``AP`` the same over the whole list (``n_relevant``
    counts the judgments, so a relevant document not ranked lowers both). A query with
    ``n_relevant = 0`` follows ``zero_idcg`` (0, 1 or NaN); an empty list scores 0.
ERR@k
    ``ERR@k = sum_{p <= k} (1/p) R_p prod_{i < p} (1 - R_i)`` with the stop probability
    ``R = gain / (g_max + 1)``, ``g_max`` the largest gain in the evaluated data (labels and
    ideal labels of all queries). With exp gain this is Chapelle et al.'s
    ``(2**l - 1) / 2**l_max``; with linear gain it is ``l / (l_max + 1)``.
Ties (``ties``): the order of rows with equal scores
    ``average`` (default): every measure is its expected value over all orders of each tied
    block, each order equally likely (sklearn's ``ndcg_score`` for DCG). Closed forms: DCG and
    P@k give every position of a block the block's mean gain (relevance); RR uses the exact
    distribution of the first relevant row's position in its block
    (``P(j) = C(m-j-1, r-1) / C(m, r)`` for ``m`` rows, ``r`` relevant); R@k is linear like P@k;
    AP uses ``E[rel_p * (relevant rows up to p)] = (r/m)(c + 1 + t(r-1)/(m-1))`` at block
    position ``t`` below ``c`` relevant rows (McSherry and Najork 2008); ERR uses the exact
    expectation too, through elementary symmetric means of ``1 - R`` over the block (no
    sampling, no approximation). ``stable``: input row order (LightGBM's ``std::stable_sort``).
    ``pessimistic`` / ``optimistic``: lower / higher gain first within a tie (relevant rows last
    / first, for gains that grow with the label), then input order. ``docno_desc``: larger ``tie_keys`` first (trec_eval sorts ties
    by docno descending; pass docno ranks).
Presets (`PRESETS`)
    ``lightgbm`` = exp, stable, one; ``sklearn`` = linear, average, zero; ``trec_eval`` =
    linear, docno_desc, zero, with IDCG from all judged docs (``ideal_labels``) and negative
    labels as 0. Each is proven against its tool in ``tests/metrics``.

Hand-checked reference: labels ``[2, 3, 1, 0, 2]`` in that ranked order give NDCG@5 = 0.838647
(exp) and 0.907591 (linear); the reversed order gives 0.566448 (exp).

Output
------
`per_query_table` returns one row per query (``qid, list_len, stratum, n_relevant``, then per
``k``: ``idcg_at_k, dcg_at_k, ndcg_at_k, err_at_k, p_at_k, rr_at_k, recall_at_k, ap_at_k``,
then ``rr`` and ``ap``); ``stratum`` is a
categorical of the display labels (``"1-10"``, ..., ``"empty"`` for an empty list).
`summarize`, `idcg_report` and the plots are derived from that table only.

Speed
-----
One numba kernel (``_kernel.grouped_kernel``), parallel over chunks of queries, serves every
measure: per query a top-``max(ks)`` heap selection by score (no full sort), a counting sort of
the judged labels for the ideal order, and the measures from those. Full AP sorts a whole list
only when a relevant row lies below the top ``max(ks)`` (``measure_arrays(full_ap=False)``, as
the per-round curves use, skips it). Its one-time compile
(about 15 s) is cached beside the module (``__pycache__``); later processes load it in about 1 s.
Threads: numba's (``NUMBA_NUM_THREADS`` / ``numba.set_num_threads``). Labels are read as int64
(other integer dtypes are cast), scores as float64; gains come from a per-label lookup table,
so labels above 1,000,000 are rejected. numba is imported on the first `per_query_table`
call, not by ``import ltr.metrics``; nor is pandas: `per_query_table` and `summarize` load
their modules on first use. An input of at most ``table.INTERPRET_MAX_ROWS`` rows (ranked plus
judged) in a process that has not loaded numba runs the same kernel source interpreted
(:mod:`ltr.compiled.kernels`): the same bits, without numba's second of import and cache load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ltr.metrics.conventions import PRESETS, MetricConventions, resolve_conventions
from ltr.metrics.measures import Measure
from ltr.metrics.reports.idcg_report import IdcgReport, idcg_report
from ltr.metrics.strata import Strata

if TYPE_CHECKING:
    from ltr.metrics.summary import summarize
    from ltr.metrics.table import per_query_table

#: The names that build or read pandas tables, imported from their module on first use (PEP 562):
#: the rest (all ``ltr train``'s config checks read) comes without pandas. (A lazy name must not
#: be a submodule's name: importing the submodule would bind the module in its place.)
_WITH_PANDAS = {"summarize": "ltr.metrics.summary", "per_query_table": "ltr.metrics.table"}

__all__ = [
    "PRESETS",
    "IdcgReport",
    "Measure",
    "MetricConventions",
    "Strata",
    "idcg_report",
    "per_query_table",
    "resolve_conventions",
    "summarize",
]


def __getattr__(name: str) -> Any:
    """``ltr.metrics.summarize`` and the other pandas-backed names of :data:`_WITH_PANDAS`."""
    if name in _WITH_PANDAS:
        return getattr(importlib.import_module(_WITH_PANDAS[name]), name)
    raise AttributeError(f"module 'ltr.metrics' has no attribute {name!r}")
