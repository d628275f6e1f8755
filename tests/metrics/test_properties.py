"""Hypothesis properties of the per-query table and its summaries."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from ltr.metrics import MetricConventions, Strata, idcg_report, per_query_table, summarize
from tests.conftest import examples

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
KS = (1, 3, 5, 10)
TIES = ("average", "stable", "pessimistic", "optimistic")


@st.composite
def ranked_queries(
    draw: st.DrawFn, max_queries: int = 8, max_len: int = 12, allow_empty: bool = False
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Labels 0-4, coarse scores (ties are common) and offsets of a few queries."""
    lo = 0 if allow_empty else 1
    sizes = draw(st.lists(st.integers(lo, max_len), min_size=1, max_size=max_queries))
    n = sum(sizes)
    labels = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    scores = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return np.array(labels, dtype=np.int64), np.array(scores, dtype=np.float64), offsets


def _table(
    labels: NDArray[np.int64],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    **conv: object,
) -> object:
    return per_query_table(
        labels, scores, offsets, np.arange(len(offsets) - 1), ks=KS,
        conventions=MetricConventions(**conv),  # type: ignore[arg-type]
    )  # fmt: skip


def _reference(
    labels: list[int], scores: list[float], k: int, gain: str, g_max: float
) -> dict[str, float]:
    """Plain-Python measures of one query in stable order (score desc, then input order)."""
    order = sorted(range(len(labels)), key=lambda i: (-scores[i], i))
    g = [
        (2.0 ** max(labels[i], 0) - 1) if gain == "exp" else float(max(labels[i], 0)) for i in order
    ]
    ideal = sorted(g, reverse=True)
    dcg = sum(x / math.log2(p + 2) for p, x in enumerate(g[:k]))
    idcg = sum(x / math.log2(p + 2) for p, x in enumerate(ideal[:k]))
    err, surv = 0.0, 1.0
    for p, x in enumerate(g[:k]):
        r = x / (g_max + 1)
        err += surv * r / (p + 1)
        surv *= 1 - r
    rel = [labels[i] >= 1 for i in order]
    rr = next((1 / (p + 1) for p, r_ in enumerate(rel) if r_), 0.0)
    return {"dcg": dcg, "idcg": idcg, "err": err, "p": sum(rel[:k]) / k, "rr": rr}


@SETTINGS
@given(ranked_queries(), st.sampled_from(("exp", "linear")))
def test_matches_plain_reference_in_stable_order(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], gain: str
) -> None:
    labels, scores, offsets = data
    t = _table(labels, scores, offsets, gain=gain, ties="stable")
    gains = MetricConventions(gain=gain).gains_of(labels)
    g_max = float(gains.max())
    for q in range(len(offsets) - 1):
        lab = labels[offsets[q] : offsets[q + 1]].tolist()
        sc = scores[offsets[q] : offsets[q + 1]].tolist()
        for k in KS:
            ref = _reference(lab, sc, k, gain, g_max)
            for name in ("dcg", "idcg", "err", "p"):
                assert t.loc[q, f"{name}_at_{k}"] == pytest.approx(ref[name], rel=1e-12, abs=1e-12)  # type: ignore[attr-defined]
        assert t.loc[q, "rr"] == pytest.approx(ref["rr"], rel=1e-12)  # type: ignore[attr-defined]


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=6),
    st.lists(st.integers(0, 2), min_size=6, max_size=6),
    st.sampled_from(("exp", "linear")),
    st.sampled_from([(1,), (2,), KS]),
)
def test_average_ties_equal_mean_over_all_orders(
    labels: list[int], raw_scores: list[int], gain: str, ks: tuple[int, ...]
) -> None:
    """ties="average" is the exact mean over every order of the tied blocks (brute force), RR@k
    included.

    Small ``ks`` put tied blocks across the cut and the first relevant row below the top.
    """
    n = len(labels)
    scores = [float(s) for s in raw_scores[:n]]
    lab = np.array(labels, dtype=np.int64)
    g_max = float(MetricConventions(gain=gain).gains_of(lab).max())
    got = per_query_table(lab, np.array(scores), np.array([0, n]), np.array([0]), ks=ks,
                          conventions=MetricConventions(gain=gain)).iloc[0]  # fmt: skip
    perms = list(itertools.permutations(range(n)))
    sums: dict[str, float] = {}
    count = 0
    for perm in perms:
        # an order consistent with the scores: `perm` breaks ties; keep only distinct tie orders
        ranked = sorted(range(n), key=lambda i: (-scores[i], perm.index(i)))
        ref_lab = [labels[i] for i in ranked]
        ref_sc = [float(n - p) for p in range(n)]  # already in order
        for k in ks:
            ref = _reference(ref_lab, ref_sc, k, gain, g_max)
            for name in ("dcg", "err", "p"):
                sums[f"{name}_at_{k}"] = sums.get(f"{name}_at_{k}", 0.0) + ref[name]
            # RR@k: 1 / rank of the first relevant row, 0 below rank k
            first = next((p + 1 for p, lab_p in enumerate(ref_lab) if lab_p >= 1), None)
            rr_k = 1.0 / first if first is not None and first <= k else 0.0
            sums[f"rr_at_{k}"] = sums.get(f"rr_at_{k}", 0.0) + rr_k
        sums["rr"] = sums.get("rr", 0.0) + ref["rr"]
        count += 1
    for col, total in sums.items():
        assert got[col] == pytest.approx(total / count, rel=1e-9, abs=1e-12), col


