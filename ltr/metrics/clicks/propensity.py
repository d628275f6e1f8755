"""Per-position examination propensities of a click log: given, or estimated, with a bootstrap interval.

Under the position-based model (PBM) a row shown at 1-based position ``k`` is clicked with
probability ``theta_k * gamma_qd``: the examination propensity of the position times the
attractiveness of the query-document pair. Only the ratios ``theta_k / theta_1`` can be learnt
from clicks, so every estimate here is relative to the top (``propensities[0] == 1``).

Methods (:func:`estimate_propensity`, ``method=``):

- ``given``: a list, one value per position from the first (its last value extends); no interval.
- ``column``: a logged propensity per row (``row_propensities``); the per-position value is the
  mean of the rows shown there, relative to position 1, with a bootstrap interval.
- ``ctr``: click-through rate by position relative to position 1, made non-increasing (what
  ``eval.clicks.propensity=estimated`` always did: unbiased on randomised sessions only).
- ``randomized``: the click-through rate by position relative to position 1 on the sessions
  shown in a uniformly random order only (``randomized``, one flag per row, constant within a
  query); its bootstrap resamples those sessions. Unbiased under the PBM: a random order makes
  the attractiveness of what is shown independent of the position, so the click rate at ``k``
  is ``theta_k`` times the same mean attractiveness everywhere. Not made non-increasing (a
  running minimum of noisy ratios would bias it down).
- ``em``: the PBM fitted by *regression EM* (Wang, Golbandi, Bendersky, Metzler, Najork, WSDM
  2018, "Position Bias Estimation for Unbiased Learning to Rank in Personal Search"): the
  E-step gives every unclicked row its posterior of having been examined and of being
  attractive; the M-step sets ``theta_k`` to the mean examination posterior at ``k`` and
  refits ``gamma`` as a function of the features (here a logistic regression with soft targets,
  features centred within each query, a few Newton steps per iteration) instead of one free
  parameter per pair, which a log with one session per query could not identify.
- ``harvest``: *intervention harvesting* (Agarwal, Zaitsev, Wang, Li, Najork, Joachims, WSDM
  2019, "Estimating Position Bias without Intrusive Interventions"): where several logging
  rankers showed the same document for the same query at different positions, the pair's click
  rate at each position (clicks / impressions there) is an intervention; summed over the pairs
  of each position pair ``(k, k')`` they estimate ``theta_k' / theta_k``, and all position pairs
  are combined by one Poisson likelihood (a Bradley-Terry model once the pairs' attractiveness
  is profiled out, :func:`harvest_ratios`), ``theta_1 = 1``. Positions no intervention links
  to position 1 are NaN.

Intervals, where they can be earned (:attr:`PropensityEstimate.no_interval` says why not, in one
line, :func:`interval_note`):

- ``ctr``: none. The CTR ratio is unbiased only when every session was shown in random order,
  which a log cannot show.
- ``em`` without ``randomized``: none. A logger that ranked on relevance the features do not
  show biases the curve, and nothing in such a log can check it.
- ``em`` with ``randomized`` (the sessions shown in random order): EM's curve (fitted on the
  whole log, as without them) is checked against the ``randomized`` curve: where EM's value lies
  inside the randomized sessions' interval, that interval is EM's; elsewhere (EM biased there,
  or too few randomized clicks to tell) there is none.
- ``randomized``, ``em`` with ``randomized``, ``harvest``: none when the log's clicks look like
  cascade or DBN users, whose examination depends on the clicks above (no position-based curve
  holds for them): the check of :func:`ltr.online.propensity_check.check_position_based`, which
  every command runs on the estimate (:meth:`PropensityEstimate.without_interval`).

Otherwise ``n_bootstrap`` resamples of the queries with replacement (seeded: the same numbers
on every run), the estimator rerun on each; the interval at ``confidence`` is normal on the log
scale, ``estimate * exp(+-z * sd)`` with ``sd`` the resamples' standard deviation of the log
propensity (steadier than extreme percentiles of a few dozen resamples, and never below 0),
capped at 1 unless the estimate itself exceeds 1. Under ``em``, ``ctr`` and ``randomized`` a position with
fewer than :data:`MIN_POSITION_CLICKS` clicks is *not identified*: NaN estimate and interval
(never 0 with a zero-width interval); :meth:`PropensityEstimate.table` extends the last finite
value over it. An ``em`` curve flat at 1 while the click rate clearly falls with position is
reported as not identified below position 1, with one warning. ``em`` takes NaN features
(:func:`centred_features`); an infinite one is refused. Positions
are 1-based here (``propensities[k - 1]`` is position ``k``); logs give 0-based positions.
Everything is numpy over the flat arrays (no per-query Python loop); the bootstrap loops over
its resamples only.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics.offsets import row_queries

logger = logging.getLogger(__name__)

#: The estimators of :func:`estimate_propensity`.
METHODS = ("given", "column", "ctr", "em", "harvest", "randomized")
#: The estimators that are biased when the logger ranked on relevance the features do not show.
BIASED_BY_LOGGER = ("ctr", "em")
#: Why ``ctr`` has no interval (:attr:`PropensityEstimate.no_interval`).
CTR_UNCHECKED = "the CTR ratio is unbiased only if every session was shown in random order, which the log cannot show"
#: Why ``em`` without randomized sessions has no interval.
EM_UNCHECKED = (
    "EM's curve cannot be checked on a log without randomized sessions (a logger that ranked on relevance the "
    "features do not show biases it)"
)


def interval_note(
    estimate: PropensityEstimate, mark: str = "data.randomized_column", use: str = "eval.clicks.propensity=randomized"
) -> str | None:
    """The one line that says why ``estimate`` has no interval (at some or all positions) and
    what would give one; None when nothing is withheld. ``mark`` / ``use``: the options that
    mark the randomized sessions and pick ``randomized`` (training's by default).

    >>> est = estimate_propensity(np.array([1, 0, 1, 0]), np.array([0, 1, 0, 1]), np.array([0, 2, 4]), method="ctr")
    >>> interval_note(est, "--randomized-column", "--propensity randomized")
    'no interval: the CTR ratio is unbiased only if every session was shown in random order, which the log cannot show; mark the sessions shown in random order (--randomized-column) and use --propensity randomized for one'
    """
    if not estimate.no_interval:
        return None
    fit = estimate.fit or {}
    if fit.get("cascade_like"):
        hint = ""
    elif estimate.method == "ctr":
        hint = f"; mark the sessions shown in random order ({mark}) and use {use} for one"
    elif estimate.method == "em" and not fit.get("checked"):
        hint = f"; mark the sessions shown in random order ({mark}) for one"
    elif estimate.method == "em" and fit.get("outside"):
        hint = f"; {use} reads those sessions alone"
    else:
        hint = ""
    return f"no interval: {estimate.no_interval}{hint}"


def _positions_text(positions: NDArray[np.int64]) -> str:
    """1-based positions as ranges: ``position 3``, ``positions 2-4, 7``."""
    ks = [int(k) for k in positions]
    runs: list[str] = []
    start = prev = ks[0]
    for k in [*ks[1:], -1]:
        if k != prev + 1:
            runs.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = k
        prev = k
    return ("position " if len(ks) == 1 else "positions ") + ", ".join(runs)


@dataclass(frozen=True)
class PropensityEstimate:
    """Examination propensities of positions ``1..K`` relative to position 1, with an interval.

    ``propensities[k - 1]``: position ``k`` (``propensities[0] == 1.0``); ``low`` / ``high``:
    the interval (module docstring) (equal to ``propensities`` for ``method="given"``; NaN where
    there is none: ``no_interval`` says why);
    ``method``: one of :data:`METHODS`; ``n_bootstrap``: resamples behind the interval (0:
    none); ``confidence``: the interval's level; ``impressions[k - 1]``: rows shown at position
    ``k`` in the log it was estimated from (empty for ``given``); ``fit``: what the estimator
    reports about itself (iterations, pairs, ...); ``no_interval``: why some or all positions
    have no interval (one clause, without the options that would give one: :func:`interval_note`),
    empty when every identified position has one or the curve is given.
    """

    propensities: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    method: str
    n_bootstrap: int = 0
    confidence: float = 0.95
    impressions: NDArray[np.int64] | None = None
    fit: dict[str, float] | None = None
    no_interval: str = ""

    @property
    def n_positions(self) -> int:
        return int(self.propensities.shape[0])

    def without_interval(self, reason: str, **fit: float) -> PropensityEstimate:
        """The same curve with no interval at any position: ``reason`` (one clause) says why;
        ``fit``: flags added to :attr:`fit` (``cascade_like=1.0``: the log's clicks break the
        position-based model, :func:`interval_note`).

        >>> est = PropensityEstimate(np.array([1.0, 0.4]), np.array([1.0, 0.3]), np.array([1.0, 0.5]), "randomized", 20)
        >>> bare = est.without_interval("why")
        >>> bare.metrics(), bare.n_bootstrap, bare.no_interval
        ({'propensity/pos_1': 1.0, 'propensity/pos_2': 0.4}, 0, 'why')
        """
        nan = np.full(self.n_positions, np.nan)
        return replace(self, low=nan, high=nan.copy(), n_bootstrap=0, fit=dict(self.fit or {}) | fit, no_interval=reason)

    def table(self, n_positions: int, *, min_propensity: float = 0.01) -> NDArray[np.float64]:
        """Propensities of 0-based positions ``0..n_positions-1`` for IPS weights: NaN (positions
        the estimator could not reach) and values beyond the estimate take the last finite value
        before them, everything clipped to ``[min_propensity, 1]``.

        >>> PropensityEstimate(np.array([1.0, 0.5, np.nan]), np.ones(3), np.ones(3), "harvest").table(4).tolist()
        [1.0, 0.5, 0.5, 0.5]
        """
        values = np.asarray(self.propensities, dtype=np.float64)
        finite = np.isfinite(values)
        last = np.maximum.accumulate(np.where(finite, np.arange(values.shape[0]), 0))
        filled = values[last]
        n = max(int(n_positions), 1)
        out = np.full(n, filled[-1])
        out[: min(n, filled.shape[0])] = filled[:n]
        return np.asarray(np.clip(out, min_propensity, 1.0), dtype=np.float64)

    def metrics(self, n_positions: int | None = None, *, prefix: str = "propensity") -> dict[str, float]:
        """``{prefix}/pos_{k}``, ``.../low``, ``.../high`` for positions ``1..n_positions``
        (default all), finite values only (no ``low`` / ``high`` where there is no interval).

        >>> PropensityEstimate(np.array([1.0, 0.4]), np.array([1.0, 0.3]), np.array([1.0, 0.5]), "em").metrics()
        {'propensity/pos_1': 1.0, 'propensity/pos_1/low': 1.0, 'propensity/pos_1/high': 1.0, 'propensity/pos_2': 0.4, 'propensity/pos_2/low': 0.3, 'propensity/pos_2/high': 0.5}
        """
        n = self.n_positions if n_positions is None else min(int(n_positions), self.n_positions)
        out: dict[str, float] = {}
        for k in range(1, n + 1):
            for suffix, values in (("", self.propensities), ("/low", self.low), ("/high", self.high)):
                value = float(values[k - 1])
                if np.isfinite(value):
                    out[f"{prefix}/pos_{k}{suffix}"] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        """Every number, JSON-ready (NaN as None)."""

        def clean(values: NDArray[Any] | None) -> list[float | None] | None:
            if values is None:
                return None
            return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]

        return {
            "method": self.method, "n_bootstrap": self.n_bootstrap, "confidence": self.confidence,
            "positions": list(range(1, self.n_positions + 1)), "propensities": clean(self.propensities),
            "low": clean(self.low), "high": clean(self.high), "impressions": clean(self.impressions),
            "fit": dict(self.fit or {}), "no_interval": self.no_interval or None,
        }  # fmt: skip


def parse_propensity_list(text: str) -> list[float]:
    """A curve as every ``ltr`` command takes it: comma-separated examination propensities of
    positions 1, 2, ... (position 1 first), each in (0, 1]; the last value extends to every
    deeper position (as ``eval.clicks.propensities`` and :meth:`PropensityEstimate.table`).

    >>> parse_propensity_list("1, 0.6,0.45")
    [1.0, 0.6, 0.45]
    >>> parse_propensity_list("1,0")
    Traceback (most recent call last):
    ...
    ValueError: '1,0': every propensity must be in (0, 1]
    """
    try:
        values = [float(v) for v in str(text).split(",")]
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of numbers") from None
    if not all(np.isfinite(v) and 0 < v <= 1 for v in values):
        raise ValueError(f"{text!r}: every propensity must be in (0, 1]")
    return values


# -- the estimators (0-based positions in, 1-based tables out) -----------------------------------


def _weighted_mean_by_position(values: NDArray[np.float64], pos: NDArray[np.int64], w: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    total = np.bincount(pos, weights=values * w, minlength=n)[:n]
    count = np.bincount(pos, weights=w, minlength=n)[:n]
    return np.asarray(np.divide(total, count, out=np.full(n, np.nan), where=count > 0), dtype=np.float64)


def ctr_ratio(
    clicks: NDArray[Any], positions: NDArray[np.int64], n_positions: int, weights: NDArray[np.float64] | None = None,
    *, skip: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """Click-through rate by position relative to position 1, non-increasing (NaN without
    impressions or without a click at position 1); ``skip``: positions left NaN and out of the
    running minimum (positions not identified).

    >>> ctr_ratio(np.array([1, 1, 0, 1, 0, 0]), np.array([0, 0, 1, 1, 2, 2]), 3).tolist()
    [1.0, 0.5, 0.0]
    >>> ctr_ratio(np.array([1, 1, 0, 0, 1, 0]), np.array([0, 0, 1, 1, 2, 2]), 3, skip=np.array([False, True, False])).tolist()
    [1.0, nan, 0.5]
    """
    rel = randomized_ratio(clicks, positions, n_positions, weights, skip=skip)
    return np.asarray(np.where(np.isnan(rel), np.nan, np.fmin.accumulate(rel)), dtype=np.float64)


def randomized_ratio(
    clicks: NDArray[Any], positions: NDArray[np.int64], n_positions: int, weights: NDArray[np.float64] | None = None,
    *, skip: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """Click-through rate by position relative to position 1, as it is (not made non-increasing):
    NaN without impressions, at ``skip`` or without a click at position 1.

    >>> randomized_ratio(np.array([1, 0, 0, 1, 1, 0]), np.array([0, 0, 1, 1, 2, 2]), 3).tolist()
    [1.0, 1.0, 1.0]
    >>> randomized_ratio(np.array([1, 1, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2]), 3, skip=np.array([False, True, False])).tolist()
    [1.0, nan, 1.0]
    """
    w = np.ones(positions.shape[0]) if weights is None else weights
    ctr = _weighted_mean_by_position(np.asarray(clicks, dtype=np.float64), positions, w, n_positions)
    if not ctr[0] > 0:
        return np.full(n_positions, np.nan)
    rel = ctr / ctr[0]
    if skip is not None:
        rel = np.where(skip, np.nan, rel)
    return np.asarray(rel, dtype=np.float64)


def randomized_queries(flags: NDArray[Any], offsets: NDArray[np.int64], names: NDArray[Any] | None = None) -> NDArray[np.bool_]:
    """One flag per query from ``flags`` (one per row, 0 or 1, constant within each query);
    ``names``: one per query, how a message names it (default its 0-based index).

    >>> randomized_queries(np.array([1, 1, 0, 0, 0]), np.array([0, 2, 5])).tolist()
    [True, False]

    Raises
    ------
    ValueError
        a value other than 0 / 1, a query with both, or no query flagged.
    """
    values = np.asarray(flags, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    query = row_queries(offsets)
    n_queries = offsets.shape[0] - 1
    label = np.arange(n_queries) if names is None else np.asarray(names)
    bad = np.flatnonzero((values != 0) & (values != 1))
    if bad.size:
        value = float(values[bad[0]])
        raise ValueError(f"query {label[query[bad[0]]]} has the randomized flag {value:g}: give 1 (shown in random order) or 0")
    ones = np.bincount(query, weights=values, minlength=n_queries)
    sizes = np.diff(offsets)
    mixed = np.flatnonzero((ones > 0) & (ones < sizes))
    if mixed.size:
        raise ValueError(f"query {label[mixed[0]]} has both randomized (1) and ordered (0) rows: a session is randomized as a whole")
    out = ones > 0
    if not out.any():
        raise ValueError("the log has no randomized session (every flag is 0)")
    return np.asarray(out, dtype=np.bool_)


def column_mean(row_propensities: NDArray[np.float64], positions: NDArray[np.int64], n_positions: int, weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """The mean logged propensity of the rows at each position, relative to position 1."""
    w = np.ones(positions.shape[0]) if weights is None else weights
    mean = _weighted_mean_by_position(np.asarray(row_propensities, dtype=np.float64), positions, w, n_positions)
    return np.asarray(mean / mean[0], dtype=np.float64)


def centred_features(features: NDArray[Any], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Features minus their query's mean, scaled to unit variance overall, plus a constant column.

    Missing values (NaN) as a linear model can mirror LightGBM's missing-value handling: the
    query's mean is taken over the values present, a missing cell is set to 0 after centring
    (the query's mean), and every feature with a missing cell adds one indicator column (1 where
    missing, centred and scaled as the features are), before the constant column. A design
    without NaN is unchanged by this (shape ``(n_rows, n_features + 1)``).

    >>> centred_features(np.array([[1.0], [np.nan], [3.0]]), np.array([0, 3])).round(3).tolist()
    [[-1.225, -0.707, 1.0], [0.0, 1.414, 1.0], [1.225, -0.707, 1.0]]
    """
    x = np.asarray(features, dtype=np.float64)
    missing = np.isnan(x)
    if missing.any():
        return _centred_with_missing(x, missing, np.asarray(offsets, dtype=np.int64))
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    means = np.zeros((sizes.shape[0], x.shape[1]))
    full = sizes > 0
    if x.shape[0]:
        means[full] = np.add.reduceat(x, offsets[:-1][full], axis=0) / sizes[full, None]
    x = x - means[query]
    scale = x.std(axis=0)
    x = x / np.where(scale > 0, scale, 1.0)
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _centred_with_missing(x: NDArray[np.float64], missing: NDArray[np.bool_], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`centred_features` of a matrix with NaN cells (``missing``): NaN-ignoring query means,
    missing cells 0 after centring, one centred indicator column per feature with a NaN."""
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    indicators = missing[:, missing.any(axis=0)].astype(np.float64)
    x = np.hstack([np.where(missing, 0.0, x), indicators])
    present = np.hstack([~missing, np.ones_like(indicators, dtype=bool)]).astype(np.float64)
    means = np.zeros((sizes.shape[0], x.shape[1]))
    full = sizes > 0
    if x.shape[0]:
        starts = offsets[:-1][full]
        count = np.add.reduceat(present, starts, axis=0)
        total = np.add.reduceat(x, starts, axis=0)
        means[full] = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    x = np.where(present > 0, x - means[query], 0.0)
    scale = x.std(axis=0)
    x = x / np.where(scale > 0, scale, 1.0)
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


@dataclass(frozen=True)
class EmFit:
    """A regression-EM fit: ``theta`` per 0-based position (not normalised), the logistic
    ``coef`` of the attractiveness model, the iterations run."""

    theta: NDArray[np.float64]
    coef: NDArray[np.float64]
    iterations: int


def regression_em(
    clicks: NDArray[Any],
    positions: NDArray[np.int64],
    design: NDArray[np.float64],
    n_positions: int,
    *,
    weights: NDArray[np.float64] | None = None,
    iterations: int = 200,
    newton_steps: int = 1,
    ridge: float = 1e-3,
    start: EmFit | None = None,
    tol: float = 1e-5,
) -> EmFit:
    """Fit ``P(click) = theta[position] * sigmoid(design @ coef)`` by regression EM (module
    docstring). ``design``: one row per impression (e.g. :func:`centred_features`);
    ``weights``: per-row weights (a bootstrap's query counts). ``start``: a fit to start from."""
    c = np.asarray(clicks, dtype=np.float64)
    w = np.ones(c.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    n = int(n_positions)
    pos = np.asarray(positions, dtype=np.int64)
    if start is None:
        rate = _weighted_mean_by_position(c, pos, w, n)
        theta = np.clip(np.nan_to_num(rate / max(float(np.nanmax(rate)), 1e-12), nan=0.5), 1e-3, 1.0)
        mean_gamma = min(max(float(np.average(c, weights=w)) / float(np.average(theta[pos], weights=w)), 1e-3), 0.5)
        coef = np.zeros(design.shape[1])
        coef[-1] = np.log(mean_gamma / (1 - mean_gamma))
    else:
        theta, coef = start.theta.copy(), start.coef.copy()
    # Boehning's bound: p (1 - p) <= 1/4, so one fixed matrix serves every Newton-like step of
    # the logistic regression (monotone, and only matrix-vector products per step)
    bound = np.linalg.inv(0.25 * (design * w[:, None]).T @ design + ridge * np.eye(design.shape[1]))

    def step(params: NDArray[np.float64]) -> NDArray[np.float64]:
        """One generalised EM iteration: E-step, theta's M-step, ``newton_steps`` bound steps of gamma's."""
        th, cf = np.clip(params[:n], 1e-6, 1.0), params[n:]
        t = th[pos]
        g = _sigmoid(np.einsum("ni,i->n", design, cf))
        denom = np.maximum(1.0 - t * g, 1e-12)
        examined = np.where(c > 0, 1.0, t * (1.0 - g) / denom)
        relevant = np.where(c > 0, 1.0, (1.0 - t) * g / denom)
        new_th = np.clip(np.nan_to_num(_weighted_mean_by_position(examined, pos, w, n), nan=1e-3), 1e-6, 1.0)
        for i in range(newton_steps):
            p = g if i == 0 else _sigmoid(np.einsum("ni,i->n", design, cf))
            cf = cf + bound @ (np.einsum("ni,n->i", design, w * (relevant - p)) - ridge * cf)
        return np.concatenate([new_th, cf])

    # SQUAREM (Varadhan and Roland, 2008): extrapolate along two EM steps, then one EM step
    x = np.concatenate([theta, coef])
    done = 0
    while done < iterations:
        x1 = step(x)
        x2 = step(x1)
        r, v = x1 - x, x2 - 2 * x1 + x
        alpha = -np.sqrt(float(r @ r)) / max(np.sqrt(float(v @ v)), 1e-300)
        alpha = min(alpha, -1.0)
        proposal = x - 2 * alpha * r + alpha * alpha * v
        proposal[:n] = np.clip(proposal[:n], 1e-6, 1.0)
        new = step(proposal)
        done += 3
        change = float(np.max(np.abs(new[:n] - x[:n])))
        x = new
        if change < tol:
            break
    theta, coef = x[:n], x[n:]
    return EmFit(theta, coef, done)


def _em_relative(fit: EmFit) -> NDArray[np.float64]:
    return np.asarray(fit.theta / fit.theta[0], dtype=np.float64)


@dataclass(frozen=True)
class Interventions:
    """The position pairs of intervention harvesting: per linked (query, document) and pair of
    positions ``k < k2`` (0-based), the pair's click rate at each (``rate_k``, ``rate_k2``) and the
    query (``query``, an index into the queries) it belongs to."""

    k: NDArray[np.int64]
    k2: NDArray[np.int64]
    rate_k: NDArray[np.float64]
    rate_k2: NDArray[np.float64]
    query: NDArray[np.int64]
    n_documents: int


def interventions(
    clicks: NDArray[Any],
    positions: NDArray[np.int64],
    query: NDArray[np.int64],
    doc_ids: NDArray[Any],
    loggers: NDArray[Any],
    n_positions: int,
) -> Interventions:
    """Every (query, document) that two or more loggers showed at different positions, with its
    click rate at each position (clicks there / impressions there), paired by positions."""
    frame = pd.DataFrame({
        "q": np.asarray(query, dtype=np.int64), "d": pd.factorize(np.asarray(doc_ids))[0],
        "k": np.asarray(positions, dtype=np.int64), "c": np.asarray(clicks, dtype=np.float64),
        "l": pd.factorize(np.asarray(loggers))[0],
    })  # fmt: skip
    frame = frame[frame["k"] < n_positions]
    per = frame.groupby(["q", "d", "k"], sort=False).agg(c=("c", "sum"), n=("c", "size")).reset_index()
    n_loggers = frame.groupby(["q", "d"], sort=False)["l"].nunique()
    n_places = per.groupby(["q", "d"], sort=False)["k"].transform("size")
    per = per[n_places.to_numpy() > 1]
    linked = n_loggers[n_loggers > 1].index
    per = per.set_index(["q", "d"]).loc[lambda f: f.index.isin(linked)].reset_index()
    per["r"] = per["c"] / per["n"]
    pairs = per.merge(per, on=["q", "d"], suffixes=("", "2"))
    pairs = pairs[pairs["k"] < pairs["k2"]]
    return Interventions(
        pairs["k"].to_numpy(np.int64), pairs["k2"].to_numpy(np.int64), pairs["r"].to_numpy(np.float64),
        pairs["r2"].to_numpy(np.float64), pairs["q"].to_numpy(np.int64), len(per.groupby(["q", "d"])),
    )  # fmt: skip


def harvest_ratios(
    found: Interventions, n_positions: int, query_weights: NDArray[np.float64] | None = None, *, iterations: int = 2000, tol: float = 1e-10
) -> NDArray[np.float64]:
    """``theta_k / theta_1`` of every position from the interventions (module docstring); NaN
    where no chain of interventions reaches position 1.

    Per position pair ``(k, k2)``, ``A`` and ``B`` are the summed click rates of its pairs at
    ``k`` and at ``k2``: ``E[A] = theta_k G`` and ``E[B] = theta_k2 G`` with ``G`` the pairs'
    summed attractiveness. Profiling ``G`` out of the Poisson likelihood leaves a Bradley-Terry
    model, ``A`` "wins" of ``k`` and ``B`` of ``k2`` in ``A + B`` comparisons, fitted by its MM
    iteration (Hunter, Annals of Statistics 2004) over all position pairs at once: no pair is
    dropped for a zero, and no log of a small sum biases it.

    >>> found = Interventions(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 1.0]), np.array([0.5, 0.5]), np.array([0, 1]), 2)
    >>> harvest_ratios(found, 3).round(6).tolist()[:2]
    [1.0, 0.5]
    """
    n = int(n_positions)
    w = np.ones(found.k.shape[0]) if query_weights is None else query_weights[found.query]
    cell = found.k * n + found.k2
    a = np.bincount(cell, weights=found.rate_k * w, minlength=n * n)
    b = np.bincount(cell, weights=found.rate_k2 * w, minlength=n * n)
    use = np.flatnonzero(a + b > 0)
    out = np.full(n, np.nan)
    out[0] = 1.0
    if use.shape[0] == 0:
        return out
    k, k2 = use // n, use % n
    a, b = a[use], b[use]
    total = a + b
    wins = np.bincount(k, weights=a, minlength=n) + np.bincount(k2, weights=b, minlength=n)
    reached = _reachable(k, k2, n)
    theta = np.where(reached, 1.0, 0.0)
    for _ in range(iterations):
        share = total / np.maximum(theta[k] + theta[k2], 1e-300)
        denom = np.bincount(k, weights=share, minlength=n) + np.bincount(k2, weights=share, minlength=n)
        new = np.divide(wins, denom, out=np.zeros(n), where=denom > 0)
        new = new / new[0] if new[0] > 0 else new
        change = float(np.max(np.abs(new - theta)))
        theta = new
        if change < tol:
            break
    if not theta[0] > 0:
        return out
    out[reached] = theta[reached] / theta[0]
    return out


def _reachable(k: NDArray[np.int64], k2: NDArray[np.int64], n: int) -> NDArray[np.bool_]:
    """Positions joined to position 0 by a chain of position pairs (n rounds of propagation)."""
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    for _ in range(n):
        grown = seen.copy()
        grown[k2[seen[k]]] = True
        grown[k[seen[k2]]] = True
        if np.array_equal(grown, seen):
            break
        seen = grown
    return seen


# -- the public entry point ----------------------------------------------------------------------

#: A position with fewer clicks than this is "not identified" under ``em`` and ``ctr`` (NaN
#: estimate and interval). Its estimate rests on its ``m`` clicks, a count with a relative
#: standard error of about ``1 / sqrt(m)`` (45 % at 5, unbounded at 0), and a resample of the
#: queries holds none of them with probability about ``exp(-m)`` (1 in 150 at 5, 1 in 20 at 3),
#: which sends the log-scale interval to 0: below 5 clicks the estimate is no more than noise
#: and its interval does not hold its level.
MIN_POSITION_CLICKS = 5


def _degenerate_em(
    point: NDArray[np.float64], clicks: NDArray[np.float64], positions: NDArray[np.int64],
    unidentified: NDArray[np.bool_], n: int,
) -> bool:
    """EM's curve is flat at 1 at every identified position below the first while the click rate
    of some identified position is below position 1's by more than 4 binomial standard errors:
    EM has put the position effect into the attractiveness (or failed), not estimated it."""
    rest = ~unidentified
    rest[0] = False
    if not rest.any() or np.any(np.abs(np.where(rest, point, 1.0) - 1.0) > 1e-3):
        return False
    shown = np.bincount(positions, minlength=n)[:n].astype(np.float64)
    rate = np.divide(np.bincount(positions, weights=clicks, minlength=n)[:n], shown, out=np.zeros(n), where=shown > 0)
    se = np.sqrt(rate[0] * (1 - rate[0]) / max(shown[0], 1.0) + rate * (1 - rate) / np.maximum(shown, 1.0))
    return bool(np.any(rest & (rate[0] - rate > 4 * np.maximum(se, 1e-12))))


def estimate_propensity(
    clicks: NDArray[Any] | None = None,
    positions: NDArray[Any] | None = None,
    offsets: NDArray[np.int64] | None = None,
    *,
    method: str,
    n_positions: int | None = None,
    given: Sequence[float] | None = None,
    row_propensities: NDArray[Any] | None = None,
    features: NDArray[Any] | None = None,
    doc_ids: NDArray[Any] | None = None,
    loggers: NDArray[Any] | None = None,
    query_ids: NDArray[Any] | None = None,
    randomized: NDArray[Any] | None = None,
    n_bootstrap: int = 100,
    confidence: float = 0.95,
    seed: int = 0,
) -> PropensityEstimate:
    """Propensities of positions ``1..n_positions`` by ``method`` (module docstring).

    Parameters
    ----------
    clicks, positions : per-row arrays (positions 0-based); not needed for ``given``
    offsets : the rows of query ``i`` are ``offsets[i]:offsets[i + 1]`` (the bootstrap's unit)
    n_positions : positions estimated (default: the largest logged position + 1, or
        ``len(given)``)
    given : the list of ``method="given"``
    row_propensities : per-row logged propensities (``method="column"``)
    features : per-row features (``method="em"``; centred within queries here)
    doc_ids, loggers : per-row document and logging-ranker ids (``method="harvest"``)
    query_ids : per-row query ids that group sessions of one query for ``harvest`` (default:
        each ``offsets`` group is its own query)
    randomized : per-row 0 / 1, constant within a query: the sessions shown in a random order
        (:func:`randomized_queries`): ``method="randomized"`` reads them alone; ``"em"`` checks
        its curve against theirs for an interval (module docstring)
    n_bootstrap, confidence, seed : the interval (resamples of whole queries, seeded)

    Raises
    ------
    ValueError
        an unknown method, a missing input of the method, inconsistent shapes, a bad list.

    Examples
    --------
    >>> est = estimate_propensity(method="given", given=[1.0, 0.5, 0.25])
    >>> est.propensities.tolist(), est.low.tolist() == est.propensities.tolist()
    ([1.0, 0.5, 0.25], True)
    """
    if method not in METHODS:
        raise ValueError(f"unknown propensity method {method!r}; one of: {', '.join(METHODS)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be >= 0, got {n_bootstrap}")
    if method == "given":
        if given is None:
            raise ValueError("method='given' needs the list of propensities (given=[1, 0.6, ...])")
        values = np.asarray(list(given), dtype=np.float64)
        if values.ndim != 1 or values.size == 0 or np.any(~np.isfinite(values)) or np.any(values <= 0) or np.any(values > 1):
            raise ValueError(f"propensities must be a non-empty list of values in (0, 1], got {values.tolist()[:10]}")
        n = values.size if n_positions is None else int(n_positions)
        table = np.full(n, values[-1])
        table[: min(n, values.size)] = values[:n]
        return PropensityEstimate(table, table.copy(), table.copy(), "given", 0, confidence)
    if clicks is None or positions is None or offsets is None:
        raise ValueError(f"method={method!r} needs clicks, positions and offsets")
    c = np.asarray(clicks, dtype=np.float64)
    pos = np.asarray(positions, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if c.shape != pos.shape or int(offsets[-1]) != c.shape[0]:
        raise ValueError(f"clicks {c.shape}, positions {pos.shape} and offsets (last {int(offsets[-1])}) disagree")
    if pos.size and int(pos.min()) < 0:
        raise ValueError("positions must be 0-based integers >= 0")
    n = (int(pos.max()) + 1 if pos.size else 1) if n_positions is None else int(n_positions)
    whole = (c, pos, offsets)  # the whole log, for EM's randomized curve
    if method == "randomized" and randomized is None:
        raise ValueError("method='randomized' needs the randomized flag of every row")
    if method in ("randomized", "em") and randomized is not None:
        if np.shape(randomized) != c.shape:
            raise ValueError(f"randomized flags {np.shape(randomized)} and clicks {c.shape} disagree")
        chosen = randomized_queries(randomized, offsets)
    if method == "randomized":  # the randomized sessions only, from here on
        rows = np.repeat(chosen, np.diff(offsets))
        c, pos = c[rows], pos[rows]
        offsets = np.concatenate([[0], np.cumsum(np.diff(offsets)[chosen])]).astype(np.int64)
    keep = pos < n
    query = row_queries(offsets)
    n_queries = offsets.shape[0] - 1
    impressions = np.bincount(pos[keep], minlength=n)[:n].astype(np.int64)

    estimator: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    fit: dict[str, float] = {}
    unidentified = np.zeros(n, dtype=bool)
    if method in ("em", "ctr", "randomized"):
        unidentified = np.bincount(pos[keep], weights=c[keep], minlength=n)[:n] < MIN_POSITION_CLICKS
        unidentified[0] = False  # the reference: 1 by definition
        fit["not_identified"] = float(unidentified.sum())
    if method == "ctr":

        def estimator(qw: NDArray[np.float64]) -> NDArray[np.float64]:
            return ctr_ratio(c[keep], pos[keep], n, qw[query][keep], skip=unidentified)

    elif method == "randomized":
        fit["sessions"] = float(n_queries)

        def estimator(qw: NDArray[np.float64]) -> NDArray[np.float64]:
            return randomized_ratio(c[keep], pos[keep], n, qw[query][keep], skip=unidentified)

    elif method == "column":
        if row_propensities is None:
            raise ValueError("method='column' needs row_propensities")
        props = np.asarray(row_propensities, dtype=np.float64)
        if props.shape != c.shape or np.any(~np.isfinite(props)) or np.any(props <= 0) or np.any(props > 1):
            raise ValueError("logged propensities must be one value in (0, 1] per row")

        def estimator(qw: NDArray[np.float64]) -> NDArray[np.float64]:
            return column_mean(props[keep], pos[keep], n, qw[query][keep])

    elif method == "em":
        if features is None:
            raise ValueError("method='em' needs the features (its attractiveness model's inputs)")
        if np.isinf(np.asarray(features, dtype=np.float64)).any():
            raise ValueError("the features hold an infinite value; EM's attractiveness model needs finite features (NaN is kept)")
        design = centred_features(features, offsets)[keep]
        base = regression_em(c[keep], pos[keep], design, n)
        fit |= {"iterations": float(base.iterations), "features": float(design.shape[1] - 1)}

        def estimator(qw: NDArray[np.float64]) -> NDArray[np.float64]:
            if np.all(qw == 1.0):
                return _em_relative(base)
            return _em_relative(regression_em(c[keep], pos[keep], design, n, weights=qw[query][keep], start=base, iterations=90))

    else:  # harvest
        if doc_ids is None or loggers is None:
            raise ValueError("method='harvest' needs doc ids and logging-ranker ids")
        groups = query if query_ids is None else pd.factorize(np.asarray(query_ids))[0].astype(np.int64)
        found = interventions(c, pos, groups, np.asarray(doc_ids), np.asarray(loggers), n)
        n_groups = int(groups.max()) + 1 if groups.size else 0
        fit = {"documents": float(found.n_documents), "position_pairs": float(found.k.shape[0]), "loggers": float(pd.unique(np.asarray(loggers)).shape[0])}
        if found.k.shape[0] == 0:
            raise ValueError(
                "intervention harvesting found no document that two logging rankers showed at different positions "
                "for the same query; it needs a log of several rankers on the same queries"
            )
        # the bootstrap resamples the queries of the interventions (groups), not the sessions
        query, n_queries = groups, n_groups

        def estimator(qw: NDArray[np.float64]) -> NDArray[np.float64]:
            return harvest_ratios(found, n, qw)

    point = estimator(np.ones(n_queries))
    if method in ("em", "ctr", "randomized"):
        if method == "em" and _degenerate_em(point, c[keep], pos[keep], unidentified, n):
            logger.warning(
                "EM propensities are degenerate (1.000 at every position) while the click rate falls with position: "
                "not reported (positions 2-%d not identified); the features may not explain the clicks: try "
                "eval.clicks.propensity=estimated on a log with shuffled sessions, or harvest",
                n,
            )
            fit["degenerate"] = 1.0
            unidentified[1:] = True
        point = np.where(unidentified, np.nan, point)
    low, high = point.copy(), point.copy()
    withheld = ""
    if method == "ctr":
        withheld = CTR_UNCHECKED
    elif method == "em" and randomized is None:
        withheld = EM_UNCHECKED
    if withheld or n_bootstrap == 0 or n_queries == 0:  # no interval: NaN, never a zero-width one
        low, high = np.full(n, np.nan), np.full(n, np.nan)
        n_bootstrap = 0
    elif method == "em" and n_bootstrap > 0:  # checked against the randomized sessions' curve
        return _checked_em(point, estimate_propensity(
            *whole, method="randomized", n_positions=n, randomized=randomized, n_bootstrap=n_bootstrap,
            confidence=confidence, seed=seed,
        ), impressions, fit)  # fmt: skip
    if n_bootstrap > 0 and n_queries > 0 and method != "em":
        rng = np.random.default_rng([seed, 0xB007])
        draws = np.empty((n_bootstrap, n))
        for b in range(n_bootstrap):
            qw = np.bincount(rng.integers(0, n_queries, n_queries), minlength=n_queries).astype(np.float64)
            draws[b] = estimator(qw)
        # a normal interval on the log scale with the resamples' standard deviation: steadier than
        # their extreme percentiles at a few dozen resamples, and never below 0
        z = float(NormalDist().inv_cdf(0.5 + confidence / 2.0))
        logs = np.log(np.clip(draws, 1e-6, None))
        with warnings.catch_warnings():  # a position no resample reached: NaN, as its estimate
            warnings.simplefilter("ignore", RuntimeWarning)
            spread = np.nanstd(logs, axis=0, ddof=1)
        centre = np.log(np.clip(point, 1e-6, None))
        low = np.minimum(np.exp(centre - z * spread), point)
        # capped at 1 (no position examined more than the first) unless the estimate says otherwise
        high = np.minimum(np.exp(centre + z * spread), np.maximum(point, 1.0))
        low = np.where(np.isfinite(point), low, np.nan)
        high = np.where(np.isfinite(point), high, np.nan)
    if unidentified.any():
        point = np.where(unidentified, np.nan, point)
        low, high = np.where(unidentified, np.nan, low), np.where(unidentified, np.nan, high)
    return PropensityEstimate(
        point, np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64), method, int(n_bootstrap),
        confidence, impressions, fit, withheld,
    )  # fmt: skip


def _checked_em(
    point: NDArray[np.float64], reference: PropensityEstimate, impressions: NDArray[np.int64], fit: dict[str, float]
) -> PropensityEstimate:
    """EM's curve ``point`` with the interval of the randomized sessions' curve ``reference``
    where EM's value lies inside it; no interval elsewhere (module docstring)."""
    fit = fit | {"checked": 1.0, "randomized_sessions": float((reference.fit or {}).get("sessions", 0.0))}
    finite = np.isfinite(point)
    bounded = finite & np.isfinite(reference.low) & np.isfinite(reference.high)
    inside = bounded & (reference.low <= point) & (point <= reference.high)
    low = np.where(inside, reference.low, np.nan)
    high = np.where(inside, reference.high, np.nan)
    parts = []
    outside = np.flatnonzero(bounded & ~inside) + 1
    if outside.size:
        parts.append(
            f"at {_positions_text(outside)} EM's value lies outside the {reference.confidence:.0%} interval of the "
            "randomized sessions (biased there)"
        )
    unchecked = np.flatnonzero(finite & ~bounded) + 1
    if unchecked.size:
        parts.append(f"at {_positions_text(unchecked)} the randomized sessions have too few clicks to check it")
    fit["outside"] = float(outside.size)
    return PropensityEstimate(
        point, low, high, "em", reference.n_bootstrap, reference.confidence, impressions, fit, "; ".join(parts),
    )  # fmt: skip
