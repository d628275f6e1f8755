"""``method="randomized"`` of :mod:`ltr.metrics.clicks.propensity`: the click-through rate by position
on the sessions shown in random order holds the simulator's true curve where EM and the plain
click-through rate, fooled by a logger that sorts on relevance the features do not show, do not;
by hand on a tiny log; and the flags it refuses."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ltr.metrics.clicks.propensity import estimate_propensity, interval_note, randomized_queries
from ltr.online.click_simulators import LogSpec, simulate_log

POSITIONS = 10
SEEDS = 20


def _coverage(method: str, spec: LogSpec) -> tuple[float, int]:
    """Share of the identified positions 2..10, over :data:`SEEDS` simulated logs, whose 95 %
    interval holds the true examination ratio, and how many (position, seed) pairs were identified."""
    hits: list[bool] = []
    for seed in range(SEEDS):
        log = simulate_log(spec, seed=seed)
        flags = np.repeat(log.shuffled, np.diff(log.offsets)).astype(np.int8)
        est = estimate_propensity(
            log.clicks, log.positions, log.offsets, method=method, n_positions=POSITIONS, randomized=flags,
            features=log.features, n_bootstrap=50, seed=seed,
        )  # fmt: skip
        truth = log.true_propensities(POSITIONS)
        assert truth is not None
        found = np.isfinite(est.propensities[1:])
        inside = (est.low[1:] <= truth[1:]) & (truth[1:] <= est.high[1:])
        hits += inside[found].tolist()
    return float(np.mean(hits)), len(hits)


def test_randomized_sessions_hold_the_true_curve_where_the_plain_click_rate_does_not() -> None:
    # the benchmark's pbm-eta1 log: a noisy relevance-sorted logger, 30 % of the sessions shuffled
    spec = LogSpec(n_queries=1000, shuffled_share=0.3)
    covered, n = _coverage("randomized", spec)
    assert n >= 0.6 * SEEDS * (POSITIONS - 1)  # most positions have 5 clicks or more
    assert covered >= 0.85, covered  # measured: 0.964 of 137 intervals
    # the plain click-through rate of the same log: the logger's order shows through, too steep
    log = simulate_log(spec, seed=0)
    plain = estimate_propensity(log.clicks, log.positions, log.offsets, method="ctr", n_positions=POSITIONS)
    truth = log.true_propensities(POSITIONS)
    assert truth is not None
    assert np.nanmean(plain.propensities[1:5] - truth[1:5]) < -0.1
    assert np.isnan(plain.low).all()
    assert np.isnan(plain.high).all()


def test_by_hand_on_a_tiny_log() -> None:
    # query 0 randomized (positions 0, 1), query 1 ordered (clicks ignored), query 2 randomized
    clicks = np.array([1, 1, 1, 0, 1, 0] + [1] * 10 + [1] * 10 + [0] * 4)
    positions = np.array([0, 1, 0, 1, 0, 1] + [0, 1] * 5 + [0, 1] * 5 + [0, 1] * 2)
    offsets = np.array([0, 2, 4, 6, 16, 26, 30])
    flags = np.repeat([1, 0, 1, 1, 0, 1], np.diff(offsets))
    est = estimate_propensity(clicks, positions, offsets, method="randomized", randomized=flags, n_bootstrap=0)
    # randomized rows: position 0 clicked 1+1+5+0 of 1+1+5+2 = 7/9; position 1: 1+0+5+0 of 9 = 6/9
    assert est.method == "randomized"
    assert est.propensities.tolist() == pytest.approx([1.0, 6 / 7])
    assert est.impressions is not None
    assert est.impressions.tolist() == [9, 9]
    assert est.fit == {"not_identified": 0.0, "sessions": 4.0}
    # 4 clicks at position 1 among the randomized sessions: not identified (fewer than 5)
    few = clicks.copy()
    few[[1, 7]] = 0
    thin = estimate_propensity(few, positions, offsets, method="randomized", randomized=flags, n_bootstrap=20)
    assert np.isnan([thin.propensities[1], thin.low[1], thin.high[1]]).all()


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ([0, 0, 1, 1, 0], "query b has both randomized (1) and ordered (0) rows"),
        ([2, 2, 0, 0, 0], "query a has the randomized flag 2"),
        ([0, 0, 0, 0, 0], "no randomized session"),
    ],
    ids=["mixed", "not-0-1", "none"],
)
def test_bad_flags_are_refused_in_one_line(flags: list[int], needle: str) -> None:
    offsets = np.array([0, 2, 5])
    with pytest.raises(ValueError, match=re.escape(needle)) as info:
        randomized_queries(np.array(flags), offsets, names=np.array(["a", "b"]))
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=re.escape(needle.split(" ", 2)[-1])):  # the estimator refuses the same flags
        estimate_propensity(np.ones(5), np.array([0, 1, 0, 1, 2]), offsets, method="randomized", randomized=np.array(flags))
    with pytest.raises(ValueError, match="needs the randomized flag"):
        estimate_propensity(np.ones(5), np.array([0, 1, 0, 1, 2]), offsets, method="randomized")


def test_the_no_interval_lines_name_the_options() -> None:
    log = simulate_log(LogSpec(n_queries=300, shuffled_share=0.3), seed=0)
    for method, end in (
        ("ctr", "mark the sessions shown in random order (--randomized-column) and use --propensity randomized for one"),
        ("em", "mark the sessions shown in random order (--randomized-column) for one"),
    ):
        est = estimate_propensity(log.clicks, log.positions, log.offsets, method=method, features=log.features, n_bootstrap=10)
        line = interval_note(est, "--randomized-column", "--propensity randomized")
        assert line is not None
        assert line.startswith("no interval: ")
        assert line.endswith(end), line
        assert "\n" not in line
