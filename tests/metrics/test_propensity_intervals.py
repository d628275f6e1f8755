"""Which propensity curves carry an interval (:mod:`ltr.metrics.clicks.propensity`), on simulated logs
whose true curve is known (:mod:`ltr.online.click_simulators`):

- EM and the CTR ratio on a log without randomized sessions: the curve with no interval (NaN
  bounds, no ``/low`` / ``/high`` metric) and one line saying why and what would give one;
- EM with the randomized sessions marked: the randomized sessions' interval exactly where EM's
  value lies inside it, none elsewhere, and those intervals hold the true curve;
- cascade clicks: no interval, ``randomized`` included, once the check every command runs
  (:func:`ltr.online.propensity_check.check_position_based`) has seen the clicks, and one line
  with the counts of multi-click sessions (checked here by an independent per-query computation);
- ``ltr exposure`` prints the same: values, "no interval" and the one line (exit 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ltr.metrics.clicks.propensity import estimate_propensity, interval_note
from ltr.online.click_simulators import LogSpec, SimulatedLog, UserModel, simulate_log
from ltr.online.propensity_check import (
    Z_CLICK_ABOVE,
    cascade_reason,
    check_position_based,
    click_above_reason,
)

#: the coverage benchmark's ``pbm-eta1`` and ``cascade`` logs (PBM eta 1 / cascade users going on
#: after a click with probability 0.2; a noisy relevance logger, 30 % of the sessions shuffled)
PBM = LogSpec(n_queries=1000, shuffled_share=0.3)
CASCADE = LogSpec(n_queries=1000, shuffled_share=0.3, model=UserModel(kind="cascade", continuation=0.2))
POSITIONS = 10


def flags(log: SimulatedLog) -> np.ndarray:
    """``data.randomized_column`` of the log: 1 on every row of a shuffled session."""
    return np.repeat(log.shuffled, np.diff(log.offsets)).astype(np.int8)


@pytest.mark.parametrize("method", ["em", "ctr"])
def test_without_randomized_sessions_em_and_the_ctr_ratio_have_no_interval(method: str) -> None:
    log = simulate_log(PBM, seed=0)
    args = (log.clicks, log.positions, log.offsets)
    est = estimate_propensity(*args, method=method, features=log.features, n_bootstrap=20, n_positions=POSITIONS)
    assert np.isfinite(est.propensities[:4]).all()  # the curve is there
    assert np.isnan(est.low).all()
    assert np.isnan(est.high).all()
    assert est.n_bootstrap == 0
    assert not [key for key in est.metrics() if key.endswith(("/low", "/high"))]
    assert sorted(est.metrics()) == sorted(f"propensity/pos_{k + 1}" for k in np.flatnonzero(np.isfinite(est.propensities)))
    assert est.to_dict()["no_interval"] == est.no_interval != ""
    # the point is the one without any resample (training's IPS weights stay what they were)
    bare = estimate_propensity(*args, method=method, features=log.features, n_bootstrap=0, n_positions=POSITIONS)
    np.testing.assert_array_equal(est.propensities, bare.propensities)
    line = interval_note(est)
    assert line is not None
    assert "\n" not in line
    assert line.startswith("no interval: ")
    assert "(data.randomized_column)" in line


def test_no_resample_is_no_interval_never_a_zero_width_one() -> None:
    log = simulate_log(PBM, seed=1)
    est = estimate_propensity(log.clicks, log.positions, log.offsets, method="randomized", randomized=flags(log), n_bootstrap=0)
    assert np.isnan(est.low).all()
    assert np.isnan(est.high).all()
    assert interval_note(est) is None  # nothing withheld: none was asked for


def test_em_with_randomized_sessions_takes_their_interval_where_its_value_lies_inside() -> None:
    """Five logs: EM's point is EM's, flags or not; its interval is the randomized curve's exactly
    at the positions whose EM value lies inside that interval; they hold the true ``1 / rank``."""
    hits: list[bool] = []
    for seed in range(5):
        log = simulate_log(PBM, seed=seed)
        args = (log.clicks, log.positions, log.offsets)
        em = estimate_propensity(*args, method="em", features=log.features, randomized=flags(log), n_bootstrap=30, seed=seed, n_positions=POSITIONS)
        ref = estimate_propensity(*args, method="randomized", randomized=flags(log), n_bootstrap=30, seed=seed, n_positions=POSITIONS)
        plain = estimate_propensity(*args, method="em", features=log.features, n_bootstrap=0, n_positions=POSITIONS)
        np.testing.assert_array_equal(em.propensities, plain.propensities)
        with np.errstate(invalid="ignore"):
            inside = np.isfinite(ref.low) & (ref.low <= em.propensities) & (em.propensities <= ref.high)
        np.testing.assert_array_equal(np.isfinite(em.low), inside)
        np.testing.assert_array_equal(em.low[inside], ref.low[inside])
        np.testing.assert_array_equal(em.high[inside], ref.high[inside])
        assert em.n_bootstrap == 30
        assert em.fit is not None
        assert em.fit["checked"] == 1.0
        outside = np.flatnonzero(np.isfinite(ref.low) & np.isfinite(em.propensities) & ~inside) + 1
        line = interval_note(em, "--randomized-column", "--propensity randomized")
        if outside.size:
            assert line is not None
            assert f"position{'s' if outside.size > 1 else ''} {outside[0]}" in line, line
            assert line.endswith("--propensity randomized reads those sessions alone")
        truth = log.true_propensities(POSITIONS)
        assert truth is not None
        given = inside[1:]
        hits += ((em.low[1:] <= truth[1:]) & (truth[1:] <= em.high[1:]))[given].tolist()
    assert len(hits) >= 20, len(hits)
    assert np.mean(hits) >= 0.85, (np.mean(hits), len(hits))


def multi_click_sessions(log: SimulatedLog) -> tuple[int, int]:
    """Sessions with two or more clicks, and how many position-based users would make, each row
    clicked with the log's click rate at its position: one query at a time, written out."""
    clicks = np.minimum(log.clicks, 1).astype(np.float64)
    shown = np.bincount(log.positions)
    rate = np.bincount(log.positions, weights=clicks) / np.maximum(shown, 1)
    observed, expected = 0, 0.0
    for q in range(log.n_queries):
        rows = slice(log.offsets[q], log.offsets[q + 1])
        observed += int(clicks[rows].sum() > 1)
        p = rate[log.positions[rows]]
        none = float(np.prod(1 - p))
        one = sum(float(p[i] * np.prod(np.delete(1 - p, i))) for i in range(p.shape[0]))
        expected += 1 - none - one
    return observed, round(expected)


