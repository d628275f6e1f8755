"""The diversity re-ranker: hand-computed greedy steps, a brute-force reference, properties, errors."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from ltr.rerank import (
    SIMILARITIES,
    category_similarity,
    cosine_similarity,
    diversify,
    score_order,
    unit_rows,
)
from tests.conftest import examples

SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
R2 = math.sqrt(0.5)  # cos 45 degrees

# ---- hand-computed cases -------------------------------------------------------------------


def test_four_items_cosine_step_by_step() -> None:
    # rows:      0            1           2            3
    # score:   -0.5          1.5         0.5         -2.5        (LightGBM scores: any sign)
    # features [0, 1]       [1, 0]      [1, 0]       [1, 1]
    # score order: 1, 2, 0, 3. Min-max over the query: min -2.5, max 1.5, span 4:
    # rel = (s + 2.5) / 4 = row1 1, row2 0.75, row0 0.5, row3 0.
    # cosines: (1,2) = 1 (same vector), (0,1) = (0,2) = 0, (3, any other) = 1/sqrt 2.
    # alpha = 0.5, adjusted = rel * (1 - 0.5 * max_sim):
    # step 1: row 1 (highest score).
    #   max_sim: row2 1, row0 0, row3 1/sqrt2
    # step 2: row2 0.75 * (1 - 0.5) = 0.375, row0 0.5 * 1 = 0.5, row3 0 * ... = 0  -> row 0
    #   max_sim: row2 max(1, cos(0,2)=0) = 1, row3 max(1/sqrt2, cos(0,3)=1/sqrt2) = 1/sqrt2
    # step 3: row2 0.375, row3 0  -> row 2
    # step 4: row 3
    scores = np.array([-0.5, 1.5, 0.5, -2.5])
    features = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    offsets = np.array([0, 4])
    assert score_order(scores, offsets).tolist() == [1, 2, 0, 3]
    assert diversify(scores, offsets, features, alpha=0.5).tolist() == [1, 0, 2, 3]
    # alpha = 0.2: step 2: row2 0.75 * 0.8 = 0.6 > row0 0.5 -> score order kept
    assert diversify(scores, offsets, features, alpha=0.2).tolist() == [1, 2, 0, 3]


def test_tie_in_adjusted_score_goes_to_higher_score() -> None:
    # scores 8, 6, 3, 0 (rows 0..3), categories 0, 0, 1, 2; rel = s / 8 = 1, 0.75, 0.375, 0
    # alpha = 0.5. step 1: row 0. max_sim: row1 1 (category 0), row2 0, row3 0
    # step 2: row1 0.75 * 0.5 = 0.375 = row2 0.375 * 1 (exact): tie -> higher score, row 1
    # step 3: row2 0.375, row3 0 -> row 2; step 4: row 3
    scores = np.array([8.0, 6.0, 3.0, 0.0])
    cats = np.array([0, 0, 1, 2])
    out = diversify(scores, np.array([0, 4]), cats, alpha=0.5, similarity="category")
    assert out.tolist() == [0, 1, 2, 3]
    # a little more weight on diversity breaks the tie the other way:
    # alpha = 0.6: row1 0.75 * 0.4 = 0.3 < row2 0.375 -> row 2 first
    out = diversify(scores, np.array([0, 4]), cats, alpha=0.6, similarity="category")
    assert out.tolist() == [0, 2, 1, 3]


def test_tie_in_score_and_adjusted_score_goes_to_lower_row() -> None:
    # scores 6, 8, 6, 6; categories 5, 1, 7, 5 (rows 0..3); rel = (s - 6) / 2 = 0, 1, 0, 0
    # step 1: row 1; then every adjusted score is 0 and every score 6: rows 0, 2, 3
    scores = np.array([6.0, 8.0, 6.0, 6.0])
    out = diversify(scores, np.array([0, 4]), np.array([5, 1, 7, 5]), alpha=1.0, similarity="category")
    assert out.tolist() == [1, 0, 2, 3]


def test_all_equal_scores_rank_by_diversity_alone() -> None:
    # equal scores: rel = 1 for every row. categories 0, 0, 1 (rows 0..2), alpha = 1
    # step 1: row 0 (ties: lowest row). step 2: row1 1 * (1 - 1) = 0, row2 1 -> row 2
    scores = np.array([2.0, 2.0, 2.0])
    out = diversify(scores, np.array([0, 3]), np.array([0, 0, 1]), alpha=1.0, similarity="category")
    assert out.tolist() == [0, 2, 1]


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        # scores 5..0 (rows 0..5), categories 0, 0, 0, 1, 2, 3; rel = s / 5 = 1, .8, .6, .4, .2, 0
        # alpha = 1. whole list: step 1 row 0; rows 1, 2 share its category: adjusted 0, 0;
        # row3 .4, row4 .2, row5 0 -> row 3, then row 4; then all 0: score order 1, 2, 5
        pytest.param(None, [0, 3, 4, 1, 2, 5], id="whole-list"),
        # depth 4: candidates rows 0..3 only: row 0, row 3 (.4 > 0, 0), then rows 1, 2; 4, 5 kept
        pytest.param(4, [0, 3, 1, 2, 4, 5], id="depth-4"),
        # depth 3: candidates rows 0..2, one category: score order throughout
        pytest.param(3, [0, 1, 2, 3, 4, 5], id="depth-3"),
        pytest.param(1, [0, 1, 2, 3, 4, 5], id="depth-1"),
        pytest.param(100, [0, 3, 4, 1, 2, 5], id="depth-past-the-list"),
    ],
)
def test_depth(depth: int | None, expected: list[int]) -> None:
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    cats = np.array([0, 0, 0, 1, 2, 3])
    out = diversify(scores, np.array([0, 6]), cats, alpha=1.0, similarity="category", depth=depth)
    assert out.tolist() == expected


def test_several_queries_and_an_empty_one() -> None:
    # query 0: rows 0..2 as in test_all_equal_scores...; query 1: empty; query 2: rows 3, 4
    scores = np.array([2.0, 2.0, 2.0, 1.0, 3.0])
    offsets = np.array([0, 3, 3, 5])
    out = diversify(scores, offsets, np.array([0, 0, 1, 4, 4]), alpha=1.0, similarity="category")
    assert out.tolist() == [0, 2, 1, 4, 3]
    assert diversify(np.zeros(0), np.array([0]), np.zeros((0, 3)), alpha=0.5).tolist() == []


def test_score_order() -> None:
    # query 0: scores 1, 3, 3 -> rows 1, 2 (tie: row order), 0; query 1: 0.5, 2 -> rows 4, 3
    scores = np.array([1.0, 3.0, 3.0, 0.5, 2.0])
    assert score_order(scores, np.array([0, 3, 5])).tolist() == [1, 2, 0, 4, 3]
    assert score_order(np.array([-0.0, 0.0]), np.array([0, 2])).tolist() == [0, 1]


def test_similarities() -> None:
    x = np.array([[3.0, 4.0], [6.0, 8.0], [-3.0, -4.0], [0.0, 0.0], [4.0, -3.0]])
    sim = cosine_similarity(x)
    assert sim[0, 1] == 1.0  # a positive multiple: exactly 1
    assert sim[0, 2] == -1.0
    assert sim[0, 3] == 0.0  # a zero vector: 0 by convention
    assert sim[3, 3] == 0.0
    assert abs(sim[0, 4]) < 1e-15  # orthogonal
    assert unit_rows(np.array([[3e300, 4e300], [3e-300, 4e-300]])).tolist() == [[0.6, 0.8]] * 2
    assert cosine_similarity(x[:2], x[4:]).shape == (2, 1)
    assert category_similarity(np.array([1, 2]), np.array([2, 2, 3])).tolist() == [
        [0.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
    ]
    assert SIMILARITIES == ("cosine", "category")


def test_cosine_similarity_matches_the_formula() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 5))
    sim = cosine_similarity(x)
    for i in range(20):
        for j in range(20):
            a, b = x[i], x[j]
            expected = float(a @ b) / (math.sqrt(float(a @ a)) * math.sqrt(float(b @ b)))
            assert sim[i, j] == pytest.approx(expected, abs=1e-14)


# ---- a brute-force reference -----------------------------------------------------------------


def _reference(
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    sim: Callable[[int, int], float],
    alpha: float,
    depth: int | None,
) -> list[int]:
    """Plain Python, one query at a time: the max similarity recomputed from scratch each step."""
    out: list[int] = []
    for q in range(len(offsets) - 1):
        rows = list(range(int(offsets[q]), int(offsets[q + 1])))
        if not rows:
            continue
        base = sorted(rows, key=lambda r: (-scores[r], r))
        m = len(rows) if depth is None else min(depth, len(rows))
        top, bottom = 0.5 * scores[base[0]], 0.5 * scores[base[-1]]
        span = top - bottom
        rel = {r: (0.5 * scores[r] - bottom) / span if span > 0 else 1.0 for r in rows}
        remaining = base[:m]
        placed = [remaining.pop(0)]
        while remaining:
            keys = {
                r: (rel[r] * (1.0 - alpha * max(sim(r, p) for p in placed)), float(scores[r]), -r)
                for r in remaining
            }
            best = max(remaining, key=keys.__getitem__)
            placed.append(best)
            remaining.remove(best)
        out += placed + base[m:]
    return out


@st.composite
def ranked_lists(
    draw: st.DrawFn, max_queries: int = 6, max_len: int = 10
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Coarse scores of any sign (ties are common), category codes, offsets (empty queries too)."""
    sizes = draw(st.lists(st.integers(0, max_len), min_size=1, max_size=max_queries))
    n = sum(sizes)
    scores = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
    cats = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return np.array(scores, dtype=np.float64), np.array(cats, dtype=np.int64), offsets


