"""Figures of the metrics package (matplotlib imported lazily, no pyplot global state)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ltr.metrics.exposure import COVERAGES, ExposureReport
from ltr.metrics.idcg_report import IdcgReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_idcg_histogram(report: IdcgReport, *, title: str) -> Figure:
    """Bar chart of the IDCG@k histogram, with the zero / <= 1 / shorter-than-k shares.

    Save it with ``fig.savefig(path)``; it needs no display and no pyplot.
    """
    from matplotlib.figure import Figure

    # Fixed margins: a layout engine would double the time it takes to render (logged per run).
    fig = Figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.11, right=0.97, top=0.91, bottom=0.13)
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

    fig = Figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.11, right=0.97, top=0.91, bottom=0.13)
    ax = fig.add_subplot()
    ks = np.arange(1, report.exam_share.shape[0] + 1)
    ax.step(ks, report.exam_share, where="post", label=f"examinations ({report.propensity_source} propensities)")
    ax.step(ks, report.click_share, where="post", label="clicks")
    for pct in COVERAGES:
        k = report.k_for("exam", pct)
        ax.axvline(k, color="grey", linestyle=":", linewidth=1)
        ax.text(k, pct / 100, f" {pct} %: k={k}", fontsize="small", va="bottom")
    if eval_k is not None:
        ax.axvline(eval_k, color="C3", linewidth=1, label=f"eval.k = {eval_k}")
    ax.set_xscale("log")
    ax.set_xlabel("k (positions 1..k)")
    ax.set_ylabel("share at positions <= k")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return fig
