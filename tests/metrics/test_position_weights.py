"""Position weights in any order (issue 56): IDCG@k is the best DCG@k any order of the list reaches
(the largest gains on the largest weights), so nDCG <= 1 for any nonnegative weights, in ``ltr
evaluate`` and in training's per-round metric; weights that are all 0 are refused; the discounts
that never grow (the default, jarvelin, decreasing weights) keep the kernel's IDCG bit for bit."""

from __future__ import annotations

import itertools
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltr.errors import LtrUserError
from ltr.experiment.external import evaluate_rankings, weights_file
from ltr.metrics import MetricConventions
from ltr.metrics.conventions import position_weights
from ltr.metrics.table import measure_arrays, rearranged_idcg
from ltr.training.round_metric import RoundNdcg
from tests.conftest import examples

SETTINGS = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def weighted_lists(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, ...], list[int]]:
    """(labels, scores, offsets, weights, ks): 1-4 queries of 1-6 documents, labels 0..3, scores
    with ties, nonnegative weights (one > 0 at least) of any order."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    n = sum(sizes)
    labels = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    scores = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.float64)
    weight = st.one_of(st.just(0.0), st.floats(0.0, 10.0, allow_nan=False), st.integers(1, 5).map(float))
    weights = draw(st.lists(weight, min_size=1, max_size=8).filter(lambda w: any(x > 0 for x in w)))
    ks = sorted(draw(st.sets(st.integers(1, 8), min_size=1, max_size=3)))
    return labels, scores, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), tuple(weights), ks


def _best_dcg(gains: list[float], weights: tuple[float, ...], k: int) -> float:
    """The largest DCG@k over every order of ``gains`` (an independent, exhaustive answer)."""
    w = [weights[p] if p < len(weights) else 0.0 for p in range(min(k, len(gains)))]
    return max(sum(g * x for g, x in zip(order, w, strict=False)) for order in itertools.permutations(gains))


@SETTINGS
@given(data=weighted_lists(), ties=st.sampled_from(["average", "stable", "pessimistic"]))
def test_ndcg_is_at_most_one_and_idcg_the_best_order(data: tuple, ties: str) -> None:  # type: ignore[type-arg]
    labels, scores, offsets, weights, ks = data
    c = MetricConventions(discount=weights, ties=ties, gain="linear")
    m = measure_arrays(labels, scores, offsets, ks=ks, conventions=c)
    assert np.all(m.ndcg <= 1.0), (m.ndcg, weights)
    assert np.all(m.ndcg >= 0.0)
    for q in range(offsets.shape[0] - 1):
        gains = labels[offsets[q] : offsets[q + 1]].astype(float).tolist()
        for i, k in enumerate(ks):
            assert m.idcg[q, i] == pytest.approx(_best_dcg(gains, weights, k), rel=1e-12, abs=1e-12)
            assert m.dcg[q, i] <= m.idcg[q, i] * (1 + 1e-12) + 1e-12


@SETTINGS
@given(data=weighted_lists())
def test_the_best_order_scores_exactly_one(data: tuple) -> None:  # type: ignore[type-arg]
    """Scores that put the largest gains on the largest weights (within the cut-off) give nDCG 1
    exactly: the IDCG sums the same terms in the same position order as the ranking's DCG."""
    labels, _, offsets, weights, ks = data
    k = ks[-1]
    scores = np.empty(labels.shape[0])
    for q in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[q]), int(offsets[q + 1])
        reach = min(k, hi - lo)
        w = np.array([weights[p] if p < len(weights) else 0.0 for p in range(hi - lo)])
        by_weight = np.argsort(-w[:reach], kind="stable").tolist() + list(range(reach, hi - lo))
        by_gain = np.argsort(-labels[lo:hi], kind="stable")
        position = np.empty(hi - lo, dtype=np.int64)
        position[by_gain] = by_weight  # the j-th largest gain at the j-th largest weight's position
        scores[lo:hi] = -position.astype(float)
    m = measure_arrays(labels, scores, offsets, ks=[k], conventions=MetricConventions(discount=weights, gain="linear", ties="stable"))
    has_ideal = m.idcg[:, 0] > 0
    assert np.all(m.ndcg[has_ideal, 0] == 1.0)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=weighted_lists())
