"""The click simulators (:mod:`ltr.online.click_simulators`): the exact truth against Monte Carlo
and hand-computed values, and the logs' shape, determinism and readability."""

from __future__ import annotations

import doctest
import itertools
from pathlib import Path

import numpy as np
import pytest

import ltr.online.click_simulators as cs
from ltr.data.feedback.clicks import rank_within_queries
from ltr.models.ope_run import read_log
from ltr.online.click_simulators import (
    LogSpec,
    UserModel,
    exact_metrics,
    examination_probability,
    prefix_products,
    simulate_log,
    simulate_sessions,
)

MODELS = {
    "pbm": UserModel(kind="pbm", eta=0.8),
    "cascade": UserModel(kind="cascade", continuation=0.3),
    "classic-cascade": UserModel(kind="cascade", continuation=0.0),
    "dbn": UserModel(kind="dbn", gamma=0.85, sat_noise=0.2, sat_max=0.7),
}


def test_docstring_examples() -> None:
    result = doctest.testmod(cs)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("k", [3, None], ids=["top3", "whole-list"])
@pytest.mark.parametrize("name", list(MODELS))
def test_exact_metrics_agree_with_200k_simulated_sessions(name: str, k: int | None) -> None:
    """8 queries (lists of 1-9) x 25,000 sessions each: per query, the simulated share of sessions
    with a click (purchase) on the top k and the mean clicks there lie within 4 standard errors
    of the closed form."""
    model = MODELS[name]
    log = simulate_log(LogSpec(n_queries=8, list_lengths=(1, 9), model=model), seed=3)
    scores = cs.candidate_scores(log, noise=1.0, seed=0)
    ranks = rank_within_queries(scores, log.offsets)
    exact = exact_metrics(model, log.grades, scores, log.offsets, k=k)
    reps, sizes = 25_000, np.diff(log.offsets)
    n_q = sizes.shape[0]
    tiled = np.concatenate([[0], np.cumsum(np.tile(sizes, reps))]).astype(np.int64)
    clicks, purchases = simulate_sessions(model, np.tile(log.grades, reps), np.tile(ranks, reps), tiled, np.random.default_rng(7))
    top = np.tile(ranks, reps) < (k if k is not None else 10**9)
    session = np.repeat(np.arange(n_q * reps), np.tile(sizes, reps))
    per_click = np.bincount(session, weights=clicks * top, minlength=n_q * reps).reshape(reps, n_q)
    per_buy = np.bincount(session, weights=purchases * top, minlength=n_q * reps).reshape(reps, n_q)
    clicks_key = "clicks" if k is None else f"clicks_at_{k}"
    for key, draws in (("ctr", per_click > 0), (clicks_key, per_click), ("purchase_rate", per_buy > 0)):
        mean = draws.mean(axis=0)
        se = draws.std(axis=0, ddof=1) / np.sqrt(reps)
        assert np.all(np.abs(mean - exact[key]) <= 4 * np.maximum(se, 1e-12)), (key, mean, exact[key], se)
    if model.kind == "cascade" and model.continuation == 0.0:
        assert np.all(per_click <= 1)  # the classic cascade: at most one click
        np.testing.assert_allclose(exact["ctr"], exact[clicks_key], rtol=1e-12)


def test_closed_forms_by_hand() -> None:
    """Two documents (grades 3 and 4), every metric against its recursion written out."""
    grades, offsets, scores = np.array([3, 4]), np.array([0, 2]), np.array([1.0, 0.0])
    for model in MODELS.values():
        a = model.attractiveness(grades)
        b = model.purchase(grades)
        m = exact_metrics(model, grades, scores, offsets, k=2)
        if model.kind == "pbm":
            e = np.array([1.0, 0.5**model.eta])
            assert m["clicks_at_2"][0] == pytest.approx(e[0] * a[0] + e[1] * a[1], abs=1e-15)
            assert m["ctr"][0] == pytest.approx(1 - (1 - e[0] * a[0]) * (1 - e[1] * a[1]), abs=1e-15)
            assert m["purchase_rate"][0] == pytest.approx(1 - (1 - e[0] * a[0] * b[0]) * (1 - e[1] * a[1] * b[1]), abs=1e-15)
            continue
        c1, c0 = model.continues(grades)
        exam2 = a[0] * c1[0] + (1 - a[0]) * c0
        assert m["clicks_at_2"][0] == pytest.approx(a[0] + exam2 * a[1], abs=1e-15)
        assert m["ctr"][0] == pytest.approx(a[0] + (1 - a[0]) * c0 * a[1], abs=1e-15)
        assert m["purchase_rate"][0] == pytest.approx(a[0] * b[0] + (a[0] * (1 - b[0]) * c1[0] + (1 - a[0]) * c0) * a[1] * b[1], abs=1e-15)
        np.testing.assert_allclose(examination_probability(model, grades, np.array([0, 1]), offsets), [1.0, exam2], atol=1e-15)
    assert UserModel(kind="dbn", gamma=0.5, sat_noise=1.0, sat_max=1.0).continues(grades)[0].tolist() == [0.0, 0.0]


