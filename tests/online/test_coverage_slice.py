"""A fast slice of the coverage benchmark (``benchmarks/bench_coverage.py``): where an estimator's
assumptions hold, its 95 % intervals hold the exact truth of the simulator."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_coverage import Tally, run_seed, tally

SEEDS = range(5)


@pytest.fixture(scope="module")
def random_logger() -> dict[tuple[str, str], Tally]:
    """EM propensities (unmarked, and with every session marked as randomized) and OPE of the
    ``pbm-random`` scenario (PBM, eta 1, a uniformly random logger: every session a
    randomisation), 5 seeds."""
    checks = [c for seed in SEEDS for c in run_seed(("pbm-random", seed, ("em", "em-randomized", "ope")))]
    return tally(checks)


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr"])
@pytest.mark.parametrize("metric", ["ctr", "clicks_at_10", "purchase_rate"])
def test_ope_intervals_hold_the_exact_truth_on_a_random_logger(
    random_logger: dict[tuple[str, str], Tally], estimator: str, metric: str
) -> None:
    t = random_logger["pbm-random", f"ope {estimator} {metric}"]
    assert t.refused == 0
    assert t.checks == len(SEEDS)
    assert t.covered >= len(SEEDS) - 1, (t.covered, t.errors, t.widths)


def test_em_propensities_hold_the_true_curve_on_a_random_logger(random_logger: dict[tuple[str, str], Tally]) -> None:
    """Positions 2..10 of 5 logs: unmarked, EM's curve has no interval (nothing in a log can check
    it); with the sessions marked as shown in random order (every one here), at least 90 % of
    the 45 intervals hold ``(1/rank)^1``."""
    unmarked = random_logger["pbm-random", "propensity em"]
    assert unmarked.checks == 0
    assert unmarked.refused == 9 * len(SEEDS)
    assert all(note.startswith("no interval") for note in unmarked.notes), unmarked.notes
    t = random_logger["pbm-random", "propensity em (randomized marked)"]
    assert t.checks + t.refused == 9 * len(SEEDS)
    assert t.covered >= 0.9 * 9 * len(SEEDS), (t.covered, t.checks, t.notes)


def test_the_calibration_slope_interval_holds_the_exact_slope() -> None:
    checks = [c for seed in range(10) for c in run_seed(("calibration", seed, ()))]
    t = tally(checks)["calibration", "calibrate slope"]
    assert t.checks == 10
    assert t.covered >= 9, (t.covered, t.errors)
