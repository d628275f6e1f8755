"""Trade-offs between runs: the Pareto front of two objectives, and offline NDCG against online CTR.

Each point is one run (one row of a sweep), not one query.

- :func:`pareto_front` marks the runs no other run beats on both objectives, both *maximised*
  (``x`` is NDCG@10, ``y`` a diversity measure); :func:`front_figure` draws them.
- :func:`fit_online` fits the least-squares line of a (simulated) online metric, CTR, on NDCG@10
  across runs and says what +0.1 NDCG@10 is worth (:meth:`OnlineFit.describe`);
  :func:`online_figure` draws the runs, their confidence intervals and the line.

Conventions:

- Dominance: run ``j`` dominates run ``i`` when ``x[j] >= x[i]`` and ``y[j] >= y[i]`` with at
  least one ``>``. Equal runs do not dominate each other, so duplicates share the front.
- A run with NaN in either coordinate is never on the front and dominates nothing (it was not
  measured; it is neither good nor bad). ``±inf`` compare as numbers.
- :func:`fit_online` takes no NaN (a ``ValueError`` names the run); R² is NaN when every CTR is
  the same (no variance to explain), and the relative gain is NaN when the mean CTR is 0.

matplotlib is imported lazily and no pyplot state is used (figures are plain ``Figure``s).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltr.metrics.plots import wrap_title
from ltr.online.ols import as_pair, fit_line

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pareto_front(x: ArrayLike, y: ArrayLike) -> NDArray[np.bool_]:
    """Mark the runs on the Pareto front of two objectives, both maximised.

    A run is on the front when no other run is ``>=`` on both objectives and ``>`` on at least
    one. Equal duplicate runs are both on the front (neither is strictly better). A run with NaN
    in ``x`` or ``y`` is never on the front and dominates no run.

    Sort-based, O(n log n): runs sorted by ``x`` descending, in groups of equal ``x``. A run is
    on the front when its ``y`` is the largest of its group (else a run of equal ``x`` and
    larger ``y`` dominates it) and strictly larger than every ``y`` of the groups of larger ``x``
    (else one of those, ``>`` on ``x`` and ``>=`` on ``y``, dominates it).

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        The two objectives of each run (e.g. NDCG@10 and a diversity measure).

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        True for the runs on the front, in the order of the input.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` are not 1-D arrays of one length.

    Examples
    --------
    >>> pareto_front([0.40, 0.42, 0.41, 0.39], [0.30, 0.20, 0.25, 0.10]).tolist()
    [True, True, True, False]
    """
    xs, ys = as_pair(x, y, where="pareto_front", item="run")
    on_front = np.zeros(xs.size, dtype=np.bool_)
    measured = np.flatnonzero(~(np.isnan(xs) | np.isnan(ys)))
    if measured.size == 0:
        return on_front
    order = measured[np.argsort(-xs[measured], kind="stable")]
    sx, sy = xs[order], ys[order]
    starts = np.flatnonzero(np.r_[True, sx[1:] != sx[:-1]])  # first index of each equal-x group
    group = np.cumsum(np.r_[False, sx[1:] != sx[:-1]])  # group number of each sorted run
    group_max = np.maximum.reduceat(sy, starts)
    # Largest y of the groups of strictly larger x; -inf (nothing) for the first group.
    before = np.r_[-np.inf, np.maximum.accumulate(group_max)[:-1]]
    first = group == 0  # nothing has a larger x, so -inf in y is not dominated there
    on_front[order] = (sy == group_max[group]) & (first | (sy > before[group]))
    return on_front


def front_figure(
    x: ArrayLike,
    y: ArrayLike,
    on_front: NDArray[np.bool_],
    labels: Sequence[str],
    *,
    x_label: str,
    y_label: str,
    title: str,
) -> Figure:
    """Scatter of the runs, the Pareto front highlighted and joined by its staircase.

    The front's staircase, in ``x`` order, is the edge of the region the front dominates: at
    each ``x`` the best ``y`` reached by a front run of that ``x`` or more. Every run is
    annotated with its label; runs with NaN in ``x`` or ``y`` are neither drawn nor annotated.

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        The two objectives of each run.
    on_front : numpy.ndarray of bool, shape (n,)
        From :func:`pareto_front`.
    labels : sequence of str, length n
        One label per run, e.g. ``"alpha=0.3"``.
    x_label, y_label, title : str
        Axis labels and the title.

    Returns
    -------
    matplotlib.figure.Figure
        Axes with two scatter collections (runs off the front, then on it), one line (the
        staircase) and one annotation per drawn run. Save it with ``fig.savefig(path)``.
    """
    xs, ys = as_pair(x, y, where="front_figure", item="run")
    mask = np.asarray(on_front, dtype=np.bool_)
    if mask.shape != xs.shape or len(labels) != xs.size:
        raise ValueError(f"front_figure: {xs.size} runs but {mask.size} on_front flags and {len(labels)} labels")
    drawn = ~(np.isnan(xs) | np.isnan(ys))
    front = mask & drawn
    off = ~mask & drawn

    fig, ax = _keyed_figure(title, labels, drawn)
    ax.scatter(xs[off], ys[off], color="0.6", s=24, label="dominated runs", zorder=2)
    ax.scatter(xs[front], ys[front], color="C3", s=40, label="Pareto front", zorder=3)
    order = np.argsort(xs[front], kind="stable")
    # where="pre": between two front runs the best y reached is the one of the run to the right.
    ax.step(xs[front][order], ys[front][order], where="pre", color="C3", linewidth=1.2, zorder=1)
    _number_points(fig, ax, xs, ys, drawn, labels, colors=["C3" if m else "0.35" for m in mask.tolist()])
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.margins(x=0.12, y=0.12)
    ax.legend(fontsize="small", loc="best")
    return fig


@dataclass(frozen=True, slots=True)
class OnlineFit:
    """The least-squares line of an online metric (CTR) on NDCG@10 across runs.

    Attributes
    ----------
    slope : float
        CTR per unit of NDCG@10.
    intercept : float
        CTR at NDCG@10 = 0 (an extrapolation; read the slope).
    r2 : float
        ``1 - SS_res / SS_tot``; NaN when every CTR is the same (``SS_tot == 0``).
    n : int
        Number of runs (>= 2).
    gain_per_tenth : float
        ``slope * 0.1``: the CTR change per +0.1 NDCG@10.
    relative_gain_per_tenth : float
        ``gain_per_tenth / mean(CTR)``, a fraction (0.012 is +1.2 %); NaN when the mean is 0.
    se, slope_low, slope_high, p_value : float
        The slope's standard error, 95 % interval and two-sided p-value of slope 0 (Student t on
        ``n - 2`` degrees of freedom; NaN with 2 runs), from :func:`ltr.online.ols.fit_line`.
    """

    slope: float
    intercept: float
    r2: float
    n: int
    gain_per_tenth: float
    relative_gain_per_tenth: float
    # the slope's inference (:mod:`ltr.online.ols`); not part of equality, so a fit compares by its line
    se: float = field(default=math.nan, compare=False)
    slope_low: float = field(default=math.nan, compare=False)
    slope_high: float = field(default=math.nan, compare=False)
    p_value: float = field(default=math.nan, compare=False)

    def describe(self, *, x_name: str = "NDCG@10", y_name: str = "CTR") -> str:
        """The business sentence, e.g. ``each +0.1 NDCG@10 ≈ +1.2 % CTR (slope 0.0345 ...)``.

        The gain is relative to the mean CTR of the runs; when that mean is 0 the absolute
        change is given instead.

        Examples
        --------
        >>> OnlineFit(0.0345, 0.02, 0.87, 6, 0.00345, 0.012).describe()
        'each +0.1 NDCG@10 ≈ +1.2 % CTR (slope 0.0345 CTR per unit of NDCG@10, R² 0.87, 6 runs)'
        """
        if math.isnan(self.relative_gain_per_tenth):
            gain = f"{self.gain_per_tenth:+.3g} {y_name}"
        else:
            gain = f"{_percent(100.0 * self.relative_gain_per_tenth)} % {y_name}"
        r2 = "n/a" if math.isnan(self.r2) else f"{self.r2:.2f}"
        return f"each +0.1 {x_name} ≈ {gain} (slope {self.slope:.3g} {y_name} per unit of {x_name}, R² {r2}, {self.n} runs)"


def _percent(value: float) -> str:
    """Signed, two significant figures, never in exponent notation: ``+1.2``, ``-0.034``, ``+120``."""
    if abs(value) >= 10.0:
        return f"{value:+.0f}"
    return f"{value:+.2g}" if value != 0.0 else "+0"


def fit_online(x: ArrayLike, y: ArrayLike) -> OnlineFit:
    """Fit the least-squares line ``y ≈ slope * x + intercept`` of CTR on NDCG@10 across runs.

    The same line as ``numpy.polyfit(x, y, 1)``, from centred sums (``slope = Sxy / Sxx``), so
    it needs no lstsq and warns of no conditioning.

    Parameters
    ----------
    x : array_like of float, shape (n,)
        NDCG@10 of each run.
    y : array_like of float, shape (n,)
        The online metric (simulated CTR) of each run.

    Returns
    -------
    OnlineFit

    Raises
    ------
    ValueError
        If there are fewer than 2 runs, a value is NaN or infinite, or NDCG@10 is the same in
        every run (a line through one x has no slope).

    Examples
    --------
    >>> fit = fit_online([0.30, 0.35, 0.40], [0.10, 0.11, 0.12])
    >>> round(fit.slope, 12), round(fit.gain_per_tenth, 12), fit.n
    (0.2, 0.02, 3)
    """
    xs, ys = as_pair(x, y, where="fit_online", item="run")
    n = xs.size
    if n < 2:
        raise ValueError(f"fit_online: a line needs at least 2 runs, got {n}")
    for name, values in (("NDCG@10", xs), ("CTR", ys)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"fit_online: {name} of run {int(bad[0])} is {values[bad[0]]}; drop that run or measure it")
    # Equal values are tested as such: their float mean can differ from them in the last bit.
    if np.all(xs == xs[0]):
        raise ValueError(f"fit_online: NDCG@10 is the same in every run ({xs[0]:g}); vary something that changes it")
    line = fit_line(xs, ys, where="fit_online")
    slope, intercept, r2 = line.slope, line.intercept, line.r2
    mean_y = float(ys[0]) if bool(np.all(ys == ys[0])) else float(ys.mean())
    gain = slope * 0.1
    return OnlineFit(
        slope=slope,
        intercept=intercept,
        r2=r2,
        n=n,
        gain_per_tenth=gain,
        relative_gain_per_tenth=gain / mean_y if mean_y != 0.0 else math.nan,
        se=line.se,
        slope_low=line.low,
        slope_high=line.high,
        p_value=line.p_value,
    )


#: Figures that number their points: the width (inches) and where the key of numbers begins.
KEYED_WIDTH_IN = 10.0
KEY_LEFT = 0.70
#: The characters of a key line in the room right of the axes (DejaVu Sans Mono is 0.602 em
#: wide; the key is matplotlib's "small", 0.833 of its 10 pt default).
KEY_CHARS = int(((1.0 - KEY_LEFT) * KEYED_WIDTH_IN - 0.15) * 72.0 / (0.602 * 10.0 * 0.833))
_TITLE_PT = 10.0


def key_lines(labels: Sequence[str], drawn: NDArray[np.bool_]) -> list[str]:
    """The key of a keyed figure: ``" 3  label"`` per drawn run, a label longer than the key's
    width (:data:`KEY_CHARS`) wrapped onto indented lines, so every label stays whole and inside
    the figure.

    >>> key_lines(["alpha=0.1", "x " * 30], np.array([True, True]))[:2]
    [' 1  alpha=0.1', ' 2  x x x x x x x x x x x x x x x x x x']
    """
    lines: list[str] = []
    for i in np.flatnonzero(drawn).tolist():
        lines += textwrap.wrap(f"{i + 1:>2}  {labels[i]}", KEY_CHARS, subsequent_indent="    ", break_on_hyphens=False)
    return lines


def _keyed_figure(title: str, labels: Sequence[str], drawn: NDArray[np.bool_]) -> tuple[Figure, Any]:
    """A figure with its axes left, the key of ``labels`` right of them and ``title`` wrapped
    above: it grows taller than 5 in when the title's lines and the key need it (the key's
    height is measured), so neither is cut (:func:`ltr.metrics.plots.wrap_title`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    title = wrap_title(title, KEYED_WIDTH_IN, left=0.09, right=KEY_LEFT - 0.02, fontsize_pt=_TITLE_PT)
    fig = Figure(figsize=(KEYED_WIDTH_IN, 5.0))
    key = fig.text(KEY_LEFT, 0.9, "\n".join(key_lines(labels, drawn)), va="top", ha="left", fontsize="small", family="monospace")
    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    key_in = key.get_window_extent(renderer).height / fig.dpi + 0.1 if key.get_text() else 0.0
    title_in = 0.16 + (title.count("\n") + 1) * 1.3 * _TITLE_PT / 72.0
    bottom_in = 0.55
    height = max(5.0, title_in + max(3.85, key_in) + bottom_in)
    fig.set_figheight(height)
    top = 1.0 - title_in / height
    key.set_y(top)
    fig.subplots_adjust(left=0.09, right=KEY_LEFT - 0.02, top=top, bottom=bottom_in / height)
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=_TITLE_PT)
    return fig, ax


def point_groups(px: NDArray[np.float64], py: NDArray[np.float64], *, radius: float) -> list[list[int]]:
    """Points (display coordinates, e.g. points of a figure) joined into groups wherever two are
    closer than ``radius`` (single linkage: a chain of close points is one group); groups in
    order of their first point, members in index order.

    >>> point_groups(np.array([0.0, 4.0, 50.0, 8.0]), np.array([0.0, 0.0, 0.0, 0.0]), radius=5.0)
    [[0, 1, 3], [2]]
    """
    n = px.shape[0]
    root = list(range(n))

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    for i in range(n):
        for j in range(i):
            if (px[i] - px[j]) ** 2 + (py[i] - py[j]) ** 2 < radius**2:
                root[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _number_points(
    fig: Figure, ax: Any, xs: NDArray[np.float64], ys: NDArray[np.float64], drawn: NDArray[np.bool_],
    labels: Sequence[str], *, colors: Sequence[str],
) -> None:  # fmt: skip
    """Each drawn point gets its number (1-based, in input order); points that would print over
    each other share one annotation (``3,4,5``), alternating above and below along ``x``; the
    key (number, label) is listed right of the axes, where no point can cover it
    (:func:`_keyed_figure`)."""
    index = np.flatnonzero(drawn)
    if index.size:
        ax.margins(x=0.12, y=0.12)
        ax.autoscale_view()
        fig.canvas.draw_idle()
        shown = ax.transData.transform(np.column_stack([xs[index], ys[index]]))
        groups = point_groups(shown[:, 0], shown[:, 1], radius=18.0 * fig.dpi / 72.0)
        by_x = sorted(range(len(groups)), key=lambda g: float(xs[index[groups[g][0]]]))
        for rank, g in enumerate(by_x):
            members = [int(index[m]) for m in groups[g]]
            above = rank % 2 == 0  # above the group's highest point, or below its lowest
            y = float(ys[members].max() if above else ys[members].min())
            ax.annotate(
                ",".join(str(m + 1) for m in members), (float(xs[members].mean()), y),
                xytext=(0.0, 6.0 if above else -6.0), textcoords="offset points", ha="center",
                va="bottom" if above else "top", fontsize="small", color=colors[members[0]], fontweight="bold",
            )  # fmt: skip


def online_figure(
    x: ArrayLike,
    y: ArrayLike,
    fit: OnlineFit,
    labels: Sequence[str],
    *,
    title: str,
    y_err: ArrayLike | None = None,
    x_label: str = "NDCG@10",
    y_label: str = "simulated CTR",
    x_name: str = "NDCG@10",
) -> Figure:
    """The runs' CTR against NDCG@10, their error bars, and the fitted line.

    The line's legend entry is :meth:`OnlineFit.describe` (with ``x_name``).

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        NDCG@10 and CTR of each run.
    fit : OnlineFit
        From :func:`fit_online` (usually of the same ``x`` and ``y``).
    labels : sequence of str, length n
        One label per run, annotated next to its point.
    title : str
        The title.
    y_err : array_like of float, shape (2, n), optional
        Distances from ``y`` down and up to each run's confidence interval (``y - lower``,
        ``upper - y``), both >= 0. No error bars when None.
    x_label, y_label : str
        Axis labels.

    Returns
    -------
    matplotlib.figure.Figure
        Axes with one scatter collection (the runs), the error bars when given, one line (the
        fit, across the runs' NDCG@10 range) and one annotation per run.
    """
    xs, ys = as_pair(x, y, where="online_figure", item="run")
    if len(labels) != xs.size:
        raise ValueError(f"online_figure: {xs.size} runs but {len(labels)} labels")
    err = None
    if y_err is not None:
        err = np.asarray(y_err, dtype=np.float64)
        if err.shape != (2, xs.size):
            raise ValueError(f"online_figure: y_err must have shape (2, {xs.size}) (down, up), got {err.shape}")
        if np.any(err < 0):
            raise ValueError("online_figure: y_err holds distances from y, so it must be >= 0 (y - lower, upper - y)")

    fig, ax = _keyed_figure(title, labels, np.isfinite(xs) & np.isfinite(ys))
    if err is not None:
        ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor="0.55", elinewidth=1.0, capsize=3, zorder=1)
    ax.scatter(xs, ys, color="C0", s=30, label="runs", zorder=3)
    ends = np.array([np.nanmin(xs), np.nanmax(xs)]) if xs.size else np.array([0.0, 1.0])
    ax.plot(ends, fit.slope * ends + fit.intercept, color="C1", linewidth=1.5, label=fit.describe(x_name=x_name), zorder=2)
    _number_points(fig, ax, xs, ys, np.isfinite(xs) & np.isfinite(ys), labels, colors=["0.2"] * xs.size)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.margins(x=0.12, y=0.12)
    ax.legend(fontsize="small", loc="lower right" if fit.slope >= 0 else "upper right")
    return fig