def test_prefix_products_equal_a_loop() -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(0, 7, 50)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    f = rng.random(int(offsets[-1]))
    f[rng.random(f.shape[0]) < 0.1] = 0.0
    expected = np.concatenate([np.concatenate([[1.0], np.cumprod(f[lo:hi])[:-1]]) if hi > lo else np.zeros(0) for lo, hi in itertools.pairwise(offsets.tolist())])
    np.testing.assert_allclose(prefix_products(f, offsets), expected, rtol=1e-12, atol=1e-300)


def test_a_log_has_the_shape_it_was_asked_for_and_is_seeded() -> None:
    spec = LogSpec(n_queries=400, list_lengths=(1, 30), nan_share=0.05, shuffled_share=0.4, n_features=6)
    log = simulate_log(spec, seed=11)
    again = simulate_log(spec, seed=11)
    for name in ("positions", "clicks", "purchases", "grades", "offsets"):
        np.testing.assert_array_equal(getattr(log, name), getattr(again, name))
    np.testing.assert_array_equal(np.isnan(log.features), np.isnan(again.features))
    assert not np.array_equal(simulate_log(spec, seed=12).grades[:100], log.grades[:100])
    sizes = np.diff(log.offsets)
    assert sizes.min() >= 1
    assert sizes.max() <= 30
    assert log.features.shape == (int(sizes.sum()), 6)
    # positions are 0..n-1 within every query
    query = log.query_index
    assert np.array_equal(np.bincount(query, weights=log.positions), sizes * (sizes - 1) / 2)
    assert np.array_equal(np.bincount(query, weights=log.positions**2), (sizes - 1) * sizes * (2 * sizes - 1) / 6)
    assert 0.03 < np.isnan(log.features).mean() < 0.07
    assert 0.3 < log.shuffled.mean() < 0.5
    assert np.all(log.purchases <= log.clicks)
    assert np.array_equal(log.model.examination(4), [1.0, 0.5, 1 / 3, 0.25])
    assert log.true_propensities(4) is not None


def test_the_logger_sorts_by_relevance_unless_shuffled() -> None:
    log = simulate_log(LogSpec(n_queries=300, list_lengths=(10, 10), logger_noise=0.0, shuffled_share=0.5, n_features=2), seed=1)
    top_grade = log.grades[log.positions == 0]
    shuffled = log.shuffled
    assert top_grade[~shuffled].mean() > top_grade[shuffled].mean() + 1.0
    random = simulate_log(LogSpec(n_queries=300, list_lengths=(10, 10), logger_noise=None), seed=1)
    assert abs(random.grades[random.positions == 0].mean() - random.grades.mean()) < 0.3


def test_logged_examination_is_the_pbm_curve_and_the_cascade_decay() -> None:
    pbm = simulate_log(LogSpec(n_queries=50, model=UserModel(eta=1.3)), seed=0)
    truth = pbm.true_propensities(4)
    assert truth is not None
    np.testing.assert_allclose(pbm.logged_examination(4), truth, rtol=1e-12)
    cascade = simulate_log(LogSpec(n_queries=50, model=UserModel(kind="cascade")), seed=0)
    curve = cascade.logged_examination(5)
    assert cascade.true_propensities(5) is None
    assert curve[0] == 1.0
    assert np.all(np.diff(curve) < 0)


def test_the_frame_is_a_click_log_ltr_ope_reads(tmp_path: Path) -> None:
    log = simulate_log(LogSpec(n_queries=20, nan_share=0.1), seed=2)
    frame = log.frame()
    assert list(frame.columns) == ["query", "doc_id", "position", "click", "purchase", "f0", "f1", "f2", "f3", "f4", "label"]
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    read, purchases = read_log(path)
    assert purchases
    assert read["position"].tolist() == log.positions.tolist()
    assert read["click"].tolist() == log.clicks.tolist()
    assert read["doc_id"].tolist() == frame["doc_id"].tolist()
    data = log.ranking_data(np.array([3, 5]))
    assert data.n_queries == 2
    assert data.positions is not None
    lo, hi = int(log.offsets[5]), int(log.offsets[6])
    assert data.positions[-(hi - lo):].tolist() == log.positions[lo:hi].tolist()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "ubm"}, "kind='ubm'"),
        ({"gamma": 1.5}, "gamma=1.5"),
        ({"eta": -1.0}, "eta=-1"),
    ],
)
def test_bad_models_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UserModel(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="list_lengths"):
        LogSpec(list_lengths=(5, 2))
