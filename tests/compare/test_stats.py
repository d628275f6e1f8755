"""The paired statistics against hand-computed values and scipy, on small arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from ltr.compare.stats import (
    bootstrap_means,
    holm,
    paired_bootstrap_ci,
    paired_t_pvalue,
    percentile_interval,
    sign_flip_pvalue,
    wins_ties_losses,
)
from tests.conftest import examples

RUN = np.array([0.81, 0.40, 0.95, 0.10, 0.66, 0.52, 0.73, 0.30, 0.90, 0.47])
BASE = np.array([0.70, 0.45, 0.80, 0.10, 0.50, 0.60, 0.61, 0.22, 0.75, 0.47])


# --- Holm ------------------------------------------------------------------------------------


def test_holm_hand_computed() -> None:
    # sorted: 0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> max(0.06, 0.04)
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)


def test_holm_clips_at_one_and_skips_nan() -> None:
    # m = 3 (NaN not counted): 0.2 * 3 = 0.6; 0.5 * 2 = 1.0; 0.9 * 1 -> max(1.0, 0.9)
    adjusted = holm([0.5, math.nan, 0.2, 0.9])
    assert adjusted[[0, 2, 3]].tolist() == pytest.approx([1.0, 0.6, 1.0])
    assert math.isnan(adjusted[1])
    assert np.isnan(holm([math.nan, math.nan])).all()


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20))
def test_holm_properties(p: list[float]) -> None:
    """Adjusted >= raw, <= 1, <= m * raw, and the order of the raw p-values is kept."""
    raw = np.asarray(p)
    adj = holm(raw)
    assert (adj >= raw - 1e-15).all()
    assert (adj <= 1.0).all()
    assert (adj <= np.minimum(1.0, len(p) * raw) + 1e-15).all()
    order = np.argsort(raw, kind="stable")
    assert (np.diff(adj[order]) >= -1e-15).all()


# --- bootstrap -------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [None, 7, 1000])
def test_bootstrap_ci_equals_scipy_percentile_bootstrap(batch: int | None) -> None:
    deltas = RUN - BASE
    n_resamples = 999
    ours = paired_bootstrap_ci(deltas, n_resamples=n_resamples, seed=11, batch=batch)
    theirs = sps.bootstrap(
        (deltas,), np.mean, method="percentile", n_resamples=n_resamples,
        batch=batch or 10**9, rng=np.random.default_rng(11),
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)


def test_bootstrap_resamples_series_jointly() -> None:
    """The mean of deltas equals mean(run) - mean(base) in every resample: pairs stay pairs."""
    dist = bootstrap_means(np.stack([RUN - BASE, RUN, BASE]), n_resamples=500, seed=3)
    assert dist.shape == (3, 500)
    np.testing.assert_allclose(dist[0], dist[1] - dist[2], atol=1e-12)


def test_bootstrap_hand_computed_two_points() -> None:
    """n = 2: resample means are 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4."""
    dist = bootstrap_means([0.0, 1.0], n_resamples=40_000, seed=5)
    shares = [np.mean(dist == v) for v in (0.0, 0.5, 1.0)]
    assert shares == pytest.approx([0.25, 0.5, 0.25], abs=0.01)
    assert percentile_interval(dist).tolist() == [0.0, 1.0]


def test_bootstrap_is_seeded_and_degenerate_input_gives_a_point() -> None:
    a = paired_bootstrap_ci(RUN - BASE, n_resamples=300, seed=1)
    assert a == paired_bootstrap_ci(RUN - BASE, n_resamples=300, seed=1)
    assert a != paired_bootstrap_ci(RUN - BASE, n_resamples=300, seed=2)
    assert paired_bootstrap_ci(np.zeros(5), n_resamples=50) == (0.0, 0.0)


# --- sign-flip randomisation test ----------------------------------------------------------


def test_sign_flip_hand_computed() -> None:
    # d = [1, 2, 3], |mean| = 2: of the 8 sign assignments only +++ and --- reach 2.
    assert sign_flip_pvalue([1.0, 2.0, 3.0]) == 0.25
    # d = [1, -1]: observed mean 0, every assignment reaches it.
    assert sign_flip_pvalue([1.0, -1.0]) == 1.0
    # d = [0.5]: both signs give |mean| = 0.5.
    assert sign_flip_pvalue([0.5]) == 1.0
    assert math.isnan(sign_flip_pvalue([]))


def test_sign_flip_exact_equals_scipy_exact_permutation_test() -> None:
    result = sps.permutation_test(
        (RUN, BASE), lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples", n_resamples=np.inf, vectorized=True,
    )
    # 2**10 = 1024 <= n_resamples: ours enumerates every assignment too.
    assert sign_flip_pvalue(RUN - BASE, n_resamples=1024) == pytest.approx(result.pvalue, abs=1e-12)


def test_sign_flip_monte_carlo_agrees_with_exact_and_is_seeded() -> None:
    deltas = np.array([0.3, -0.1, 0.25, 0.05, 0.2, -0.15, 0.1, 0.12, -0.02, 0.18, 0.07, -0.05, 0.09, 0.11])
    exact = sign_flip_pvalue(deltas, n_resamples=1 << deltas.shape[0])
    draws = 4000  # < 2**14: Monte Carlo
    estimate = sign_flip_pvalue(deltas, n_resamples=draws, seed=7)
    assert estimate == sign_flip_pvalue(deltas, n_resamples=draws, seed=7)
    standard_error = math.sqrt(exact * (1 - exact) / draws)
    assert abs(estimate - exact) < 4 * standard_error + 1 / draws
    assert sign_flip_pvalue(np.full(30, 0.1), n_resamples=999, seed=0) == pytest.approx(1 / 1000)


# --- t-test, wins / ties / losses ----------------------------------------------------------


def test_t_test_hand_computed() -> None:
    # d = [1, 2, 4]: mean 7/3, sd sqrt(7/3), t = (7/3) / sqrt(7/9) = sqrt(7); df = 2, where the
    # two-sided p-value has the closed form 1 - t / sqrt(t**2 + 2) = 1 - sqrt(7) / 3.
    assert paired_t_pvalue([1.0, 2.0, 4.0], [0.0, 0.0, 0.0]) == pytest.approx(1 - math.sqrt(7) / 3, abs=1e-12)
    assert paired_t_pvalue(RUN, BASE) == pytest.approx(sps.ttest_1samp(RUN - BASE, 0.0).pvalue, abs=1e-12)


def test_t_test_degenerate_cases() -> None:
    assert paired_t_pvalue([0.3, 0.4], [0.3, 0.4]) == 1.0
    assert paired_t_pvalue([0.4, 0.5], [0.3, 0.4]) == 0.0  # deltas 0.1 up to float noise
    assert paired_t_pvalue([1.5, 2.5], [1.0, 2.0]) == 0.0
    assert math.isnan(paired_t_pvalue([0.3], [0.2]))


def test_wins_ties_losses_is_a_direct_count() -> None:
    assert wins_ties_losses(RUN, BASE) == (
        int(sum(r > b for r, b in zip(RUN, BASE, strict=True))),
        int(sum(r == b for r, b in zip(RUN, BASE, strict=True))),
        int(sum(r < b for r, b in zip(RUN, BASE, strict=True))),
    )
    assert wins_ties_losses(RUN, BASE) == (6, 2, 2)


def test_nan_is_rejected() -> None:
    with pytest.raises(ValueError, match="NaN"):
        sign_flip_pvalue([0.1, math.nan])