ALPHAS = st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.9, 1.0])
DEPTHS = st.one_of(st.none(), st.integers(1, 12))


@SETTINGS
@given(data=ranked_lists(), alpha=ALPHAS, depth=DEPTHS)
def test_category_matches_reference(
    data: tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]],
    alpha: float,
    depth: int | None,
) -> None:
    # category similarities are exactly 0 or 1: the two computations agree bit for bit
    scores, cats, offsets = data
    out = diversify(scores, offsets, cats, alpha=alpha, similarity="category", depth=depth)
    expected = _reference(scores, offsets, lambda i, j: float(cats[i] == cats[j]), alpha, depth)
    assert out.tolist() == expected


@pytest.mark.parametrize("seed", range(8))
def test_cosine_matches_reference(seed: int) -> None:
    # continuous random features (some rows zero, some negative entries): no near-ties, so the
    # reference's own cosine formula cannot round differently enough to change a choice
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 15, size=6)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    scores = rng.integers(-3, 4, size=n).astype(np.float64)  # ties in score
    features = rng.normal(size=(n, 4)) + (seed % 2) * 2.0
    features[rng.random(n) < 0.1] = 0.0

    def cos(i: int, j: int) -> float:
        a, b = features[i], features[j]
        na, nb = math.sqrt(float(a @ a)), math.sqrt(float(b @ b))
        return 0.0 if na == 0 or nb == 0 else float(a @ b) / (na * nb)

    alpha = [0.3, 0.7, 1.0][seed % 3]
    depth = [None, 5][seed % 2]
    out = diversify(scores, offsets, features, alpha=alpha, depth=depth)
    assert out.tolist() == _reference(scores, offsets, cos, alpha, depth)


