"""Diversity measures: hand-computed tables, brute-force references, an nDCG oracle, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from ltr.metrics import MetricConventions, per_query_table
from ltr.metrics.diversity import alpha_ndcg, category_coverage, intra_list_diversity
from tests.conftest import examples

from .conftest import LOG2_3, LOG2_5, LOG2_6

SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
R2 = math.sqrt(0.5)  # cos 45 degrees


def _one(n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """order and offsets of one query whose rows are ranked in row order."""
    return np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)


# ---- hand-computed tables ----------------------------------------------------------------------

ILD_CASES = [
    # (ranked feature vectors, k, expected ILD@k = mean over pairs of 1 - cos)
    pytest.param([[1, 0], [0, 1]], 2, 1.0, id="orthogonal-pair"),
    pytest.param([[1, 2], [2, 4]], 2, 0.0, id="parallel-pair"),
    pytest.param([[1, 0], [-1, 0]], 2, 2.0, id="opposite-pair"),
    pytest.param([[1, 0], [1, 1]], 2, 1 - R2, id="45-degrees"),
    # a zero vector has cosine 0 with anything: dissimilarity 1
    pytest.param([[0, 0], [1, 0]], 2, 1.0, id="zero-vector"),
    # pairs (a, a') 0, (a, b) 1, (a', b) 1 -> 2 / 3
    pytest.param([[1, 0], [1, 0], [0, 1]], 3, 2 / 3, id="one-duplicate"),
    pytest.param([[1, 0], [1, 0], [0, 1]], 2, 0.0, id="cut-at-2"),
    # k past the list: pairs 1, 1 - 1/sqrt2, 1 - 1/sqrt2 -> (3 - sqrt2) / 3
    pytest.param([[1, 0], [0, 1], [1, 1]], 10, (3 - math.sqrt(2)) / 3, id="k-past-the-list"),
    pytest.param([[1, 0]], 5, 0.0, id="single-item"),
    pytest.param([[1, 0], [0, 1]], 1, 0.0, id="k-1"),
]


@pytest.mark.parametrize(("features", "k", "expected"), ILD_CASES)
def test_ild_hand_computed(features: list[list[float]], k: int, expected: float) -> None:
    order, offsets = _one(len(features))
    got = intra_list_diversity(order, offsets, np.array(features, dtype=np.float64), k=k)
    assert got.dtype == np.float64
    assert got.tolist() == pytest.approx([expected], abs=1e-15)


COVERAGE_CASES = [
    # (ranked categories, k, n_categories, expected = distinct in top k / min(k, C))
    pytest.param([5, 5, 6, 7], 2, None, 1 / 2, id="redundant-top-2"),  # {5} / min(2, 3)
    pytest.param([5, 6, 5, 7], 2, None, 2 / 2, id="diverse-top-2"),  # {5, 6} / min(2, 3)
    pytest.param([5, 5, 6, 7], 3, None, 2 / 3, id="top-3"),  # {5, 6} / min(3, 3)
    pytest.param([5, 5, 5], 2, None, 1 / 1, id="one-category"),  # {5} / min(2, 1)
    pytest.param([5, 6, 5, 7], 10, None, 3 / 3, id="k-past-the-list"),  # {5, 6, 7} / min(10, 3)
    pytest.param([1, 2, 1, 3], 4, 10, 3 / 4, id="catalogue-of-10"),  # {1, 2, 3} / min(4, 10)
    pytest.param([1, 1, 1], 3, 4, 1 / 3, id="catalogue-of-4"),  # {1} / min(3, 4)
    pytest.param([0, 0, 1], 1, 2, 1 / 1, id="catalogue-k-1"),  # {0} / min(1, 2)
]


@pytest.mark.parametrize(("cats", "k", "n_categories", "expected"), COVERAGE_CASES)
def test_coverage_hand_computed(
    cats: list[int], k: int, n_categories: int | None, expected: float
) -> None:
    order, offsets = _one(len(cats))
    got = category_coverage(order, offsets, np.array(cats), k=k, n_categories=n_categories)
    assert got.tolist() == pytest.approx([expected], abs=1e-15)


A, B, C = 0, 1, 2
ALPHA_NDCG_CASES = [
    # (ranked categories, ranked labels, k, alpha, expected alpha-nDCG@k = DCG / ideal DCG)
    # gains 1, 1/2 (second a), 1; ideal a, b, a: 1, 1, 1/2
    pytest.param(
        [A, A, B], [1, 1, 1], 3, 0.5,
        (1 + 0.5 / LOG2_3 + 1 / 2) / (1 + 1 / LOG2_3 + 0.5 / 2), id="redundant-second",
    ),
    pytest.param([A, B, A], [1, 1, 1], 3, 0.5, 1.0, id="ideal-order"),
    # alpha = 1: a second a gains nothing. gains 1, 0, 1; ideal 1, 1, 0
    pytest.param(
        [A, A, B], [1, 1, 1], 3, 1.0, (1 + 0 + 1 / 2) / (1 + 1 / LOG2_3), id="alpha-1",
    ),
    # alpha = 0: binary nDCG. gains 1, 0, 1; ideal 1, 1
    pytest.param([A, A, B], [1, 0, 1], 3, 0.0, (1 + 1 / 2) / (1 + 1 / LOG2_3), id="alpha-0"),
    # a non-relevant a above does not count: gains 0, 1, 1; ideal 1, 1
    pytest.param(
        [A, A, B], [0, 1, 1], 3, 0.5, (1 / LOG2_3 + 1 / 2) / (1 + 1 / LOG2_3),
        id="non-relevant-above",
    ),
    # graded labels are binarised (label > 0): as [a, b, a] all relevant -> ideal
    pytest.param([A, B, A], [3, 1, 2], 3, 0.5, 1.0, id="graded-binarised"),
    # k = 2: gains 1, 1/2; ideal 1, 1 (the ideal uses the whole list, cut at k)
    pytest.param(
        [A, A, B, B], [1, 1, 1, 1], 2, 0.5, (1 + 0.5 / LOG2_3) / (1 + 1 / LOG2_3), id="cut-at-2",
    ),
    # a longer list: [a1, b1, a0, c1, b1, a1], k = 5: gains 1, 1, 0, 1, 1/2 (second b);
    # ideal: a has 2 relevant, b 2, c 1 -> 1, 1, 1, 1/2, 1/2
    pytest.param(
        [A, B, A, C, B, A], [1, 1, 0, 1, 1, 1], 5, 0.5,
        (1 + 1 / LOG2_3 + 1 / LOG2_5 + 0.5 / LOG2_6)
        / (1 + 1 / LOG2_3 + 1 / 2 + 0.5 / LOG2_5 + 0.5 / LOG2_6),
        id="six-items-k5",
    ),
    pytest.param([A, B], [0, 0], 2, 0.5, 0.0, id="nothing-relevant"),
]  # fmt: skip


@pytest.mark.parametrize(("cats", "labels", "k", "alpha", "expected"), ALPHA_NDCG_CASES)
def test_alpha_ndcg_hand_computed(
    cats: list[int], labels: list[int], k: int, alpha: float, expected: float
) -> None:
    order, offsets = _one(len(cats))
    got = alpha_ndcg(order, offsets, np.array(cats), np.array(labels), k=k, alpha=alpha)
    assert got.tolist() == pytest.approx([expected], abs=1e-15)


def test_several_queries_an_empty_one_and_a_permuted_order() -> None:
    # query 0: rows 0..2 ranked 2, 0, 1; query 1: empty; query 2: rows 3, 4 ranked 4, 3
    order = np.array([2, 0, 1, 4, 3])
    offsets = np.array([0, 3, 3, 5])
    cats = np.array([A, A, B, C, C])
    feats = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    labels = np.array([1, 1, 1, 0, 1])
    # ranked query 0: b, a, a; top 2: {b, a}, pair (b, a) cos 0
    assert intra_list_diversity(order, offsets, feats, k=2).tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-15)
    # query 0: {b, a} / min(2, 2); query 2: {c} / min(2, 1) (one category in its list)
    assert category_coverage(order, offsets, cats, k=2).tolist() == [1.0, 0.0, 1.0]
    assert category_coverage(order, offsets, cats, k=2, n_categories=4).tolist() == [1.0, 0.0, 0.5]
    got = alpha_ndcg(order, offsets, cats, labels, k=3)
    # query 0: gains 1, 1, 1/2 = ideal -> 1; query 2: c1 then c0: ideal -> 1
    assert got.tolist() == pytest.approx([1.0, 0.0, 1.0], abs=1e-15)


# ---- brute-force references on random inputs ------------------------------------------------


@st.composite
def ranked_data(
    draw: st.DrawFn, max_queries: int = 6, max_len: int = 9
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]:
    """order (a random permutation within each query), offsets, categories, labels, seed."""
    sizes = draw(st.lists(st.integers(0, max_len), min_size=1, max_size=max_queries))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    order = np.concatenate(
        [np.arange(lo, hi)[rng.permutation(hi - lo)] for lo, hi in itertools.pairwise(offsets)]
    ).astype(np.int64)
    n = int(offsets[-1])
    cats = rng.integers(0, 4, size=n) * 3 - 5  # codes need not start at 0
    labels = rng.integers(-1, 3, size=n)
    return order, offsets, cats, labels, seed


def _queries(order: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[list[int]]:
    return [order[lo:hi].tolist() for lo, hi in itertools.pairwise(offsets)]


def _cos(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    na, nb = math.sqrt(float(a @ a)), math.sqrt(float(b @ b))
    return 0.0 if na == 0 or nb == 0 else float(a @ b) / (na * nb)


def _alpha_dcg(cats: list[int], rel: list[bool], k: int, alpha: float) -> float:
    seen: dict[int, int] = {}
    dcg = 0.0
    for r, (c, is_rel) in enumerate(zip(cats[:k], rel[:k], strict=True)):
        if is_rel:
            dcg += (1 - alpha) ** seen.get(c, 0) / math.log2(r + 2)
            seen[c] = seen.get(c, 0) + 1
    return dcg


def _greedy_ideal(cats: list[int], rel: list[bool], k: int, alpha: float) -> float:
    """ndeval's greedy: each next position takes the item of largest marginal gain."""
    left = list(range(len(cats)))
    seen: dict[int, int] = {}
    dcg = 0.0
    for r in range(min(k, len(cats))):

        def gain(i: int, seen: dict[int, int] = seen) -> float:
            return (1 - alpha) ** seen.get(cats[i], 0) if rel[i] else 0.0

        best = max(left, key=gain)
        dcg += gain(best) / math.log2(r + 2)
        if rel[best]:
            seen[cats[best]] = seen.get(cats[best], 0) + 1
        left.remove(best)
    return dcg


