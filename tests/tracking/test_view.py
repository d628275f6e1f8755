"""The saved runs-table view and chart view every run merges into (no server: pure functions),
the CV parent's columns, and the docstring examples of the modules this touches."""

from __future__ import annotations

import doctest
import importlib
import json

import pytest

from ltr.sweeper.cv import cv_columns, cv_frame, cv_headline, cv_metrics
from ltr.tracking.mlflow_tracker import (
    CURVE_SECTIONS,
    chart_view,
    column_width,
    merged_columns,
    saved_view,
)

PLAIN = ["valid/ndcg_at_10", "test/ndcg_at_10", "test/ndcg_at_10/len_1-10", "best_iteration"]
RERANKED = ["valid/ndcg_at_10", "valid/pre_rerank/ndcg_at_10", "valid/ild_at_10", "test/ndcg_at_10", "best_iteration"]
CLICKS = ["valid/ndcg_at_10", "valid/online/ctr", "test/ndcg_at_10", "best_iteration"]
CV = ["valid/ndcg_at_10", "test/ndcg_at_10", "valid/ndcg_at_10/sd", "test/ndcg_at_10/sd"]


@pytest.mark.parametrize("order", [(PLAIN, RERANKED, CLICKS, CV), (CV, CLICKS, RERANKED, PLAIN), (RERANKED, PLAIN, CV, CLICKS)])
def test_merged_columns_keep_every_kind_in_a_stable_order(order: tuple[list[str], ...]) -> None:
    columns: list[str] = []
    for kind in order:
        before = list(columns)
        columns = merged_columns(columns, kind)
        assert [c for c in columns if c in before] == before  # nothing dropped, nothing reordered
        assert [c for c in columns if c in kind] == kind  # each kind's own order holds
    assert sorted(columns) == sorted(set(PLAIN + RERANKED + CLICKS + CV))
    assert columns[0] == "valid/ndcg_at_10"


def test_column_widths_fit_the_headline_and_strata_in_1600_px() -> None:
    headline = ["valid/ndcg_at_10", "test/ndcg_at_10", *(f"test/ndcg_at_10/len_{s}" for s in ("1-10", "11-50", "51_plus"))]
    widths = [column_width(f"metrics.`{key}`") for key in headline]
    # each header whole: "test/ndcg_at_10/len_51_plus" is 27 characters of ~7 px
    assert widths == [7 * len(key) + 24 for key in headline]
    # beside MLflow's sidebar (190 px) and its own columns (checkbox, run name, created: ~400 px)
    assert sum(widths) + 190 + 400 <= 1600


def test_saved_view_reads_garbage_as_empty() -> None:
    assert saved_view(None) == {}
    assert saved_view("{not json") == {}
    assert saved_view("[1, 2]") == {}
    assert saved_view(json.dumps({"a": 1})) == {"a": 1}


def test_chart_view_puts_our_curves_first_and_merges() -> None:
    first = chart_view([], [], ["iter/test/ndcg_at_10", "iter/valid/lightgbm/ndcg_at_10", "iter/valid/ndcg_at_10"])
    assert [s["uuid"] for s in first["compareRunSections"]] == [uuid for uuid, _ in CURVE_SECTIONS]
    assert first["isAccordionReordered"] is True  # MLflow keeps the sections' order
    charts = {c["metricKey"]: c for c in first["compareRunCharts"]}
    assert next(c["metricKey"] for c in first["compareRunCharts"]).startswith("iter/valid/")  # valid before test
    assert charts["iter/valid/ndcg_at_10"]["metricSectionId"] == "ltr-curves-valid"
    assert charts["iter/test/ndcg_at_10"]["metricSectionId"] == "ltr-curves-test"
    assert charts["iter/valid/lightgbm/ndcg_at_10"]["metricSectionId"] == "ltr-curves-lightgbm"
    assert "LightGBM" in charts["iter/valid/lightgbm/ndcg_at_10"]["displayName"]
    # a second run adds its own curves and keeps the first's (and a section MLflow made)
    other = {"uuid": "x", "name": "test", "display": True}
    second = chart_view(first["compareRunCharts"], [*first["compareRunSections"], other], ["iter/valid/pre_rerank/ndcg_at_10", "iter/valid/ndcg_at_10"])
    keys = [c["metricKey"] for c in second["compareRunCharts"]]
    assert keys == [*charts, "iter/valid/pre_rerank/ndcg_at_10"]
    assert [s["uuid"] for s in second["compareRunSections"]] == [*(uuid for uuid, _ in CURVE_SECTIONS), "x"]


def test_cv_headline_columns_are_fold_means_with_sd_beside() -> None:
    folds = {"1": {"test/ndcg_at_10": 0.5, "test/err_at_10": 0.2}, "2": {"test/ndcg_at_10": 0.7, "test/err_at_10": 0.4}}
    stats = cv_metrics(folds)
    headline = cv_headline(stats, ["test/ndcg_at_10", "best_iteration"])
    # mean 0.6, sd sqrt(((0.5-0.6)^2 + (0.7-0.6)^2) / (2-1)) = sqrt(0.02)
    assert headline == {"cv/n_folds": 2.0, "test/ndcg_at_10": pytest.approx(0.6), "test/ndcg_at_10/sd": pytest.approx(0.02**0.5)}
    assert cv_columns(["test/ndcg_at_10", "valid/ndcg_at_10"]) == ["test/ndcg_at_10", "valid/ndcg_at_10", "test/ndcg_at_10/sd", "valid/ndcg_at_10/sd"]
    frame = cv_frame(stats)
    assert frame["key"].tolist() == ["test/err_at_10", "test/ndcg_at_10"]
    assert frame["mean"].tolist() == pytest.approx([0.3, 0.6])
    assert frame["sd"].tolist() == pytest.approx([0.02**0.5, 0.02**0.5])
    assert frame["n_folds"].tolist() == [2, 2]


@pytest.mark.parametrize(
    "name", ["ltr.tracking.mlflow_tracker", "ltr.sweeper.cv", "ltr.rerank.diversify", "ltr.metrics.plots", "ltr.sweeper.tradeoffs"]
)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
