"""EM propensities on features with missing cells, positions too rarely clicked to identify, and a
flat EM curve that the click rates contradict (:mod:`ltr.metrics.clicks.propensity`).

The click log is simulated here, independently of :mod:`ltr.data.feedback.clicks`: lists of 4-40
documents, five features with 3 % missing cells, attractiveness a logistic function of the
features, examination ``1 / rank``, a noisy relevance-sorted logger and 30 % shuffled sessions.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from ltr.metrics.clicks.propensity import (
    MIN_POSITION_CLICKS,
    _degenerate_em,
    centred_features,
    estimate_propensity,
    regression_em,
)


def simulated_log(seed: int, *, n_queries: int = 900, nan_share: float = 0.03) -> dict[str, NDArray[np.float64]]:
    """A position-based click log (module docstring) and the flags of its shuffled sessions."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 41, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    query = np.repeat(np.arange(n_queries), sizes)
    x = rng.standard_normal((n, 5)) + 0.5 * rng.standard_normal((n_queries, 5))[query]
    logit = x @ np.array([1.2, -0.8, 0.6, 0.0, 0.4]) - 1.0
    attract = 1.0 / (1.0 + np.exp(-logit))
    shuffled = rng.random(n_queries) < 0.3
    key = np.where(shuffled[query], rng.random(n), -(logit + rng.standard_normal(n)))  # noisy relevance order
    order = np.lexsort((key, query))
    ranks = np.empty(n, np.int64)
    ranks[order] = np.arange(n) - offsets[query[order]]
    clicks = (rng.random(n) < attract / (ranks + 1.0)).astype(np.int32)
    features = x.astype(np.float32)
    features[rng.random(x.shape) < nan_share] = np.nan
    flags = np.repeat(shuffled, sizes).astype(np.int8)  # 1 on the rows of a shuffled session
    return {"clicks": clicks, "positions": ranks, "offsets": offsets, "features": features, "randomized": flags}


def test_em_intervals_hold_the_true_curve_with_missing_features() -> None:
    log = simulated_log(101)
    assert 0.02 < np.isnan(log["features"]).mean() < 0.04
    est = estimate_propensity(
        log["clicks"], log["positions"], log["offsets"], method="em", features=log["features"], n_bootstrap=40, seed=0,
        randomized=log["randomized"],
    )  # fmt: skip
    truth = 1.0 / np.arange(1, 6)
    held = (est.low[1:5] <= truth[1:]) & (truth[1:] <= est.high[1:5])
    assert int(held.sum()) >= 3, (est.low[:5], est.high[:5])  # this seed: 4 of 4
    given = np.isfinite(est.low[1:5])
    assert np.all(est.high[1:5][given] - est.low[1:5][given] > 0.01)  # never a zero-width interval
    assert np.all(est.propensities[1:5] < 0.75)  # not the flat 1.000 a NaN design gave
    assert est.fit is not None
    assert est.fit["features"] == 10  # 5 features + 5 missing indicators


