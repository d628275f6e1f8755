"""The gap of our NDCG to each library's own (LightGBM's, XGBoost's, CatBoost's): parts that add
up to the library's value, which is the library's own ``ndcg@k``, one part per convention."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ltr.metrics import MetricConventions, per_query_table
from ltr.metrics.reports.gap import (
    LIBRARIES,
    gap_from_parts,
    gap_parts,
    library_gap,
    library_of,
    lightgbm_gap,
)

from .test_oracle_xgboost_catboost import _tie_heavy, _xgboost_values

catboost_utils = pytest.importorskip("catboost.utils")

L3 = math.log2(3)


def _hand_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A: labels 1, 0 on tied scores; B: nothing relevant; C: labels 1, 2 ranked the wrong way."""
    labels = np.array([1, 0, 0, 0, 1, 2])
    scores = np.array([0.5, 0.5, 1.0, 2.0, 2.0, 1.0])
    offsets = np.array([0, 2, 4, 6], dtype=np.int64)
    return labels, scores, offsets, np.array([1, 2, 3])


def test_the_parts_by_hand() -> None:
    """Ours (2^label - 1, ties averaged, 0 for B) to each library's, one knob at a time."""
    labels, scores, offsets, qids = _hand_data()
    a_ours, a_label_first, a_zero_first = (1 + 1 / L3) / 2, 1.0, 1 / L3
    c_exp, c_linear = (1 + 3 / L3) / (3 + 1 / L3), (1 + 2 / L3) / (2 + 1 / L3)
    ours = (a_ours + 0 + c_exp) / 3

    catboost = library_gap(labels, scores, offsets, qids, 10, MetricConventions(), LIBRARIES["catboost"])
    assert catboost.ours == pytest.approx(ours, abs=1e-15)
    assert catboost.parts["zero_idcg"] == pytest.approx(1 / 3, abs=1e-15)  # B scores 1
    assert catboost.parts["ties"] == pytest.approx((a_zero_first - a_ours) / 3, abs=1e-15)  # the lower label first
    assert catboost.parts["gain"] == pytest.approx((c_linear - c_exp) / 3, abs=1e-15)  # the label is the gain
    assert catboost.parts["discount"] == 0.0
    assert catboost.theirs == pytest.approx((a_zero_first + 1 + c_linear) / 3, abs=1e-15)
    assert catboost.metrics("test") == {f"test/catboost_gap/ndcg_at_10/{part}": catboost.parts[part] for part in ("zero_idcg", "ties", "gain", "discount")}

    xgboost = library_gap(labels, scores, offsets, qids, 10, MetricConventions(), LIBRARIES["xgboost"])
    assert xgboost.parts["ties"] == pytest.approx((a_label_first - a_ours) / 3, abs=1e-15)  # input order
    assert (xgboost.parts["gain"], xgboost.parts["discount"]) == (0.0, 0.0)
    linear = library_gap(labels, scores, offsets, qids, 10, MetricConventions(), library_of("xgboost", {"ndcg_exp_gain": False}))
    assert linear.parts["gain"] == pytest.approx((c_linear - c_exp) / 3, abs=1e-15)
    # ours with the Järvelin discount: the discount part is the only other one
    jarvelin = library_gap(labels, scores, offsets, qids, 10, MetricConventions(discount="jarvelin"), LIBRARIES["xgboost"])
    c_jarvelin = (1 + 3) / (3 + 1)  # 1 / max(1, log2(rank)): no discount at ranks 1 and 2
    assert jarvelin.parts["discount"] == pytest.approx(((1 + 3 / L3) / (3 + 1 / L3) - c_jarvelin) / 3, abs=1e-15)


def test_lightgbm_s_gap_and_note_keep_their_form() -> None:
    labels, scores, offsets, qids = _hand_data()
    gap = lightgbm_gap(labels, scores, offsets, qids, 10, MetricConventions())
    assert gap.metrics("test") == {"test/lightgbm_gap/ndcg_at_10/zero_idcg": gap.from_zero_idcg, "test/lightgbm_gap/ndcg_at_10/ties": gap.from_ties}
    assert gap.from_gain == 0.0
    assert gap.explain("test") == (
        "test nDCG@10: ours 0.5374, LightGBM's conventions 0.9322 (difference +0.3948). "
        "1 of 3 queries have nothing relevant in their labels (LightGBM scores them 1): +0.3333. "
        "1 queries have tied scores (LightGBM keeps row order): +0.0615. "
        "0 single-document queries score 1 under both if relevant."
    )
    catboost = library_gap(labels, scores, offsets, qids, 10, MetricConventions(), LIBRARIES["catboost"])
    assert catboost.explain("valid") == (
        "valid nDCG@10: ours 0.5374, CatBoost's conventions 0.8302 (difference +0.2928). "
        "1 of 3 queries have nothing relevant in their labels (CatBoost scores them 1): +0.3333. "
        "1 queries have tied scores (CatBoost puts the lower label first): -0.0615. "
        "Gain (CatBoost's: the label): +0.0210. "
        "0 single-document queries score 1 under both if relevant."
    )


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    "ours", [MetricConventions(), MetricConventions(gain="linear", ties="optimistic", zero_idcg="skip", discount="jarvelin")]
)
def test_the_parts_add_up_to_each_library_s_own_ndcg(seed: int, ours: MetricConventions) -> None:
    """On tie-heavy scores with all-zero lists: ours + the parts = the library's value = the
    library's own ``ndcg@10`` (XGBoost's, CatBoost's ``NDCG:top=10``) to 1e-12."""
    labels, scores, sizes = _tie_heavy(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    qids = np.arange(len(sizes))
    (catboost_value,) = catboost_utils.eval_metric(
        labels.astype(np.float64), scores, "NDCG:top=10", group_id=np.repeat(qids, sizes)
    )
    own = {"lightgbm": _xgboost_values(labels, scores, sizes)["ndcg@10"], "catboost": catboost_value}
    own["xgboost"] = own["lightgbm"]  # the same conventions
    ours_value = float(np.nanmean(per_query_table(labels, scores, offsets, qids, ks=(10,), conventions=ours)["ndcg_at_10"]))
    for name, library in LIBRARIES.items():
        gap = library_gap(labels, scores, offsets, qids, 10, ours, library)
        assert gap.ours == ours_value
        assert gap.theirs == pytest.approx(own[name], abs=1e-12)
        assert gap.ours + sum(gap.parts.values()) == pytest.approx(gap.theirs, abs=1e-12)
        assert list(gap.parts) == [part for part, _ in library.parts]
        # queries are independent: the parts of two halves give the same gap
        half = len(sizes) // 2
        first = gap_parts(labels[: offsets[half]], scores[: offsets[half]], offsets[: half + 1], qids[:half], 10, ours, library)
        rest = gap_parts(labels[offsets[half] :], scores[offsets[half] :], offsets[half:] - offsets[half], qids[half:], 10, ours, library)
        assert gap_from_parts(pd.concat([first, rest], ignore_index=True), 10, library) == gap