@pytest.mark.parametrize("method", ["randomized", "em"])
def test_cascade_clicks_withhold_every_interval_in_one_line(method: str) -> None:
    log = simulate_log(CASCADE, seed=0)
    raw = estimate_propensity(
        log.clicks, log.positions, log.offsets, method=method, features=log.features, randomized=flags(log),
        n_bootstrap=20, n_positions=POSITIONS,
    )  # fmt: skip
    assert np.isfinite(raw.low[:3]).any()  # an interval, before the check of the clicks' model
    est = check_position_based(raw, log.clicks, log.positions, log.offsets)
    np.testing.assert_array_equal(est.propensities, raw.propensities)  # the curve stays
    assert np.isfinite(est.propensities[:3]).all()
    assert np.isnan(est.low).all()
    assert np.isnan(est.high).all()
    assert est.fit is not None
    assert est.fit["cascade_like"] == 1.0
    observed, expected = multi_click_sessions(log)
    assert observed < 0.6 * expected  # far fewer: cascade users rarely go on after a click
    line = interval_note(est)
    assert line == (
        f"no interval: the log has {observed} sessions with two or more clicks where position-based users would make "
        f"{expected}: its clicks look like cascade or DBN users, whose examination depends on the clicks above, and no "
        "position-based curve holds for them"
    )


def test_a_position_based_log_is_not_taken_for_a_cascade() -> None:
    for seed in range(2):
        log = simulate_log(PBM, seed=seed)
        raw = estimate_propensity(log.clicks, log.positions, log.offsets, method="randomized", randomized=flags(log), n_bootstrap=10)
        est = check_position_based(raw, log.clicks, log.positions, log.offsets)
        np.testing.assert_array_equal(est.low, raw.low)
        assert est.fit is not None
        assert est.fit["cascade_like"] == 0.0
        observed, expected = multi_click_sessions(log)
        assert observed > 0.9 * expected


