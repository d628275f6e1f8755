"""Whether a log's clicks let a propensity curve have an interval at all: the position-based check.

Every curve of :mod:`ltr.metrics.clicks.propensity` assumes position-based users: a position is
examined with the same probability whatever was clicked above it. Cascade and DBN users break
that (a click ends or shortens the session), and then no position-based curve holds, whatever
its interval says. They show in a log in two ways: far fewer sessions with two or more clicks
than position-based users would make (the check of ``ltr ope``, :func:`ltr.online.ope.cascade_like`,
here on position-based users who click each row with the log's click rate at its position:
:func:`cascade_reason`), and fewer clicks below a click than below none (:func:`click_above_reason`).

:func:`check_position_based` runs both on an estimate that has an interval (``randomized``,
``em`` checked against the randomized sessions, ``harvest``) and, when one fires, returns the
curve with no interval and the reason (one clause, the counts). Training, ``ltr exposure`` and
the coverage benchmark call it on every estimate they print or log. On the benchmark's simulated
logs of 1,000 queries the two together fired on every cascade and DBN log, and on none of the
position-based ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.clicks.propensity import PropensityEstimate
from ltr.metrics.offsets import row_queries
from ltr.online.ope import cascade_like

#: The estimators whose interval the check can withhold (the others have none to withhold).
CHECKED = ("em", "randomized", "harvest")


def cascade_reason(clicks: NDArray[Any], positions: NDArray[np.integer], offsets: NDArray[np.int64]) -> str | None:
    """One clause when the log (per-row clicks, 0-based positions; the rows of session ``i`` are
    ``offsets[i]:offsets[i + 1]``) has far fewer sessions with two or more clicks than
    position-based users with the log's click rate at each position would make; None otherwise."""
    c = np.minimum(np.asarray(clicks, dtype=np.float64), 1.0)
    pos = np.asarray(positions, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if c.size == 0:
        return None
    shown = np.bincount(pos).astype(np.float64)
    rate = np.divide(np.bincount(pos, weights=c), shown, out=np.zeros_like(shown), where=shown > 0)
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    found = cascade_like(c, np.clip(rate[pos], 0.0, 1.0 - 1e-12), query, sizes.shape[0])
    if found is None:
        return None
    observed, expected = found
    return (
        f"the log has {observed} sessions with two or more clicks where position-based users would make {expected:.0f}: "
        "its clicks look like cascade or DBN users, whose examination depends on the clicks above, and no "
        "position-based curve holds for them"
    )


#: The one-sided level of :func:`click_above_reason`'s test (z below ``-Z_CLICK_ABOVE``).
Z_CLICK_ABOVE = 3.09


def click_above_reason(clicks: NDArray[Any], positions: NDArray[np.integer], offsets: NDArray[np.int64]) -> str | None:
    """One clause when a document is clicked less often below a click than below none; None otherwise.

    Under position-based users a row's click depends on its position and its own attractiveness
    only, so a click above says, if anything, that the query's documents are attractive: a click
    is at least as likely below a click as below none (exactly so in sessions shown in random
    order, where every document of a query is as likely at every position; on ranked sessions
    too on every simulated position-based log of the coverage benchmark, relevance-sorted ones
    included). Cascade and DBN users stop or slow down after a click, and make it less likely.
    The test: per position below the first, the 2 x 2 table (a click above or not, clicked or
    not), pooled over positions by Mantel and Haenszel; it fires when the pooled excess of clicks
    below a click is below ``-Z_CLICK_ABOVE`` standard errors (one-sided level 0.001 where
    position-based users click independently within a query)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    query = row_queries(offsets)
    c = np.minimum(np.asarray(clicks, dtype=np.float64), 1.0)
    pos = np.asarray(positions, dtype=np.int64)
    q = query
    if c.size == 0:
        return None
    order = np.lexsort((pos, q))
    c, pos, q = c[order], pos[order], q[order]
    before = np.cumsum(c) - c  # clicks of earlier rows, all sessions
    first = np.r_[True, q[1:] != q[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(q.shape[0]), 0))
    above = (before - before[start]) > 0  # a click at a higher position of the same session
    below = pos > 0
    n_pos = int(pos.max()) + 1 if pos.size else 0
    n1 = np.bincount(pos[below], weights=above[below].astype(np.float64), minlength=n_pos)
    n = np.bincount(pos[below], minlength=n_pos).astype(np.float64)
    k = np.bincount(pos[below], weights=c[below], minlength=n_pos)
    k1 = np.bincount(pos[below], weights=(c * above)[below], minlength=n_pos)
    ok = (n > 1) & (n1 > 0) & (n1 < n) & (k > 0) & (k < n)
    if not ok.any():
        return None
    n, n1, k, k1 = n[ok], n1[ok], k[ok], k1[ok]
    excess = float((k1 - n1 * k / n).sum())
    variance = float((n1 * (n - n1) * k * (n - k) / (n * n * (n - 1))).sum())
    if variance <= 0 or excess / np.sqrt(variance) >= -Z_CLICK_ABOVE:
        return None
    shown = float((n1 * k / n).sum())
    return (
        f"documents below a click were clicked {float(k1.sum()):.0f} times where "
        f"{shown:.0f} were expected from their positions: a click ends or shortens the session (cascade or DBN users), "
        "and no position-based curve holds for them"
    )


def check_position_based(
    estimate: PropensityEstimate, clicks: NDArray[Any], positions: NDArray[np.integer], offsets: NDArray[np.int64]
) -> PropensityEstimate:
    """``estimate`` as it is, or with no interval (:meth:`PropensityEstimate.without_interval`)
    when its log's clicks look like cascade or DBN users (:func:`cascade_reason`); the log is the
    one it was estimated from (all of it, randomized sessions or not): it fires on far fewer
    multi-click sessions than position-based users would make (:func:`cascade_reason`) or on
    fewer clicks below a click than below none (:func:`click_above_reason`).
    ``fit["cascade_like"]`` says whether the check ran and fired (0 / 1); an estimate with no
    interval is not checked."""
    if estimate.method not in CHECKED or estimate.n_bootstrap == 0:
        return estimate
    reason = cascade_reason(clicks, positions, offsets)
    if reason is None:
        reason = click_above_reason(clicks, positions, offsets)
    if reason is None:
        return PropensityEstimate(
            estimate.propensities, estimate.low, estimate.high, estimate.method, estimate.n_bootstrap,
            estimate.confidence, estimate.impressions, dict(estimate.fit or {}) | {"cascade_like": 0.0}, estimate.no_interval,
        )  # fmt: skip
    return estimate.without_interval(reason, cascade_like=1.0)
