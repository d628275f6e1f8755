"""Trade-offs between runs: the Pareto front (hand cases, NaN, a dominance property), the online
fit (numpy.polyfit, hand-computed R²), and what the two figures hold."""

from __future__ import annotations

import doctest
import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from numpy.typing import NDArray

from ltr.sweeper import tradeoffs
from ltr.sweeper.tradeoffs import (
    OnlineFit,
    fit_online,
    front_figure,
    online_figure,
    pareto_front,
)
from tests.conftest import examples

NAN = math.nan
SETTINGS = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` dominates ``b``: >= on both, > on one (False when either holds a NaN)."""
    return a[0] >= b[0] and a[1] >= b[1] and (a[0] > b[0] or a[1] > b[1])


def _brute_front(points: list[tuple[float, float]]) -> list[bool]:
    """The definition, O(n^2) in Python: measured and dominated by no run."""
    return [
        not (math.isnan(p[0]) or math.isnan(p[1])) and not any(_dominates(q, p) for q in points)
        for p in points
    ]


# --- pareto_front --------------------------------------------------------------------------------

FRONT_CASES = [
    # A (0.40, 0.30), B (0.42, 0.20), C (0.38, 0.35): a trade-off, none beats another on both;
    # D (0.39, 0.25) <= A on both; E (0.42, 0.15): same x as B, lower y.
    pytest.param(
        [(0.40, 0.30), (0.42, 0.20), (0.38, 0.35), (0.39, 0.25), (0.42, 0.15)],
        [True, True, True, False, False],
        id="hand-5",
    ),
    pytest.param([(1.0, 1.0), (1.0, 1.0), (0.0, 0.0)], [True, True, False], id="duplicates-both-on"),
    pytest.param([(0.5, 0.5), (1.0, 1.0), (1.0, 1.0)], [False, True, True], id="duplicates-dominate-a-third"),
    pytest.param([(1.0, 1.0), (2.0, 1.0)], [False, True], id="equal-y-larger-x-wins"),
    pytest.param([(1.0, 1.0), (1.0, 2.0)], [False, True], id="equal-x-larger-y-wins"),
    pytest.param([(0.3, 0.7)], [True], id="one-run"),
    pytest.param([], [], id="no-runs"),
    pytest.param([(1.0, -math.inf)], [True], id="minus-inf-alone"),
    pytest.param([(1.0, -math.inf), (0.0, -math.inf)], [True, False], id="minus-inf-ties"),
    pytest.param([(-0.0, 1.0), (0.0, 1.0)], [True, True], id="signed-zeros-are-equal"),
]


@pytest.mark.parametrize(("points", "expected"), FRONT_CASES)
def test_front_hand_cases(points: list[tuple[float, float]], expected: list[bool]) -> None:
    x = [p[0] for p in points]
    y = [p[1] for p in points]
    got = pareto_front(x, y)
    assert got.dtype == np.bool_
    assert got.tolist() == expected
    assert _brute_front(points) == expected


NAN_CASES = [
    # A NaN run is never on the front ...
    pytest.param([(NAN, 0.5), (0.4, NAN), (NAN, NAN)], [False, False, False], id="all-nan"),
    # ... and dominates nothing: (nan, 10) would beat (1, 1) on y, (2, nan) on x.
    pytest.param([(NAN, 10.0), (1.0, 1.0), (2.0, NAN)], [False, True, False], id="nan-dominates-nothing"),
    # The measured runs get the front they would get without the NaN runs.
    pytest.param(
        [(NAN, 5.0), (1.0, 1.0), (0.5, NAN), (0.0, 2.0), (0.0, 1.0)],
        [False, True, False, True, False],
        id="mixed",
    ),
]


@pytest.mark.parametrize(("points", "expected"), NAN_CASES)
def test_front_nan(points: list[tuple[float, float]], expected: list[bool]) -> None:
    got = pareto_front([p[0] for p in points], [p[1] for p in points])
    assert got.tolist() == expected
    measured = [i for i, p in enumerate(points) if not math.isnan(p[0] + p[1])]
    alone = pareto_front([points[i][0] for i in measured], [points[i][1] for i in measured])
    assert got[measured].tolist() == alone.tolist()


# Few distinct values so ties (equal x, equal y, duplicates) are common; some NaN and infinities.
COORD = st.one_of(
    st.integers(0, 4).map(float),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([NAN, math.inf, -math.inf]),
)
POINTS = st.lists(st.tuples(COORD, COORD), max_size=40)


@SETTINGS
@given(points=POINTS)
def test_front_property(points: list[tuple[float, float]]) -> None:
    """No run on the front is dominated by any run; every measured run off it is dominated by
    one on it; the sort-based front is the definition; the order of the runs does not matter."""
    x = np.array([p[0] for p in points], dtype=np.float64)
    y = np.array([p[1] for p in points], dtype=np.float64)
    front = pareto_front(x, y)
    on = [p for p, f in zip(points, front, strict=True) if f]
    for p, f in zip(points, front, strict=True):
        if f:
            assert not any(_dominates(q, p) for q in points)
        elif not math.isnan(p[0] + p[1]):
            assert any(_dominates(q, p) for q in on)
    assert front.tolist() == _brute_front(points)
    perm = np.random.default_rng(len(points)).permutation(len(points))
    assert pareto_front(x[perm], y[perm]).tolist() == front[perm].tolist()


def test_front_bad_shapes() -> None:
    with pytest.raises(ValueError, match="x has 3 runs but y has 2"):
        pareto_front([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="must be 1-D"):
        pareto_front([[1.0, 2.0]], [[1.0, 2.0]])


# --- fit_online ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 6, 50, 2000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_matches_polyfit(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.30, 0.50, n)
    y = 0.02 + 0.08 * x + rng.normal(0.0, 0.003, n)
    fit = fit_online(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit.slope == pytest.approx(slope, rel=1e-12, abs=1e-12)
    assert fit.intercept == pytest.approx(intercept, rel=1e-12, abs=1e-12)
    assert fit.n == n
    assert fit.gain_per_tenth == pytest.approx(0.1 * slope, rel=1e-12, abs=1e-13)
    assert fit.relative_gain_per_tenth == pytest.approx(fit.gain_per_tenth / y.mean(), rel=1e-14)
    residuals = y - np.polyval([slope, intercept], x)
    r2 = 1.0 - residuals @ residuals / ((y - y.mean()) @ (y - y.mean()))
    assert fit.r2 == pytest.approx(r2, rel=1e-10, abs=1e-12)
    assert fit.r2 <= 1.0


@SETTINGS
@given(
    x=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=30).filter(lambda v: max(v) - min(v) > 0.05),
    data=st.data(),
)
def test_fit_matches_polyfit_property(x: list[float], data: st.DataObject) -> None:
    y = data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(x), max_size=len(x)))
    fit = fit_online(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit.slope == pytest.approx(slope, rel=1e-12, abs=1e-12)
    assert fit.intercept == pytest.approx(intercept, rel=1e-12, abs=1e-12)
    assert math.isnan(fit.r2) or -1e-12 <= fit.r2 <= 1.0 + 1e-12


def test_fit_hand_example() -> None:
    # x = [0, 1, 2], y = [0, 2, 1]: Sxy = (-1)(-1) + 0 + (1)(0) = 1, Sxx = 2 -> slope 1/2,
    # intercept 1 - 1/2 = 1/2; fitted [1/2, 1, 3/2], SS_res = 1/4 + 1 + 1/4 = 3/2, SS_tot = 2.
    fit = fit_online([0.0, 1.0, 2.0], [0.0, 2.0, 1.0])
    assert fit == OnlineFit(slope=0.5, intercept=0.5, r2=1 - 1.5 / 2, n=3, gain_per_tenth=0.05, relative_gain_per_tenth=0.05)


def test_fit_perfect_line() -> None:
    x = np.array([0.30, 0.35, 0.40, 0.45, 0.52])
    fit = fit_online(x, 0.02 + 0.3 * x)
    assert abs(fit.r2 - 1.0) <= 1e-15
    assert fit.slope == pytest.approx(0.3, rel=1e-14)
    assert fit.intercept == pytest.approx(0.02, rel=1e-13)


def test_fit_two_runs_is_exact() -> None:
    fit = fit_online([0.4, 0.5], [0.10, 0.13])
    assert fit.slope == pytest.approx(0.3, rel=1e-13)
    assert fit.r2 == pytest.approx(1.0, abs=1e-15)


def test_fit_constant_ctr_has_no_r2() -> None:
    """All CTR equal: the line is flat (slope 0) and there is no variance to explain (R² NaN)."""
    fit = fit_online([0.3, 0.4, 0.5], [0.1, 0.1, 0.1])
    assert fit.slope == 0.0
    assert fit.intercept == 0.1
    assert math.isnan(fit.r2)
    assert fit.relative_gain_per_tenth == 0.0
    assert "R² n/a" in fit.describe()


def test_fit_zero_mean_ctr_has_no_relative_gain() -> None:
    fit = fit_online([0.0, 1.0], [-1.0, 1.0])
    assert fit.slope == 2.0
    assert fit.gain_per_tenth == pytest.approx(0.2)
    assert math.isnan(fit.relative_gain_per_tenth)
    assert fit.describe().startswith("each +0.1 NDCG@10 ≈ +0.2 CTR (slope 2 CTR per unit of NDCG@10")


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        pytest.param([], [], "at least 2 runs, got 0", id="no-runs"),
        pytest.param([0.4], [0.1], "at least 2 runs, got 1", id="one-run"),
        pytest.param(
            [0.4, 0.4, 0.4], [0.1, 0.2, 0.3],
            r"NDCG@10 is the same in every run \(0.4\); vary something that changes it",
            id="constant-ndcg",
        ),
        pytest.param([0.4, NAN, 0.5], [0.1, 0.2, 0.3], "NDCG@10 of run 1 is nan", id="nan-ndcg"),
        pytest.param([0.4, 0.5, 0.6], [0.1, 0.2, math.inf], "CTR of run 2 is inf", id="inf-ctr"),
        pytest.param([0.4, 0.5], [0.1], "x has 2 runs but y has 1", id="lengths"),
    ],
)
def test_fit_errors(x: list[float], y: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        fit_online(x, y)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("fit", "expected"),
    [
        pytest.param(
            OnlineFit(0.0345, 0.02, 0.871, 6, 0.00345, 0.012),
            "each +0.1 NDCG@10 ≈ +1.2 % CTR (slope 0.0345 CTR per unit of NDCG@10, R² 0.87, 6 runs)",
            id="brief-example",
        ),
        pytest.param(
            OnlineFit(-0.02, 0.1, 0.5, 4, -0.002, -0.00034),
            "each +0.1 NDCG@10 ≈ -0.034 % CTR (slope -0.02 CTR per unit of NDCG@10, R² 0.50, 4 runs)",
            id="small-negative",
        ),
        pytest.param(
            OnlineFit(3.0, 0.1, 0.99, 5, 0.3, 1.234),
            "each +0.1 NDCG@10 ≈ +123 % CTR (slope 3 CTR per unit of NDCG@10, R² 0.99, 5 runs)",
            id="large-no-exponent",
        ),
    ],
)
def test_describe(fit: OnlineFit, expected: str) -> None:
    assert fit.describe() == expected


def test_describe_names() -> None:
    fit = OnlineFit(0.0345, 0.02, 0.871, 6, 0.00345, 0.012)
    assert fit.describe(x_name="nDCG@5", y_name="clicks/query").startswith("each +0.1 nDCG@5 ≈ +1.2 % clicks/query")


def test_online_fit_is_frozen() -> None:
    fit = fit_online([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(AttributeError):
        fit.slope = 1.0  # type: ignore[misc]


# --- figures -------------------------------------------------------------------------------------


def _annotations(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def _renders(fig: Figure) -> None:
    fig.savefig(io.BytesIO(), format="png", dpi=40)


def test_front_figure() -> None:
    x = np.array([0.40, 0.42, 0.38, 0.39, 0.42, NAN])
    y = np.array([0.30, 0.20, 0.35, 0.25, 0.15, 0.50])
    labels = [f"alpha={a}" for a in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)]
    front = pareto_front(x, y)
    fig = front_figure(x, y, front, labels, x_label="NDCG@10", y_label="ILD@10", title="relevance vs diversity")
    (ax,) = fig.axes
    off, on = ax.collections
    assert isinstance(off, PathCollection)
    assert isinstance(on, PathCollection)
    assert np.asarray(off.get_offsets()).shape == (2, 2)  # D and E; the NaN run is not drawn
    assert sorted(map(tuple, np.asarray(on.get_offsets()).tolist())) == [(0.38, 0.35), (0.40, 0.30), (0.42, 0.20)]
    (step,) = ax.lines
    # The front in x order, drawn as a staircase: y of the run to the right holds back to the left.
    assert np.asarray(step.get_xdata()).tolist() == [0.38, 0.40, 0.42]
    assert np.asarray(step.get_ydata()).tolist() == [0.35, 0.30, 0.20]
    assert step.get_drawstyle() == "steps-pre"
    # the five drawn runs numbered (A and E share x = 0.42 but not y: each has its number), the
    # key beside the axes names them; the NaN run is neither numbered nor in the key
    assert sorted(_annotations(fig), key=int) == ["1", "2", "3", "4", "5"]
    assert _key(fig) == [f"{i + 1:>2}  {label}" for i, label in enumerate(labels[:5])]
    assert ax.get_xlabel() == "NDCG@10"
    assert ax.get_ylabel() == "ILD@10"
    assert ax.get_title() == "relevance vs diversity"
    legend = ax.get_legend()
    assert legend is not None
    assert sorted(t.get_text() for t in legend.get_texts()) == ["Pareto front", "dominated runs"]
    _renders(fig)


def test_front_figure_checks_lengths() -> None:
    with pytest.raises(ValueError, match="3 runs but 3 on_front flags and 2 labels"):
        front_figure([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], np.ones(3, dtype=np.bool_), ["a", "b"], x_label="", y_label="", title="")


def _online_data() -> tuple[NDArray[np.float64], NDArray[np.float64], list[str]]:
    x = np.array([0.30, 0.34, 0.38, 0.41, 0.45])
    y = np.array([0.100, 0.112, 0.121, 0.130, 0.143])
    return x, y, [f"alpha={a}" for a in (0.1, 0.2, 0.3, 0.4, 0.5)]


def test_online_figure_with_error_bars() -> None:
    x, y, labels = _online_data()
    fit = fit_online(x, y)
    y_err = np.vstack([np.full(5, 0.004), np.full(5, 0.006)])  # y - lower, upper - y
    fig = online_figure(x, y, fit, labels, title="offline vs online", y_err=y_err)
    (ax,) = fig.axes
    (bars,) = ax.containers
    assert isinstance(bars, ErrorbarContainer)
    (points,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert np.asarray(points.get_offsets()).tolist() == np.column_stack([x, y]).tolist()
    (segments,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    lows = [seg[0][1] for seg in segments.get_segments()]
    highs = [seg[1][1] for seg in segments.get_segments()]
    np.testing.assert_allclose(lows, y - 0.004, rtol=1e-12)
    np.testing.assert_allclose(highs, y + 0.006, rtol=1e-12)
    (line,) = [ln for ln in ax.lines if ln.get_label() == fit.describe()]
    assert np.asarray(line.get_xdata()).tolist() == [0.30, 0.45]
    np.testing.assert_allclose(np.asarray(line.get_ydata(), dtype=np.float64), fit.slope * np.array([0.30, 0.45]) + fit.intercept, rtol=1e-12)
    assert sorted(_annotations(fig), key=int) == ["1", "2", "3", "4", "5"]
    assert _key(fig) == [f"{i + 1:>2}  {label}" for i, label in enumerate(labels)]
    legend = ax.get_legend()
    assert legend is not None
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted([fit.describe(), "runs"])
    assert ax.get_title() == "offline vs online"
    assert ax.get_xlabel() == "NDCG@10"
    assert ax.get_ylabel() == "simulated CTR"
    _renders(fig)


def test_online_figure_without_error_bars() -> None:
    x, y, labels = _online_data()
    fig = online_figure(x, y, fit_online(x, y), labels, title="t")
    (ax,) = fig.axes
    assert not ax.containers
    assert len(ax.collections) == 1
    assert len(ax.lines) == 1
    assert _key(fig) == [f"{i + 1:>2}  {label}" for i, label in enumerate(labels)]


def _key(fig: Figure) -> list[str]:
    (key,) = fig.texts
    return key.get_text().splitlines()


def test_close_runs_share_one_legible_label() -> None:
    """Runs that would print their labels over each other (the diversity sweep's alpha = 0, 0.1,
    0.2 reach the same nDCG) share one number list; no two labels overlap, none leaves the figure."""
    x = np.array([0.7203, 0.7398, 0.7443, 0.7464, 0.7471, 0.7471])
    y = np.array([0.3194, 0.3079, 0.3033, 0.3012, 0.3006, 0.3002])
    labels = [f"alpha={a}" for a in (0.8, 0.6, 0.4, 0.2, 0.1, 0.0)]
    figures = [
        front_figure(x, y, pareto_front(x, y), labels, x_label="x", y_label="y", title="front"),
        online_figure(x, y, fit_online(x, y), labels, title="online"),
    ]
    for fig in figures:
        assert sorted(_annotations(fig)) == ["1", "2", "3", "4,5,6"]
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)  # lays the texts out
        boxes = [t.get_window_extent(renderer) for t in [*fig.axes[0].texts, *fig.texts]]
        whole = fig.bbox
        for i, box in enumerate(boxes):
            assert whole.x0 <= box.x0
            assert box.x1 <= whole.x1
            assert whole.y0 <= box.y0
            assert box.y1 <= whole.y1
            assert not any(box.overlaps(other) for other in boxes[i + 1 :])


@pytest.mark.parametrize(
    ("y_err", "message"),
    [
        pytest.param(np.zeros(5), r"shape \(2, 5\)", id="one-sided"),
        pytest.param(np.zeros((5, 2)), r"shape \(2, 5\)", id="transposed"),
        pytest.param(np.full((2, 5), -0.01), ">= 0", id="negative"),
    ],
)
def test_online_figure_bad_error_bars(y_err: NDArray[np.float64], message: str) -> None:
    x, y, labels = _online_data()
    with pytest.raises(ValueError, match=message):
        online_figure(x, y, fit_online(x, y), labels, title="t", y_err=y_err)


def test_doctests() -> None:
    result = doctest.testmod(tradeoffs, raise_on_error=False)
    assert result.attempted >= 4
    assert result.failed == 0