@SETTINGS
@given(data=ranked_data(), k=st.integers(1, 10))
def test_ild_matches_pairs(
    data: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int],
    k: int,
) -> None:
    order, offsets, cats, _, seed = data
    rng = np.random.default_rng(seed + 1)
    feats = rng.normal(size=(cats.shape[0], 3))
    feats[cats < 0] = np.abs(feats[cats < 0])  # some lists of non-negative vectors
    feats[rng.random(cats.shape[0]) < 0.1] = 0.0
    got = intra_list_diversity(order, offsets, feats, k=k)
    expected = []
    for rows in _queries(order, offsets):
        top = rows[:k]
        pairs = list(itertools.combinations(top, 2))
        expected.append(sum(1 - _cos(feats[i], feats[j]) for i, j in pairs) / len(pairs) if pairs else 0.0)
    assert got.tolist() == pytest.approx(expected, abs=1e-12)


@SETTINGS
@given(data=ranked_data(), k=st.integers(1, 10), catalogue=st.booleans())
def test_coverage_matches_sets(
    data: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int],
    k: int,
    catalogue: bool,
) -> None:
    order, offsets, cats, _, _ = data
    codes = cats + 5  # 0, 3, 6, 9
    n_categories = 12 if catalogue else None
    got = category_coverage(order, offsets, codes, k=k, n_categories=n_categories)
    expected = []
    for rows in _queries(order, offsets):
        present = len({int(codes[r]) for r in rows}) if n_categories is None else n_categories
        covered = len({int(codes[r]) for r in rows[:k]})
        expected.append(covered / min(k, present) if rows else 0.0)
    assert got.tolist() == pytest.approx(expected, abs=1e-15)


