"""Hand-computed tables: the ranked labels in a comment, the expected value as a formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltr.metrics import MetricConventions, Strata, per_query_table, summarize
from ltr.metrics.table import measure_arrays

from .conftest import LOG2_3, LOG2_5, LOG2_6, one_query

# DCG of the ideal exp order of [2,3,1,0,2]: gains 7,3,3,1,0
IDCG_EXP = 7 + 3 / LOG2_3 + 3 / 2 + 1 / LOG2_5
IDCG_LIN = 3 + 2 / LOG2_3 + 2 / 2 + 1 / LOG2_5

NDCG_CASES = [
    # (ranked labels, gain, k, expected NDCG@k)
    pytest.param([2, 3, 1, 0, 2], "exp", 5, 0.838647, id="reference-exp"),
    pytest.param([2, 3, 1, 0, 2], "linear", 5, 0.907591, id="reference-linear"),
    # "reversed order" of the DESIGN reference = the anti-ideal (ascending) order [0,1,2,2,3]
    pytest.param([0, 1, 2, 2, 3], "exp", 5, 0.566448, id="reference-anti-ideal-exp"),
    # the reverse of the given order, [2,0,1,3,2]: (3 + 1/2 + 7/log2 5 + 3/log2 6) / IDCG
    pytest.param(
        [2, 0, 1, 3, 2],
        "exp",
        5,
        (3 + 1 / 2 + 7 / LOG2_5 + 3 / LOG2_6) / IDCG_EXP,
        id="reversed-exp",
    ),
    # [2,3,1] at k=3: (3 + 7/log2 3 + 1/2) / (7 + 3/log2 3 + 3/2)
    pytest.param(
        [2, 3, 1, 0, 2], "exp", 3, (3 + 7 / LOG2_3 + 1 / 2) / (7 + 3 / LOG2_3 + 3 / 2), id="cut-3"
    ),
    # single relevant doc: [1] -> 1
    pytest.param([1], "exp", 5, 1.0, id="single-doc"),
    # k > length: [0,1] at k=10 -> (1/log2 3) / 1 (both DCG and IDCG truncated to 2 docs)
    pytest.param([0, 1], "exp", 10, 1 / LOG2_3, id="k-longer-than-list"),
    # ideal order gives 1
    pytest.param([3, 2, 2, 1, 0], "exp", 5, 1.0, id="ideal"),
]


@pytest.mark.parametrize(("labels", "gain", "k", "expected"), NDCG_CASES)
def test_ndcg(labels: list[int], gain: str, k: int, expected: float) -> None:
    row = one_query(labels, k=k, gain=gain)
    assert row[f"ndcg_at_{k}"] == pytest.approx(expected, abs=5e-7)


def test_dcg_and_idcg_columns() -> None:
    # [2,3,1,0,2] exp: DCG@5 = 3 + 7/log2 3 + 1/2 + 0 + 3/log2 6
    row = one_query([2, 3, 1, 0, 2])
    assert row["dcg_at_5"] == pytest.approx(3 + 7 / LOG2_3 + 1 / 2 + 3 / LOG2_6, rel=1e-12)
    assert row["idcg_at_5"] == pytest.approx(IDCG_EXP, rel=1e-12)
    assert row["n_relevant"] == 4
    assert row["list_len"] == 5
    assert row["stratum"] == "1-10"


@pytest.mark.parametrize(("policy", "expected"), [("zero", 0.0), ("one", 1.0), ("skip", math.nan)])
def test_all_zero_query(policy: str, expected: float) -> None:
    # [0,0,0]: IDCG = 0, NDCG is the policy's value
    row = one_query([0, 0, 0], zero_idcg=policy)
    assert row["idcg_at_5"] == 0.0
    assert row["dcg_at_5"] == 0.0
    if math.isnan(expected):
        assert math.isnan(row["ndcg_at_5"])
    else:
        assert row["ndcg_at_5"] == expected


@pytest.mark.parametrize("policy", ["zero", "one", "skip"])
def test_single_irrelevant_doc(policy: str) -> None:
    # [0]: a one-doc list with nothing relevant follows zero_idcg (LightGBM 1, sklearn raises)
    row = one_query([0], zero_idcg=policy)
    expected = {"zero": 0.0, "one": 1.0, "skip": math.nan}[policy]
    assert row["ndcg_at_5"] == pytest.approx(expected, nan_ok=True)


TIE_CASES = [
    # labels [1,0] with equal scores; ideal DCG@2 = 1
    # average: each position gets the mean gain 1/2 -> 1/2 + (1/2)/log2 3
    pytest.param([1, 0], "average", 2, 0.5 + 0.5 / LOG2_3, id="average"),
    pytest.param([1, 0], "average", 1, 0.5, id="average-k1"),
    # stable: input order [1,0] -> 1; input order [0,1] -> 1/log2 3
    pytest.param([1, 0], "stable", 2, 1.0, id="stable"),
    pytest.param([0, 1], "stable", 2, 1 / LOG2_3, id="stable-reversed-input"),
    # pessimistic: relevant last -> 1/log2 3; optimistic: relevant first -> 1
    pytest.param([1, 0], "pessimistic", 2, 1 / LOG2_3, id="pessimistic"),
    pytest.param([0, 1], "optimistic", 2, 1.0, id="optimistic"),
]


@pytest.mark.parametrize(("labels", "ties", "k", "expected"), TIE_CASES)
def test_tie_policies(labels: list[int], ties: str, k: int, expected: float) -> None:
    row = one_query(labels, [1.0, 1.0], k=k, ties=ties)
    assert row[f"ndcg_at_{k}"] == pytest.approx(expected, rel=1e-12)


def test_average_tie_block_crossing_k() -> None:
    # scores [2,1,1,1], labels [3,1,0,2] exp: position 1 gain 7, then a block of gains 1,0,3
    # (mean 4/3) at positions 2..4. DCG@2 = 7 + (4/3)/log2 3; IDCG@2 = 7 + 3/log2 3
    row = one_query([3, 1, 0, 2], [2.0, 1.0, 1.0, 1.0], k=2)
    assert row["dcg_at_2"] == pytest.approx(7 + (4 / 3) / LOG2_3, rel=1e-12)
    assert row["ndcg_at_2"] == pytest.approx((7 + (4 / 3) / LOG2_3) / (7 + 3 / LOG2_3), rel=1e-12)
    # P@2 = (1 + 2/3) / 2 (the block has 2 relevant of 3)
    assert row["p_at_2"] == pytest.approx((1 + 2 / 3) / 2, rel=1e-12)


def test_tie_policies_agree_without_ties() -> None:
    labels = [2, 3, 1, 0, 2]
    values = {
        t: one_query(labels, ties=t)["ndcg_at_5"]
        for t in ("average", "stable", "pessimistic", "optimistic")
    }
    assert len(set(values.values())) == 1


def test_labels_above_30_with_explicit_gains() -> None:
    # label_gain = identity up to 40; ranked [35, 40]: (35 + 40/log2 3) / (40 + 35/log2 3)
    gains = tuple(float(g) for g in range(41))
    row = one_query([35, 40], k=2, label_gain=gains)
    assert row["ndcg_at_2"] == pytest.approx((35 + 40 / LOG2_3) / (40 + 35 / LOG2_3), rel=1e-12)
    # explicit gains override `gain`
    row_exp = one_query([35, 40], k=2, gain="exp", label_gain=gains)
    assert row_exp["ndcg_at_2"] == row["ndcg_at_2"]


def test_label_outside_label_gain_is_an_error() -> None:
    with pytest.raises(ValueError, match="label 3 has no entry in label_gain"):
        one_query([3, 0], label_gain=(0.0, 1.0, 3.0))


def test_negative_labels_count_as_zero() -> None:
    # [-1, 1]: gains 0, 1 -> DCG 1/log2 3, IDCG 1
    row = one_query([-1, 1], k=2, gain="linear")
    assert row["ndcg_at_2"] == pytest.approx(1 / LOG2_3, rel=1e-12)
    assert row["n_relevant"] == 1


ERR_CASES = [
    # exp gains, g_max = 3 -> R = gain/4. [2,0,1]: R = 3/4, 0, 1/4
    # ERR@3 = 3/4 + 0 + (1/3)(1/4)(1 - 3/4)
    pytest.param([2, 0, 1], None, 3, 3 / 4 + (1 / 3) * (1 / 4) * (1 / 4), id="plain"),
    # tied [2,1]: R = a, b = 3/4, 1/4; E = (a+b)/2 + (1/2)((1-a)b + (1-b)a)/2
    pytest.param(
        [2, 1],
        [1.0, 1.0],
        2,
        0.5 + (1 / 2) * ((1 / 4) * (1 / 4) + (3 / 4) * (3 / 4)) / 2,
        id="tied-pair",
    ),
    # [0,0]: 0
    pytest.param([0, 0], None, 2, 0.0, id="nothing-relevant"),
]


@pytest.mark.parametrize(("labels", "scores", "k", "expected"), ERR_CASES)
def test_err(labels: list[int], scores: list[float] | None, k: int, expected: float) -> None:
    row = one_query(labels, scores, k=k)
    assert row[f"err_at_{k}"] == pytest.approx(expected, rel=1e-12)


def test_err_linear_gain() -> None:
    # linear, l_max = 2 -> R = l/3. [1,2]: ERR@2 = 1/3 + (1/2)(2/3)(2/3)
    row = one_query([1, 2], k=2, gain="linear")
    assert row["err_at_2"] == pytest.approx(1 / 3 + (1 / 2) * (2 / 3) * (2 / 3), rel=1e-12)


PREC_RR_CASES = [
    # (labels ranked, scores, k, P@k, RR)
    pytest.param([1, 0, 1], None, 2, 1 / 2, 1.0, id="p2"),
    pytest.param([1, 0, 1], None, 5, 2 / 5, 1.0, id="p-k-longer-divides-by-k"),
    pytest.param([0, 0, 1], None, 3, 1 / 3, 1 / 3, id="rr-third"),
    pytest.param([0, 0], None, 2, 0.0, 0.0, id="none-relevant"),
    # all tied, m=4, r=2: P(first at 1,2,3) = 1/2, 1/3, 1/6 -> RR = 1/2 + (1/3)/2 + (1/6)/3
    pytest.param([0, 1, 0, 1], [1.0] * 4, 4, 2 / 4, 1 / 2 + 1 / 6 + 1 / 18, id="rr-average-ties"),
]


@pytest.mark.parametrize(("labels", "scores", "k", "p", "rr"), PREC_RR_CASES)
def test_precision_and_rr(
    labels: list[int], scores: list[float] | None, k: int, p: float, rr: float
) -> None:
    row = one_query(labels, scores, k=k)
    assert row[f"p_at_{k}"] == pytest.approx(p, rel=1e-12)
    assert row["rr"] == pytest.approx(rr, rel=1e-12)


def test_rel_threshold() -> None:
    # threshold 2: [1,2] -> relevant at rank 2 only: P@2 = 1/2, RR = 1/2, n_relevant 1
    row = one_query([1, 2], k=2, rel_threshold=2)
    assert (row["p_at_2"], row["rr"], row["n_relevant"]) == (0.5, 0.5, 1)


def test_rr_beyond_top_k() -> None:
    # relevant doc at rank 30 of 40, ks = (5,): RR is over the whole list = 1/30
    labels = [0] * 40
    labels[29] = 1
    row = one_query(labels, k=5)
    assert row["rr"] == pytest.approx(1 / 30)


def test_empty_query_and_ideal_labels() -> None:
    # query 7: no ranked docs, judged [2]; query 8: ranked [0,1], judged [0,1,2]
    # q8 linear: DCG@5 = 1/log2 3; IDCG from all judged = 2 + 1/log2 3
    t = per_query_table(
        np.array([0, 1]), np.array([2.0, 1.0]), np.array([0, 0, 2]), np.array([7, 8]),
        ks=[5], conventions=MetricConventions(gain="linear", zero_idcg="one"),
        ideal_labels=np.array([2, 0, 1, 2]), ideal_offsets=np.array([0, 1, 4]),
    )  # fmt: skip
    assert t["list_len"].tolist() == [0, 2]
    assert t["stratum"].tolist() == ["empty", "1-10"]
    assert t.loc[0, "ndcg_at_5"] == 0.0
    assert t.loc[0, "idcg_at_5"] == 2.0
    assert t.loc[1, "ndcg_at_5"] == pytest.approx((1 / LOG2_3) / (2 + 1 / LOG2_3), rel=1e-12)
    assert t["n_relevant"].tolist() == [1, 2]
    s = summarize(t)
    assert s["no_result_rate"] == 0.5
    assert s["n_queries/len_empty"] == 1.0
    assert s["ndcg_at_5/len_empty"] == 0.0


def test_docno_desc_ties() -> None:
    # equal scores, tie key = docno rank: larger key first -> order [label of key 9, key 2]
    t = per_query_table(
        np.array([1, 0]), np.array([1.0, 1.0]), np.array([0, 2]), np.array([1]), ks=[2],
        conventions=MetricConventions(gain="linear", ties="docno_desc"), tie_keys=np.array([2, 9]),
    )  # fmt: skip
    assert t.loc[0, "ndcg_at_2"] == pytest.approx(1 / LOG2_3)


def test_columns_and_order() -> None:
    t = per_query_table(
        np.array([1, 0, 1]), np.array([0.1, 0.2, 0.3]), np.array([0, 1, 3]), np.array(["b", "a"]),
        ks=[10, 5],
    )  # fmt: skip
    expected = ["qid", "list_len", "stratum", "n_relevant"]
    for k in (10, 5):
        expected += [f"idcg_at_{k}", f"dcg_at_{k}", f"ndcg_at_{k}", f"err_at_{k}", f"p_at_{k}", f"rr_at_{k}"]
        expected += [f"recall_at_{k}", f"ap_at_{k}"]
    assert [*t.columns] == [*expected, "rr", "ap"]
    assert t["qid"].tolist() == ["b", "a"]


def test_summarize_keys_and_strata() -> None:
    # lengths 1, 12, 12: strata 1-10 (1 query), 11-50 (2), 51+ (0)
    lens = [1, 12, 12]
    offsets = np.concatenate([[0], np.cumsum(lens)])
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, offsets[-1])
    labels[0] = 1
    t = per_query_table(labels, rng.random(offsets[-1]), offsets, np.arange(3), ks=[10])
    s = summarize(t)
    assert s["n_queries"] == 3
    assert (s["n_queries/len_1-10"], s["n_queries/len_11-50"], s["n_queries/len_51_plus"]) == (
        1,
        2,
        0,
    )
    assert "ndcg_at_10/len_51_plus" not in s
    assert "n_queries/len_empty" not in s
    assert s["ndcg_at_10/len_1-10"] == 1.0
    recombined = (s["ndcg_at_10/len_1-10"] * 1 + s["ndcg_at_10/len_11-50"] * 2) / 3
    assert recombined == pytest.approx(s["ndcg_at_10"], rel=1e-12)
    assert not any(isinstance(v, float) and math.isnan(v) for v in s.values())


def test_summarize_skip_counts() -> None:
    # queries [0,0] (skipped) and [1,0] (NDCG 1): mean over the kept one = 1
    t = per_query_table(
        np.array([0, 0, 1, 0]), np.array([2.0, 1, 2, 1]), np.array([0, 2, 4]), np.array([1, 2]),
        ks=[5], conventions=MetricConventions(zero_idcg="skip"),
    )  # fmt: skip
    s = summarize(t)
    assert s["n_skipped_zero_idcg"] == 1
    assert s["ndcg_at_5"] == 1.0
    assert s["n_queries"] == 2


def test_custom_strata() -> None:
    st = Strata((1, 2, 5))
    assert st.labels == ("1", "2-4", "5+")
    assert st.keys == ("len_1", "len_2-4", "len_5_plus")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gain": "log"}, "gain='log' is not one of 'exp', 'linear'"),
        ({"ties": "random"}, "ties='random' is not one of"),
        ({"zero_idcg": "nan"}, "zero_idcg='nan' is not one of 'zero', 'one', 'skip'"),
        ({"label_gain": (0.0, -1.0)}, "every gain must be finite and >= 0"),
    ],
)
def test_convention_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MetricConventions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("edges", "message"),
    [((0, 10), "first lower edge must be 1"), ((1, 5, 5), "strictly increasing")],
)
def test_strata_validation(edges: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Strata(edges)


def test_input_validation() -> None:
    lab, off, q = np.array([1, 0]), np.array([0, 2]), np.array([5])
    with pytest.raises(ValueError, match=r"score at row 1 \(qid 5\) is NaN"):
        per_query_table(lab, np.array([1.0, np.nan]), off, q)
    with pytest.raises(ValueError, match="offsets must run from 0 to n_rows=2"):
        per_query_table(lab, np.array([1.0, 2.0]), np.array([0, 3]), q)
    with pytest.raises(ValueError, match="ks="):
        per_query_table(lab, np.array([1.0, 2.0]), off, q, ks=[0])
    with pytest.raises(ValueError, match="docno_desc"):
        per_query_table(
            lab, np.array([1.0, 2.0]), off, q, conventions=MetricConventions(ties="docno_desc")
        )
    with pytest.raises(ValueError, match="not an integer label"):
        per_query_table(np.array([0.5, 1.0]), np.array([1.0, 2.0]), off, q)


def test_a_nan_score_names_a_string_qid_as_written() -> None:
    """``qid_names`` (a reader's string qids, numbered 0, 1, ...) name the query in the message;
    without them the qid is named as given, as before."""
    labels, offsets, numbers = np.array([1, 0, 2, 1]), np.array([0, 2, 4]), np.array([0, 1])
    scores = np.array([1.0, 2.0, 3.0, np.nan])
    names = np.array(["q-a", "test-q007"], dtype=object)
    with pytest.raises(ValueError, match=r"^score at row 3 \(qid 'test-q007'\) is NaN$"):
        per_query_table(labels, scores, offsets, numbers, qid_names=names)
    with pytest.raises(ValueError, match=r"^score at row 3 \(qid 'test-q007'\) is NaN$"):
        measure_arrays(labels, scores, offsets, qids=numbers, qid_names=names)
    with pytest.raises(ValueError, match=r"^score at row 3 \(qid 1\) is NaN$"):
        per_query_table(labels, scores, offsets, numbers)
    with pytest.raises(ValueError, match=r"^score at row 3 \(query 1\) is NaN$"):
        measure_arrays(labels, scores, offsets)


@pytest.mark.parametrize(
    ("ties", "expected"),
    [
        # rows 28, 29, 30 (1-based) tie; the relevant one is the middle row of the block
        ("stable", 1 / 29),
        ("pessimistic", 1 / 30),
        ("optimistic", 1 / 28),
        # average: m = 3, r = 1 -> uniform over ranks 28..30
        ("average", (1 / 28 + 1 / 29 + 1 / 30) / 3),
    ],
)
def test_rr_in_a_tie_below_the_top(ties: str, expected: float) -> None:
    scores = [float(40 - i) for i in range(40)]
    scores[27] = scores[28] = scores[29] = 0.5 + 40 - 30
    labels = [0] * 40
    labels[28] = 1
    row = one_query(labels, scores, k=5, ties=ties)
    assert row["rr"] == pytest.approx(expected, rel=1e-12)


def test_no_queries() -> None:
    t = per_query_table(
        np.array([], dtype=np.int64), np.array([]), np.array([0]), np.array([], dtype=np.int64)
    )
    assert len(t) == 0
    s = summarize(t)
    assert s["n_queries"] == 0
    assert s["no_result_rate"] == 0.0
    assert "ndcg_at_10" not in s


def test_rr_at_k_by_hand() -> None:
    # first relevant row at rank 3: RR = 1/3; RR@2 = 0; RR@3 = RR@5 = 1/3
    t = per_query_table(np.array([0, 0, 1, 2]), np.array([4.0, 3, 2, 1]), np.array([0, 4]), np.array([1]), ks=[2, 3, 5])
    assert t.loc[0, "rr"] == 1 / 3
    assert (t.loc[0, "rr_at_2"], t.loc[0, "rr_at_3"], t.loc[0, "rr_at_5"]) == (0.0, 1 / 3, 1 / 3)
    # nothing relevant: 0 everywhere
    none = per_query_table(np.array([0, 0]), np.array([2.0, 1]), np.array([0, 2]), np.array([1]), ks=[1])
    assert (none.loc[0, "rr"], none.loc[0, "rr_at_1"]) == (0.0, 0.0)


def test_rr_at_k_of_a_tied_block_by_hand() -> None:
    # one row above, then 3 tied rows of which 1 is relevant (ties=average): the relevant row is
    # at rank 2, 3 or 4 with probability 1/3 each
    labels, scores = np.array([0, 0, 1, 0]), np.array([9.0, 5, 5, 5])
    t = per_query_table(labels, scores, np.array([0, 4]), np.array([1]), ks=[1, 2, 3, 10])
    assert t.loc[0, "rr_at_1"] == 0.0
    assert t.loc[0, "rr_at_2"] == pytest.approx((1 / 2) / 3)
    assert t.loc[0, "rr_at_3"] == pytest.approx((1 / 2 + 1 / 3) / 3)
    assert t.loc[0, "rr_at_10"] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert t.loc[0, "rr_at_10"] == t.loc[0, "rr"]  # past the block: RR itself, bit for bit
    # the same block under the pessimistic policy: the relevant row last, rank 4
    pess = per_query_table(labels, scores, np.array([0, 4]), np.array([1]), ks=[3, 4],
                           conventions=MetricConventions(ties="pessimistic"))
    assert (pess.loc[0, "rr_at_3"], pess.loc[0, "rr_at_4"]) == (0.0, 1 / 4)
