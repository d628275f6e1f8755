"""R@k, AP@k and AP: hand-computed cases, trec_eval's outputs, brute force over tie orders."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltr.cli.evaluate import main
from ltr.data.formats.trec import read_trec, read_trec_eval_output
from ltr.metrics import MetricConventions, per_query_table, resolve_conventions, summarize
from ltr.metrics.table import measure_arrays
from tests.conftest import examples

from .conftest import SHARED_DATA, one_query

TREC = SHARED_DATA / "trec_eval_test"
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


def _plain(rel: list[bool], k: int | None, n_rel: int) -> tuple[float, float]:
    """Recall@k and AP@k (k None: the whole list) of one order, as trec_eval defines them."""
    top = rel if k is None else rel[:k]
    hits, ap = 0, 0.0
    for p, r in enumerate(top):
        if r:
            hits += 1
            ap += hits / (p + 1)
    return hits / n_rel, ap / n_rel


def test_hand_computed_ranked_list() -> None:
    # ranked relevance 1 0 1 0 1, one more relevant judgment not retrieved: R = 4
    #   AP@5 = (1/1 + 2/3 + 3/5) / 4; R@3 = 2/4; AP@3 = (1 + 2/3) / 4
    t = per_query_table(
        np.array([1, 0, 1, 0, 1]), np.array([5.0, 4, 3, 2, 1]), np.array([0, 5]), np.array([1]),
        ks=[3, 5], ideal_labels=np.array([1, 0, 1, 0, 1, 1]), ideal_offsets=np.array([0, 6]),
    )  # fmt: skip
    row = t.iloc[0]
    assert row["recall_at_3"] == pytest.approx(2 / 4, abs=1e-15)
    assert row["recall_at_5"] == pytest.approx(3 / 4, abs=1e-15)
    assert row["ap_at_3"] == pytest.approx((1 + 2 / 3) / 4, abs=1e-15)
    assert row["ap_at_5"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 4, abs=1e-15)
    assert row["ap"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 4, abs=1e-15)


def test_full_ap_reaches_below_the_top() -> None:
    # ks=[2] keeps two rows in the top; the list 0 1 0 0 1 has relevant rows at 2 and 5
    row = one_query([0, 1, 0, 0, 1], k=2)
    assert row["ap_at_2"] == pytest.approx((1 / 2) / 2)
    assert row["ap"] == pytest.approx((1 / 2 + 2 / 5) / 2)
    # a tied block of three (one relevant) that continues past the top: E[1/rank] over 3..5
    row = one_query([1, 0, 0, 1, 0], [9.0, 8.0, 1.0, 1.0, 1.0], k=3)
    assert row["ap"] == pytest.approx((1 + (2 / 3 + 2 / 4 + 2 / 5) / 3) / 2)
    assert row["ap_at_3"] == pytest.approx((1 + (2 / 3) / 3) / 2)
    assert row["recall_at_3"] == pytest.approx((1 + 1 / 3) / 2)


@pytest.mark.parametrize("policy", ["zero", "one", "skip"])
def test_nothing_relevant_follows_zero_idcg(policy: str) -> None:
    row = one_query([0, 0, 0], k=2, zero_idcg=policy)
    want = {"zero": 0.0, "one": 1.0, "skip": np.nan}[policy]
    for col in ("recall_at_2", "ap_at_2", "ap"):
        assert row[col] == pytest.approx(want, nan_ok=True), col


def test_full_ap_off_changes_nothing_else() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 400)
    scores = rng.integers(0, 5, 400).astype(np.float64)
    offsets = np.array([0, 7, 50, 50, 51, 200, 400])  # query 2 is empty
    a = measure_arrays(labels, scores, offsets, ks=(1, 5), full_ap=True)
    b = measure_arrays(labels, scores, offsets, ks=(1, 5), full_ap=False)
    for name in ("idcg", "dcg", "ndcg", "err", "precision", "rr", "rr_at", "recall", "ap_at"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.isnan(b.ap).all()
    assert not np.isnan(a.ap).any()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=7),
    st.lists(st.integers(0, 2), min_size=7, max_size=7),
    st.sampled_from([(1,), (2,), (1, 3, 5, 10)]),
    st.integers(0, 2),
    st.integers(1, 2),
)
def test_average_ties_equal_mean_over_all_orders(
    labels: list[int], raw_scores: list[int], ks: tuple[int, ...], unretrieved: int, threshold: int
) -> None:
    """ties="average": R@k, AP@k and AP are the exact mean over every order of the tied blocks
    (brute force over permutations), with relevant judgments that were not retrieved."""
    n = len(labels)
    scores = [float(s) for s in raw_scores[:n]]
    ideal = np.array([*labels, *([threshold] * unretrieved)], dtype=np.int64)
    n_rel = int((ideal >= threshold).sum())
    got = per_query_table(
        np.array(labels), np.array(scores), np.array([0, n]), np.array([0]), ks=ks,
        conventions=MetricConventions(rel_threshold=threshold),
        ideal_labels=ideal, ideal_offsets=np.array([0, len(ideal)]),
    ).iloc[0]  # fmt: skip
    if n_rel == 0:
        assert got["ap"] == 0.0
        assert all(got[f"recall_at_{k}"] == 0.0 for k in ks)
        return
    sums: dict[str, float] = {}
    count = 0
    for perm in itertools.permutations(range(n)):
        ranked = sorted(range(n), key=lambda i: (-scores[i], perm.index(i)))
        rel = [labels[i] >= threshold for i in ranked]
        for k in ks:
            rec, ap_k = _plain(rel, k, n_rel)
            sums[f"recall_at_{k}"] = sums.get(f"recall_at_{k}", 0.0) + rec
            sums[f"ap_at_{k}"] = sums.get(f"ap_at_{k}", 0.0) + ap_k
        sums["ap"] = sums.get("ap", 0.0) + _plain(rel, None, n_rel)[1]
        count += 1
    for col, total in sums.items():
        assert got[col] == pytest.approx(total / count, rel=1e-12, abs=1e-14), col


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.lists(st.integers(0, 3), min_size=12, max_size=12),
    st.sampled_from(["stable", "pessimistic", "optimistic"]),
    st.sampled_from([(1,), (2, 4), (3, 20)]),
)
def test_ordered_ties_match_a_plain_sort(
    labels: list[int], raw_scores: list[int], ties: str, ks: tuple[int, ...]
) -> None:
    n = len(labels)
    scores = [float(s) for s in raw_scores[:n]]
    sign = {"stable": 0, "pessimistic": 1, "optimistic": -1}[ties]
    ranked = sorted(range(n), key=lambda i: (-scores[i], sign * (2 ** labels[i] - 1), i))
    rel = [labels[i] >= 1 for i in ranked]
    n_rel = sum(rel)
    got = per_query_table(
        np.array(labels), np.array(scores), np.array([0, n]), np.array([0]), ks=ks,
        conventions=MetricConventions(ties=ties),
    ).iloc[0]  # fmt: skip
    if n_rel == 0:
        return
    for k in ks:
        rec, ap_k = _plain(rel, k, n_rel)
        assert got[f"recall_at_{k}"] == pytest.approx(rec, rel=1e-14)
        assert got[f"ap_at_{k}"] == pytest.approx(ap_k, rel=1e-14)
    assert got["ap"] == pytest.approx(_plain(rel, None, n_rel)[1], rel=1e-14)


@pytest.mark.skipif(not TREC.is_dir(), reason=f"{TREC} is absent")
@pytest.mark.parametrize(
    ("qrels", "run", "expected", "rel_threshold", "missing_topics"),
    [
        pytest.param("qrels.rel_level", "results.test", "out.test.aql", 2, "skip", id="aql-level2"),
        pytest.param("qrels.test", "results.test", "out.test.a", 1, "skip", id="a"),
        pytest.param("qrels.test", "results.test", "out.test.aq", 1, "skip", id="aq-per-query"),
        pytest.param("qrels.test", "results.trunc", "out.test.aqc", 1, "empty", id="aqc-missing"),
    ],
)
def test_trec_eval_recall_map_map_cut(
    qrels: str, run: str, expected: str, rel_threshold: int, missing_topics: str
) -> None:
    """recall_k, map_cut_k and map of trec_eval 10.0's own test outputs, to its 4 decimals."""
    inp = read_trec(TREC / run, TREC / qrels, missing_topics=missing_topics)
    conv = resolve_conventions("trec_eval", rel_threshold=rel_threshold)
    table = per_query_table(
        inp.labels, inp.scores, inp.offsets, inp.qids, ks=CUTS, conventions=conv,
        ideal_labels=inp.ideal_labels, ideal_offsets=inp.ideal_offsets, tie_keys=inp.tie_keys,
    )  # fmt: skip
    summary = summarize(table)
    want = read_trec_eval_output(TREC / expected)
    ours = {"map": "ap"} | {f"recall_{k}": f"recall_at_{k}" for k in CUTS}
    ours |= {f"map_cut_{k}": f"ap_at_{k}" for k in CUTS}
    checked = 0
    for measure, col in ours.items():
        values = want[measure]
        assert values["all"] == pytest.approx(summary[col], abs=5e-5), measure
        checked += 1
        for topic, v in values.items():
            if topic != "all":
                row = table.index[table["qid"] == topic]
                assert table.loc[row[0], col] == pytest.approx(v, abs=5e-5), (measure, topic)
                checked += 1
    assert checked >= len(ours)


