"""Off-policy estimates of a candidate ranking's online metrics from a logged click log.

Conventions (beside those of :mod:`ltr.metrics`)
-------------------------------------------------
Flat arrays over the log's rows (impressions), grouped by query with ``offsets`` (rows
``offsets[q]:offsets[q + 1]`` are query ``q``'s logged documents). ``log_positions`` are the
0-based positions the logging ranking showed them at; the candidate ranks the same documents by
``scores`` (descending, ties in row order: :func:`ltr.data.clicks.rank_within_queries`) and shows
its top ``k``. ``propensities[p]`` is the examination probability of 0-based position ``p``
(relative to the top; any source: a known curve, :func:`ltr.metrics.ips.estimate_propensities`,
an EM fit), one session per query.

The click model is the position-based model (PBM): a document ``d`` at position ``p`` is clicked
with probability ``e(p) * a(d)``, clicks independent within a session, and what follows a click
(a purchase) independent of the position. For a row at logged position ``l`` and candidate
position ``r < k`` the weight is ``w = e(r) / e(l)``; ``E[w * click] = e(r) * a(d)``, the
candidate's click probability of ``d``. Metrics, per query then averaged over queries:

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
- ``dr``: doubly robust, ``e(r) * a_hat + min(w, clip) * (y - e(l) * a_hat)``. Unclipped,
  ``w * e(l) = e(r)`` and the model's terms cancel: DR equals IPS exactly; it differs where
  weights are clipped (the model fills in the mass the clip removes).

Each value has a BCa bootstrap interval over queries (:func:`bca_interval`), widened where
needed to at least ``± z * sd`` with ``sd`` the estimator's standard deviation under the fitted
click model (:func:`model_variance`): with large weights the variance sits in rare clicks (a
document logged at position 80 clicked and moved to the top), which a sample without such a
click does not show and the bootstrap cannot see (``n_bootstrap`` resamples, seeded; every
estimator and metric on the same resamples); then cut to the range the truth lies in (0..1 for a
share, 0..k for clicks@k: a single estimate may leave it, the truth cannot). Each also has an effective sample size, Kish's
``(sum v)^2 / sum v^2`` of the weights ``v`` the estimator puts on the top-k rows (``dm``: the
number of top-k rows). ``logged`` is the logging ranking's own observed value, for reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ltr.data.clicks import rank_within_queries

ESTIMATORS = ("ips", "snips", "dr", "dm")
#: The outcome columns a log may hold, and the "at least one" metric each gives.
RATE_METRICS = {"click": "ctr", "purchase": "purchase_rate"}


@dataclass(frozen=True, slots=True)
class Estimate:
    """One estimate: ``value`` with its bootstrap interval ``low``..``high`` and ``ess``."""

    value: float
    low: float
    high: float
    ess: float


@dataclass(frozen=True)
class OpeResult:
    """Every estimate, keyed ``(estimator, metric)``, and how they were made.

    ``n_clipped``: top-k rows whose weight was above ``clip``; ``max_weight``: the largest weight
    before clipping; ``dm_fits``: per outcome, the click model's ``(alpha, beta)`` of each half."""

    estimates: dict[tuple[str, str], Estimate]
    n_queries: int
    n_rows: int
    k: int
    clip: float | None
    n_clipped: int
    max_weight: float
    n_bootstrap: int
    seed: int
    dm_fits: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """``ope/<estimator>/<metric>`` (+ ``/low``, ``/high``, ``/ess``) and the settings' counts."""
        out: dict[str, float] = {}
        for (estimator, metric), e in self.estimates.items():
            key = f"ope/{estimator}/{metric}"
            out.update({key: e.value, f"{key}/low": e.low, f"{key}/high": e.high, f"{key}/ess": e.ess})
        out.update({"ope/n_queries": float(self.n_queries), "ope/n_rows": float(self.n_rows),
                    "ope/n_clipped": float(self.n_clipped), "ope/max_weight": self.max_weight})  # fmt: skip
        return {k: v for k, v in out.items() if math.isfinite(v)}


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
) -> OpeResult:
    """IPS, SNIPS, DM and DR estimates of the candidate's metrics (see the module docstring).

    Parameters
    ----------
    outcomes : ``{"click": 0/1 array}``, optionally ``"purchase"`` (0/1), shape (n_rows,)
    log_positions : 0-based logged positions, shape (n_rows,)
    scores : the candidate's scores of the same rows
    offsets : int64, shape (n_queries + 1,)
    propensities : examination of 0-based positions, each in (0, 1]; must cover every logged
        position and the candidate's top ``k``
    k : the candidate shows its top ``k`` of each query's logged documents
    clip : cap of the weights ``e(r) / e(l)`` (None: no clipping)

    Raises
    ------
    ValueError
        Shapes that disagree, clicks not 0/1, propensities that do not cover a position.

    Examples
    --------
    One query, the logged order reversed; clicks at logged positions 1 and 2 (e = 1, 1/2, 1/3):
    the candidate puts them at 1 and 0, weights 1 and 3: clicks_at_3 = 1 + 3 = 4, ctr =
    1 - (1 - 1) (1 - 3) = 1.

    >>> r = off_policy_estimates({"click": np.array([0, 1, 1])}, np.array([0, 1, 2]),
    ...     np.array([0.0, 1.0, 2.0]), np.array([0, 3]), propensities=np.array([1, 1 / 2, 1 / 3]),
    ...     k=3, n_bootstrap=10)
    >>> round(r.estimates["ips", "clicks_at_3"].value, 12), r.estimates["ips", "ctr"].value
    (4.0, 1.0)
    """
    if "click" not in outcomes:
        raise ValueError("outcomes need a 'click' array")
    offsets = np.asarray(offsets, dtype=np.int64)
    log_pos = np.asarray(log_positions, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    prop = np.asarray(propensities, dtype=np.float64)
    n_rows, n_q = log_pos.shape[0], offsets.shape[0] - 1
    if s.shape != log_pos.shape or int(offsets[-1]) != n_rows or offsets[0] != 0:
        raise ValueError(f"{n_rows} positions, {s.shape[0]} scores and offsets ending at {int(offsets[-1])} disagree")
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip={clip} must be > 0")
    if n_bootstrap < 2:
        raise ValueError(f"n_bootstrap={n_bootstrap} must be >= 2")
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
    new_pos = rank_within_queries(s, offsets).astype(np.int64)
    top = new_pos < k
    deepest = max(int(log_pos.max(initial=-1)), int(new_pos[top].max(initial=-1)))
    if deepest >= prop.size:
        raise ValueError(
            f"propensities cover positions 1..{prop.size}, but position {deepest + 1} is needed "
            f"(the log's deepest position, or the candidate's top k={k}); give one per position"
        )
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(n_q, dtype=np.int64), sizes)
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
    for name, y in ys.items():
        a = np.empty(n_rows)
        fits[name] = []
        for fold in (False, True):
            train = half != fold
            if not np.any(train & (y > 0)):  # a half without a click: fit on every row
                train = np.ones(n_rows, dtype=bool)
            alpha, beta = fit_attractiveness(z[train], y[train], e_log[train])
            fits[name].append((alpha, beta))
            a[half == fold] = _sigmoid(alpha + beta * z[half == fold])
        a_hat[name] = a

    columns: dict[tuple[str, str], NDArray[np.float64]] = {}
    model_var: dict[tuple[str, str], float] = {}
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
        for estimator, (x0, x1) in outcomes_terms.items():
            x = np.where(y > 0, x1, x0) * top
            columns[estimator, rate] = at_least_one(x, query, n_q)
            model_var[estimator, rate] = model_variance(x0 * top, x1 * top, p, query, n_q, product=True)
            if name == "click":
                columns[estimator, f"clicks_at_{k}"] = exposure_sums(x, query, n_q)
                model_var[estimator, f"clicks_at_{k}"] = model_variance(x0 * top, x1 * top, p, query, n_q, product=False)
        for estimator, x in (("dm", e_new * a), ("logged", np.where(log_pos < k, y, 0.0))):
            columns[estimator, rate] = at_least_one(x, query, n_q)
            if name == "click":
                columns[estimator, f"clicks_at_{k}"] = exposure_sums(x, query, n_q)
    ess = {
        "ips": _kish(w_clip[top]), "snips": _kish(w_sn[top]), "dr": _kish(w_clip[top]),
        "dm": float(np.count_nonzero(top)), "logged": float(np.count_nonzero(log_pos < k)),
    }  # fmt: skip
    keys = list(columns)
    values = np.column_stack([columns[key] for key in keys]) if n_q else np.zeros((0, len(keys)))
    boot = bootstrap_means(values, n_bootstrap=n_bootstrap, seed=seed)
    means = values.mean(axis=0) if n_q else np.full(len(keys), np.nan)
    low, high = bca_interval(values, means, boot, level=level)
    from scipy import stats

    z_level = float(stats.norm.ppf(0.5 + level / 2.0))
    for i, key in enumerate(keys):  # never narrower than the click model's variance says
        half = z_level * math.sqrt(model_var.get(key, 0.0)) / max(n_q, 1)
        low[i], high[i] = min(low[i], means[i] - half), max(high[i], means[i] + half)
        # the truth is a share (or a count of at most k clicks): the interval never leaves that range
        top_value = float(k) if key[1].startswith("clicks_at_") else 1.0
        low[i], high[i] = max(low[i], 0.0), min(high[i], top_value)
    estimates = {
        key: Estimate(float(means[i]), float(low[i]), float(high[i]), ess[key[0]]) for i, key in enumerate(keys)
    }
    return OpeResult(
        estimates, n_q, n_rows, int(k), clip, n_clipped, float(w[top].max(initial=0.0)), n_bootstrap, seed, fits
    )


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
