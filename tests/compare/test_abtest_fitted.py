"""``ltr abtest`` on a click model fitted to a user's log: its CTR rows anchored on the log's
clicks (doubly robust, with the randomized sessions' examination) hold the exact truth of click
logs simulated with a known position-based model (a simulator of this file's own: noisy
relevance-sorted logger, 30 % shuffled sessions, lists of 4-40, attractiveness a function of the
features and of the query); without randomized sessions, or on cascade clicks, the interval is
withheld in one line."""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from ltr.compare.abtest import (
    Z_ALPHA,
    AbTestResult,
    ClickModel,
    LogAnchor,
    doubly_robust_ctr,
    expected_ctr,
    fit_attractiveness,
    sessions_for_power,
    simulate_abtest,
    verdict,
    with_fit_uncertainty,
)
from ltr.compare.abtest_render import to_markdown
from ltr.config.choices import Propensity
from ltr.config.groups.data import ParquetDataConfig
from ltr.config.schema import ClickEvalConfig
from ltr.data.feedback.clicks import rank_within_queries
from ltr.data.ranking_data import RankingData
from ltr.models.abtest_run import fit_click_model
from ltr.online.ope import exclusive_prefix_sums

LOG = ParquetDataConfig(click_column="click", position_column="position")
#: the same log with its randomized sessions marked
MARKED = ParquetDataConfig(click_column="click", position_column="position", randomized_column="randomized")
EM = ClickEvalConfig(propensity=Propensity.em)


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


class Problem(NamedTuple):
    train: RankingData
    test: RankingData
    scores_a: NDArray[np.float64]
    scores_b: NDArray[np.float64]
    truth: float  # the exact whole-list CTR of B minus A on the test queries under the true model