@SETTINGS
@given(data=ranked_data(), k=st.integers(1, 10), alpha=st.sampled_from([0.0, 0.3, 0.5, 1.0]))
def test_alpha_ndcg_matches_greedy(
    data: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int],
    k: int,
    alpha: float,
) -> None:
    order, offsets, cats, labels, _ = data
    got = alpha_ndcg(order, offsets, cats, labels, k=k, alpha=alpha)
    expected = []
    for lo, hi, rows in zip(offsets[:-1], offsets[1:], _queries(order, offsets), strict=True):
        c = [int(cats[r]) for r in rows]
        rel = [bool(labels[r] > 0) for r in rows]
        ideal = _greedy_ideal(cats[lo:hi].tolist(), (labels[lo:hi] > 0).tolist(), k, alpha)
        expected.append(_alpha_dcg(c, rel, k, alpha) / ideal if ideal > 0 else 0.0)
    assert got.tolist() == pytest.approx(expected, abs=1e-12)


@settings(max_examples=examples(20), deadline=None)
@given(
    cats=st.lists(st.integers(0, 2), min_size=1, max_size=6),
    data=st.data(),
    alpha=st.sampled_from([0.2, 0.5, 1.0]),
)
def test_greedy_ideal_is_the_best_order(cats: list[int], data: st.DataObject, alpha: float) -> None:
    # one category per item: the greedy ideal is the best of every permutation
    rel = data.draw(st.lists(st.booleans(), min_size=len(cats), max_size=len(cats)))
    k = data.draw(st.integers(1, len(cats)))
    best, best_order = max(
        (_alpha_dcg([cats[i] for i in p], [rel[i] for i in p], k, alpha), p)
        for p in itertools.permutations(range(len(cats)))
    )
    assert _greedy_ideal(cats, rel, k, alpha) == pytest.approx(best, abs=1e-12)
    # the library's ideal is that best value too: the best order scores exactly 1 (0: no gain)
    offsets = np.array([0, len(cats)])
    labels = np.array(rel, dtype=np.int64)
    got = alpha_ndcg(np.array(best_order), offsets, np.array(cats), labels, k=k, alpha=alpha)
    assert got.tolist() == pytest.approx([1.0 if best > 0 else 0.0], abs=1e-12)


