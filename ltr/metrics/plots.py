"""Figures of the metrics package (matplotlib imported lazily, no pyplot global state)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.clicks.exposure import COVERAGES, ExposureReport
from ltr.metrics.reports.idcg_report import IdcgReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    # an annotation only: the propensity module imports pandas, which a run's figure worker
    # (ltr.experiment.figures.figure_worker, which imports this module) need not load
    from ltr.metrics.clicks.propensity import PropensityEstimate


#: The lines a figure's title line (a run name) wraps to at most (:func:`wrap_title`).
TITLE_LINES = 2
#: The lowest top of a figure's axes (:func:`title_top`), a figure fraction.
MIN_TOP = 0.5


def title_top(title: str, height_in: float, *, fontsize_pt: float = 12.0) -> float:
    r"""The axes' top (figure fraction) that leaves room for every line of ``title`` above it.

    Our figures use fixed margins (a layout engine doubles the time to render one); a fixed top
    cuts a two-line title (run name, then what the figure shows) short. Each line takes 1.3
    times its font size, plus 0.16 in of padding above and below.

    Never below :data:`MIN_TOP`: a title of more lines than that leaves room for (``wrap_title``
    cuts a long name to :data:`TITLE_LINES` lines) overflows the figure's top edge rather than
    leaving the axes no height.

    >>> round(title_top("one line", 4.0), 3), round(title_top("run name\nwhat", 4.0), 3)
    (0.906, 0.852)
    >>> title_top("x\n" * 40, 4.0)
    0.5
    """
    lines = title.count("\n") + 1
    return max(MIN_TOP, 1.0 - (0.16 + lines * 1.3 * fontsize_pt / 72.0) / height_in)


def wrap_title(
    title: str, fig_width_in: float, *, left: float, right: float, fontsize_pt: float = 12.0, max_lines: int = TITLE_LINES
) -> str:
    r"""``title`` with each of its lines wrapped (at spaces, or inside a word longer than a line)
    to what fits the figure when centred over axes from ``left`` to ``right`` (figure
    fractions) at ``fontsize_pt``: a figure keeps a long run name inside itself instead of
    cutting it at its edges. A character is counted 0.65 em wide, more than the average of
    DejaVu Sans (matplotlib's default font), so a wrapped line fits. A line longer than
    ``max_lines`` wrapped lines (a run name of any length) is cut there, ending in ``...``:
    a figure's layout never depends on a name fitting.

    >>> wrap_title("short\nwhat", 6.4, left=0.1, right=0.9)
    'short\nwhat'
    >>> max(len(line) for line in wrap_title("nl=7 " * 40, 6.4, left=0.1, right=0.9, max_lines=9).split("\n"))
    54
    >>> cut = wrap_title("x" * 1000 + "\nIDCG@10", 6.4, left=0.1, right=0.9).split("\n")
    >>> len(cut), cut[1].endswith("..."), cut[2]
    (3, True, 'IDCG@10')
    """
    centre = (left + right) / 2
    width_in = 2 * min(centre, 1 - centre) * fig_width_in - 0.1
    width = max(10, int(width_in * 72.0 / (0.65 * fontsize_pt)))
    out: list[str] = []
    for line in title.split("\n"):
        wrapped = textwrap.wrap(line, width, break_on_hyphens=False) or [line]
        if len(wrapped) > max_lines:
            wrapped = [*wrapped[: max_lines - 1], wrapped[max_lines - 1][: width - 3] + "..."]
        out += wrapped
    return "\n".join(out)


def plot_idcg_histogram(report: IdcgReport, *, title: str) -> Figure:
    """Bar chart of the IDCG@k histogram, with the zero / <= 1 / shorter-than-k shares.

    Save it with ``fig.savefig(path)``; it needs no display and no pyplot.
    """
    from matplotlib.figure import Figure

    # Fixed margins: a layout engine would double the time it takes to render (logged per run).
    title = wrap_title(title, 6.4, left=0.11, right=0.97)
    fig = Figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.11, right=0.97, top=title_top(title, 4.0), bottom=0.13)
    ax = fig.add_subplot()
    edges = report.bin_edges
    widths = edges[1:] - edges[:-1]
    ax.bar(edges[:-1], report.counts, width=widths, align="edge", edgecolor="white")
    ax.set_xlabel(f"IDCG@{report.k}")
    ax.set_ylabel("queries")
    ax.set_title(title)
    ax.text(
        0.98,
        0.95,
        f"n = {report.n_queries}\n"
        f"IDCG = 0: {report.share_zero:.1%}\n"
        f"IDCG <= 1: {report.share_le_one:.1%}\n"
        f"shorter than {report.k}: {report.share_shorter_than_k:.1%}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize="small",
    )
    return fig


def plot_exposure(report: ExposureReport, *, title: str, eval_k: int | None = None) -> Figure:
    """Cumulative share of clicks and of estimated examinations at positions <= k, with the
    50 / 80 / 95 % points of the examinations (and ``eval_k`` when given) marked."""
    from matplotlib.figure import Figure

    title = wrap_title(title, 6.4, left=0.11, right=0.97)
    fig = Figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.11, right=0.97, top=title_top(title, 4.0), bottom=0.13)
    ax = fig.add_subplot()
    ks = np.arange(1, report.exam_share.shape[0] + 1)
    ax.step(ks, report.exam_share, where="post", label=f"examinations ({report.propensity_source} propensities)")
    ax.step(ks, report.click_share, where="post", label="clicks")
    middle = np.sqrt(ks[-1])  # of the log axis: a label right of it is written left of its line
    for pct in COVERAGES:
        k = report.k_for("exam", pct)
        ax.axvline(k, color="grey", linestyle=":", linewidth=1)
        right = k <= middle
        ax.text(k, pct / 100, f" {pct} %: k={k} ", fontsize="small", va="bottom", ha="left" if right else "right")
    if eval_k is not None:
        ax.axvline(eval_k, color="C3", linewidth=1, label=f"eval.k = {eval_k}")
    ax.set_xscale("log")
    ax.set_xlabel("k (positions 1..k)")
    ax.set_ylabel("share at positions <= k")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return fig


#: Positions a propensity figure shows at most (deeper ones have few impressions).
PROPENSITY_FIGURE_POSITIONS = 50


def _position_axes(title: str) -> tuple[Figure, Any, str]:
    """The frame of a per-position figure (6.4 x 4 in): the figure, its axes, the wrapped title."""
    from matplotlib.figure import Figure

    title = wrap_title(title, 6.4, left=0.11, right=0.97)
    fig = Figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.11, right=0.97, top=title_top(title, 4.0), bottom=0.13)
    return fig, fig.add_subplot(), title


def _log_log(fig: Figure, ax: Any, title: str, ylabel: str) -> Figure:
    """Finish a per-position figure: log-log axes, position on x, ``ylabel``, title and legend."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("position")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize="small")
    return fig


def plot_propensity(estimate: PropensityEstimate, *, title: str, eval_k: int | None = None) -> Figure:
    """The examination propensity of every position (relative to position 1) with its bootstrap
    interval where it has one, on a log-log scale; ``eval_k`` marked when given."""
    fig, ax, title = _position_axes(title)
    n = min(estimate.n_positions, PROPENSITY_FIGURE_POSITIONS)
    ks = np.arange(1, n + 1)
    values = np.clip(estimate.propensities[:n], 1e-4, None)
    label = f"{estimate.method}" + (f" ({estimate.confidence:.0%} bootstrap interval, {estimate.n_bootstrap} resamples)" if estimate.n_bootstrap else "")
    if estimate.no_interval:
        label += " (no interval where none is drawn)" if estimate.n_bootstrap else " (no interval)"
    if estimate.n_bootstrap:
        ax.fill_between(ks, np.clip(estimate.low[:n], 1e-4, None), np.clip(estimate.high[:n], 1e-4, None), alpha=0.25, step=None)
    ax.plot(ks, values, marker="o", markersize=3, label=label)
    if eval_k is not None:
        ax.axvline(eval_k, color="C3", linewidth=1, label=f"eval.k = {eval_k}")
    return _log_log(fig, ax, title, "examination propensity (position 1 = 1)")


def plot_position_bias(report: dict[str, Any], *, title: str) -> Figure:
    """A click-log run's ``data/position_bias.json`` (:func:`ltr.metrics.clicks.position_bias.position_bias_report`):
    the learned curve, the run's propensities and the truth, each relative to position 1, on a
    log-log scale; a learned curve the training does not have is named in the legend, not drawn."""
    fig, ax, title = _position_axes(title)
    n = min(len(report["positions"]), PROPENSITY_FIGURE_POSITIONS)
    ks = np.arange(1, n + 1)

    def values(key: str) -> NDArray[np.float64]:
        raw = [np.nan if v is None else v for v in report[key][:n]]
        return np.clip(np.asarray(raw, dtype=np.float64), 1e-4, None)

    ax.plot(ks, values("propensity"), marker="o", markersize=3, label=f"propensities in use ({report['propensity_method']})")
    if report["truth"] is not None:
        ax.plot(ks, values("truth"), color="black", linestyle="--", linewidth=1, label="true examination (synthetic log)")
    if report["learned"] is not None:
        ax.plot(ks, values("learned"), marker="s", markersize=3, label=f"learned: {report['learned_transform']}")
    else:
        ax.plot([], [], " ", label=f"learned: none ({report['training']})")
    return _log_log(fig, ax, title, "relative to position 1")