def simulated_log(
    seed: int, n_queries: int, *, nan: float = 0.0, eta: float = 1.0, shuffled: float = 0.3, cascade: bool = False,
) -> Problem:
    """A click log of a known PBM: examination ``(1/rank)^eta``, attractiveness
    ``0.03 + 0.82 sigmoid(1.6 (r - 1.2))`` of a relevance ``r`` nonlinear in 6 features plus a
    per-query shift no feature holds; the logger sorts by ``r`` plus noise, ``shuffled`` of the
    sessions at random (behaviour ``randomized``: 1 on their rows); 30 % of the queries are the
    test split. A and B: noisy functions of ``r`` (A also of a feature unrelated to it), scored
    on the test queries. ``cascade``: the clicks are the classic cascade's instead (top-down,
    every document examined until the first click, which ends the session; truth not computed)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 41, n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    x = rng.normal(size=(n, 6))
    r = x[:, 0] + 0.6 * x[:, 1] - 0.4 * x[:, 2] + 0.3 * x[:, 0] * x[:, 1] + np.repeat(rng.normal(0, 0.5, n_queries), sizes)
    attract = 0.03 + 0.82 * _sigmoid(1.6 * (r - 1.2))
    exam = (1.0 / np.arange(1, 41)) ** eta
    shuffle = np.repeat(rng.random(n_queries) < shuffled, sizes)
    positions = rank_within_queries(np.where(shuffle, rng.random(n), r + rng.normal(0, 1.0, n)), offsets)
    if cascade:
        attracted = (rng.random(n) < attract).astype(np.float64)
        clicks = attracted * (exclusive_prefix_sums(attracted, positions.astype(np.int64), offsets) == 0)
    else:
        clicks = (rng.random(n) < exam[positions] * attract).astype(np.float64)
    if nan:
        x[rng.random(x.shape) < nan] = np.nan
    log = RankingData.from_group_sizes(x, np.zeros(n, np.int32), np.arange(n_queries), sizes, name="log", positions=positions)
    log = dataclasses.replace(log, behaviours={"click": clicks, "attract": attract, "r": r, "randomized": shuffle.astype(np.float64)})
    test_queries = rng.random(n_queries) < 0.3
    train, test = log.take_queries(np.flatnonzero(~test_queries)), log.take_queries(np.flatnonzero(test_queries))
    assert test.behaviours is not None
    rt = test.behaviours["r"]
    noise_a, noise_b = rng.uniform(0.3, 1.5, 2)
    scores_a = rt + rng.normal(0, noise_a, rt.shape[0]) + 0.5 * np.nan_to_num(test.features[:, 3])
    scores_b = rt + rng.normal(0, noise_b, rt.shape[0])
    true = ClickModel(0.0, 0.0, 1.0, examination=exam, attract=test.behaviours["attract"])
    ctr = [expected_ctr(test.labels, rank_within_queries(s, test.offsets), test.offsets, true) for s in (scores_a, scores_b)]
    return Problem(train, test, scores_a, scores_b, float((ctr[1] - ctr[0]).mean()))


def fitted_abtest(problem: Problem, seed: int, *, data_cfg: ParquetDataConfig = MARKED, refits: int = 0) -> AbTestResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EM's warnings on a small log are not what is tested here
        model, _ = fit_click_model(data_cfg, EM, problem.train, problem.test, seed=seed, n_bootstrap=refits)
    return simulate_abtest(problem.test.labels, problem.test.offsets, problem.scores_a, problem.scores_b, model, seed=seed, days=2.0)


@pytest.mark.parametrize(("seed", "nan"), [(0, 0.0), (1, 0.03)])
def test_the_anchored_interval_holds_the_true_difference(seed: int, nan: float) -> None:
    """The randomized sessions marked (half of 600): the CTR rows are anchored on the log (NaN
    features in one), and their interval holds the exact B - A."""
    problem = simulated_log(seed, 600, nan=nan, shuffled=0.5)
    r = fitted_abtest(problem, seed)
    assert r.anchoring is not None
    assert r.anchoring.anchored
    assert "randomized sessions" in r.anchoring.reason
    assert r.ctr.low <= problem.truth <= r.ctr.high
    assert r.ctr.low <= r.ctr.diff <= r.ctr.high
    assert r.ctr.diff == pytest.approx(r.ctr.b.value - r.ctr.a.value)
    assert 0 <= r.ctr.a.low <= r.ctr.a.value <= r.ctr.a.high <= 1
    # the p-value is the normal test of the interval's side toward 0 (below 0.05 exactly when the
    # interval excludes 0); the sessions for power follow the anchored rates
    se = (r.ctr.diff - r.ctr.low if r.ctr.diff > 0 else r.ctr.high - r.ctr.diff) / Z_ALPHA
    assert r.ctr.p_value == pytest.approx(2 * stats.norm.sf(abs(r.ctr.diff) / se))
    assert (r.ctr.p_value < 0.05) == (not r.ctr.low <= 0 <= r.ctr.high)
    assert r.ctr.sessions_needed == sessions_for_power(r.ctr.a.value, r.ctr.b.value)
    for s in r.strata:  # per stratum too
        assert math.isnan(s.ctr.diff) or s.ctr.low <= s.ctr.diff <= s.ctr.high
    again = fitted_abtest(problem, seed)
    assert again.to_dict() == r.to_dict()  # seeded: the same numbers


@pytest.mark.slow
def test_coverage_of_the_true_difference_over_seeds() -> None:
    """Logs of 600 queries, half shown in random order, 3 % NaN features in half: the anchored
    95 % interval holds the exact B - A on at least 5 of seeds 2-7."""
    hits = []
    for seed in range(2, 8):
        problem = simulated_log(seed, 600, nan=0.03 if seed % 2 else 0.0, shuffled=0.5)
        r = fitted_abtest(problem, seed)
        assert r.anchoring is not None
        assert r.anchoring.anchored
        hits.append(r.ctr.low <= problem.truth <= r.ctr.high)
    assert sum(hits) >= 5, hits


def test_doubly_robust_ctr_corrects_a_wrong_attractiveness_model() -> None:
    """Against the exact CTR of a ranking under a known PBM. The doubly robust CTR is linear in
    the clicks, so its expectation is its value at the expected clicks ``e(logged) a``: with the
    true attractiveness it is the exact CTR; with one 25 % too low, its error is a small share of
    the model's own (a second-order remainder); and its mean over simulated click draws is that
    expectation."""
    rng = np.random.default_rng(4)
    sizes = np.array([3, 5, 4])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    exam = 1.0 / np.arange(1, 6)
    attract = rng.uniform(0.1, 0.8, n)
    logged = rank_within_queries(rng.random(n), offsets).astype(np.int64)
    ranks = rank_within_queries(rng.random(n), offsets)
    truth = expected_ctr(np.zeros(n, np.int32), ranks, offsets, ClickModel(0.0, 0.0, 1.0, examination=exam, attract=attract))
    expected_clicks = exam[logged] * attract
    exact = doubly_robust_ctr(ranks, offsets, LogAnchor(expected_clicks, logged, exam, attract))[0]
    np.testing.assert_allclose(exact, truth, rtol=0, atol=1e-12)
    wrong = 0.75 * attract
    mean = doubly_robust_ctr(ranks, offsets, LogAnchor(expected_clicks, logged, exam, wrong))[0]
    model = doubly_robust_ctr(ranks, offsets, LogAnchor(wrong * exam[logged], logged, exam, wrong))[0]  # no residual
    assert np.abs(model - truth).min() > 0.02
    assert np.all(np.abs(mean - truth) < 0.25 * np.abs(model - truth))
    draws = (rng.random((1000, n)) < expected_clicks).astype(np.float64)
    simulated = np.mean([doubly_robust_ctr(ranks, offsets, LogAnchor(row, logged, exam, wrong))[0] for row in draws], axis=0)
    np.testing.assert_allclose(simulated, mean, atol=0.06)


def test_without_randomized_sessions_the_interval_is_withheld_in_one_line() -> None:
    """EM's examination and no randomized session marked: the simulated difference with no
    interval, and one line saying why and what would give one (the report, the JSON's nulls)."""
    problem = simulated_log(2, 300)
    r = fitted_abtest(problem, 2, data_cfg=LOG)
    assert r.anchoring is not None
    assert not r.anchoring.anchored
    assert math.isnan(r.ctr.low)
    assert math.isnan(r.ctr.high)
    assert math.isnan(r.ctr.p_value)
    assert r.ctr.diff == r.anchoring.simulated.diff
    assert all(math.isnan(s.ctr.low) for s in r.strata)
    line = verdict(r)
    assert line.startswith("no interval (model): B - A in CTR ")
    assert "eval.clicks.propensity=em" in line
    assert "data.randomized_column" in line
    assert "\n" not in line
    assert "np." not in line
    report = to_markdown(r, "a", "b", split="test")
    assert f"Verdict: {line}." in report
    assert "(no interval)" in report
    ctr = r.to_dict()["ctr"]
    assert ctr["low"] is None
    assert ctr["high"] is None
    assert isinstance(ctr["diff"], float)


def test_on_cascade_clicks_the_interval_is_withheld_in_one_line() -> None:
    """Cascade clicks (a click ends the session), randomized sessions marked: ``ltr ope``'s check
    finds far fewer sessions of two or more clicks than position-based users make, and the
    interval is withheld in one line."""
    problem = simulated_log(3, 600, cascade=True)
    r = fitted_abtest(problem, 3)
    assert r.anchoring is not None
    assert not r.anchoring.anchored
    assert math.isnan(r.ctr.low)
    line = verdict(r)
    assert line.startswith("no interval (model): ")
    assert "cascade" in line
    assert "\n" not in line


def test_the_fit_recovers_a_logistic_attractiveness_under_known_examination() -> None:
    """Clicks of a known PBM whose attractiveness is logistic in the features: the fitted
    attractiveness is the truth within 0.02 on average (the EM, the design and the query effects
    all taking part), NaN cells included."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(5, 30, 1500)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    x = rng.normal(size=(n, 4))
    truth = _sigmoid(-1.0 + 1.2 * x[:, 0] - 0.8 * x[:, 1])
    positions = rank_within_queries(rng.random(n), offsets)
    exam = np.asarray(1.0 / (1.0 + positions), dtype=np.float64)
    clicks = (rng.random(n) < exam * truth).astype(np.float64)
    x[rng.random(x.shape) < 0.02] = np.nan
    model = fit_attractiveness(clicks, exam, x, offsets)
    got = model.predict(x, model.query_effect[np.repeat(np.arange(sizes.shape[0]), sizes)])
    assert got.shape == (n,)
    assert float(got.min()) > 0
    assert float(got.max()) < 1
    present = ~np.isnan(x).any(axis=1)
    assert float(np.abs(got - truth)[present].mean()) < 0.02
    assert model.missing.tolist() == [True, True, True, True]
    # a refit with every weight 1 is the fit itself
    again = fit_attractiveness(clicks, exam, x, offsets, like=model)
    assert np.allclose(again.coef, model.coef, atol=1e-3)


def test_the_interval_adds_the_refits_variance_to_the_simulations() -> None:
    """By hand: the interval is diff +- z sqrt(se_sim^2 + sd^2) with sd the refits' standard
    deviation of the split's mean difference; per stratum the mean over its queries; the p-value
    the pooled z-test with sd^2 added; the sessions for power at the interval's ends."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 60, 40)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n)
    model = ClickModel(1.0, 0.05, 0.9)
    plain = simulate_abtest(labels, offsets, rng.normal(size=n), labels + rng.normal(size=n), model, sessions_per_day=20_000.0, traffic_share=1.0, days=1.0)
    diffs = rng.normal(0.0, 0.02, (30, sizes.shape[0]))
    wide = with_fit_uncertainty(plain, diffs, offsets)
    assert wide.fit is not None
    sd = float(diffs.mean(axis=1).std(ddof=1))
    se_sim = (plain.ctr.high - plain.ctr.low) / (2 * Z_ALPHA)
    assert wide.fit.sd == pytest.approx(sd)
    assert wide.fit.simulation_se == pytest.approx(se_sim)
    total = math.sqrt(se_sim**2 + sd**2)
    assert (wide.ctr.low, wide.ctr.high) == pytest.approx((plain.ctr.diff - Z_ALPHA * total, plain.ctr.diff + Z_ALPHA * total))
    assert wide.ctr.diff == plain.ctr.diff
    assert wide.ctr.a == plain.ctr.a
    assert wide.ctr.b == plain.ctr.b
    a, b = plain.ctr.a, plain.ctr.b
    pooled = (a.value * a.n + b.value * b.n) / (a.n + b.n)
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / a.n + 1 / b.n) + sd**2)
    assert wide.ctr.p_value == pytest.approx(2 * stats.norm.sf(abs(plain.ctr.diff) / se0))
    assert wide.ctr.p_value > plain.ctr.p_value
    short = sizes <= 10
    assert wide.fit.strata_sd[0] == pytest.approx(float(diffs[:, short].mean(axis=1).std(ddof=1)))
    s0 = plain.strata[0].ctr
    half = Z_ALPHA * math.sqrt(((s0.high - s0.low) / (2 * Z_ALPHA)) ** 2 + wide.fit.strata_sd[0] ** 2)
    assert wide.strata[0].ctr.high - wide.strata[0].ctr.diff == pytest.approx(half)
    # the sessions for power: at the interval's far end to its near end (inf when it holds 0)
    lo, hi = wide.ctr.low, wide.ctr.high
    if lo > 0:
        assert (wide.fit.sessions_low, wide.fit.sessions_high) == (sessions_for_power(a.value, a.value + hi), sessions_for_power(a.value, a.value + lo))
    # interleaving and purchases are the simulation's
    assert wide.interleaving == plain.interleaving
    assert wide.purchases == plain.purchases
    assert isinstance(wide.to_dict()["fit"]["sessions_low"], int)
    assert "fit" not in plain.to_dict()