# ---- properties ------------------------------------------------------------------------------


@SETTINGS
@given(data=ranked_lists(), depth=DEPTHS, similarity=st.sampled_from(SIMILARITIES))
def test_alpha_zero_is_score_order(
    data: tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]],
    depth: int | None,
    similarity: str,
) -> None:
    scores, cats, offsets = data
    items = cats if similarity == "category" else np.stack([cats, cats % 2], axis=1) - 1.0
    out = diversify(scores, offsets, items, alpha=0.0, similarity=similarity, depth=depth)
    n = scores.shape[0]
    qid = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    expected = sorted(range(n), key=lambda r: (qid[r], -scores[r], r))
    assert out.tolist() == expected
    assert score_order(scores, offsets).tolist() == expected


@SETTINGS
@given(data=ranked_lists(), alpha=ALPHAS)
def test_increasing_affine_maps_of_scores_change_nothing(
    data: tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]], alpha: float
) -> None:
    # small integers: 2 s - 7 and the normalised scores are exact, so the orders are identical
    scores, cats, offsets = data
    a = diversify(scores, offsets, cats, alpha=alpha, similarity="category")
    b = diversify(2.0 * scores - 7.0, offsets, cats, alpha=alpha, similarity="category")
    assert a.tolist() == b.tolist()


