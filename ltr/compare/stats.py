"""Paired statistics over per-query values: bootstrap CIs, t-test, sign-flip test, Holm, W/T/L.

Conventions (written once, here)
--------------------------------
Pairs
    ``a[i]`` and ``b[i]`` are the values of two runs on the same query ``i``; the paired
    difference is ``deltas = a - b`` (run minus baseline). Higher values are better.
Seeds
    Every randomised function takes a ``seed`` and builds its own
    ``numpy.random.default_rng(seed)``: no global random state, and the result of one
    comparison does not depend on which other comparisons are computed.
Bootstrap
    Percentile interval of the mean over ``n_resamples`` resamples of the queries with
    replacement (the same resampled query sets for every series passed together, so pairs stay
    pairs). Resamples are drawn in batches of ``batch`` rows as ``rng.integers(0, n, (batch,
    n))`` and the quantiles are linear, as `scipy.stats.bootstrap` with
    ``method="percentile"`` and the same ``batch`` (tests hold us to it).
Randomisation (sign-flip) test
    Two-sided: under the null each delta's sign is a fair coin, so the p-value is the share of
    sign assignments whose ``|mean|`` reaches the observed ``|mean(deltas)|``. Exact (all
    ``2**n`` assignments) when ``2**n <= n_resamples``; otherwise ``n_resamples`` seeded random
    assignments with the add-one estimate ``(hits + 1) / (n_resamples + 1)``, which is never 0.
t-test
    `scipy.stats.ttest_rel`, two-sided. Deltas that are all equal (up to float noise) have no
    variance: the p-value is 1 when they are all 0 and 0 otherwise.
Holm
    Step-down Holm-Bonferroni over a family of p-values; NaN entries (too few pairs to test)
    stay NaN and do not count in the family size.
Ties
    Wins / ties / losses compare values exactly (``a > b``, ``a == b``, ``a < b``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Bootstrap / randomisation draws per batch: ``batch * n_queries`` stays near this many cells.
_BATCH_CELLS = 1 << 22
#: Relative tolerance when a resampled statistic is compared with the observed one (float noise).
_REL_TOL = 1e-12


def default_batch(n: int) -> int:
    """Resamples per batch for ``n`` values per resample: about 4M cells (32 MB) at a time."""
    return max(1, _BATCH_CELLS // max(n, 1))


def _as_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} holds NaN; drop unpaired queries first")
    return arr


def _as_2d(series: ArrayLike, name: str) -> tuple[NDArray[np.float64], bool]:
    arr = np.asarray(series, dtype=np.float64)
    one_d = arr.ndim == 1
    values = arr[None, :] if one_d else arr
    if values.ndim != 2:
        raise ValueError(f"{name} must have shape (n_series, n) or (n,), got {arr.shape}")
    if np.isnan(values).any():
        raise ValueError(f"{name} holds NaN; drop unpaired queries first")
    return values, one_d


def bootstrap_means(
    series: ArrayLike, *, n_resamples: int, seed: int, batch: int | None = None
) -> NDArray[np.float64]:
    """Bootstrap distribution of the mean of each series, resampling queries jointly.

    Each resample draws ``n`` query indices with replacement (``rng.integers(0, n, (batch,
    n))``, as `scipy.stats.bootstrap`); every series is averaged over the same resampled
    queries, through a count matrix: ``counts @ series.T / n``, so the cost of the draws is
    paid once for all series.

    Parameters
    ----------
    series : float array, shape (n_series, n) or (n,)
        Per-query values; row ``j`` is one series (e.g. deltas, run values, baseline values).
    n_resamples : int
        Number of bootstrap resamples (>= 1).
    seed : int
        Seed of ``numpy.random.default_rng``.
    batch : int, optional
        Resamples drawn per batch (memory: a few ``batch * n`` arrays); default
        `default_batch`.

    Returns
    -------
    float64 array, shape (n_series, n_resamples) (or (n_resamples,) for a 1-D input)

    Examples
    --------
    >>> bootstrap_means([1.0, 1.0, 1.0], n_resamples=4, seed=0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    values, one_d = _as_2d(series, "series")
    n = values.shape[1]
    if n == 0:
        raise ValueError("series must have at least one value")
    if n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples} must be >= 1")
    step = batch or default_batch(n)
    rng = np.random.default_rng(seed)
    out = np.empty((values.shape[0], n_resamples), dtype=np.float64)
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        idx = rng.integers(0, n, (size, n))
        idx += (np.arange(size, dtype=np.int64) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        out[:, start : start + size] = (counts @ values.T).T / n
    return out[0] if one_d else out


def percentile_interval(
    distribution: NDArray[np.float64], *, confidence: float = 0.95
) -> NDArray[np.float64]:
    """Two-sided percentile interval of each row of a bootstrap distribution.

    Returns an array of shape ``distribution.shape[:-1] + (2,)``: low and high bounds (linear
    quantiles at ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be in (0, 1)")
    alpha = (1.0 - confidence) / 2.0
    return np.moveaxis(np.quantile(distribution, [alpha, 1.0 - alpha], axis=-1), 0, -1)


def paired_bootstrap_ci(
    deltas: ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    batch: int | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``mean(deltas)``.

    Examples
    --------
    >>> paired_bootstrap_ci([0.5, 0.5], n_resamples=10, seed=1)
    (0.5, 0.5)
    """
    d = _as_1d(deltas, "deltas")
    low, high = percentile_interval(
        bootstrap_means(d, n_resamples=n_resamples, seed=seed, batch=batch), confidence=confidence
    )
    return float(low), float(high)


def paired_t_pvalues(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Two-sided paired t-test p-value of every row pair (`scipy.stats.ttest_rel` along rows).

    ``a`` and ``b`` have shape (n_series, n). NaN for n < 2; rows of constant deltas get 1
    (all 0) or 0 (all equal, non-zero).
    """
    from scipy import stats

    x, _ = _as_2d(a, "a")
    y, _ = _as_2d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair up, got shapes {x.shape} and {y.shape}")
    out = np.full(x.shape[0], np.nan)
    if x.shape[1] < 2:
        return out
    d = x - y
    scale = np.maximum(np.abs(d).max(axis=1), 1.0)
    constant = np.ptp(d, axis=1) <= _REL_TOL * scale  # no variance, up to float noise
    out[constant] = np.where(np.abs(d[constant].mean(axis=1)) <= _REL_TOL * scale[constant], 1.0, 0.0)
    if (~constant).any():
        out[~constant] = stats.ttest_rel(x[~constant], y[~constant], axis=1).pvalue
    return out


def paired_t_pvalue(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided p-value of the paired t-test of ``mean(a - b) = 0`` (`scipy.stats.ttest_rel`).

    NaN for fewer than 2 pairs; 1 / 0 for deltas that are all 0 / all equal and non-zero.

    Examples
    --------
    >>> round(paired_t_pvalue([1.0, 2.0, 4.0], [0.0, 0.0, 0.0]), 6)
    0.118083
    """
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair up, got {x.shape[0]} and {y.shape[0]} values")
    return float(paired_t_pvalues(x[None, :], y[None, :])[0])


def _random_signs(rng: np.random.Generator, size: int, n: int) -> NDArray[np.float64]:
    """``size x n`` fair random signs, 8 per random byte."""
    bytes_ = rng.integers(0, 256, (size, (n + 7) // 8), dtype=np.uint8)
    return 1.0 - 2.0 * np.unpackbits(bytes_, axis=1, count=n).astype(np.float64)


def sign_flip_pvalues(
    deltas: ArrayLike, *, n_resamples: int = 10_000, seed: int = 0, batch: int | None = None
) -> NDArray[np.float64]:
    """`sign_flip_pvalue` of every row of ``deltas`` (shape (n_series, n)), with the same sign
    assignments for every row (one draw serves all series)."""
    d, _ = _as_2d(deltas, "deltas")
    n_series, n = d.shape
    if n == 0:
        return np.full(n_series, np.nan)
    if n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples} must be >= 1")
    observed = np.abs(d.mean(axis=1))
    threshold = observed - _REL_TOL * np.maximum(observed, np.abs(d).max(axis=1))
    if n < 63 and (1 << n) <= n_resamples:
        codes = np.arange(1 << n, dtype=np.int64)
        signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1)
        return np.asarray(np.mean(np.abs(signs @ d.T) / n >= threshold, axis=0), dtype=np.float64)
    step = batch or default_batch(n)
    rng = np.random.default_rng(seed)
    hits = np.zeros(n_series, dtype=np.int64)
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        hits += np.count_nonzero(np.abs(_random_signs(rng, size, n) @ d.T) / n >= threshold, axis=0)
    return np.asarray((hits + 1) / (n_resamples + 1), dtype=np.float64)


def sign_flip_pvalue(
    deltas: ArrayLike, *, n_resamples: int = 10_000, seed: int = 0, batch: int | None = None
) -> float:
    """Two-sided p-value of the paired randomisation (sign-flip) test of ``mean(deltas) = 0``.

    Exact over all ``2**n`` sign assignments when ``2**n <= n_resamples``, else a seeded Monte
    Carlo estimate ``(hits + 1) / (n_resamples + 1)``. NaN for no pairs.

    Examples
    --------
    >>> sign_flip_pvalue([1.0, 2.0, 3.0])  # exact: only all-plus and all-minus reach |mean| = 2
    0.25
    """
    d = _as_1d(deltas, "deltas")
    return float(sign_flip_pvalues(d[None, :], n_resamples=n_resamples, seed=seed, batch=batch)[0])


def holm(pvalues: ArrayLike) -> NDArray[np.float64]:
    """Holm-adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(m)`` the non-NaN p-values sorted, the adjusted value of
    ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1) p_(j))``. NaN stays NaN and is not counted.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, float("nan")]).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-D, got shape {p.shape}")
    out = np.full_like(p, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.shape[0]
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def wins_ties_losses(a: ArrayLike, b: ArrayLike) -> tuple[int, int, int]:
    """Queries where ``a`` beats, equals, loses to ``b`` (exact comparison, higher is better).

    Examples
    --------
    >>> wins_ties_losses([0.5, 0.2, 0.9], [0.1, 0.2, 1.0])
    (1, 1, 1)
    """
    x, y = _as_1d(a, "a"), _as_1d(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair up, got {x.shape[0]} and {y.shape[0]} values")
    return int(np.count_nonzero(x > y)), int(np.count_nonzero(x == y)), int(np.count_nonzero(x < y))
