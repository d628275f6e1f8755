"""Every figure keeps its texts (titles, legends, keys, labels, tick labels) inside the image when
run names are long: a sweep's Pareto figure once cut its title and its list of runs at its edges.

Each figure of ``ltr/experiment/figures/charts.py``, ``ltr/metrics/plots.py``, ``ltr/compare/plots.py``,
``ltr/compare/abtest_render.py`` and ``ltr/sweeper/tradeoffs.py`` (the sweep's figures) is
drawn with long run names, and every text it draws must lie inside the figure's bounding box.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from ltr.compare.abtest import AbTestResult, interleaving_test, two_proportions
from ltr.compare.abtest_render import power_figure
from ltr.compare.comparison import compare_runs
from ltr.compare.plots import plot_idcg_side_by_side, plot_strata
from ltr.experiment.figures.charts import plot_feature_importance, plot_ndcg_by_stratum
from ltr.metrics import Strata, idcg_report, per_query_table
from ltr.metrics.clicks.exposure import exposure_report
from ltr.metrics.plots import plot_exposure, plot_idcg_histogram
from ltr.sweeper.tradeoffs import fit_online, front_figure, online_figure, pareto_front

#: An Optuna trial's name, and a single run's with many overrides (the old names of both).
TRIAL = "num_leaves=52 learning_rate=0.1906 min_child_samples=75 colsample_bytree=0.7993 alpha=0.156"
LONG = "debug=default num_boost_round=60 num_leaves=7 learning_rate=0.05 min_child_samples=84 (lambdarank)"
PARENT = ("alpha=interval(0,1) num_leaves=int(interval(7, 127)) learning_rate=interval(0.01, 0.2) "
          "min_child_samples=int(interval(5, 100)) colsample_bytree=interval(0.5, 1.0) hparams_search=optuna "
          "debug=default rerank=diversify optimized_metric=[valid/ndcg_at_10,valid/ild_at_10]")  # fmt: skip


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, 40)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = rng.integers(0, 3, int(offsets[-1])).astype(np.int64)
    table: pd.DataFrame = per_query_table(labels, rng.normal(size=labels.size), offsets, np.arange(40) + 1, ks=(10,))
    return table


def _abtest() -> AbTestResult:
    return AbTestResult(
        n_sessions=20_000, sessions_per_day=10_000.0, traffic_share=1.0, days=2.0, seed=0,
        ctr=two_proportions(3_100, 10_000, 3_000, 10_000, sessions_per_day=10_000.0),
        interleaving=interleaving_test(5_200, 4_800, 1_000, sessions_per_day=10_000.0),
        expected_ctr_a=0.30, expected_ctr_b=0.31,
    )  # fmt: skip


def _front(n: int, title: str) -> Figure:
    rng = np.random.default_rng(n)
    x, y = rng.uniform(0.6, 0.75, n), rng.uniform(0.28, 0.34, n)
    labels = [f"{TRIAL} #{i}" for i in range(n)]
    return front_figure(x, y, pareto_front(x, y), labels, x_label="valid/ndcg_at_10", y_label="valid/ild_at_10",
                        title=f"{title}: valid/ndcg_at_10 vs valid/ild_at_10, {n} runs")  # fmt: skip


def _online() -> Figure:
    x = np.array([0.70, 0.71, 0.72, 0.74, 0.75])
    y = np.array([0.30, 0.31, 0.31, 0.33, 0.34])
    return online_figure(x, y, fit_online(x, y), [f"{LONG} {i}" for i in range(5)], title=f"{PARENT}: simulated CTR vs nDCG@10")


def _strata_summary() -> dict[str, float]:
    strata = Strata()
    return {"ndcg_at_10": 0.7, "n_queries": 3.0} | {f"ndcg_at_10/{key}": 0.6 for key in strata.keys}


FIGURES: dict[str, Callable[[], Figure]] = {
    "ndcg_by_stratum": lambda: plot_ndcg_by_stratum(
        {"valid": _strata_summary(), "test": _strata_summary()}, ks=[10], strata=Strata(), title=f"{PARENT}\nnDCG by list length"
    ),
    "feature_importance": lambda: plot_feature_importance(
        np.arange(30.0), [f"feature_{i}" for i in range(30)], title=f"{LONG}\nfeature importance (gain)"
    ),
    "idcg_histogram": lambda: plot_idcg_histogram(idcg_report(_table(0), 10, bins=5), title=f"{PARENT}\nvalid: IDCG@10 per query"),
    "exposure": lambda: plot_exposure(
        exposure_report(np.arange(600) % 30, np.arange(600) % 7 == 0, 1.0 / np.arange(1, 31)),
        title=f"{LONG}\nexposure by position (training log)", eval_k=10,
    ),
    "compare_strata": lambda: plot_strata(
        compare_runs([_table(0), _table(1), _table(2)], [TRIAL, LONG, PARENT], n_resamples=200)
    ),
    "compare_idcg": lambda: plot_idcg_side_by_side(
        [(TRIAL, idcg_report(_table(0), 10, bins=5)), (PARENT, idcg_report(_table(1), 10, bins=5))]
    ),
    "abtest_power": lambda: power_figure(_abtest(), LONG, PARENT),
    "pareto_front": lambda: _front(4, PARENT),
    "pareto_front_50_trials": lambda: _front(50, "optuna:ltr_lambdarank (50 trials, maximize valid/ndcg_at_10, valid/ild_at_10)"),
    "online_vs_ndcg": _online,
}


def drawn_texts(fig: Figure) -> list[Text]:
    """Every text artist the figure draws: its own texts, each axes' title, labels, texts,
    annotations and legend, and the tick labels of the ticks drawn (an axis keeps spare ticks)."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    texts: list[Text] = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            texts += [*legend.get_texts(), legend.get_title()]
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis._update_ticks():
                texts += [tick.label1, tick.label2]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_text_of_the_figure_lies_inside_it(name: str) -> None:
    fig = FIGURES[name]()
    texts = drawn_texts(fig)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    whole = fig.bbox
    assert any(text.get_text().startswith(("A = ", "optuna:", "num_leaves", "debug", "alpha")) for text in texts) or name.startswith("compare")
    outside = []
    for text in texts:
        box = text.get_window_extent(renderer)
        if not (whole.x0 - 0.5 <= box.x0 and box.x1 <= whole.x1 + 0.5 and whole.y0 - 0.5 <= box.y0 and box.y1 <= whole.y1 + 0.5):
            outside.append((text.get_text()[:60], [round(v) for v in box.extents]))
    assert not outside, f"{name}: texts outside the figure {[round(v) for v in whole.extents]}: {outside}"