# ---- input validation ------------------------------------------------------------------------

S3 = np.array([1.0, 2.0, 3.0])
OFF3 = np.array([0, 3])
X3 = np.eye(3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"alpha": -0.1}, r"alpha=-0\.1 must be in \[0, 1\]", id="alpha-negative"),
        pytest.param({"alpha": 1.5}, r"alpha=1\.5 must be in \[0, 1\]", id="alpha-above-1"),
        pytest.param({"alpha": float("nan")}, r"alpha=nan must be in \[0, 1\]", id="alpha-nan"),
        pytest.param({"alpha": "0.5"}, r"alpha='0\.5' must be a number", id="alpha-string"),
        pytest.param({"alpha": True}, r"alpha=True must be a number", id="alpha-bool"),
        pytest.param({"alpha": 0.5, "depth": 0}, r"depth=0 must be an integer >= 1", id="depth-0"),
        pytest.param({"alpha": 0.5, "depth": 2.5}, r"depth=2\.5 must be an integer", id="depth-float"),
        pytest.param(
            {"alpha": 0.5, "similarity": "jaccard"},
            r"similarity='jaccard' is not one of 'cosine', 'category'",
            id="similarity",
        ),
    ],
)
def test_bad_options(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        diversify(S3, OFF3, X3, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("scores", "offsets", "items", "similarity", "message"),
    [
        pytest.param(S3, OFF3, np.eye(2), "cosine", r"features have 2 rows; offsets end at n_rows=3", id="features-rows"),
        pytest.param(S3, OFF3, np.ones(3), "cosine", r"features must be a 2-D numeric array", id="features-1d"),
        pytest.param(
            S3, OFF3, np.array([[1.0], [np.inf], [0.0]]), "cosine",
            r"features\[1, 0\] = inf is not finite", id="features-inf",
        ),
        pytest.param(S3, OFF3, np.array([1, 2]), "category", r"categories have 2 rows; offsets end at n_rows=3", id="categories-rows"),
        pytest.param(S3, OFF3, np.ones(3), "category", r"categories must be 1-D integer codes", id="categories-float"),
        pytest.param(S3, np.array([0, 2]), X3, "cosine", r"offsets must run from 0 to n_rows=3, got 0\.\.2", id="offsets-end"),
        pytest.param(S3, np.array([0, 2, 1, 3]), X3, "cosine", r"offsets decrease at query 1: 2 -> 1", id="offsets-decrease"),
        pytest.param(np.array([1.0, np.nan, 0.0]), OFF3, X3, "cosine", r"score at row 1 is nan", id="score-nan"),
        pytest.param(np.ones((3, 1)), OFF3, X3, "cosine", r"scores must be 1-D", id="scores-2d"),
    ],
)  # fmt: skip
def test_bad_inputs(
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    items: NDArray[np.generic],
    similarity: str,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        diversify(scores, offsets, items, alpha=0.5, similarity=similarity)
    assert "\n" not in str(err.value)


@pytest.mark.slow  # a fresh interpreter: e2e
def test_import_does_not_load_numba() -> None:
    code = "import ltr.rerank, sys; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