def test_fewer_clicks_below_a_click_is_the_mantel_haenszel_test_by_hand() -> None:
    """Two sessions of two positions each clicked at the top, two clicked below only, and so
    on: the pooled 2 x 2 table of position 2 (a click above or not x clicked or not) by hand."""
    # 40 sessions: 20 with a click at position 1, of which 2 clicked at 2; 20 without, of which 12 clicked at 2
    clicks = np.array([1, 1] * 2 + [1, 0] * 18 + [0, 1] * 12 + [0, 0] * 8)
    positions = np.tile([0, 1], 40)
    offsets = np.arange(0, 81, 2)
    # n = 40 at position 2, n1 = 20 below a click, k = 14 clicks, k1 = 2: expected 20 * 14 / 40 = 7,
    # variance 20 * 20 * 14 * 26 / (40 * 40 * 39) = 7 / 3
    z = (2 - 7) / np.sqrt(20 * 20 * 14 * 26 / (40 * 40 * 39))
    assert z < -Z_CLICK_ABOVE
    reason = click_above_reason(clicks, positions, offsets)
    assert reason is not None
    assert "clicked 2 times where 7 were expected" in reason
    # the same counts the other way round (clicks below a click more likely): no reason
    more = np.array([1, 1] * 12 + [1, 0] * 8 + [0, 1] * 2 + [0, 0] * 18)
    assert click_above_reason(more, positions, offsets) is None


@pytest.mark.parametrize("model", [UserModel(kind="dbn"), UserModel(kind="cascade", continuation=0.2)])
def test_dbn_and_cascade_logs_show_fewer_clicks_below_a_click(model: UserModel) -> None:
    """The logs of the benchmark's DBN and cascade users: fewer clicks below a click than below
    none (the DBN logs of 1,000 queries that kept some multi-click sessions too)."""
    for seed in range(3):
        log = simulate_log(LogSpec(n_queries=1000, shuffled_share=0.3, model=model), seed=seed)
        assert click_above_reason(log.clicks, log.positions, log.offsets) is not None
        raw = estimate_propensity(log.clicks, log.positions, log.offsets, method="randomized", randomized=flags(log), n_bootstrap=10)
        est = check_position_based(raw, log.clicks, log.positions, log.offsets)
        assert np.isnan(est.low).all()
        assert est.no_interval


def test_position_based_logs_never_show_fewer_clicks_below_a_click() -> None:
    """Position-based users: a random logger, a relevance-sorted one and eta 1.5, no reason."""
    for spec in (LogSpec(n_queries=1000, logger_noise=None), LogSpec(n_queries=1000, logger_noise=0.3, shuffled_share=0.0),
                 LogSpec(n_queries=1000, shuffled_share=0.3, model=UserModel(kind="pbm", eta=1.5))):  # fmt: skip
        for seed in range(2):
            log = simulate_log(spec, seed=seed)
            assert click_above_reason(log.clicks, log.positions, log.offsets) is None
            assert cascade_reason(log.clicks, log.positions, log.offsets) is None


def write_log(log: SimulatedLog, path: Path) -> Path:
    frame = log.frame()
    frame["randomized"] = flags(log)
    frame.to_csv(path, index=False)
    return path


def test_exposure_prints_no_interval_and_its_line_on_a_cascade_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ltr.cli.online.exposure import main

    path = write_log(simulate_log(CASCADE, seed=0), tmp_path / "cascade.csv")
    assert main([str(path), "--propensity", "randomized", "--randomized-column", "randomized", "--bootstrap", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    notes = [line for line in lines if line.startswith("no interval:")]
    assert len(notes) == 1
    assert "sessions with two or more clicks" in notes[0]
    assert lines[-1] == notes[0]
    assert any(line.startswith("propensities by position (randomized, no interval;") for line in lines)
    second = next(line for line in lines if line.split()[:1] == ["2"])
    assert "[" not in second, second  # the value alone
    assert main([str(path), "--propensity", "randomized", "--randomized-column", "randomized", "--bootstrap", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["no_interval"] == notes[0]
    assert set(out["propensities"]["low"]) == {None}
    assert set(out["propensities"]["high"]) == {None}
    assert out["propensities"]["no_interval"] in notes[0]


def test_exposure_gives_em_the_randomized_interval_on_a_position_based_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ltr.cli.online.exposure import main

    path = write_log(simulate_log(PBM, seed=2), tmp_path / "pbm.csv")
    features = ",".join(f"f{i}" for i in range(PBM.n_features))
    assert main([str(path), "--propensity", "em", "--features", features, "--randomized-column", "randomized", "--bootstrap", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    low = out["propensities"]["low"]
    assert low[0] == 1.0
    assert any(v is not None for v in low[1:5])
    assert out["propensities"]["fit"]["checked"] == 1.0
    # without the flags: EM's curve, the same values, no interval, and the line that says how to get one
    assert main([str(path), "--propensity", "em", "--features", features, "--bootstrap", "20", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["propensities"]["propensities"] == out["propensities"]["propensities"]
    assert set(plain["propensities"]["low"]) == {None}
    assert plain["no_interval"].endswith("mark the sessions shown in random order (--randomized-column) for one")
