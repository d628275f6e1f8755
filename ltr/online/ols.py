"""The least-squares line ``y ≈ slope * x + intercept`` with its slope's interval and p-value.

One implementation for every line of ``ltr``: the sweep's simulated CTR on nDCG
(:func:`ltr.sweeper.tradeoffs.fit_online`) and past A/B tests' online delta on their offline
delta (:mod:`ltr.online.calibrate`).

- Unweighted, the slope is ``Sxy / Sxx`` from centred sums (the same line as
  ``numpy.polyfit(x, y, 1)``, no lstsq); a constant ``y`` is centred on its first value so its
  slope is exactly 0.
- With ``weights`` (e.g. each experiment's sample size) it is weighted least squares: weighted
  means, ``slope = sum(w dx dy) / sum(w dx^2)``, residual variance ``sum(w r^2) / (n - 2)``, as
  ``statsmodels.WLS(y, [1, x], weights=w)``.
- Inference is the classical OLS one: ``se = sqrt(s^2 / Sxx)``, a Student t with ``n - 2``
  degrees of freedom for the two-sided p-value of ``slope = 0`` and the 95 % interval. With 2
  points there is no residual variance: ``se``, the interval and the p-value are NaN; a perfect
  line (zero residuals) has ``se = 0``, a zero-width interval and p = 0 (NaN if its slope is 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True, slots=True)
class LineFit:
    """A fitted line: ``slope``, ``intercept``, ``r2`` (NaN when every y is equal), ``n`` points;
    ``se`` the slope's standard error, ``low``/``high`` its interval at ``level``, ``p_value``
    the two-sided test of slope 0 (NaN with 2 points)."""

    slope: float
    intercept: float
    r2: float
    n: int
    se: float
    low: float
    high: float
    p_value: float
    level: float = 0.95


def as_pair(
    x: ArrayLike, y: ArrayLike, *, where: str, item: str = "point"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``x`` and ``y`` as 1-D float64 arrays of one length, one value per ``item`` (a point, a
    run), or a ``ValueError`` naming ``where``."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.ndim != 1 or ys.ndim != 1:
        raise ValueError(f"{where}: x and y must be 1-D (one value per {item}), got shapes {xs.shape} and {ys.shape}")
    if xs.shape != ys.shape:
        raise ValueError(f"{where}: x has {xs.size} {item}s but y has {ys.size}")
    return xs, ys


def fit_line(
    x: ArrayLike, y: ArrayLike, *, weights: ArrayLike | None = None, level: float = 0.95, where: str = "fit_line"
) -> LineFit:
    """Fit ``y ≈ slope * x + intercept`` (see the module docstring).

    Raises
    ------
    ValueError
        Fewer than 2 points, a NaN or infinite value, weights not all > 0, or every x equal.

    Examples
    --------
    x = [0, 1, 2], y = [0, 2, 1]: slope 1/2, residuals [-1/2, 1, -1/2], s^2 = 3/2, Sxx = 2,
    se = sqrt(3/4), t = 0.577 on 1 degree of freedom: p = 0.667.

    >>> f = fit_line([0.0, 1.0, 2.0], [0.0, 2.0, 1.0])
    >>> f.slope, round(f.se, 4), round(f.p_value, 3)
    (0.5, 0.866, 0.667)
    """
    xs, ys = as_pair(x, y, where=where)
    n = xs.size
    if n < 2:
        raise ValueError(f"{where}: a line needs at least 2 points, got {n}")
    for name, values in (("x", xs), ("y", ys)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"{where}: {name} of point {int(bad[0])} is {values[bad[0]]}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"{where}: level={level} must lie in (0, 1)")
    # Equal values are tested as such: their float mean can differ from them in the last bit.
    if np.all(xs == xs[0]):
        raise ValueError(f"{where}: x is the same at every point ({xs[0]:g}); a line through one x has no slope")
    constant_y = bool(np.all(ys == ys[0]))
    if weights is None:
        w = None
        mean_x = float(xs.mean())
        mean_y = float(ys[0]) if constant_y else float(ys.mean())
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != xs.shape:
            raise ValueError(f"{where}: {w.shape[0] if w.ndim else 0} weights for {n} points")
        bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
        if bad.size:
            raise ValueError(f"{where}: weight of point {int(bad[0])} is {w[bad[0]]}; weights must be finite and > 0")
        mean_x = float(w @ xs / w.sum())
        mean_y = float(ys[0]) if constant_y else float(w @ ys / w.sum())
    dx = xs - mean_x
    dy = np.zeros_like(ys) if constant_y else ys - mean_y
    wdx = dx if w is None else w * dx
    sxx = float(wdx @ dx)
    slope = float(wdx @ dy) / sxx
    intercept = mean_y - slope * mean_x
    residuals = ys - (slope * xs + intercept)
    wres = residuals if w is None else w * residuals
    ss_res = float(wres @ residuals)
    ss_tot = float(dy @ dy) if w is None else float((w * dy) @ dy)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0.0 else math.nan
    se, low, high, p_value = _inference(slope, ss_res, sxx, n, level)
    return LineFit(slope, intercept, r2, n, se, low, high, p_value, level)


def _inference(slope: float, ss_res: float, sxx: float, n: int, level: float) -> tuple[float, float, float, float]:
    """(se, low, high, p_value) of the slope under the classical OLS assumptions."""
    df = n - 2
    if df < 1:
        return math.nan, math.nan, math.nan, math.nan
    from scipy import stats

    se = math.sqrt(max(ss_res, 0.0) / df / sxx)
    q = float(stats.t.ppf(0.5 + level / 2.0, df))
    if se == 0.0:
        p_value = math.nan if slope == 0.0 else 0.0
    else:
        p_value = float(2.0 * stats.t.sf(abs(slope / se), df))
    return se, slope - q * se, slope + q * se, p_value
