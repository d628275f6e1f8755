"""The synthetic click log: deterministic, and its clicks follow the configured click model."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.config.groups.data import SplitConfig, SyntheticClicksDataConfig
from ltr.data.feedback.clicks import attractiveness, examination_curve, generate_click_log
from ltr.data.load import load_click_splits, load_splits
from ltr.errors import DataError

# Largest |z| accepted per position: 10 positions are tested at once, and P(|z| > 4) ~ 6e-5 each.
Z_MAX = 4.0


def test_same_seed_same_log_other_seed_other_clicks() -> None:
    cfg = SyntheticClicksDataConfig(n_queries=400)
    a, b = generate_click_log(cfg, seed=3), generate_click_log(cfg, seed=3)
    assert np.array_equal(a.clicks, b.clicks)
    assert a.data.positions is not None
    assert b.data.positions is not None
    assert np.array_equal(a.data.positions, b.data.positions)
    assert np.array_equal(a.data.features, b.data.features)
    c = generate_click_log(cfg, seed=4)
    assert not np.array_equal(a.clicks[: c.clicks.shape[0]], c.clicks[: a.clicks.shape[0]])


def test_positions_are_a_permutation_of_each_query() -> None:
    log = generate_click_log(SyntheticClicksDataConfig(n_queries=300), seed=1)
    d = log.data
    assert d.positions is not None
    order = np.lexsort((d.positions, d.row_qids()))
    within = np.arange(d.n_rows) - np.repeat(d.offsets[:-1], d.group_sizes)
    assert np.array_equal(d.positions[order], within)


@pytest.mark.parametrize("eta", [0.5, 1.0, 1.5])
def test_ctr_by_position_follows_the_examination_curve(eta: float) -> None:
    """Observed clicks at each position against exam(p) x mean attractiveness of the rows there.

    Each click is a Bernoulli draw with a known probability, so the click count at position p has
    mean sum(prob) and variance sum(prob * (1 - prob)) (the binomial standard error); every
    position 0..9 must lie within Z_MAX standard errors.
    """
    cfg = SyntheticClicksDataConfig(n_queries=4000, examination_eta=eta)
    log = generate_click_log(cfg, seed=11)
    pos = log.data.positions
    assert pos is not None
    exam = examination_curve(10, eta=eta)
    attract = attractiveness(log.data.labels, click_noise=cfg.click_noise, click_max=cfg.click_max)
    for p in range(10):
        at = pos == p
        expected = exam[p] * attract[at]
        z = (log.clicks[at].sum() - expected.sum()) / np.sqrt((expected * (1 - expected)).sum())
        assert abs(z) < Z_MAX, f"position {p}: z = {z:.2f}"
    assert np.allclose(log.click_probability, examination_curve(int(pos.max()) + 1, eta=eta)[pos] * attract)


def test_randomized_sessions_show_the_examination_curve_itself() -> None:
    """In random order every position holds the same relevance mix: CTR(p) / CTR(0) = exam(p)."""
    cfg = SyntheticClicksDataConfig(n_queries=6000, randomized_share=1.0, examination_eta=1.0)
    log = generate_click_log(cfg, seed=5)
    pos = log.data.positions
    assert pos is not None
    assert log.randomized.all()
    long_enough = np.repeat(log.data.group_sizes >= 5, log.data.group_sizes)
    ctr = np.array([log.clicks[long_enough & (pos == p)].mean() for p in range(5)])
    n = np.array([(long_enough & (pos == p)).sum() for p in range(5)])
    se = np.sqrt(ctr * (1 - ctr) / n)
    ratio_se = (ctr / ctr[0]) * np.sqrt((se / ctr) ** 2 + (se[0] / ctr[0]) ** 2)
    assert np.all(np.abs(ctr / ctr[0] - examination_curve(5, eta=1.0)) < Z_MAX * ratio_se + 1e-12)


def test_the_logger_favours_popularity_which_is_not_relevant() -> None:
    log = generate_click_log(SyntheticClicksDataConfig(n_queries=2000), seed=2)
    popularity = log.data.features[:, -1]
    assert abs(np.corrcoef(popularity, log.data.labels)[0, 1]) < 0.05
    assert log.data.positions is not None
    assert np.corrcoef(popularity, log.data.positions)[0, 1] < -0.3  # popular docs shown higher


def test_load_views_share_queries_and_positions() -> None:
    cfg = SyntheticClicksDataConfig(n_queries=300)
    views = load_click_splits(cfg, SplitConfig(), seed=9)
    for (_, rel), (_, clk) in zip(views.relevance.items(), views.clicks.items(), strict=True):
        assert np.array_equal(rel.qids, clk.qids)
        assert rel.positions is not None
        assert clk.positions is not None
        assert np.array_equal(rel.positions, clk.positions)
        assert set(np.unique(clk.labels)) <= {0, 1}
    trained = load_splits(cfg, SplitConfig(), seed=9)
    assert np.array_equal(trained.train.labels, views.clicks.train.labels)
    assert np.array_equal(trained.test.labels, views.relevance.test.labels)
    upper = views.training_view("relevance")
    assert np.array_equal(upper.train.labels, views.relevance.train.labels)
    with pytest.raises(DataError, match="train_labels"):
        views.training_view("labels")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [("click_noise", 1.5, "click_noise"), ("randomized_share", -0.1, "randomized_share"),
     ("examination_eta", -1.0, "examination_eta"), ("logger_noise", -1.0, "logger_noise")],
)
def test_bad_click_model_parameters_are_one_clear_error(field: str, value: float, match: str) -> None:
    cfg = SyntheticClicksDataConfig(n_queries=50)
    setattr(cfg, field, value)
    with pytest.raises(DataError, match=match):
        generate_click_log(cfg, seed=0)