@SETTINGS
@given(data=ranked_data(), k=st.integers(1, 10))
def test_alpha_zero_is_binary_ndcg_of_the_metrics_kernel(
    data: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int],
    k: int,
) -> None:
    # alpha = 0 drops the categories: nDCG@k with gain 1 for label > 0, the ideal over the list
    order, offsets, cats, labels, _ = data
    n = labels.shape[0]
    scores = np.empty(n)
    scores[order] = -np.arange(n, dtype=np.float64)  # ranks the rows as `order` does
    table = per_query_table(
        np.clip(labels, 0, None), scores, offsets, np.arange(len(offsets) - 1), ks=[k],
        conventions=MetricConventions(label_gain=(0.0, 1.0, 1.0), ties="stable"),
    )  # fmt: skip
    got = alpha_ndcg(order, offsets, cats, labels, k=k, alpha=0.0)
    assert got.tolist() == pytest.approx(table[f"ndcg_at_{k}"].tolist(), abs=1e-12)


# ---- input validation --------------------------------------------------------------------------

ORDER3 = np.array([0, 1, 2])
OFF3 = np.array([0, 3])
CATS3 = np.array([0, 1, 0])
LABELS3 = np.array([1, 0, 1])
FEATS3 = np.eye(3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(lambda: alpha_ndcg(ORDER3, OFF3, CATS3, LABELS3, k=3, alpha=1.5), r"alpha=1\.5 must be in \[0, 1\]", id="alpha-above-1"),
        pytest.param(lambda: alpha_ndcg(ORDER3, OFF3, CATS3, LABELS3, k=3, alpha=-0.5), r"alpha=-0\.5 must be in \[0, 1\]", id="alpha-negative"),
        pytest.param(lambda: alpha_ndcg(ORDER3, OFF3, CATS3, LABELS3, k=0), r"k=0 must be an integer >= 1", id="k-0"),
        pytest.param(lambda: alpha_ndcg(ORDER3, OFF3, CATS3, LABELS3[:2], k=3), r"labels have 2 rows; offsets end at n_rows=3", id="labels-rows"),
        pytest.param(lambda: alpha_ndcg(ORDER3, OFF3, CATS3, np.array([1.0, np.nan, 0.0]), k=3), r"label at row 1 is NaN", id="label-nan"),
        pytest.param(lambda: category_coverage(ORDER3, OFF3, CATS3[:2], k=3), r"categories have 2 rows; offsets end at n_rows=3", id="categories-rows"),
        pytest.param(lambda: category_coverage(ORDER3, OFF3, CATS3 * 1.0, k=3), r"categories must be 1-D integer codes", id="categories-float"),
        pytest.param(lambda: category_coverage(ORDER3, OFF3, CATS3, k=3, n_categories=1), r"categories\[1\] = 1 is outside 0\.\.0 \(n_categories=1\)", id="code-outside-catalogue"),
        pytest.param(lambda: category_coverage(ORDER3, OFF3, CATS3, k=2.5), r"k=2\.5 must be an integer >= 1", id="k-float"),  # type: ignore[arg-type]
        pytest.param(lambda: intra_list_diversity(ORDER3, OFF3, np.eye(2), k=3), r"features have 2 rows; offsets end at n_rows=3", id="features-rows"),
        pytest.param(lambda: intra_list_diversity(ORDER3, OFF3, np.ones(3), k=3), r"features must be a 2-D numeric array", id="features-1d"),
        pytest.param(lambda: intra_list_diversity(ORDER3[:2], OFF3, FEATS3, k=3), r"order has 2 entries; offsets end at n_rows=3", id="order-short"),
        pytest.param(lambda: intra_list_diversity(np.array([0, 0, 1]), OFF3, FEATS3, k=3), r"order lists row 0 2 times; it must be a permutation", id="order-repeats"),
        pytest.param(lambda: intra_list_diversity(np.array([0, 1, 3]), OFF3, FEATS3, k=3), r"order\[2\] = 3 is not a row \(0\.\.2\)", id="order-outside"),
        pytest.param(lambda: intra_list_diversity(np.array([1, 0, 2]), np.array([0, 1, 3]), FEATS3, k=3), r"order\[0\] = 1 is a row of query 1, not of query 0", id="order-crosses-queries"),
        pytest.param(lambda: intra_list_diversity(ORDER3, np.array([0, 2, 1, 3]), FEATS3, k=3), r"offsets decrease at query 1: 2 -> 1", id="offsets-decrease"),
        pytest.param(lambda: intra_list_diversity(ORDER3, np.array([1, 3]), FEATS3, k=3), r"offsets must start at 0, got 1", id="offsets-start"),
    ],
)  # fmt: skip
def test_bad_inputs(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        call()  # type: ignore[operator]
    assert "\n" not in str(err.value)