@SETTINGS
@given(ranked_queries(), st.sampled_from(TIES), st.sampled_from(("zero", "one", "skip")))
def test_ndcg_between_zero_and_one(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]],
    ties: str,
    zero_idcg: str,
) -> None:
    t = _table(*data, ties=ties, zero_idcg=zero_idcg)
    for k in KS:
        v = t[f"ndcg_at_{k}"].to_numpy()  # type: ignore[attr-defined]
        v = v[~np.isnan(v)]
        assert ((v >= 0) & (v <= 1 + 1e-12)).all()
        e = t[f"err_at_{k}"].to_numpy()  # type: ignore[attr-defined]
        assert ((e >= 0) & (e <= 1)).all()


@SETTINGS
@given(ranked_queries(), st.sampled_from(TIES))
def test_ideal_order_gives_one(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], ties: str
) -> None:
    labels, _, offsets = data
    # scores = labels: the ideal order; ties in score are ties in gain, so any policy gives 1
    t = _table(labels, labels.astype(np.float64), offsets, ties=ties)
    pos = t["idcg_at_10"].to_numpy() > 0  # type: ignore[attr-defined]
    for k in KS:
        np.testing.assert_allclose(t[f"ndcg_at_{k}"].to_numpy()[pos], 1.0, rtol=1e-12)  # type: ignore[attr-defined]


@SETTINGS
@given(ranked_queries(), st.sampled_from(TIES), st.sampled_from(("cube", "exp", "affine")))
def test_invariant_under_increasing_transform(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], ties: str, how: str
) -> None:
    labels, scores, offsets = data
    transformed = {"cube": scores**3, "exp": np.exp(scores), "affine": 3.0 * scores - 7.0}[how]
    a = _table(labels, scores, offsets, ties=ties)
    b = _table(labels, transformed, offsets, ties=ties)
    cols = [c for c in a.columns if c not in ("qid", "stratum")]  # type: ignore[attr-defined]
    np.testing.assert_allclose(a[cols].to_numpy(float), b[cols].to_numpy(float), rtol=1e-12)  # type: ignore[index]


@SETTINGS
@given(
    ranked_queries(),
    st.sampled_from(("average", "pessimistic", "optimistic")),
    st.randoms(use_true_random=False),
)
def test_invariant_under_row_reordering(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], ties: str, rnd: object
) -> None:
    labels, scores, offsets = data
    seed = rnd.randint(0, 2**32 - 1)  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)
    # a random permutation inside every query, without a per-query loop
    q_of_row = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    perm = np.lexsort((rng.random(len(labels)), q_of_row))
    a = _table(labels, scores, offsets, ties=ties)
    b = _table(labels[perm], scores[perm], offsets, ties=ties)
    cols = [c for c in a.columns if c not in ("qid", "stratum")]  # type: ignore[attr-defined]
    np.testing.assert_allclose(
        a[cols].to_numpy(float), b[cols].to_numpy(float), rtol=1e-9, atol=1e-12
    )  # type: ignore[index]


@SETTINGS
@given(
    ranked_queries(max_queries=30, max_len=70, allow_empty=True), st.sampled_from(("zero", "one"))
)
def test_strata_recombine_to_overall_mean(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], zero_idcg: str
) -> None:
    t = _table(*data, zero_idcg=zero_idcg)
    strata = Strata()
    s = summarize(t, strata=strata)  # type: ignore[arg-type]
    keys = [*strata.keys, "len_empty"]
    assert sum(s.get(f"n_queries/{k}", 0.0) for k in keys) == s["n_queries"]
    for col in ("ndcg_at_10", "err_at_5", "rr", "p_at_3"):
        total = sum(
            s[f"n_queries/{k}"] * s[f"{col}/{k}"] for k in keys if s.get(f"n_queries/{k}", 0) > 0
        )
        assert total / s["n_queries"] == pytest.approx(s[col], rel=1e-9, abs=1e-12)
    assert not any(math.isnan(v) for v in s.values())


@SETTINGS
@given(
    ranked_queries(max_queries=30, max_len=30, allow_empty=True),
    st.integers(1, 40),
    st.sampled_from(KS),
)
def test_histogram_counts_sum_to_queries(
    data: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]], bins: int, k: int
) -> None:
    t = _table(*data)
    r = idcg_report(t, k, bins=bins)  # type: ignore[arg-type]
    assert int(r.counts.sum()) == r.n_queries == len(data[2]) - 1
    assert r.bin_edges.shape == (bins + 1,)
    assert 0.0 <= r.share_zero <= r.share_le_one <= 1.0
