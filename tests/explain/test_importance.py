"""Centring, per-query importance, strata and the views, on small arrays with hand-computed
truths and invariants (hypothesis); no model, no store."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ltr.errors import LtrUserError
from ltr.explain import (
    Importance,
    ImportanceSums,
    QueryRows,
    centre,
    importance_difference,
    pair_view,
    query_importance,
)
from ltr.metrics.strata import Strata


@st.composite
def batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    sizes = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8))
    n_features = draw(st.integers(1, 5))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = draw(arrays(np.float64, (int(offsets[-1]), n_features), elements=st.floats(-10, 10)))
    return values, offsets


@given(batches())
def test_centred_rows_of_a_query_sum_to_their_total_minus_the_query_mean(batch: tuple[np.ndarray, np.ndarray]) -> None:
    contributions, offsets = batch
    centred = centre(contributions, offsets)
    for q in range(offsets.size - 1):
        rows = slice(offsets[q], offsets[q + 1])
        totals = contributions[rows].sum(axis=1)
        np.testing.assert_allclose(centred[rows].sum(axis=1), totals - totals.mean(), atol=1e-9)
        np.testing.assert_allclose(centred[rows].sum(axis=0), 0.0, atol=1e-9)


def test_query_importance_by_hand() -> None:
    # query 0: feature 0 contributes 1, 3 (mean 2: centred -1, +1), feature 1 contributes 5, 5 (moves nothing)
    # query 1: one document: nothing moves it
    contributions = np.array([[1.0, 5.0], [3.0, 5.0], [7.0, -2.0]])
    offsets = np.array([0, 2, 3])
    np.testing.assert_array_equal(query_importance(centre(contributions, offsets), offsets), [[1.0, 0.0], [0.0, 0.0]])


def test_importance_per_stratum_by_hand_and_overall_is_the_count_weighted_mean() -> None:
    strata = Strata((1, 3))  # 1-2, 3+
    sums = ImportanceSums(["x", "y"], strata)
    # q0 (2 docs): x centred -1, +1 -> 1; y 0.  q1 (3 docs): x 0, 0, 0; y -3, 0, 3 -> 2.  q2 (1 doc): 0, 0
    contributions = np.array([[1.0, 5.0], [3.0, 5.0], [4.0, -3.0], [4.0, 0.0], [4.0, 3.0], [9.0, 9.0]])
    sums.add(centre(contributions, np.array([0, 2, 5, 6])), np.array([0, 2, 5, 6]))
    imp = sums.result()
    assert [g.key for g in imp.groups] == ["all", "len_1-2", "len_3_plus"]
    assert [(g.n_queries, g.n_documents) for g in imp.groups] == [(3, 6), (2, 3), (1, 3)]
    np.testing.assert_allclose(imp.group("len_1-2").values, [0.5, 0.0])  # (1 + 0) / 2 queries
    np.testing.assert_allclose(imp.group("len_3_plus").values, [0.0, 2.0])
    np.testing.assert_allclose(imp.overall.values, [1 / 3, 2 / 3])
    assert imp.ranked() == ["y", "x"]


@given(batches(), st.integers(0, 8))
def test_batch_by_batch_equals_all_at_once(batch: tuple[np.ndarray, np.ndarray], cut: int) -> None:
    contributions, offsets = batch
    cut = min(cut, offsets.size - 1)
    names = [f"f{j}" for j in range(contributions.shape[1])]
    whole = ImportanceSums(names, Strata((1, 4)))
    whole.add(centre(contributions, offsets), offsets)
    parts = ImportanceSums(names, Strata((1, 4)))
    for lo, hi in ((0, cut), (cut, offsets.size - 1)):
        if hi > lo:
            sub = offsets[lo : hi + 1] - offsets[lo]
            rows = contributions[offsets[lo] : offsets[hi]]
            parts.add(centre(rows, sub), sub)
    for a, b in zip(whole.result().groups, parts.result().groups, strict=True):
        assert (a.n_queries, a.n_documents) == (b.n_queries, b.n_documents)
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12, atol=1e-12)
    overall = whole.result()
    weighted = sum(g.values * g.n_queries for g in overall.groups[1:]) / max(overall.overall.n_queries, 1)
    np.testing.assert_allclose(overall.overall.values, weighted, atol=1e-12)


def test_importance_json_round_trip() -> None:
    sums = ImportanceSums(["x", "y"], Strata())
    contributions = np.array([[1.0, 5.0], [3.0, 2.0]])
    sums.add(centre(contributions, np.array([0, 2])), np.array([0, 2]))
    imp = sums.result({"split": "test"})
    back = Importance.from_dict(imp.to_dict())
    assert back.meta == {"split": "test"}
    assert back.feature_names == imp.feature_names
    for a, b in zip(imp.groups, back.groups, strict=True):
        assert (a.key, a.label, a.n_queries, a.n_documents) == (b.key, b.label, b.n_queries, b.n_documents)
        np.testing.assert_array_equal(a.values, b.values)


def test_importance_difference_ranks_features_by_the_change_per_stratum() -> None:
    def imp(values: dict[str, list[float]]) -> Importance:
        return Importance.from_dict({"groups": [
            {"key": k, "label": k, "n_queries": 1, "n_documents": 2, "importance": dict(zip("xyz", v, strict=True))}
            for k, v in values.items()
        ]})  # fmt: skip

    a = imp({"all": [0.5, 0.1, 0.3], "len_51_plus": [0.2, 0.2, 0.2]})
    b = imp({"all": [0.4, 0.4, 0.3], "len_51_plus": [0.9, 0.2, 0.0]})
    diff = importance_difference(a, b, baseline_label="A", other_label="B", top=2)
    got = [(r.group, r.feature, round(r.delta, 12)) for r in diff.rows]
    assert got == [("all", "y", 0.3), ("all", "x", -0.1), ("len_51_plus", "x", 0.7), ("len_51_plus", "z", -0.2)]
    assert "| len_51_plus | x | 0.2000 | 0.9000 | +0.7000 |" in diff.to_markdown()


def _rows() -> QueryRows:
    contributions = np.array([[0.5, -0.25, 1.0], [0.0, 0.75, -0.5], [2.0, 0.0, 0.0]])
    expected = 0.125
    scores = contributions.sum(axis=1) + expected  # 1.375, 0.375, 2.125
    offsets = np.array([0, 3])
    return QueryRows(
        "q7", ("d1", "d2", "d3"), np.array([1, 0, 2], dtype=np.int32), scores, scores,
        contributions, centre(contributions, offsets), ("a", "b", "c"),
    )  # fmt: skip


def test_query_rows_in_the_runs_order_and_their_top_features() -> None:
    rows = _rows()
    assert rows.order.tolist() == [2, 0, 1]  # scores 2.125, 1.375, 0.375
    # d3's centred: a 2 - 2.5/3, b 0 - 0.5/3, c 0 - 0.5/3
    (name, value), *_ = rows.top_features(2, 1)
    assert name == "a"
    assert math.isclose(value, 2.0 - 2.5 / 3)


def test_a_pairs_differences_sum_to_the_score_difference() -> None:
    pair = pair_view(_rows(), "d2", "d1")
    np.testing.assert_allclose(pair.differences, [-0.5, 1.0, -1.5])
    assert math.isclose(pair.differences.sum(), pair.score_difference)
    assert (pair.first_rank, pair.second_rank) == (3, 2)
    shown, rest = pair.top(1)
    assert shown == [("c", -1.5)]
    assert math.isclose(rest, 0.5)


def test_a_pair_with_an_unknown_or_repeated_document_is_one_line() -> None:
    with pytest.raises(LtrUserError, match=r"query q7 has no document 'd9'; its documents: d1, d2, d3"):
        pair_view(_rows(), "d1", "d9")
    with pytest.raises(LtrUserError, match="names document 'd1' twice"):
        pair_view(_rows(), "d1", "d1")