def reference_design(features: NDArray[np.float32], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """The design of a NaN-free matrix, written out: within-query centring, unit variance, a constant."""
    x = np.asarray(features, dtype=np.float64)
    sizes = np.diff(offsets)
    means = np.add.reduceat(x, offsets[:-1], axis=0) / sizes[:, None]
    x = x - np.repeat(means, sizes, axis=0)
    scale = x.std(axis=0)
    return np.hstack([x / np.where(scale > 0, scale, 1.0), np.ones((x.shape[0], 1))])


def test_a_design_without_missing_cells_is_unchanged_bit_for_bit() -> None:
    log = simulated_log(5, n_queries=200, nan_share=0.0)
    design = centred_features(log["features"], log["offsets"])
    assert np.array_equal(design, reference_design(log["features"], log["offsets"]))
    est = estimate_propensity(log["clicks"], log["positions"], log["offsets"], method="em", features=log["features"], n_bootstrap=0)
    fit = regression_em(log["clicks"], log["positions"], design, est.n_positions)
    identified = np.isfinite(est.propensities)
    assert np.array_equal(est.propensities[identified], (fit.theta / fit.theta[0])[identified])


def test_missing_cells_by_hand() -> None:
    # query 1: feature 0 is 1, NaN, 3 (mean of the present 2); query 2: feature 0 missing in both rows
    features = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 0.0], [np.nan, 5.0], [np.nan, 5.0]])
    design = centred_features(features, np.array([0, 3, 5]))
    assert design.shape == (5, 4)  # 2 features, 1 indicator (feature 1 has no NaN), the constant
    centred = np.array([-1.0, 0.0, 1.0, 0.0, 0.0])  # NaN cells: 0 after centring
    assert np.allclose(design[:, 0], centred / centred.std())
    other = np.array([1.0, 0.0, -1.0, 0.0, 0.0])
    assert np.allclose(design[:, 1], other / other.std())
    indicator = np.array([-1 / 3, 2 / 3, -1 / 3, 0.0, 0.0])  # 1 where missing, minus the query's share
    assert np.allclose(design[:, 2], indicator / indicator.std())
    assert np.all(design[:, 3] == 1.0)
    assert np.isfinite(design).all()


def test_an_infinite_feature_is_refused() -> None:
    log = simulated_log(1, n_queries=60)
    log["features"][3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite value"):
        estimate_propensity(log["clicks"], log["positions"], log["offsets"], method="em", features=log["features"], n_bootstrap=0)


@pytest.mark.parametrize("method", ["em", "ctr"])
def test_a_position_with_few_clicks_is_not_identified(method: str) -> None:
    log = simulated_log(3, n_queries=400)
    clicks, positions = log["clicks"], log["positions"]
    per_position = np.bincount(positions, weights=clicks)
    est = estimate_propensity(
        clicks, positions, log["offsets"], method=method, features=log["features"], n_bootstrap=20, seed=0,
        randomized=log["randomized"],
    )  # fmt: skip
    few = per_position < MIN_POSITION_CLICKS
    few[0] = False
    assert few.any()
    assert (~few).sum() > 3
    assert np.all(np.isnan(est.propensities[few]))
    assert np.all(np.isnan(est.low[few]))
    assert np.all(np.isnan(est.high[few]))
    assert np.all(np.isfinite(est.propensities[~few]))
    given = np.isfinite(est.low)
    assert not np.any(given & few)
    assert np.all(est.high[1:][given[1:]] > est.low[1:][given[1:]])  # an interval is a real one, never zero-width
    if method == "ctr":  # never an interval: a log cannot show that every session was randomized
        assert not given.any()
    else:  # EM's, where the randomized sessions' interval holds its value
        assert given[1:].sum() >= 3
    assert est.fit is not None
    assert est.fit["not_identified"] == few.sum()
    logged = {key.split("/")[1] for key in est.metrics()}
    assert logged == {f"pos_{k + 1}" for k in np.flatnonzero(~few)}
    table = est.table(est.n_positions + 5)
    last = int(np.flatnonzero(~few)[-1])
    assert np.all(table[last:] == max(est.propensities[last], 0.01))  # the last finite value extends
    assert est.to_dict()["propensities"][int(np.flatnonzero(few)[0])] is None


def test_a_flat_em_curve_against_falling_click_rates_is_degenerate() -> None:
    log = simulated_log(2, n_queries=300, nan_share=0.0)
    n = int(log["positions"].max()) + 1
    clicks = log["clicks"].astype(np.float64)
    unidentified = np.bincount(log["positions"], weights=clicks, minlength=n) < MIN_POSITION_CLICKS
    unidentified[0] = False
    flat = np.ones(n)
    assert _degenerate_em(flat, clicks, log["positions"], unidentified, n)
    assert not _degenerate_em(1.0 / np.arange(1, n + 1), clicks, log["positions"], unidentified, n)
    # a log where position does not change the click rate: a flat curve is the right answer
    level = (np.random.default_rng(0).random(clicks.shape[0]) < 0.2).astype(np.float64)
    assert not _degenerate_em(flat, level, log["positions"], unidentified, n)
