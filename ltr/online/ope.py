"""Off-policy estimates of a candidate ranking's online metrics from a logged click log.

Conventions (beside those of :mod:`ltr.metrics`)
-------------------------------------------------
Flat arrays over the log's rows (impressions), grouped by query with ``offsets`` (rows
``offsets[q]:offsets[q + 1]`` are query ``q``'s logged documents). ``log_positions`` are the
0-based positions the logging ranking showed them at; the candidate ranks the same documents by
``scores`` (descending, ties in row order: :func:`ltr.data.feedback.clicks.rank_within_queries`) and shows
its top ``k``. ``propensities[p]`` is the examination probability of 0-based position ``p``
(relative to the top; any source: a known curve, :func:`ltr.metrics.clicks.ips.estimate_propensities`,
an EM fit), one session per query; positions deeper than the list take its last value.

The position-based estimators (``ips``, ``snips``, ``dr``, ``dm``) assume the position-based
model (PBM): a document ``d`` at position ``p`` is clicked with probability ``e(p) * a(d)``,
clicks independent within a session, and what follows a click (a purchase) independent of the
position. For a row at logged position ``l`` and candidate position ``r < k`` the weight is
``w = e(r) / e(l)``; ``E[w * click] = e(r) * a(d)``, the candidate's click probability of ``d``.
Metrics, per query then averaged over queries:

- ``clicks_at_k``: expected clicks on the candidate's top k, ``sum_d x_d``;
- ``ctr``: share of sessions with at least one click on the top k, ``1 - prod_d (1 - x_d)``;
- ``purchase_rate``: the same with purchases for clicks (when the log has them),

where ``x_d`` is the estimator's unbiased term for ``e(r) * a(d)``. The product is unbiased
because the terms of different documents are independent (one session, independent clicks).

Estimators (``x_d`` of a row in the candidate's top k; rows below it count 0):

- ``ips``: ``min(w, clip) * y`` (``y`` the click or purchase);
- ``snips``: self-normalised: the clipped weights of a query scaled by
  ``sum e(r) / sum min(w, clip) * e(l)``, so they carry the candidate's exact examination mass
  (a control variate with a known value); without clipping it equals ``ips``;
- ``dm``: the direct method, ``e(r) * a_hat(d)``: ``a_hat = sigmoid(alpha + beta * score)``, a
  click model of the candidate's *scores* fitted by maximum likelihood to the logged clicks
  under the PBM (``P(click) = e(l) * a_hat``), cross-fitted over two seeded halves of the
  queries (each half's ``a_hat`` fitted on the other half's clicks); purchases get their own fit;
- ``dr``: doubly robust. ``clicks_at_k``: ``e(r) * a_hat + min(w, clip) * (y - e(l) * a_hat)``
  per row; unclipped, ``w * e(l) = e(r)`` and the model's terms cancel: DR equals IPS exactly
  there; it differs where weights are clipped (the model fills in the mass the clip removes).
  ``ctr`` and ``purchase_rate``: the model's share ``1 - prod(1 - p_d)``, ``p_d = e(r) a_hat(d)``,
  plus the first-order correction ``sum_d prod_{j != d}(1 - p_j) * min(w, clip) * (y_d - e(l) a_hat(d))``
  (the model's product linearised in each document's click probability, each IPS residual
  weighted by the chance that no other document of the list is clicked): unbiased when the
  model is right, and otherwise off only by products of two documents' model errors; its terms
  are bounded by the weights, not by their products, so it stays near [0, 1] where the IPS
  product does not.

Cascade estimators (``rips``, ``cascade_dr``; ``ctr`` only, which is also the expected clicks
under the cascade) assume the cascade model with position-based examination: a user reads the
list from the top, examines position ``p`` with probability ``e(p)``, clicks an examined
document with probability ``a(d)`` and leaves at the first click (Craswell et al. 2008; the
cascade assumption of Kiyohara et al., WSDM 2022: the reward at position ``r`` depends only on
the documents at positions ``0..r``). Under it the probability that a session's first click is
on ``d`` is ``P_L(d) = e(l) a(d) prod_{j above d in the log} (1 - e(l_j) a(j))`` in the log and
``P_C(d)`` (the same over the candidate's prefix) for the candidate, whose CTR is
``sum_{d in top k} P_C(d)``. The reward-interaction weight of the session's first click is
``W = P_C(d) / P_L(d) = (e(r) / e(l)) * prod_cand(1 - e a) / prod_log(1 - e a)``: the
ratio of the two *prefixes'* probabilities of carrying on unclicked (McInerney et al., KDD 2020;
Kiyohara et al.'s RIPS). With a deterministic logger (plus shuffled sessions of unknown share)
the log carries no probability of a whole prefix; what it identifies are the examination
propensities ``e`` and, through a model, the attractiveness of the prefix's other documents, so
the prefix products use ``a_hat``, the direct method's cross-fitted model (with the true ``a``
the estimators are unbiased; otherwise the model's error enters only through the prefix ratio):

- ``rips``: ``sum_d min(W_d, clip) * f_d``, ``f_d`` 1 for the session's first click;
- ``cascade_dr``: the cascade doubly robust estimator (Kiyohara et al., WSDM 2022),
  ``sum_d P_C_hat(d) + min(W_d, clip) * (f_d - P_L_hat(d))``; unclipped it equals ``rips``
  exactly (as ``dr`` equals ``ips``), clipped the model fills in the clipped mass.

A log with sessions of two or more clicks breaks the cascade (one click per session): the
cascade estimators read each session's first click and :attr:`OpeResult.notes` says so in one
line; a log with far fewer multi-click sessions than the fitted PBM expects (:func:`cascade_like`) looks
like cascade clicks, which breaks the position-based estimators: their intervals are then
withheld (``low`` and ``high`` NaN, :attr:`Estimate.reason` :data:`NOT_POSITION_BASED_REASON`,
the verdict of their differences :data:`WITHHELD_VERDICT`) and one line of
:attr:`OpeResult.notes` says why; ``assume_position_based=True`` keeps them, and the line
then says they may miss the truth. (Under cascade and DBN users of simulated logs those
intervals held clicks@10 in 0 to 8 % of the logs.)

**Every value stays in its range and inside its own interval.** ``1 - prod(1 - x_d)`` leaves
[0, 1] when a term ``x_d`` exceeds 1 (a click moved up by a weight above 1), and the mean of
such per-query values can too. A per-query clip of the value to [0, 1] would bias it
badly (one promoted document with weight 3 and a click probability of 0.1 in the log: the
per-query values are 3 with probability 0.1, mean 0.3, the truth; clipped, 1 with probability
0.1, mean 0.1). So the per-query values are kept unbiased and the *mean* is projected onto the
range the truth lies in (0..1 for a share, 0..k for clicks@k; 0..1 for a cascade CTR): the
projection is consistent (the unbiased mean converges inside the range), it moves the estimate
only when the unbiased mean lies outside the range, and then toward the truth, so its error is
never larger than the unbiased mean's. :attr:`Estimate.unbounded` keeps that mean, and a note
names each estimate that was projected.

**``dm`` has no interval.** Its value is a fitted model's guess: a bootstrap over queries (or
the model's own variance) holds the sampling spread of that one model, never its bias, which is
what dominates where the model of the scores is wrong (its "95 %" interval held the exact truth
in 0 to 40 % of simulated logs). So ``dm``'s :class:`Estimate` keeps its value and ``ess`` with
``low`` and ``high`` NaN (:attr:`Estimate.has_interval` False), in each run and in the paired
difference, whose verdict is then ``no interval (model)``; :meth:`OpeResult.metrics` logs no
``/low`` or ``/high`` for it. The cascade estimators (``rips``, ``cascade_dr``) have none either:
their weights are ratios of the direct method's fitted prefix probabilities, so its bias is
theirs (their intervals held the truth in 6 to 84 % of several simulated logs, their paired
difference in 83 %). :data:`NO_INTERVAL` names such estimators, :data:`NO_INTERVAL_REASONS` why.

Every other value has a BCa bootstrap interval over queries (:func:`bca_interval`), widened where
needed to at least ``± z * sd`` with ``sd`` the estimator's standard deviation under the fitted
click model (:func:`model_variance`); for the IPS products (``ips`` and ``snips`` ``ctr`` and
``purchase_rate``) at least ``± sd / sqrt(1 - level)``, Chebyshev's bound, which holds whatever
the shape: their per-query values are products of weights (a query with three promoted clicks
of weights 4.5, 14.6 and 2.9 is worth +91), so their mean is skewed far beyond what a normal or
bootstrap interval assumes, and the normal floor missed the truth on logs the tests did not
make; with large weights the variance sits in rare clicks (a
document logged at position 80 clicked and moved to the top), which a sample without such a
click does not show and the bootstrap cannot see (``n_bootstrap`` resamples, seeded; every
estimator and metric on the same resamples); then cut to the range of the truth and widened to
hold the (projected) value: ``low <= value <= high`` always. Each also has an effective sample
size, Kish's ``(sum v)^2 / sum v^2`` of the weights ``v`` the estimator puts on the top-k rows
(``dm``: the number of top-k rows), and its largest weight. ``logged`` is the logging ranking's
own observed value, for reference.

:func:`paired_estimates` estimates two candidates on the same rows and the difference B - A of
every estimator and metric: the per-query differences bootstrapped on the same resamples as both
runs' own values, with the click model's variance of the difference as a floor (for sums and
cascade CTRs; for two IPS products, whose covariance has no closed form, ``(sd_A + sd_B)^2``,
an upper bound, under Chebyshev's bound). The difference is the mean per-query difference
(unbiased), projected onto ``[-top, top]``, not the difference of the two projected values.
The DR rates' difference is a difference of two linearisations, each off by products of two
documents' model errors, which do not cancel between A and B where the click model is far from
the truth (a relevance-sorted logger with no shuffled session: its error was twice its standard
deviation); so its interval is also stretched, on the side the bias points to, by the mean
second-order term (:func:`_second_order`) of the difference, an estimate of that bias.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ltr.data.feedback.clicks import rank_within_queries
from ltr.metrics.offsets import row_queries

#: The estimators ``ltr ope`` prints by default.
ESTIMATORS = ("ips", "snips", "dr", "dm")
#: The estimators under the cascade model (``ctr`` only).
CASCADE_ESTIMATORS = ("rips", "cascade_dr")
#: Every estimator that can be asked for, in the printed order.
ALL_ESTIMATORS = (*ESTIMATORS, *CASCADE_ESTIMATORS)
#: The estimators that assume position-based clicks and have an interval when the log agrees.
POSITION_BASED = ("ips", "snips", "dr")
#: Estimators whose value rests on a fitted model, given with no interval (module docstring).
NO_INTERVAL = frozenset({"dm", "rips", "cascade_dr"})
#: Why the direct method has none, in one line (``ltr ope --json`` gives it beside ``"low": null``).
NO_INTERVAL_REASON = (
    "a click model's guess: a bootstrap holds the spread of that one fitted model, not its bias, so no interval"
)
#: Why the cascade estimators have none.
CASCADE_REASON = (
    "its weights rest on the direct method's fitted attractiveness, whose bias a bootstrap does not hold, so no interval"
)
#: Each estimator of :data:`NO_INTERVAL` and why it has no interval.
NO_INTERVAL_REASONS = {"dm": NO_INTERVAL_REASON, "rips": CASCADE_REASON, "cascade_dr": CASCADE_REASON}
#: Why the position-based estimators' intervals are withheld on a log whose clicks look like a cascade.
NOT_POSITION_BASED_REASON = (
    "the log's clicks look like a cascade (far fewer sessions with two or more clicks than position-based users "
    "make), which this estimator does not assume, so no interval (--assume-position-based prints it)"
)
#: The verdict of a difference with no interval: a model's guess, or withheld on a cascade-like log.
NO_INTERVAL_VERDICT = "no interval (model)"
WITHHELD_VERDICT = "no interval (clicks not position-based)"

#: The outcome columns a log may hold, and the "at least one" metric each gives.
RATE_METRICS = {"click": "ctr", "purchase": "purchase_rate"}

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Estimate:
    """One estimate: ``value`` (in the metric's range) with its bootstrap interval
    ``low <= value <= high`` (both NaN when it has none: an estimator of :data:`NO_INTERVAL`, or
    a position-based one on a log whose clicks look like a cascade; ``reason`` then says why in
    one line), ``ess``, and ``unbounded``, the mean before its projection onto the range (equal
    to ``value`` unless that mean left it)."""

    value: float
    low: float
    high: float
    ess: float
    unbounded: float = math.nan
    reason: str = ""

    @property
    def has_interval(self) -> bool:
        """False when ``low`` or ``high`` is NaN (no interval: ``reason`` says why)."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    def without_interval(self, reason: str = NO_INTERVAL_REASON) -> Estimate:
        """The same value, ``ess`` and ``unbounded`` with ``low`` and ``high`` NaN, and why."""
        return Estimate(self.value, math.nan, math.nan, self.ess, self.unbounded, reason)


@dataclass(frozen=True)
class OpeResult:
    """Every estimate, keyed ``(estimator, metric)``, and how they were made.

    ``n_clipped``: top-k rows whose position weight was above ``clip``; ``max_weight``: the
    largest position weight before clipping; ``max_weights``: per estimator, the largest weight
    it put on a top-k row; ``coverage``: share of the candidate's top-k documents the logger
    showed (given by the caller, 1.0 when every scored document was logged); ``dm_fits``: per
    outcome (and ``cascade``, the click fit on the rows at or above each session's first click,
    with cascade estimators), the click model's ``(alpha, beta)`` of each half; ``notes``: one line per broken
    assumption or projected estimate."""

    estimates: dict[Key, Estimate]
    n_queries: int
    n_rows: int
    k: int
    clip: float | None
    n_clipped: int
    max_weight: float
    n_bootstrap: int
    seed: int
    dm_fits: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    max_weights: dict[str, float] = field(default_factory=dict)
    coverage: float = 1.0
    notes: list[str] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        """``ope/<estimator>/<metric>`` (+ ``/low``, ``/high``, ``/ess``), ``ope/<estimator>/max_weight``
        and ``/coverage``, and the settings' counts; a non-finite number is left out (``dm``'s
        ``/low`` and ``/high``: it has no interval)."""
        out: dict[str, float] = {}
        for (estimator, metric), e in self.estimates.items():
            key = f"ope/{estimator}/{metric}"
            out.update({key: e.value, f"{key}/low": e.low, f"{key}/high": e.high, f"{key}/ess": e.ess})
        for estimator, weight in self.max_weights.items():
            out[f"ope/{estimator}/max_weight"] = weight
            out[f"ope/{estimator}/coverage"] = self.coverage
        out.update({"ope/n_queries": float(self.n_queries), "ope/n_rows": float(self.n_rows),
                    "ope/n_clipped": float(self.n_clipped), "ope/max_weight": self.max_weight})  # fmt: skip
        return {k: v for k, v in out.items() if math.isfinite(v)}


@dataclass(frozen=True)
class PairedResult:
    """Two candidates on the same rows: each one's estimates and the difference B - A."""

    a: OpeResult
    b: OpeResult
    difference: dict[Key, Estimate]

    def verdict(self, key: Key) -> str:
        """``B better``, ``A better`` or ``cannot tell`` by the difference's interval of ``key``;
        ``no interval (model)`` for an estimator of :data:`NO_INTERVAL`, :data:`WITHHELD_VERDICT`
        for a position-based one withheld on a cascade-like log."""
        d = self.difference[key]
        if d.reason == NOT_POSITION_BASED_REASON:
            return WITHHELD_VERDICT
        if key[0] in NO_INTERVAL or not d.has_interval:
            return NO_INTERVAL_VERDICT
        if d.low > 0:
            return "B better"
        if d.high < 0:
            return "A better"
        return "cannot tell"


def metric_range(metric: str, k: int) -> tuple[float, float]:
    """The range the truth of ``metric`` lies in: ``(0, k)`` for ``clicks_at_k``, else ``(0, 1)``."""
    return (0.0, float(k)) if metric.startswith("clicks_at_") else (0.0, 1.0)


def exposure_sums(values: NDArray[np.float64], query: NDArray[np.int64], n_queries: int) -> NDArray[np.float64]:
    """Per-query sums of ``values`` (``query``: each row's query index; empty queries sum to 0)."""
    return np.asarray(np.bincount(query, weights=values, minlength=n_queries), dtype=np.float64)


def at_least_one(x: NDArray[np.float64], query: NDArray[np.int64], n_queries: int) -> NDArray[np.float64]:
    """Per query ``1 - prod(1 - x)``, the product taken in logs with its sign (terms may exceed 1).

    Examples
    --------
    >>> at_least_one(np.array([0.5, 0.5, 3.0, 1.0]), np.array([0, 0, 1, 1]), 3).tolist()
    [0.75, 1.0, 0.0]
    """
    f = 1.0 - x
    zero = f == 0.0
    with np.errstate(divide="ignore"):
        log_abs = np.where(zero, 0.0, np.log(np.abs(np.where(zero, 1.0, f))))
    zeros = np.bincount(query, weights=zero.astype(np.float64), minlength=n_queries)
    negatives = np.bincount(query, weights=(f < 0).astype(np.float64), minlength=n_queries)
    prod = np.exp(exposure_sums(log_abs, query, n_queries)) * np.where(negatives % 2 == 1, -1.0, 1.0)
    return np.asarray(1.0 - np.where(zeros > 0, 0.0, prod))


def extend_propensities(propensities: NDArray[np.float64] | Sequence[float], n_positions: int) -> NDArray[np.float64]:
    """``propensities`` cut or extended to ``n_positions`` values, the last one repeated.

    >>> extend_propensities([1.0, 0.6, 0.4], 5).tolist()
    [1.0, 0.6, 0.4, 0.4, 0.4]
    """
    prop = np.asarray(propensities, dtype=np.float64)
    if n_positions <= prop.size:
        return prop[: max(n_positions, 1)].copy()
    return np.concatenate([prop, np.full(n_positions - prop.size, prop[-1])])


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


def fit_attractiveness(
    z: NDArray[np.float64], outcome: NDArray[np.float64], examination: NDArray[np.float64]
) -> tuple[float, float]:
    """``(alpha, beta)`` of ``a = sigmoid(alpha + beta * z)`` maximising the PBM likelihood of
    ``outcome ~ Bernoulli(examination * a)`` (L-BFGS on the exact gradient; 2 parameters)."""
    from scipy import optimize

    def loss(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = theta[0] + theta[1] * z
        p = _sigmoid(eta)
        q = np.clip(examination * p, 1e-12, 1.0 - 1e-12)
        ll = outcome * (np.log(examination) - np.logaddexp(0.0, -eta)) + (1.0 - outcome) * np.log1p(-q)
        g_eta = outcome * (1.0 - p) - (1.0 - outcome) * examination * p * (1.0 - p) / (1.0 - q)
        return -float(ll.sum()), -np.array([g_eta.sum(), (g_eta * z).sum()])

    rate = float(outcome.sum() / max(examination.sum(), 1e-12))
    start = np.array([math.log(max(rate, 1e-6) / max(1.0 - rate, 1e-6)), 0.0])
    res = optimize.minimize(loss, start, jac=True, method="L-BFGS-B", bounds=[(-30.0, 30.0), (-30.0, 30.0)])
    return float(res.x[0]), float(res.x[1])


def _kish(v: NDArray[np.float64]) -> float:
    s2 = float(v @ v)
    return float(v.sum()) ** 2 / s2 if s2 > 0 else 0.0


def exclusive_prefix_sums(values: NDArray[np.float64], positions: NDArray[np.int64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per row, the sum of ``values`` over the rows of its query at smaller ``positions``
    (positions distinct within a query; rows of a query contiguous, as ``offsets`` says).

    >>> exclusive_prefix_sums(np.array([1.0, 2.0, 4.0, 8.0]), np.array([2, 0, 1, 0]), np.array([0, 3, 4])).tolist()
    [6.0, 0.0, 2.0, 0.0]
    """
    query = row_queries(offsets)
    order = np.lexsort((positions, query))
    v = values[order]
    cs = np.cumsum(v)
    before = np.concatenate([[0.0], cs])[offsets[:-1]]  # the running sum at each query's start
    out = np.empty_like(v)
    out[order] = cs - v - before[query[order]]
    return out


def _categorical_variance(c: NDArray[np.float64], p: NDArray[np.float64], query: NDArray[np.int64], n_q: int) -> float:
    """Variance of the sum over queries of ``sum_d c_d f_d`` where at most one ``f_d`` of a query
    is 1, row ``d``'s with probability ``p_d`` (a session's first click)."""
    second = exposure_sums(c * c * p, query, n_q)
    first = exposure_sums(c * p, query, n_q)
    return float(np.maximum(second - first * first, 0.0).sum())


@dataclass(frozen=True)
class CascadeTerms:
    """Per row: ``weight`` ``W = P_C / P_L`` (0 below the top k) and ``clipped_weight``,
    ``first_log`` ``P_L`` and ``first_new`` ``P_C`` (module docstring), ``first`` (1 for the
    session's first click); per query: ``rips`` and ``cascade_dr``."""

    weight: NDArray[np.float64]
    clipped_weight: NDArray[np.float64]
    first_log: NDArray[np.float64]
    first_new: NDArray[np.float64]
    first: NDArray[np.float64]
    rips: NDArray[np.float64]
    cascade_dr: NDArray[np.float64]


def cascade_terms(
    click: NDArray[np.float64],
    log_pos: NDArray[np.int64],
    new_pos: NDArray[np.int64],
    offsets: NDArray[np.int64],
    propensities: NDArray[np.float64],
    a: NDArray[np.float64],
    *,
    k: int,
    clip: float | None,
) -> CascadeTerms:
    """The cascade estimators of the candidate ranking ``new_pos`` (0-based, its top ``k``
    shown) with attractiveness ``a`` in the prefix products (module docstring); ``propensities``
    must cover every position of both.

    Examples
    --------
    One query of two documents, e = (1, 1/2), a = (1/2, 1/2); the log's first click is on the
    second row (logged second), which the candidate puts first: ``P_L = 1/2 * 1/2 * (1 - 1/2)
    = 1/8``, ``P_C = 1/2``: ``W = 4`` (the first row: ``(1/2) (1 - 1/2) / 1 = 1/4``), and rips = cascade_dr = 4.

    >>> t = cascade_terms(np.array([0.0, 1.0]), np.array([0, 1]), np.array([1, 0]), np.array([0, 2]),
    ...     np.array([1.0, 0.5]), np.array([0.5, 0.5]), k=2, clip=None)
    >>> t.weight.tolist(), t.rips.tolist(), t.cascade_dr.tolist()
    ([0.25, 4.0], [4.0], [4.0])
    """
    n_q = offsets.shape[0] - 1
    query = row_queries(offsets)
    top = new_pos < k
    e_log = propensities[log_pos]
    e_new = np.where(top, propensities[np.minimum(new_pos, propensities.size - 1)], 0.0)
    p_log = np.clip(e_log * a, 0.0, 1.0 - 1e-12)
    p_new = np.clip(e_new * a, 0.0, 1.0 - 1e-12)
    # log-probabilities of carrying on unclicked over each row's prefix, in the log and the candidate
    stay_log = exclusive_prefix_sums(np.log1p(-p_log), log_pos, offsets)
    stay_new = exclusive_prefix_sums(np.where(top, np.log1p(-p_new), 0.0), new_pos, offsets)
    first_log = p_log * np.exp(stay_log)
    first_new = np.where(top, p_new * np.exp(stay_new), 0.0)
    weight = np.where(top, (e_new / e_log) * np.exp(stay_new - stay_log), 0.0)
    clipped = np.minimum(weight, clip) if clip is not None else weight
    clicks_above = exclusive_prefix_sums(click, log_pos, offsets)
    first = ((click > 0) & (clicks_above == 0)).astype(np.float64)
    rips = exposure_sums(clipped * first, query, n_q)
    cascade_dr = exposure_sums(first_new - clipped * first_log, query, n_q) + rips
    return CascadeTerms(weight, clipped, first_log, first_new, first, rips, cascade_dr)


@dataclass
class _Term:
    """How the click model's variance of a per-query column is computed: ``kind`` ``sum``
    (independent rows: value ``x0`` or ``x1`` with ``P(1) = p``), ``product`` (``1 - prod(1 - x)``)
    or ``categorical`` (``sum x1 * f``, at most one ``f`` of a query is 1, with ``P = p``)."""

    kind: str
    x0: NDArray[np.float64]
    x1: NDArray[np.float64]
    p: NDArray[np.float64]

    def variance(self, query: NDArray[np.int64], n_q: int) -> float:
        if self.kind == "categorical":
            return _categorical_variance(self.x1, self.p, query, n_q)
        return model_variance(self.x0, self.x1, self.p, query, n_q, product=self.kind == "product")

    def floor_variance(self, query: NDArray[np.int64], n_q: int, level: float) -> float:
        """The variance whose ``z``-multiple is the interval's floor (module docstring): the
        model's variance, scaled for a ``product`` so that ``z * sd`` is Chebyshev's
        ``sd / sqrt(1 - level)``."""
        return self.variance(query, n_q) * (chebyshev_scale(level) if self.kind == "product" else 1.0)


def chebyshev_scale(level: float) -> float:
    """``(k / z)^2`` with ``k = 1 / sqrt(1 - level)`` (Chebyshev) and ``z`` the normal quantile:
    what turns a variance's normal floor ``z * sd`` into Chebyshev's ``k * sd``.

    >>> round(chebyshev_scale(0.95), 4)
    5.2064
    """
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2.0))
    return 1.0 / (1.0 - level) / (z * z)


@dataclass
class _Columns:
    """Per-query values of one candidate and what summarises them."""

    values: dict[Key, NDArray[np.float64]]
    terms: dict[Key, _Term]
    ess: dict[str, float]
    max_weights: dict[str, float]
    fits: dict[str, list[tuple[float, float]]]
    n_clipped: int
    max_weight: float
    notes: list[str]
    cascade_like: tuple[int, float] | None = None
    second_order: dict[Key, NDArray[np.float64]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Log:
    """The checked log: outcomes, positions, offsets, each row's query, the propensities."""

    ys: dict[str, NDArray[np.float64]]
    log_pos: NDArray[np.int64]
    offsets: NDArray[np.int64]
    query: NDArray[np.int64]
    prop: NDArray[np.float64]

    @property
    def n_q(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_rows(self) -> int:
        return int(self.log_pos.shape[0])


def _check(
    outcomes: Mapping[str, NDArray[np.number]],
    log_positions: NDArray[np.integer],
    scores: Sequence[NDArray[np.floating]],
    offsets: NDArray[np.int64],
    propensities: NDArray[np.float64],
    k: int,
    clip: float | None,
    n_bootstrap: int,
    estimators: Sequence[str],
) -> _Log:
    if "click" not in outcomes:
        raise ValueError("outcomes need a 'click' array")
    offsets = np.asarray(offsets, dtype=np.int64)
    log_pos = np.asarray(log_positions, dtype=np.int64)
    prop = np.asarray(propensities, dtype=np.float64)
    n_rows = log_pos.shape[0]
    for s in scores:
        if np.shape(s) != log_pos.shape or int(offsets[-1]) != n_rows or offsets[0] != 0:
            raise ValueError(f"{n_rows} positions, {np.shape(s)[0]} scores and offsets ending at {int(offsets[-1])} disagree")
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip={clip} must be > 0")
    if n_bootstrap < 2:
        raise ValueError(f"n_bootstrap={n_bootstrap} must be >= 2")
    unknown = [e for e in estimators if e not in ALL_ESTIMATORS]
    if unknown or not estimators:
        raise ValueError(f"estimators {','.join(estimators)!s}: each must be one of {', '.join(ALL_ESTIMATORS)}")
    if prop.ndim != 1 or prop.size == 0 or np.any(~np.isfinite(prop)) or np.any(prop <= 0) or np.any(prop > 1):
        raise ValueError("propensities must be a non-empty list of numbers in (0, 1]")
    ys = {name: np.asarray(v, dtype=np.float64) for name, v in outcomes.items()}
    for name, y in ys.items():
        if y.shape != log_pos.shape:
            raise ValueError(f"{name} has {y.shape[0]} rows, the positions {n_rows}")
        if np.any((y != 0) & (y != 1)):
            raise ValueError(f"{name} values must be 0 or 1 (one session per query)")
    if n_rows and int(log_pos.min()) < 0:
        raise ValueError("positions must be >= 0")
    deepest = max(int(log_pos.max(initial=-1)) + 1, k, 1)
    query = row_queries(offsets)
    return _Log(ys, log_pos, offsets, query, extend_propensities(prop, deepest))


def _columns(log: _Log, scores: NDArray[np.floating], *, k: int, clip: float | None, estimators: Sequence[str], seed: int) -> _Columns:
    """The per-query values of every asked estimator and metric of the candidate ``scores``."""
    ys, log_pos, offsets, query, prop = log.ys, log.log_pos, log.offsets, log.query, log.prop
    n_rows, n_q = log.n_rows, log.n_q
    s = np.asarray(scores, dtype=np.float64)
    new_pos = rank_within_queries(s, offsets).astype(np.int64)
    top = new_pos < k
    e_log = prop[log_pos]
    e_new = np.where(top, prop[np.minimum(new_pos, prop.size - 1)], 0.0)
    w = e_new / e_log
    w_clip = np.minimum(w, clip) if clip is not None else w
    n_clipped = int(np.count_nonzero(top & (w > clip))) if clip is not None else 0
    mass = exposure_sums(e_new, query, n_q)
    clipped_mass = exposure_sums(w_clip * e_log, query, n_q)
    scale = np.divide(mass, clipped_mass, out=np.ones(n_q), where=clipped_mass > 0)
    w_sn = w_clip * scale[query]

    # the direct method: a click model of the scores, cross-fitted over two halves of the queries
    rng = np.random.default_rng([seed, 0x09E])
    half = (rng.random(n_q) < 0.5)[query]
    spread = float(s.std()) if n_rows else 0.0
    z = (s - float(s.mean() if n_rows else 0.0)) / (spread if spread > 0 else 1.0)
    a_hat: dict[str, NDArray[np.float64]] = {}
    fits: dict[str, list[tuple[float, float]]] = {}
    every = np.ones(n_rows, dtype=bool)
    fitted = [(name, y, every) for name, y in ys.items()]
    if any(e in CASCADE_ESTIMATORS for e in estimators):
        # under the cascade a row below the session's first click was not examined: fitted on the rows above it
        seen = exclusive_prefix_sums(ys["click"], log_pos, offsets) == 0
        fitted.append(("cascade", ys["click"], seen))
    for name, y, rows in fitted:
        a = np.empty(n_rows)
        fits[name] = []
        for fold in (False, True):
            train = (half != fold) & rows
            if not np.any(train & (y > 0)):  # a half without a click: fit on every row
                train = rows
            alpha, beta = fit_attractiveness(z[train], y[train], e_log[train])
            fits[name].append((alpha, beta))
            a[half == fold] = _sigmoid(alpha + beta * z[half == fold])
        a_hat[name] = a

    pbm = [e for e in estimators if e in ("ips", "snips", "dr")]
    values: dict[Key, NDArray[np.float64]] = {}
    terms: dict[Key, _Term] = {}
    second: dict[Key, NDArray[np.float64]] = {}
    for name, y in ys.items():
        a = a_hat[name]
        p = np.clip(e_log * a, 0.0, 1.0)  # the fitted model's probability of each row's outcome
        # each estimator's term if the row's outcome is 0 and if it is 1
        outcomes_terms = {
            "ips": (np.zeros(n_rows), w_clip),
            "snips": (np.zeros(n_rows), w_sn),
            "dr": (e_new * a - w_clip * e_log * a, e_new * a + w_clip * (1.0 - e_log * a)),
        }
        rate = RATE_METRICS.get(name, f"{name}_rate")
        for estimator in pbm:
            x0, x1 = outcomes_terms[estimator]
            x = np.where(y > 0, x1, x0) * top
            if estimator == "dr":
                values[estimator, rate], terms[estimator, rate] = _linearised_rate(e_new * a, w_clip, e_log * a, y, p, top, query, n_q)
                second[estimator, rate] = _second_order(e_new * a, w_clip, e_log * a, y, top, query, n_q)
            else:
                values[estimator, rate] = at_least_one(x, query, n_q)
                terms[estimator, rate] = _Term("product", x0 * top, x1 * top, p)
            if name == "click":
                values[estimator, f"clicks_at_{k}"] = exposure_sums(x, query, n_q)
                terms[estimator, f"clicks_at_{k}"] = _Term("sum", x0 * top, x1 * top, p)
        for estimator, x in (("dm", e_new * a), ("logged", np.where(log_pos < k, y, 0.0))):
            if estimator == "dm" and "dm" not in estimators:
                continue
            values[estimator, rate] = at_least_one(x, query, n_q)
            if name == "click":
                values[estimator, f"clicks_at_{k}"] = exposure_sums(x, query, n_q)
    ess = {"ips": _kish(w_clip[top]), "snips": _kish(w_sn[top]), "dr": _kish(w_clip[top]),
           "dm": float(np.count_nonzero(top)), "logged": float(np.count_nonzero(log_pos < k))}  # fmt: skip
    w_top = w[top].max(initial=0.0)
    max_weights = {"ips": float(w_top), "snips": float(w_sn[top].max(initial=0.0)), "dr": float(w_top), "dm": 1.0}
    notes: list[str] = []
    cascade = [e for e in estimators if e in CASCADE_ESTIMATORS]
    if cascade:
        y = ys["click"]
        c = cascade_terms(y, log_pos, new_pos, offsets, prop, a_hat["cascade"], k=k, clip=clip)
        big, big_clip, first_log = c.weight, c.clipped_weight, c.first_log
        for estimator in cascade:
            values[estimator, "ctr"] = c.rips if estimator == "rips" else c.cascade_dr
            terms[estimator, "ctr"] = _Term("categorical", np.zeros(n_rows), big_clip, first_log)
            ess[estimator] = _kish(big_clip[top])
            max_weights[estimator] = float(big[top].max(initial=0.0))
        sessions = exposure_sums(y, query, n_q)
        multi = int(np.count_nonzero(sessions > 1))
        if multi:
            notes.append(
                f"{multi} of {n_q} sessions have more than one click: the cascade model (one click per session) does not "
                f"hold; {' and '.join(cascade)} read{'s' if len(cascade) == 1 else ''} each session's first click"
            )
    found = cascade_like(ys["click"], np.clip(e_log * a_hat["click"], 0.0, 1.0 - 1e-12), query, n_q) if pbm or "dm" in estimators else None
    return _Columns(values, terms, ess, {e: max_weights[e] for e in estimators}, fits, n_clipped,
                    float(w[top].max(initial=0.0)), notes, found, second)  # fmt: skip


def _linearised_rate(
    p_new: NDArray[np.float64],
    w: NDArray[np.float64],
    p_log: NDArray[np.float64],
    y: NDArray[np.float64],
    p: NDArray[np.float64],
    top: NDArray[np.bool_],
    query: NDArray[np.int64],
    n_q: int,
) -> tuple[NDArray[np.float64], _Term]:
    """Per query the doubly robust share of sessions with an outcome on the top k (module
    docstring): ``1 - prod(1 - p_new)`` plus ``sum prod_{j != d}(1 - p_new_j) * w * (y - p_log)``
    over the top-k rows; and its click-model variance (a ``sum`` term: each row's correction is
    linear in its outcome).

    >>> v, _ = _linearised_rate(np.array([0.5, 0.2]), np.array([2.0, 1.0]), np.array([0.25, 0.2]),
    ...     np.array([1.0, 0.0]), np.array([0.25, 0.2]), np.array([True, True]), np.array([0, 0]), 1)
    >>> round(float(v[0]), 12)  # 1 - 0.5 * 0.8 + 0.8 * 2 * 0.75 + 0.5 * 1 * (0 - 0.2)
    1.7
    """
    q_new = np.where(top, np.clip(p_new, 0.0, 1.0 - 1e-12), 0.0)
    log_stay = np.log1p(-q_new)
    stay = exposure_sums(log_stay, query, n_q)
    others = np.where(top, np.exp(stay[query] - log_stay), 0.0)  # no outcome on the list's other rows
    slope = others * w
    values = 1.0 - np.exp(stay) + exposure_sums(slope * (y - p_log), query, n_q)
    return values, _Term("sum", -slope * p_log, slope * (1.0 - p_log), p)


def _second_order(
    p_new: NDArray[np.float64],
    w: NDArray[np.float64],
    p_log: NDArray[np.float64],
    y: NDArray[np.float64],
    top: NDArray[np.bool_],
    query: NDArray[np.int64],
    n_q: int,
) -> NDArray[np.float64]:
    """Per query the second-order term of the product ``1 - prod(1 - p_new - r)`` that the
    linearised DR rate (:func:`_linearised_rate`) leaves out: ``-sum_{d < j} prod_{i != d, j}(1 - p_new_i) r_d r_j``
    with ``r = w * (y - p_log)`` the rows' IPS residuals (independent, each unbiased for the model's
    error of its row), so its mean estimates the linearisation's bias to second order.

    >>> v = _second_order(np.array([0.5, 0.2]), np.array([2.0, 1.0]), np.array([0.25, 0.2]),
    ...     np.array([1.0, 0.0]), np.array([True, True]), np.array([0, 0]), 1)
    >>> round(float(v[0]), 12)  # -(2 * 0.75) * (1 * -0.2)
    0.3
    """
    q_new = np.where(top, np.clip(p_new, 0.0, 1.0 - 1e-12), 0.0)
    u = np.where(top, w * (y - p_log), 0.0) / (1.0 - q_new)
    stay = np.exp(exposure_sums(np.log1p(-q_new), query, n_q))
    total, squares = exposure_sums(u, query, n_q), exposure_sums(u * u, query, n_q)
    return np.asarray(-0.5 * stay * (total * total - squares))


#: The share of the expected multi-click sessions a position-based log is allowed to fall to
#: before the test of :func:`cascade_like` (the fitted click model's misfit), and the share
#: below which a log is taken for a cascade (when the test says so): whatever the log's size,
#: a misfit of the click model alone never flags a log.
MISFIT = 0.9
CASCADE_SHARE = 0.8


def cascade_like(y: NDArray[np.float64], p: NDArray[np.float64], query: NDArray[np.int64], n_q: int) -> tuple[int, float] | None:
    """``(observed, expected)`` sessions of two or more clicks when the log has far fewer than
    the fitted position-based model ``p`` expects: below :data:`CASCADE_SHARE` of the expected
    count, and fewer than :data:`MISFIT` of it by a Poisson lower tail below 0.001 (a fitted
    click model of the scores is never exact: on position-based simulated logs the observed
    count was 0.65 to 1.26 of the expected one, median 0.89 to 1.01, the lowest ones on small
    counts; under cascade users 0 to 0.53, DBN users 0.53 to 0.70); else None."""
    from scipy import stats

    none = np.exp(exposure_sums(np.log1p(-p), query, n_q))
    one = none * exposure_sums(p / (1.0 - p), query, n_q)
    expected = float(np.maximum(1.0 - none - one, 0.0).sum())
    observed = int(np.count_nonzero(exposure_sums(y, query, n_q) > 1))
    if expected >= 5.0 and observed < CASCADE_SHARE * expected and float(stats.poisson.cdf(observed, MISFIT * expected)) < 1e-3:
        return observed, expected
    return None


def _cascade_note(found: tuple[int, float], estimators: Sequence[str], assume_position_based: bool) -> str:
    """The one line of a cascade-like log: the position-based intervals withheld, or printed as asked."""
    names = [e for e in POSITION_BASED if e in estimators]
    listed = ", ".join(names) if names else "dm"
    seen = (f"the log has {found[0]} sessions with two or more clicks where position-based users would make "
            f"{found[1]:.0f}: its clicks look like a cascade")  # fmt: skip
    if not names:
        return f"{seen}, which dm does not assume"
    if assume_position_based:
        return f"{seen}, which {listed} do not assume; their intervals are printed as asked (--assume-position-based) and may miss the truth"
    return f"no interval for {listed}: {seen}, which they do not assume (--assume-position-based prints their intervals anyway)"


def _summarise(
    columns: Sequence[tuple[Key, NDArray[np.float64], float, tuple[float, float], float]],
    n_q: int,
    *,
    n_bootstrap: int,
    seed: int,
    level: float,
) -> dict[Key, Estimate]:
    """Each ``(key, per-query values, model variance of their sum, range, ess)`` as an
    :class:`Estimate`: the mean projected onto the range, its BCa interval over queries (every
    column on the same resamples) widened to the model's floor, cut to the range and widened to
    hold the value."""
    from scipy import stats

    keys = [c[0] for c in columns]
    values = np.column_stack([c[1] for c in columns]) if n_q else np.zeros((0, len(keys)))
    boot = bootstrap_means(values, n_bootstrap=n_bootstrap, seed=seed)
    means = values.mean(axis=0) if n_q else np.full(len(keys), np.nan)
    low, high = bca_interval(values, means, boot, level=level)
    z_level = float(stats.norm.ppf(0.5 + level / 2.0))
    out: dict[Key, Estimate] = {}
    for i, (key, _, var, (bottom, top), ess) in enumerate(columns):
        half = z_level * math.sqrt(var) / max(n_q, 1)  # never narrower than the click model's variance says
        lo, hi = min(low[i], means[i] - half), max(high[i], means[i] + half)
        value = min(max(float(means[i]), bottom), top)
        lo, hi = min(max(lo, bottom), value), max(min(hi, top), value)
        out[key] = Estimate(value, float(lo), float(hi), ess, float(means[i]))
    return out


def _bare(estimates: Mapping[Key, Estimate], withheld: bool = False) -> dict[Key, Estimate]:
    """``estimates`` with the interval of each estimator of :data:`NO_INTERVAL` removed (and,
    ``withheld``, of each of :data:`POSITION_BASED`), each with its reason."""
    out = {}
    for key, e in estimates.items():
        if key[0] in NO_INTERVAL:
            e = e.without_interval(NO_INTERVAL_REASONS[key[0]])
        elif withheld and key[0] in POSITION_BASED:
            e = e.without_interval(NOT_POSITION_BASED_REASON)
        out[key] = e
    return out


def _log_notes(columns: Sequence[_Columns], estimators: Sequence[str], assume_position_based: bool) -> tuple[bool, list[str]]:
    """Whether the position-based intervals are withheld (a cascade-like log, by the click model
    of any candidate, unless ``assume_position_based``) and the one line that says so."""
    found = next((c.cascade_like for c in columns if c.cascade_like is not None), None)
    if found is None:
        return False, []
    return not assume_position_based, [_cascade_note(found, estimators, assume_position_based)]


def _projected(estimates: Mapping[Key, Estimate], what: str = "") -> list[str]:
    """One line per estimate whose unbiased mean left its range."""
    return [
        f"{what}{estimator} {metric}: the unbiased mean {e.unbounded:.4f} lies outside the metric's range; "
        f"printed at the bound {e.value:.4f}"
        for (estimator, metric), e in estimates.items()
        if math.isfinite(e.unbounded) and e.unbounded != e.value
    ]


def off_policy_estimates(
    outcomes: Mapping[str, NDArray[np.number]],
    log_positions: NDArray[np.integer],
    scores: NDArray[np.floating],
    offsets: NDArray[np.int64],
    *,
    propensities: NDArray[np.float64],
    k: int,
    clip: float | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    estimators: Sequence[str] = ESTIMATORS,
    coverage: float = 1.0,
    assume_position_based: bool = False,
) -> OpeResult:
    """The ``estimators``' estimates of the candidate's metrics (see the module docstring), and
    ``logged``, the logging ranking's own.

    Parameters
    ----------
    outcomes : ``{"click": 0/1 array}``, optionally ``"purchase"`` (0/1), shape (n_rows,)
    log_positions : 0-based logged positions, shape (n_rows,)
    scores : the candidate's scores of the same rows
    offsets : int64, shape (n_queries + 1,)
    propensities : examination of 0-based positions, each in (0, 1]; positions beyond the
        list take its last value
    k : the candidate shows its top ``k`` of each query's logged documents
    clip : cap of the weights (None: no clipping)
    estimators : of :data:`ALL_ESTIMATORS`
    coverage : share of the candidate's top-k documents the logger showed, reported as given
    assume_position_based : keep the intervals of ``ips``, ``snips`` and ``dr`` on a log whose
        clicks look like a cascade (by default they are withheld there: NaN bounds, ``reason``)

    Raises
    ------
    ValueError
        Shapes that disagree, clicks not 0/1, propensities out of (0, 1], an unknown estimator.

    Examples
    --------
    One query, the logged order reversed; a click at logged position 2 (e = 1, 1/2, 1/3): the
    candidate puts it first, weight 3: clicks_at_3 = 3, ctr = 1 - (1 - 3) = 3, projected onto
    [0, 1].

    >>> r = off_policy_estimates({"click": np.array([0, 0, 1])}, np.array([0, 1, 2]),
    ...     np.array([0.0, 1.0, 2.0]), np.array([0, 3]), propensities=np.array([1, 1 / 2, 1 / 3]),
    ...     k=3, n_bootstrap=10)
    >>> e = r.estimates["ips", "ctr"]
    >>> round(r.estimates["ips", "clicks_at_3"].value, 12), e.value, round(e.unbounded, 12)
    (3.0, 1.0, 3.0)
    """
    log = _check(outcomes, log_positions, [scores], offsets, propensities, k, clip, n_bootstrap, estimators)
    cols = _columns(log, scores, k=k, clip=clip, estimators=estimators, seed=seed)
    withheld, log_notes = _log_notes([cols], estimators, assume_position_based)
    estimates = _bare(_summarise(
        [(key, v, cols.terms[key].floor_variance(log.query, log.n_q, level) if key in cols.terms else 0.0,
          metric_range(key[1], k), cols.ess[key[0]]) for key, v in cols.values.items()],
        log.n_q, n_bootstrap=n_bootstrap, seed=seed, level=level,
    ), withheld)  # fmt: skip
    return OpeResult(
        estimates, log.n_q, log.n_rows, int(k), clip, cols.n_clipped, cols.max_weight, n_bootstrap, seed, cols.fits,
        cols.max_weights, float(coverage), [*cols.notes, *log_notes, *_projected(estimates)],
    )  # fmt: skip


def paired_estimates(
    outcomes: Mapping[str, NDArray[np.number]],
    log_positions: NDArray[np.integer],
    scores_a: NDArray[np.floating],
    scores_b: NDArray[np.floating],
    offsets: NDArray[np.int64],
    *,
    propensities: NDArray[np.float64],
    k: int,
    clip: float | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    estimators: Sequence[str] = ESTIMATORS,
    coverage: tuple[float, float] = (1.0, 1.0),
    assume_position_based: bool = False,
) -> PairedResult:
    """Candidates A and B on the same rows (parameters as :func:`off_policy_estimates`) and the
    difference B - A of each estimator and metric (not ``logged``, the same for both): the value
    is B's value minus A's, the interval the BCa interval of the mean per-query difference (on
    the same resamples as both runs' own values), widened to the click model's variance of the
    difference where it has a closed form (sums and cascade CTRs, the rows' outcome probability
    the mean of both fits'), cut to ``[-top, top]`` of the metric's range and widened to hold
    the value; the DR rates' interval stretched toward their estimated second-order bias (module
    docstring). An estimator of :data:`NO_INTERVAL` has a value and no interval, in each run and in
    the difference; on a cascade-like log (by either candidate's click model) so have ``ips``,
    ``snips`` and ``dr`` unless ``assume_position_based``.

    Examples
    --------
    Two queries; B puts the clicked document first in both, A leaves the log's order:

    >>> r = paired_estimates({"click": np.array([0, 1, 0, 1])}, np.array([0, 1, 0, 1]),
    ...     np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0, 1.0]), np.array([0, 2, 4]),
    ...     propensities=np.array([1.0, 0.5]), k=1, n_bootstrap=10, estimators=("ips",))
    >>> r.a.estimates["ips", "clicks_at_1"].value, r.b.estimates["ips", "clicks_at_1"].value
    (0.0, 1.0)
    >>> r.difference["ips", "clicks_at_1"].value, r.verdict(("ips", "clicks_at_1"))
    (1.0, 'B better')
    """
    log = _check(outcomes, log_positions, [scores_a, scores_b], offsets, propensities, k, clip, n_bootstrap, estimators)
    a = _columns(log, scores_a, k=k, clip=clip, estimators=estimators, seed=seed)
    b = _columns(log, scores_b, k=k, clip=clip, estimators=estimators, seed=seed)
    withheld, log_notes = _log_notes([a, b], estimators, assume_position_based)
    q, n_q = log.query, log.n_q
    rows: list[tuple[Key, NDArray[np.float64], float, tuple[float, float], float]] = []
    for tag, cols in (("a", a), ("b", b)):
        for key, v in cols.values.items():
            var = cols.terms[key].floor_variance(q, n_q, level) if key in cols.terms else 0.0
            rows.append(((tag, f"{key[0]}\t{key[1]}"), v, var, metric_range(key[1], k), cols.ess[key[0]]))
    for key in a.values:
        if key[0] == "logged" or key not in b.values:
            continue
        var = 0.0
        ta, tb = a.terms.get(key), b.terms.get(key)
        same = ta is not None and tb is not None and np.array_equal(ta.x0, tb.x0) and np.array_equal(ta.x1, tb.x1)
        if same:  # the same terms: every per-query difference is 0, and so is its variance
            var = 0.0
        elif ta is not None and tb is not None and ta.kind == "product":  # no closed form: (sd_A + sd_B)^2 bounds it
            var = (math.sqrt(ta.variance(q, n_q)) + math.sqrt(tb.variance(q, n_q))) ** 2 * chebyshev_scale(level)
        elif ta is not None and tb is not None and ta.kind == tb.kind:
            p = 0.5 * (ta.p + tb.p)
            var = _Term(ta.kind, tb.x0 - ta.x0, tb.x1 - ta.x1, p).variance(q, n_q)
        top = metric_range(key[1], k)[1]
        rows.append((("d", f"{key[0]}\t{key[1]}"), b.values[key] - a.values[key], var, (-top, top), min(a.ess[key[0]], b.ess[key[0]])))
    summary = _summarise(rows, n_q, n_bootstrap=n_bootstrap, seed=seed, level=level)
    parts: dict[str, dict[Key, Estimate]] = {"a": {}, "b": {}, "d": {}}
    for (tag, joined), e in summary.items():
        estimator, metric = joined.split("\t")
        parts[tag][estimator, metric] = e
    for key in a.second_order.keys() & b.second_order.keys() & parts["d"].keys():
        bias = -float(np.mean(b.second_order[key] - a.second_order[key])) if n_q else 0.0
        parts["d"][key] = _toward(parts["d"][key], bias, metric_range(key[1], k)[1])
    # the mean per-query difference, projected: unbiased where the runs' own values were not
    difference = _bare(parts["d"], withheld)

    def result(cols: _Columns, estimates: dict[Key, Estimate], cover: float) -> OpeResult:
        return OpeResult(_bare(estimates, withheld), n_q, log.n_rows, int(k), clip, cols.n_clipped, cols.max_weight, n_bootstrap,
                         seed, cols.fits, cols.max_weights, float(cover), [*cols.notes, *log_notes, *_projected(estimates)])  # fmt: skip

    return PairedResult(result(a, parts["a"], coverage[0]), result(b, parts["b"], coverage[1]), difference)


def _toward(e: Estimate, bias: float, top: float) -> Estimate:
    """``e`` with its interval stretched by ``|bias|`` on the side the estimate is off to when
    its bias is ``bias`` (the interval shifted by ``-bias``, joined to itself), cut to ``[-top, top]``."""
    if not (e.has_interval and math.isfinite(bias)):
        return e
    low, high = max(min(e.low, e.low - bias), -top), min(max(e.high, e.high - bias), top)
    return Estimate(e.value, low, high, e.ess, e.unbounded, e.reason)


def model_variance(
    x0: NDArray[np.float64],
    x1: NDArray[np.float64],
    p: NDArray[np.float64],
    query: NDArray[np.int64],
    n_queries: int,
    *,
    product: bool,
) -> float:
    """The variance of the sum over queries of an estimator's per-query values when each row's
    outcome is an independent Bernoulli(``p``) and its term is ``x0`` (outcome 0) or ``x1`` (1).

    ``product=False``: the per-query value is ``sum x``, variance ``sum p (1 - p) (x1 - x0)^2``.
    ``product=True``: it is ``1 - prod (1 - x)``, variance ``prod E[X^2] - prod E[X]^2`` of
    ``X = 1 - x`` (independent factors), taken in logs.

    Examples
    --------
    One row, weight 4, p = 1/8: 16 * (1/8) (7/8) = 1.75 either way.

    >>> q = np.array([0])
    >>> model_variance(np.zeros(1), np.array([4.0]), np.array([0.125]), q, 1, product=True)
    1.75
    """
    if not product:
        return float((p * (1.0 - p) * (x1 - x0) ** 2).sum())
    f0, f1 = 1.0 - x0, 1.0 - x1
    second = (1.0 - p) * f0 * f0 + p * f1 * f1
    first = (1.0 - p) * f0 + p * f1
    with np.errstate(divide="ignore"):
        log2 = np.where(second > 0, np.log(np.where(second > 0, second, 1.0)), -np.inf)
        log1 = np.where(first != 0, 2.0 * np.log(np.abs(np.where(first != 0, first, 1.0))), -np.inf)
    var = np.exp(exposure_sums(log2, query, n_queries)) - np.exp(exposure_sums(log1, query, n_queries))
    return float(np.maximum(var, 0.0).sum())


def bca_interval(
    values: NDArray[np.float64], means: NDArray[np.float64], boot: NDArray[np.float64], *, level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bias-corrected and accelerated (BCa; Efron 1987) bootstrap interval of each column's mean.

    The bias correction ``z0`` is the normal quantile of the share of resampled means below the
    estimate; the acceleration of a mean has a closed-form jackknife,
    ``a = sum(d^3) / (6 sum(d^2)^1.5)``, ``d = x - mean``. Per-query values of IPS are skewed
    (a rare click moved up by a large weight), where the plain percentile interval covers too
    little; BCa shifts the interval toward the long tail.
    """
    from scipy import stats

    n_cols = values.shape[1]
    if values.shape[0] == 0:
        return np.full(n_cols, np.nan), np.full(n_cols, np.nan)
    d = values - means
    s2 = (d * d).sum(axis=0)
    accel = np.divide((d**3).sum(axis=0), 6.0 * s2**1.5, out=np.zeros(n_cols), where=s2 > 0)
    below = (boot < means).mean(axis=0) + 0.5 * (boot == means).mean(axis=0)
    z0 = stats.norm.ppf(np.clip(below, 1.0 / (boot.shape[0] + 1), 1.0 - 1.0 / (boot.shape[0] + 1)))
    tail = (1.0 - level) / 2.0
    sorted_boot = np.sort(boot, axis=0)
    out = []
    for z_alpha in (stats.norm.ppf(tail), stats.norm.ppf(1.0 - tail)):
        shifted = z0 + (z0 + z_alpha) / (1.0 - accel * (z0 + z_alpha))
        probs = stats.norm.cdf(shifted)
        index = np.clip(np.rint(probs * (boot.shape[0] - 1)).astype(np.int64), 0, boot.shape[0] - 1)
        out.append(sorted_boot[index, np.arange(n_cols)])
    return out[0], out[1]


def bootstrap_means(values: NDArray[np.float64], *, n_bootstrap: int, seed: int) -> NDArray[np.float64]:
    """Means of the columns of ``values`` (queries x metrics) over ``n_bootstrap`` resamples of
    the queries with replacement (seeded; multinomial counts, in chunks of about 2 million)."""
    n_q = values.shape[0]
    if n_q == 0:
        return np.full((n_bootstrap, values.shape[1]), np.nan)
    rng = np.random.default_rng([seed, 0xB007])
    chunk = max(1, min(n_bootstrap, 2_000_000 // n_q))
    out = np.empty((n_bootstrap, values.shape[1]))
    p = np.full(n_q, 1.0 / n_q)
    for start in range(0, n_bootstrap, chunk):
        b = min(chunk, n_bootstrap - start)
        counts = rng.multinomial(n_q, p, size=b).astype(np.float64)
        out[start : start + b] = counts @ values / n_q
    return out