def test_a_log_that_cannot_tell_a_from_b_says_so_in_one_line() -> None:
    """Two rankings that differ in nothing the model can see, but a large refit spread: the
    verdict says the log cannot tell them apart, and the report prints it."""
    rng = np.random.default_rng(8)
    sizes = rng.integers(2, 20, 50)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n)
    scores = rng.normal(size=n)
    plain = simulate_abtest(labels, offsets, scores, scores + 1e-3 * rng.normal(size=n), ClickModel(1.0, 0.05, 0.9), sessions_per_day=5000.0, traffic_share=1.0, days=1.0)
    wide = with_fit_uncertainty(plain, rng.normal(0.0, 0.05, (20, sizes.shape[0])), offsets)
    line = verdict(wide)
    assert line.startswith("cannot tell A from B: the 95 % interval of B - A in CTR, [")
    assert "\n" not in line
    assert "np." not in line
    assert wide.fit is not None
    assert wide.fit.sessions_high == math.inf
    report = to_markdown(wide, "a", "b", split="test")
    assert f"Verdict: {line}." in report
    assert "to never (no effect)" in report
    assert "Verdict" not in to_markdown(plain, "a", "b", split="test")  # a known model's report is as before


def test_a_known_click_model_simulates_as_before() -> None:
    """No refits (every ``data=synthetic_clicks`` run): the result has no ``fit`` and its numbers
    are the simulation's own (``tests/compare/test_abtest_simulation.py`` pins them)."""
    rng = np.random.default_rng(2)
    offsets = np.array([0, 5, 12], dtype=np.int64)
    labels = rng.integers(0, 5, 12)
    r = simulate_abtest(labels, offsets, rng.normal(size=12), rng.normal(size=12), ClickModel(1.0, 0.05, 0.9), sessions_per_day=1000.0, traffic_share=1.0, days=1.0)
    assert r.fit is None
    assert "fit" not in r.to_dict()
