"""Figures of a comparison (matplotlib imported lazily, no pyplot global state).

Both functions return a `matplotlib.figure.Figure`; save it with ``fig.savefig(path)`` or let a
notebook display it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ltr.compare.comparison import ALL, Comparison
from ltr.compare.render import display_name
from ltr.metrics import IdcgReport
from ltr.metrics.plots import wrap_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: Longest run label a figure shows (legends and titles stay beside the axes, not over them).
LABEL_WIDTH = 36
_DOTTED_KEY = re.compile(r"(?<![A-Za-z0-9.])(?:[A-Za-z]\w*\.)+(?=[A-Za-z_]\w*=)")
_KEY = re.compile(r"(?<![A-Za-z0-9.=])([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*)=")
_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+")


def round_floats(text: str, digits: int = 4) -> str:
    """Every decimal number in ``text`` rounded to ``digits`` significant digits.

    Examples
    --------
    >>> round_floats("model.learning_rate=0.012345678901234567,model.num_leaves=31")
    'model.learning_rate=0.01235,model.num_leaves=31'
    >>> round_floats("lambda_l2=3.0000000000000004e-05 seed=1")
    'lambda_l2=3e-05 seed=1'
    """
    return _FLOAT.sub(lambda m: f"{float(m.group()):.{digits}g}", text)


def _initials(match: re.Match[str]) -> str:
    return "".join(part[0] for part in match.group(1).split("_") if part) + "="


def short_labels(labels: Sequence[str], width: int = LABEL_WIDTH) -> list[str]:
    """Run labels a figure can show: numbers rounded to 4 significant digits (`round_floats`),
    config keys without their group (``model.num_leaves=7`` -> ``num_leaves=7``); a label still
    longer than ``width`` gets its keys' initials (``num_leaves=7`` -> ``nl=7``: every value
    stays visible), then is cut in the middle (``head…tail``). Labels that end up equal get
    `` #1``, `` #2``, ... The tables keep the whole names.

    Examples
    --------
    >>> short_labels(["lambdarank", "model.learning_rate=0.012345678901234_model.num_leaves=31"])
    ['lambdarank', 'learning_rate=0.01235_num_leaves=31']
    >>> short_labels(["num_leaves=25 learning_rate=0.039638958863878505 min_child_samples=10"])
    ['nl=25 lr=0.03964 mcs=10']
    """
    out = []
    for label in labels:
        text = _DOTTED_KEY.sub("", round_floats(label))
        if len(text) > width:
            text = _KEY.sub(_initials, text)
        if len(text) > width:
            head = (width - 1) // 2 + (width - 1) % 2
            text = f"{text[:head]}…{text[len(text) - (width - 1 - head):]}"
        out.append(text)
    for text in set(out):
        same = [i for i, t in enumerate(out) if t == text]
        if len(same) > 1:
            for n, i in enumerate(same, start=1):
                out[i] = f"{text} #{n}"
    return out


def plot_strata(comparison: Comparison, metric: str = "ndcg_at_10") -> Figure:
    """Per stratum (and ``all``): each run's mean with its CI (left), each delta with its CI (right).

    Error bars are the bootstrap percentile intervals of `Comparison` (level
    ``comparison.confidence``); a hollow delta marker means not significant (Holm-adjusted
    randomisation p >= 0.05).
    """
    from matplotlib.figure import Figure

    if metric not in comparison.metrics:
        raise ValueError(f"{metric!r} is not in the comparison; it has {', '.join(comparison.metrics)}")
    groups = [ALL, *comparison.strata]
    x = np.arange(len(groups), dtype=np.float64)
    n_runs = len(comparison.labels)
    width = 0.8 / n_runs
    fig = Figure(figsize=(11.0, 4.2), layout="constrained")
    ax_mean, ax_delta = fig.subplots(1, 2)
    name = display_name(metric)
    others = [lab for lab in comparison.labels if lab != comparison.baseline]
    d_width = 0.8 / max(len(others), 1)
    shown = dict(zip(comparison.labels, short_labels(comparison.labels), strict=True))
    for j, label in enumerate(comparison.labels):
        rows = {r.stratum: r for r in comparison.rows_for(metric) if r.run == label}
        mean = np.array([rows[g].mean for g in groups])
        low = np.array([rows[g].mean_ci_low for g in groups])
        high = np.array([rows[g].mean_ci_high for g in groups])
        offset = x + (j - (n_runs - 1) / 2) * width
        drawn = ax_mean.errorbar(offset, mean, yerr=[mean - low, high - mean], fmt="o", capsize=3, label=shown[label])
        if label == comparison.baseline:
            continue
        colour = drawn[0].get_color()
        i = others.index(label)
        d_offset = x + (i - (len(others) - 1) / 2) * d_width
        delta = np.array([rows[g].delta for g in groups])
        d_low = np.array([rows[g].delta_ci_low for g in groups])
        d_high = np.array([rows[g].delta_ci_high for g in groups])
        significant = np.array([rows[g].p_rand_holm < 0.05 for g in groups])
        ax_delta.errorbar(d_offset, delta, yerr=[delta - d_low, d_high - delta], fmt="none", capsize=3, ecolor=colour)
        ax_delta.scatter(d_offset[significant], delta[significant], color=colour, label=shown[label])
        ax_delta.scatter(d_offset[~significant], delta[~significant], facecolors="none", edgecolors=colour)
    counts = {r.stratum: r.n for r in comparison.rows_for(metric, baseline=True)}
    ticks = [f"{g}\n(n={counts[g]})" for g in groups]
    for ax in (ax_mean, ax_delta):
        ax.set_xticks(x, ticks)
        ax.set_xlabel("list length")
    ax_mean.set_ylabel(f"mean {name}")
    # each title wrapped to its half of the figure (the layout engine moves axes, never wraps)
    ax_mean.set_title(wrap_title(f"{name} per stratum, {comparison.confidence:.0%} CI", 5.5, left=0.15, right=0.97))
    ax_mean.legend(fontsize="small")
    ax_delta.axhline(0.0, color="grey", linewidth=0.8)
    ax_delta.set_ylabel(f"delta {name} vs baseline")
    ax_delta.set_title(
        wrap_title(f"paired delta vs {shown[comparison.baseline]}\n(hollow: not significant after Holm)", 5.5, left=0.15, right=0.97)
    )
    ax_delta.legend(fontsize="small")
    return fig


def plot_idcg_side_by_side(reports: Sequence[tuple[str, IdcgReport]]) -> Figure:
    """The IDCG@k histograms of several runs side by side, on shared axes.

    ``reports`` pairs a run label with its `IdcgReport` (e.g. from
    `ltr.tracking.runs.RunStore.idcg_report`).
    """
    from matplotlib.figure import Figure

    if not reports:
        raise ValueError("no IDCG report to plot")
    fig = Figure(figsize=(5.0 * len(reports), 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(reports), sharex=True, sharey=True))
    labels = short_labels([label for label, _ in reports])
    for ax, label, (_, report) in zip(axes, labels, reports, strict=True):
        edges = report.bin_edges
        ax.bar(edges[:-1], report.counts, width=edges[1:] - edges[:-1], align="edge", edgecolor="white")
        ax.set_title(wrap_title(f"{label}: IDCG@{report.k}", 5.0, left=0.15, right=0.97))
        ax.set_xlabel(f"IDCG@{report.k}")
        ax.text(
            0.98,
            0.95,
            f"n = {report.n_queries}\nIDCG = 0: {report.share_zero:.1%}\nIDCG <= 1: {report.share_le_one:.1%}",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize="small",
        )
    axes[0].set_ylabel("queries")
    return fig
