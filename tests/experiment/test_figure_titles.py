"""Every run figure shows its whole title (the run's name on the first line) above its axes."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ltr.experiment.figures.charts import plot_feature_importance, plot_ndcg_by_stratum
from ltr.metrics import Strata, idcg_report, per_query_table
from ltr.metrics.plots import plot_idcg_histogram, title_top

TITLE = "num_leaves=7 model=rank_xendcg (a long run name)\nwhat the figure shows"


def _figures() -> list[Figure]:
    strata = Strata()
    summary = {"ndcg_at_10": 0.7, "n_queries": 3.0} | {f"ndcg_at_10/{key}": 0.6 for key in strata.keys}
    labels = np.array([2, 0, 1, 3, 0, 1], dtype=np.int64)
    table = per_query_table(labels, np.arange(6.0), np.array([0, 2, 6]), np.array([1, 2]), ks=(10,))
    return [
        plot_ndcg_by_stratum({"valid": summary, "test": summary}, ks=[10], strata=strata, title=TITLE),
        plot_feature_importance(np.arange(30.0), [f"feature_{i}" for i in range(30)], title=TITLE),
        plot_idcg_histogram(idcg_report(table, 10, bins=5), title=TITLE),
    ]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["strata", "importance", "idcg"])
def test_the_title_is_whole_and_above_the_axes(index: int) -> None:
    fig = _figures()[index]
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    (ax,) = fig.axes
    title = ax.title.get_window_extent(renderer)
    assert title.y1 <= fig.bbox.y1  # the first line (the run's name) is inside the figure
    assert title.y0 >= ax.get_window_extent(renderer).y1  # and no line sits on the axes
    assert ax.get_title() == TITLE


def test_title_top_leaves_a_line_per_title_line() -> None:
    # 1.3 x 12 pt per line + 0.16 in, on a 4 in figure
    assert title_top("a", 4.0) == pytest.approx(1 - (0.16 + 15.6 / 72) / 4)
    assert title_top("a\nb", 4.0) == pytest.approx(1 - (0.16 + 2 * 15.6 / 72) / 4)