def test_guide_case_through_ltr_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's A/B case: A ranks (rel, rel, non, non, non), B (non, non, rel, rel, non), 3
    relevant documents in all. P@5 = 2/5 and R@5 = 2/3 for both; NDCG@5 tells them apart."""
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"q 0 d{i} {int(i in (1, 2, 6))}\n" for i in range(1, 7)))
    outs = {}
    for name, order in {"A": [1, 2, 3, 4, 5], "B": [3, 4, 1, 2, 5]}.items():
        run = tmp_path / f"run{name}"
        run.write_text("".join(f"q Q0 d{d} {p} {10 - p} {name}\n" for p, d in enumerate(order, 1)))
        assert main(["--qrels", str(qrels), "--run", str(run), "--k", "5", "--json"]) == 0
        outs[name] = json.loads(capsys.readouterr().out)
    for out in outs.values():
        assert out["p_at_5"] == pytest.approx(0.4)
        assert round(out["recall_at_5"], 4) == 0.6667
    # exp gain = linear gain for 0/1 labels; IDCG@5 = 1 + 1/log2(3) + 1/2
    idcg = 1 + 1 / np.log2(3) + 1 / 2
    assert outs["A"]["ndcg_at_5"] == pytest.approx((1 + 1 / np.log2(3)) / idcg)
    assert outs["B"]["ndcg_at_5"] == pytest.approx((1 / 2 + 1 / np.log2(5)) / idcg)
    assert outs["A"]["ap"] == pytest.approx((1 + 1) / 3)
    assert outs["B"]["ap"] == pytest.approx((1 / 3 + 2 / 4) / 3)
