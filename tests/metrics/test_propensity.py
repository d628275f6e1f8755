"""Examination propensities of a click log (:mod:`ltr.metrics.clicks.propensity`) against the simulator's
true curve ``(1 / rank) ** eta``: regression EM on a log whose sessions vary the order, intervention
harvesting on a log of two rankers; the given list and a logged column by hand."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import ltr.metrics.clicks.propensity as propensity_module
from ltr.config.groups.data import SyntheticClicksDataConfig, SyntheticDataConfig
from ltr.data.feedback.clicks import (
    attractiveness,
    examination_curve,
    generate_click_log,
    rank_within_queries,
)
from ltr.data.synthetic import generate_synthetic
from ltr.metrics.clicks.propensity import PropensityEstimate, estimate_propensity

#: The positions checked, and the level of an interval that covers all of them at once with
#: probability >= 95 % (Bonferroni over the 10 positions).
POSITIONS = 10
SIMULTANEOUS = 1 - 0.05 / POSITIONS


def test_docstring_examples() -> None:
    result = doctest.testmod(propensity_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_regression_em_covers_the_true_curve_on_a_log_whose_sessions_vary_the_order() -> None:
    """``data.randomized_share=1``: every session shown in random order (an intervention on every
    query); the logged features say nothing about the position, and EM's intervals, simultaneous
    over the first 10 positions, hold the simulator's ``1 / rank``."""
    cfg = SyntheticClicksDataConfig(n_queries=600, randomized_share=1.0)
    log = generate_click_log(cfg, seed=7)
    d = log.data
    assert d.positions is not None
    est = estimate_propensity(
        log.clicks, d.positions, d.offsets, method="em", features=d.features,
        n_bootstrap=40, confidence=SIMULTANEOUS, seed=0, randomized=np.repeat(log.randomized, d.group_sizes),
    )  # fmt: skip
    truth = examination_curve(POSITIONS, eta=float(cfg.examination_eta))
    assert est.method == "em"
    assert est.propensities[0] == 1.0
    assert np.isfinite(est.low[:POSITIONS]).all(), est.no_interval  # EM agrees with the randomized sessions
    assert np.all(est.low[:POSITIONS] <= truth), est.low[:POSITIONS]
    assert np.all(truth <= est.high[:POSITIONS]), est.high[:POSITIONS]
    assert est.fit is not None
    assert est.fit["iterations"] < 200


def two_ranker_log(n_queries: int, sessions: int, *, seed: int, eta: float = 1.0) -> dict[str, np.ndarray]:
    """The simulator's documents shown by two rankers (grade plus independent noise, each its
    own) in ``sessions`` sessions each per query, clicks from the position-based model of
    :mod:`ltr.data.feedback.clicks` (examination ``(1 / rank) ** eta``, the grade's attractiveness)."""
    base = generate_synthetic(SyntheticDataConfig(n_queries=n_queries, max_list_len=60, long_share=0.05,
                                                  medium_share=0.6, short_share=0.35), seed=seed)  # fmt: skip
    rng = np.random.default_rng(seed)
    sizes = base.group_sizes
    noise = rng.standard_normal((2, base.n_rows))
    attract = attractiveness(base.labels, click_noise=0.2, click_max=1.0)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("clicks", "positions", "query", "doc", "logger", "sizes")}
    for ranker in (0, 1):
        ranks = rank_within_queries(base.labels + 1.5 * noise[ranker], base.offsets)
        exam = examination_curve(int(sizes.max()), eta=eta)[ranks]
        for _ in range(sessions):
            parts["clicks"].append((rng.random(base.n_rows) < exam * attract).astype(np.int32))
            parts["positions"].append(ranks.astype(np.int64))
            parts["query"].append(np.repeat(np.arange(base.n_queries), sizes))
            parts["doc"].append(np.arange(base.n_rows))
            parts["logger"].append(np.full(base.n_rows, ranker))
            parts["sizes"].append(sizes)
    # one list per session, the sessions of a query side by side (rows grouped by session)
    out = {k: np.concatenate(v) for k, v in parts.items()}
    offsets = np.concatenate([[0], np.cumsum(out.pop("sizes"))])
    out["offsets"] = offsets.astype(np.int64)
    return out


