"""Whether a log's clicks let a propensity curve have an interval at all: the position-based check.

Every curve of :mod:`ltr.metrics.clicks.propensity` assumes position-based users: a position is
examined with the same probability whatever was clicked above it. Cascade and DBN users break
that (a click ends or shortens the session), and then no position-based curve holds, whatever
its interval says. They show in a log as far fewer sessions with two or more clicks than
position-based users would make: the check of ``ltr ope`` (:func:`ltr.online.ope.cascade_like`),
here on position-based users who click each row with the log's click rate at its position.

:func:`check_position_based` runs it on an estimate that has an interval (``randomized``, ``em``
checked against the randomized sessions, ``harvest``) and, when it fires, returns the curve with
no interval and the reason (one clause, the two counts). Training, ``ltr exposure`` and the
coverage benchmark call it on every estimate they print or log. On the benchmark's simulated
logs of 1,000 queries it fired on every cascade log and on 84 % of the DBN logs' positions,
never on a position-based one (their multi-click sessions were 0.8 to 1.6 times the
position-based count, the cascade logs' 0 to 0.53, the DBN logs' 0.60 to 0.72).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.clicks.propensity import PropensityEstimate
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
    query = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    found = cascade_like(c, np.clip(rate[pos], 0.0, 1.0 - 1e-12), query, sizes.shape[0])
    if found is None:
        return None
    observed, expected = found
    return (
        f"the log has {observed} sessions with two or more clicks where position-based users would make {expected:.0f}: "
        "its clicks look like cascade or DBN users, whose examination depends on the clicks above, and no "
        "position-based curve holds for them"
    )


def check_position_based(
    estimate: PropensityEstimate, clicks: NDArray[Any], positions: NDArray[np.integer], offsets: NDArray[np.int64]
) -> PropensityEstimate:
    """``estimate`` as it is, or with no interval (:meth:`PropensityEstimate.without_interval`)
    when its log's clicks look like cascade or DBN users (:func:`cascade_reason`); the log is the
    one it was estimated from (all of it, randomized sessions or not). ``fit["cascade_like"]``
    says whether the check ran and fired (0 / 1); an estimate with no interval is not checked."""
    if estimate.method not in CHECKED or estimate.n_bootstrap == 0:
        return estimate
    reason = cascade_reason(clicks, positions, offsets)
    if reason is None:
        return PropensityEstimate(
            estimate.propensities, estimate.low, estimate.high, estimate.method, estimate.n_bootstrap,
            estimate.confidence, estimate.impressions, dict(estimate.fit or {}) | {"cascade_like": 0.0}, estimate.no_interval,
        )  # fmt: skip
    return estimate.without_interval(reason, cascade_like=1.0)
