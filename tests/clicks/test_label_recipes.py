"""Label recipes: grades from behaviour columns, the behaviours of the click log, and runs that
train or judge on a recipe (the label histogram and the IDCG report of the judged labels)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import mlflow
import numpy as np
import pytest
from omegaconf import DictConfig

from ltr.config.choices import RecipeKind
from ltr.config.groups.data import (
    LabelRecipeConfig,
    LabelRuleConfig,
    SplitConfig,
    SyntheticClicksDataConfig,
)
from ltr.data.feedback.clicks import cart_probability, generate_click_log
from ltr.data.feedback.recipes import apply_recipe, grade_counts
from ltr.data.load import load_click_splits
from ltr.errors import DataError, LtrUserError
from ltr.experiment import run as pipeline

CLICKS = ("data=synthetic_clicks", "data.n_queries=300")


def _rules(*rules: tuple[str, float, int], default: int = 0) -> LabelRecipeConfig:
    return LabelRecipeConfig(rules=[LabelRuleConfig(c, m, g) for c, m, g in rules], default=default)


def test_rules_first_match_wins() -> None:
    # row: (purchase, cart, dwell, click) -> purchase ? 4 : cart ? 3 : dwell >= 30 ? 2 : click ? 1 : 0
    cols = {
        "purchase": np.array([1.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
        "cart": np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
        "dwell": np.array([50.0, 50.0, 30.0, 29.9, 0.0, 0.0]),
        "click": np.array([1.0, 1.0, 1.0, 1.0, 0.0, 1.0]),
    }
    recipe = _rules(("purchase", 1, 4), ("cart", 1, 3), ("dwell", 30, 2), ("click", 1, 1))
    assert apply_recipe(recipe, cols).tolist() == [4, 3, 2, 1, 0, 4]
    # the order decides: click first swallows every clicked row
    first = _rules(("click", 1, 1), ("purchase", 1, 4), default=7)
    assert apply_recipe(first, cols).tolist() == [1, 1, 1, 1, 7, 1]


def test_weighted_score_is_cut_at_thresholds() -> None:
    cols = {"click": np.array([0.0, 1.0, 1.0, 1.0, 1.0]), "purchase": np.array([0.0, 0.0, 0.0, 1.0, 1.0]),
            "dwell": np.array([0.0, 0.0, 20.0, 0.0, 100.0])}  # fmt: skip
    recipe = LabelRecipeConfig(kind=RecipeKind.weighted, weights={"click": 1.0, "dwell": 0.05, "purchase": 4.0},
                               thresholds=[1.0, 2.0, 5.0, 9.0])  # fmt: skip
    # scores 0, 1, 1 + 1 = 2, 1 + 4 = 5, 1 + 5 + 4 = 10: each exactly at or above a threshold
    assert apply_recipe(recipe, cols).tolist() == [0, 1, 2, 3, 4]
    assert grade_counts(apply_recipe(recipe, cols), n_grades=6) == [1, 1, 1, 1, 1, 0]


@pytest.mark.parametrize(
    ("recipe", "message"),
    [
        (LabelRecipeConfig(), "needs at least one rule"),
        (_rules(("views", 1, 1)), "'views' is not a behaviour column"),
        (LabelRecipeConfig(kind=RecipeKind.weighted, weights={"click": 1.0}, thresholds=[2.0, 1.0]), "increasing"),
        (_rules(("click", 1, -1)), "negative"),
    ],
)
def test_a_recipe_that_cannot_grade_is_one_clear_error(recipe: LabelRecipeConfig, message: str) -> None:
    with pytest.raises(DataError, match=message):
        apply_recipe(recipe, {"click": np.zeros(3)}, name="mine")


def test_behaviours_leave_every_earlier_array_of_the_log_unchanged() -> None:
    """The behaviours come from their own stream: changing how they are drawn changes no click,
    position, feature or label (so every run on the click log keeps its metrics)."""
    base = generate_click_log(SyntheticClicksDataConfig(n_queries=300), seed=4)
    other = generate_click_log(
        SyntheticClicksDataConfig(n_queries=300, cart_max=1.0, dwell_seconds=30.0, purchase_base=0.5), seed=4
    )
    for a, b in ((base.clicks, other.clicks), (base.data.features, other.data.features),
                 (base.data.labels, other.data.labels), (base.data.positions, other.data.positions)):  # fmt: skip
        assert a is not None
        assert b is not None
        assert a.tobytes() == b.tobytes()
    assert base.data.behaviours is not None
    assert other.data.behaviours is not None
    assert not np.array_equal(base.data.behaviours["cart"], other.data.behaviours["cart"])


def test_behaviours_follow_the_funnel_and_its_probabilities() -> None:
    cfg = SyntheticClicksDataConfig(n_queries=3000, click_noise=0.3)
    log = generate_click_log(cfg, seed=8)
    b = log.data.behaviours
    assert b is not None
    clicked = b["click"] == 1
    assert np.array_equal(clicked, log.clicks == 1)
    assert np.all((b["dwell"] > 0) == clicked)
    assert np.all(b["cart"] <= b["click"])
    assert np.all(b["purchase"] <= b["cart"])
    # cart rate among clicks, per grade, within 4 binomial standard errors of its probability
    for grade in range(5):
        at = clicked & (log.data.labels == grade)
        p = float(cart_probability(np.array([grade]), cfg)[0])
        n = int(at.sum())
        assert n > 50
        assert abs(b["cart"][at].mean() - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-12, grade
    # dwell grows with the grade: median log-dwell = log(dwell_seconds) + dwell_per_grade * g
    for grade in (0, 4):
        at = clicked & (log.data.labels == grade)
        expected = np.log(cfg.dwell_seconds) + cfg.dwell_per_grade * grade
        assert abs(np.median(np.log(b["dwell"][at])) - expected) < 0.15


def test_recipe_views_are_the_recipe_of_the_behaviours_on_the_same_queries() -> None:
    cfg = SyntheticClicksDataConfig(n_queries=200)
    views = load_click_splits(cfg, SplitConfig(), seed=3)
    recipe = cfg.label_recipes["purchase_first"]
    for (_, rel), (_, rec) in zip(views.relevance.items(), views.view("purchase_first").items(), strict=True):
        assert rel.behaviours is not None
        assert rec.features is rel.features
        assert np.array_equal(rec.labels, apply_recipe(recipe, rel.behaviours))
    mixed = views.training_view("clicks", "relevance", "purchases")
    assert mixed.train is views.clicks.train
    assert mixed.valid is views.relevance.valid
    assert mixed.test is views.view("purchases").test
    with pytest.raises(DataError, match=r"data\.train_labels=.likes. is not one of"):
        views.training_view("likes")


def _artifact(run_id: str, path: str, tmp_path: Path) -> Path:
    return Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path, dst_path=str(tmp_path / run_id)))


def test_training_on_a_recipe_logs_its_histogram(small_cfg: Callable[..., DictConfig], tmp_path: Path, tracking_uri: str) -> None:
    cfg = small_cfg(*CLICKS, "data.train_labels=purchase_first")
    out = pipeline.run(cfg)
    views = load_click_splits(cfg.data, cfg.split, seed=cfg.seed)
    train = views.view("purchase_first").train
    counts = grade_counts(train.labels)
    logged = [out.metrics[f"labels/purchase_first/train/grade_{g}"] for g in range(len(counts))]
    assert logged == counts
    assert sum(logged) == train.n_rows
    assert "test/ndcg_at_10" in out.metrics
    assert "labels/relevance/test/grade_4" in out.metrics
    mlflow.set_tracking_uri(tracking_uri)
    run = mlflow.get_run(out.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["ltr.labels.train"] == "purchase_first"
    assert run.data.params["data.train_labels"] == "purchase_first"
    hist = json.loads(_artifact(str(out.run_id), "labels/histogram.json", tmp_path).read_text())
    assert hist["sources"] == {"train": "purchase_first", "valid": "relevance", "eval": "relevance"}
    assert set(hist["histograms"]) == {"relevance", "clicks", "purchase_first", "engagement", "purchases"}
    assert hist["histograms"]["purchase_first"]["train"] == counts


def test_trained_on_clicks_judged_on_purchases_is_one_override(small_cfg: Callable[..., DictConfig]) -> None:
    """The IDCG report is of the judged labels: the share of test queries with IDCG@10 = 0 is the
    share without a purchase, counted from the behaviours."""
    cfg = small_cfg(*CLICKS, "data.eval_labels=purchases", "tracking.enabled=false")
    out = pipeline.run(cfg)
    test = load_click_splits(cfg.data, cfg.split, seed=cfg.seed).relevance.test
    assert test.behaviours is not None
    bought = np.add.reduceat(test.behaviours["purchase"], test.offsets[:-1]) > 0
    assert out.metrics["test/idcg_at_10/share_zero"] == pytest.approx(1.0 - bought.mean(), abs=1e-12)
    assert out.metrics["labels/purchases/test/grade_1"] == test.behaviours["purchase"].sum()
    # the online CTR still simulates the click model on the true grades, whatever is judged
    base = pipeline.run(small_cfg(*CLICKS, "tracking.enabled=false"))
    assert out.metrics["test/online/expected_ctr"] == base.metrics["test/online/expected_ctr"]
    assert out.metrics["test/ndcg_at_10"] != base.metrics["test/ndcg_at_10"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("data.eval_labels=likes", "data.eval_labels='likes' is not one of: relevance, clicks, purchase_first"),
        ("data.label_recipes.purchases.rules=[{column: views, grade: 1}]", "'views' is not a behaviour column"),
    ],
)
def test_bad_label_settings_fail_before_a_run_exists(
    small_cfg: Callable[..., DictConfig], unmade_store: str, tmp_path: Path, override: str, message: str
) -> None:
    with pytest.raises(LtrUserError, match=message):
        pipeline.run(small_cfg(*CLICKS, override, unmade_store))
    assert not (tmp_path / "unmade" / "mlflow.db").exists()