def test_intervention_harvesting_covers_the_true_curve_on_a_log_of_two_rankers() -> None:
    log = two_ranker_log(800, 2, seed=3, eta=1.0)
    est = estimate_propensity(
        log["clicks"], log["positions"], log["offsets"], method="harvest", doc_ids=log["doc"],
        loggers=log["logger"], query_ids=log["query"], n_positions=20, n_bootstrap=100,
        confidence=SIMULTANEOUS, seed=1,
    )  # fmt: skip
    truth = examination_curve(POSITIONS, eta=1.0)
    assert est.propensities[0] == 1.0
    assert est.fit is not None
    assert est.fit["loggers"] == 2
    again = estimate_propensity(
        log["clicks"], log["positions"], log["offsets"], method="harvest", doc_ids=log["doc"],
        loggers=log["logger"], query_ids=log["query"], n_positions=20, n_bootstrap=100,
        confidence=SIMULTANEOUS, seed=1,
    )  # fmt: skip
    assert np.array_equal(again.low, est.low, equal_nan=True)
    assert np.array_equal(again.high, est.high, equal_nan=True)
    assert np.all(est.low[:POSITIONS] <= truth), est.low[:POSITIONS]
    assert np.all(truth <= est.high[:POSITIONS]), est.high[:POSITIONS]
    # the naive click-through rate by position mistakes the rankers' relevance for position bias
    naive = estimate_propensity(log["clicks"], log["positions"], log["offsets"], method="ctr", n_positions=20, n_bootstrap=0)
    assert naive.propensities[POSITIONS - 1] < truth[POSITIONS - 1] / 2
    n_rows = int((log["logger"] == 0).sum())  # ranker 0's sessions come first: one ranker alone
    with pytest.raises(ValueError, match="several rankers on the same queries"):
        estimate_propensity(
            log["clicks"][:n_rows], log["positions"][:n_rows], log["offsets"][log["offsets"] <= n_rows],
            method="harvest", doc_ids=log["doc"][:n_rows], loggers=log["logger"][:n_rows], query_ids=log["query"][:n_rows],
        )  # fmt: skip


def test_given_and_logged_column_by_hand() -> None:
    est = estimate_propensity(method="given", given=[1.0, 0.6, 0.3], n_positions=5)
    assert est.propensities.tolist() == [1.0, 0.6, 0.3, 0.3, 0.3]
    assert est.n_bootstrap == 0
    assert est.metrics(2) == {
        "propensity/pos_1": 1.0, "propensity/pos_1/low": 1.0, "propensity/pos_1/high": 1.0,
        "propensity/pos_2": 0.6, "propensity/pos_2/low": 0.6, "propensity/pos_2/high": 0.6,
    }  # fmt: skip
    # two queries; logged propensities 0.8 at position 1 and 0.4 / 0.2 at position 2: relative 1 and 0.375
    column = estimate_propensity(
        np.array([1, 0, 0, 1]), np.array([0, 1, 0, 1]), np.array([0, 2, 4]), method="column",
        row_propensities=np.array([0.8, 0.4, 0.8, 0.2]), n_bootstrap=10, seed=0,
    )  # fmt: skip
    assert column.propensities.tolist() == pytest.approx([1.0, 0.375], abs=1e-15)
    assert column.impressions is not None
    assert column.impressions.tolist() == [2, 2]
    assert column.low[1] <= 0.375 <= column.high[1]
    # the IPS table: NaN filled from the last known position, clipped from below
    table = PropensityEstimate(np.array([1.0, 0.02, np.nan]), np.ones(3), np.ones(3), "harvest").table(4, min_propensity=0.05)
    assert table.tolist() == [1.0, 0.05, 0.05, 0.05]
    with pytest.raises(ValueError, match="unknown propensity method"):
        estimate_propensity(method="magic")
    with pytest.raises(ValueError, match="needs the features"):
        estimate_propensity(np.array([1]), np.array([0]), np.array([0, 1]), method="em")