def test_training_per_round_metric_is_at_most_one(data: tuple) -> None:  # type: ignore[type-arg]
    labels, scores, offsets, weights, ks = data
    dataset = lgb.Dataset(np.zeros((labels.shape[0], 1)), label=labels)  # never trained on: its identity only
    metric = RoundNdcg(ks=ks, table_ks=ks, conventions=MetricConventions(discount=weights))
    metric.register(dataset, labels, offsets)
    for _, value, _ in metric(scores, dataset):
        assert 0.0 <= value <= 1.0


def test_the_issue_example_by_hand(tmp_path: Path) -> None:
    """Weights 0.5, 1 (growing): the ideal puts the relevant document second, IDCG@2 = 1."""
    qrels, run, reversed_run = tmp_path / "q", tmp_path / "r", tmp_path / "r2"
    qrels.write_text("q 0 a 1\nq 0 b 0\n")
    run.write_text("q Q0 b 1 2 x\nq Q0 a 2 1 x\n")
    reversed_run.write_text("q Q0 a 1 2 x\nq Q0 b 2 1 x\n")
    best = evaluate_rankings(qrels=qrels, run=run, k=[1, 2], discount="0.5,1").summary
    assert (best["idcg_at_2"], best["dcg_at_2"], best["ndcg_at_2"]) == (1.0, 1.0, 1.0)
    assert (best["idcg_at_1"], best["ndcg_at_1"]) == (0.5, 0.0)  # one position: weight 0.5 at best
    worst = evaluate_rankings(qrels=qrels, run=reversed_run, k=[1, 2], discount="0.5,1").summary
    assert (worst["dcg_at_2"], worst["ndcg_at_2"], worst["ndcg_at_1"]) == (0.5, 0.5, 1.0)


@pytest.mark.parametrize(
    "conventions",
    [MetricConventions(), MetricConventions(discount="jarvelin", discount_base=3.0), MetricConventions(discount=(1.0, 0.7, 0.7, 0.2))],
    ids=["log2", "jarvelin", "decreasing-weights"],
)
def test_discounts_that_never_grow_keep_the_kernel_idcg_bit_for_bit(conventions: MetricConventions) -> None:
    """For them the kernel's IDCG stands (the rearranged one is not computed); computing it anyway
    gives the same bits, so the rearrangement is the kernel's rule generalised."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 40, size=200)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = rng.integers(0, 5, size=int(offsets[-1])).astype(np.int64)
    scores = np.asarray(rng.normal(size=labels.shape[0]), dtype=np.float64)
    ks = np.array([1, 3, 5, 10, 20], dtype=np.int64)
    m = measure_arrays(labels, scores, offsets, ks=ks.tolist(), conventions=conventions)
    lut = conventions.gains_of(np.arange(5))
    again = rearranged_idcg(labels, offsets, np.diff(offsets), lut, ks, conventions.discounts(20))
    assert np.array_equal(m.idcg, again)


def test_weights_that_are_all_zero_are_refused() -> None:
    with pytest.raises(ValueError, match=r"discount=0,0,0: every weight is 0"):
        position_weights("0,0,0")
    with pytest.raises(LtrUserError, match=r"--discount=0,0,0: every weight is 0"):
        evaluate_rankings(qrels="q", run="r", discount="0,0,0")
    from ltr.experiment.checks import check_config
    from tests.conftest import compose_train

    with pytest.raises(LtrUserError, match=r"eval.position_weights=\[0,0\]: every weight is 0"):
        check_config(compose_train(["eval.position_weights=[0,0]"]))


def test_a_weights_file_error_names_the_file_and_line(tmp_path: Path) -> None:
    cases = {
        "abc.txt": (b"# weights\n1.0\nabc\n", "abc.txt, line 3: 'abc' is not a number"),
        "neg.txt": (b"1.0, 0.5\n-1\n", "neg.txt, line 2: weight -1 must be finite and >= 0"),
        "bin.txt": (b"1.0\n0.5\n\x89PNG\x00", "bin.txt, line 3: not text"),
        "empty.txt": (b"# nothing\n", "empty.txt holds no weight"),
        "zero.txt": (b"0\n0\n", "zero.txt: every weight is 0"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(LtrUserError, match=message.replace("(", r"\(")) as info:
            weights_file(tmp_path / name)
        assert "\n" not in str(info.value)
    (tmp_path / "ok.txt").write_text("1\n0.2, 0.7 # a growing tail\n")
    assert weights_file(tmp_path / "ok.txt") == (1.0, 0.2, 0.7)
