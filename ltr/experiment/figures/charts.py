"""Run-level figures logged with every run: NDCG per stratum, and feature importance (gain).

matplotlib is imported lazily and no pyplot state is used (figures are plain ``Figure``s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ltr.metrics import Strata
from ltr.metrics.plots import title_top, wrap_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_ndcg_by_stratum(
    summaries: Mapping[str, Mapping[str, float]], *, ks: Sequence[int], strata: Strata, title: str
) -> Figure:
    """Grouped bars: NDCG@k per stratum (and overall) for each split, with query counts."""
    from matplotlib.figure import Figure

    groups = [("all", "")] + [(label, f"/{key}") for label, key in zip(strata.labels, strata.keys, strict=True)]
    series = [(split, k) for split in summaries for k in ks]
    # Fixed margins rather than a layout engine: this figure is rendered for every run.
    title = wrap_title(title, 7.0, left=0.09, right=0.98)
    fig = Figure(figsize=(7.0, 4.0))
    fig.subplots_adjust(left=0.09, right=0.98, top=title_top(title, 4.0), bottom=0.2)
    ax = fig.add_subplot()
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups), dtype=np.float64)
    for i, (split, k) in enumerate(series):
        values = [summaries[split].get(f"ndcg_at_{k}{suffix}", np.nan) for _, suffix in groups]
        ax.bar(x + i * width, values, width=width, label=f"{split} nDCG@{k}")
    first = next(iter(summaries.values()), {})
    ax.set_xticks(
        x + width * (len(series) - 1) / 2,
        [f"{label}\n(n={int(first.get(f'n_queries{suffix}', 0))})" for label, suffix in groups],
    )
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("nDCG")
    ax.set_xlabel("list length (query count of the first split)")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def plot_feature_importance(
    importance: NDArray[np.float64], names: Sequence[str], *, top: int = 25, title: str
) -> Figure:
    """Horizontal bars of the ``top`` features by total gain, largest first."""
    from matplotlib.figure import Figure

    order = np.argsort(-importance, kind="stable")[:top]
    height = 0.25 * len(order) + 1.2
    fig = Figure(figsize=(6.4, height))
    longest = max((len(names[i]) for i in order), default=1)
    left = min(0.5, 0.04 + 0.013 * longest)
    title = wrap_title(title, 6.4, left=left, right=0.97)
    height += 0.2 * title.count("\n")  # room for the title's lines above the bars
    fig.set_figheight(height)
    fig.subplots_adjust(left=left, right=0.97, top=title_top(title, height), bottom=0.6 / height)
    ax = fig.add_subplot()
    ax.barh(np.arange(len(order)), importance[order][::-1] if len(order) else [])
    ax.set_yticks(np.arange(len(order)), [names[i] for i in order][::-1])
    ax.set_xlabel("total gain")
    ax.set_title(title)
    return fig
