"""The figure ``explain/importance_by_stratum.png``: the top features' importance, every query
and each list-length stratum side by side.

One panel per group (``all``, then the strata), the same features in the same order on every
panel (the top ones overall, largest on top), so a feature that matters on long lists and not
on short ones shows at a glance. matplotlib is imported lazily; no pyplot state is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ltr.explain.importance import Importance
from ltr.metrics.plots import title_top, wrap_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_importance_by_stratum(importance: Importance, *, top: int = 15, title: str) -> Figure:
    """Horizontal bars of the ``top`` features (by overall importance), one panel per group."""
    from matplotlib.figure import Figure

    names = importance.ranked()[:top]
    index = [importance.feature_names.index(n) for n in names]
    groups = importance.groups
    width = 2.0 + 2.2 * len(groups)
    height = 0.28 * len(names) + 2.0
    longest = max((len(n) for n in names), default=1)
    left = min(0.4, (0.3 + 0.075 * longest) / width)
    title = wrap_title(title, width, left=left, right=0.98)
    height += 0.2 * title.count("\n") + 0.4
    fig = Figure(figsize=(width, height))
    top_edge = title_top(title + "\n\n", height)  # the figure's title, then each panel's two lines
    fig.subplots_adjust(left=left, right=0.98, top=top_edge, bottom=0.75 / height, wspace=0.08)
    axes = fig.subplots(1, len(groups), sharey=True, squeeze=False)[0]
    y = np.arange(len(names))[::-1]
    largest = max((float(g.values[index].max(initial=0.0)) for g in groups), default=0.0) or 1.0
    for ax, group in zip(axes, groups, strict=True):
        ax.barh(y, group.values[index], color="C0" if group.key == "all" else "C1")
        ax.set_xlim(0.0, largest * 1.08)
        ax.set_title(f"{group.label}\n({group.n_queries} queries)", fontsize="small")
        ax.tick_params(axis="x", labelsize="x-small")
    axes[0].set_yticks(y, names, fontsize="small")
    fig.supxlabel("mean |centred contribution| per query", fontsize="small")
    fig.suptitle(title)
    return fig
