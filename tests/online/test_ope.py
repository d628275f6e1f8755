"""Off-policy estimates (:mod:`ltr.online.ope`): exact unbiasedness by enumeration, the simulator's
exact CTR inside the interval, clipping, refusals."""

from __future__ import annotations

import doctest
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import ltr.online.ope as ope
from ltr.data.clicks import attractiveness, examination_curve
from ltr.online.ope import ESTIMATORS, at_least_one, off_policy_estimates

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_ope_coverage import RANKERS, one_seed


def test_docstring_examples() -> None:
    result = doctest.testmod(ope)
    assert result.attempted > 0
    assert result.failed == 0


def test_ips_is_exactly_unbiased_over_every_click_pattern() -> None:
    """One query of 4 documents, logged in one order, the candidate in another: the mean of IPS
    (and of SNIPS and DR, equal to it unclipped) over all 16 click patterns, each with its PBM
    probability, is the candidate's exact CTR@3 and clicks@3."""
    grades = np.array([3, 0, 4, 1])
    log_pos = np.array([0, 1, 2, 3])
    scores = np.array([1.0, 4.0, 3.0, 2.0])  # candidate order: rows 1, 2, 3, 0
    exam = examination_curve(4, eta=1.0)
    a = attractiveness(grades, click_noise=0.1, click_max=0.9)
    p_log = exam[log_pos] * a
    new_pos = np.array([3, 0, 1, 2])
    p_new = np.where(new_pos < 3, exam[np.minimum(new_pos, 3)], 0.0) * a
    truth_ctr = 1.0 - np.prod(1.0 - p_new)
    truth_clicks = p_new.sum()
    mean = dict.fromkeys(itertools.product(("ips", "snips", "dr"), ("ctr", "clicks_at_3")), 0.0)
    for pattern in itertools.product((0, 1), repeat=4):
        clicks = np.array(pattern)
        prob = float(np.prod(np.where(clicks == 1, p_log, 1.0 - p_log)))
        r = off_policy_estimates({"click": clicks}, log_pos, scores, np.array([0, 4]), propensities=exam, k=3, n_bootstrap=2)
        for key in mean:
            mean[key] += prob * r.estimates[key].value
    for (estimator, metric), value in mean.items():
        assert value == pytest.approx(truth_ctr if metric == "ctr" else truth_clicks, abs=1e-12), (estimator, metric)


def test_at_least_one_takes_signs_and_zeros() -> None:
    # query 0: 1 - (1 - 2)(1 - 3) = 1 - 2 = -1; query 1: a zero factor -> 1; query 2: empty -> 0
    got = at_least_one(np.array([2.0, 3.0, 1.0, 0.5]), np.array([0, 0, 1, 1]), 3)
    assert got.tolist() == [-1.0, 1.0, 0.0]


def test_the_exact_ctr_lies_in_the_interval_of_ips_and_dr() -> None:
    """One seed of the coverage study (benchmarks/bench_ope_coverage.py runs 50): the exact
    expected CTR@10 of each ranker under the log's click model lies in the 95 % interval of IPS
    and DR, and the estimates are within a few points of it."""
    results = one_seed(0, n_queries=1000, k=10, clip=None, n_bootstrap=400)
    for ranker in RANKERS:
        for estimator in ("ips", "dr"):
            covered, value, truth, _ = results[estimator, ranker]
            assert covered, (estimator, ranker, value, truth)
            assert abs(value - truth) < 0.05


def _small_log(seed: int = 1) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 12, 200)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    log_pos = np.concatenate([rng.permutation(s) for s in sizes])
    exam = examination_curve(12, eta=1.0)
    clicks = (rng.random(log_pos.size) < 0.5 * exam[log_pos]).astype(np.int64)
    purchases = clicks * (rng.random(log_pos.size) < 0.3)
    return {"click": clicks, "purchase": purchases}, log_pos, rng.random(log_pos.size), offsets, exam


def test_clipping_is_explicit_counted_and_snips_restores_the_mass() -> None:
    outcomes, log_pos, scores, offsets, exam = _small_log()
    free = off_policy_estimates(outcomes, log_pos, scores, offsets, propensities=exam, k=5, n_bootstrap=50)
    capped = off_policy_estimates(outcomes, log_pos, scores, offsets, propensities=exam, k=5, clip=2.0, n_bootstrap=50)
    assert free.n_clipped == 0
    assert free.max_weight > 2.0
    assert capped.n_clipped > 0
    assert capped.clip == 2.0
    assert capped.estimates["ips", "clicks_at_5"].value < free.estimates["ips", "clicks_at_5"].value
    for metric in ("ctr", "clicks_at_5", "purchase_rate"):
        assert free.estimates["snips", metric].value == pytest.approx(free.estimates["ips", metric].value, abs=1e-12)
        assert free.estimates["dr", metric].value == pytest.approx(free.estimates["ips", metric].value, abs=1e-12)
        for estimator in (*ESTIMATORS, "logged"):
            e = capped.estimates[estimator, metric]
            assert e.low <= e.high
            assert e.ess > 0
    metrics = capped.metrics()
    assert {"ope/ips/ctr", "ope/ips/ctr/low", "ope/ips/ctr/high", "ope/ips/ctr/ess", "ope/dr/purchase_rate", "ope/n_clipped"} <= set(metrics)
    again = off_policy_estimates(outcomes, log_pos, scores, offsets, propensities=exam, k=5, clip=2.0, n_bootstrap=50)
    assert again.estimates == capped.estimates  # seeded


def test_refusals_name_the_problem() -> None:
    outcomes, log_pos, scores, offsets, exam = _small_log()
    with pytest.raises(ValueError, match=r"propensities cover positions 1\.\.5"):
        off_policy_estimates(outcomes, log_pos, scores, offsets, propensities=exam[:5], k=3)
    with pytest.raises(ValueError, match="0 or 1"):
        off_policy_estimates({"click": outcomes["click"] * 2}, log_pos, scores, offsets, propensities=exam, k=3)
    with pytest.raises(ValueError, match="clip"):
        off_policy_estimates(outcomes, log_pos, scores, offsets, propensities=exam, k=3, clip=0.0)
