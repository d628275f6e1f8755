"""``discount``: the classic (Järvelin and Kekäläinen) DCG against the guide's own code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.evaluate import main
from ltr.metrics import MetricConventions, per_query_table

GUIDE_LIST = [2, 3, 1, 0, 2]


def guide_dcg_classic(rel: list[float]) -> float:
    """The guide's classic DCG, as printed: ``dcg = rel[0]; dcg += rel[i] / log2(i + 1)``."""
    dcg = rel[0]
    for i in range(1, len(rel)):
        dcg += rel[i] / math.log2(i + 1)
    return dcg


def test_jarvelin_equals_the_guides_code() -> None:
    t = per_query_table(
        np.array(GUIDE_LIST), np.array([5.0, 4, 3, 2, 1]), np.array([0, 5]), np.array([1]),
        ks=[3, 5], conventions=MetricConventions(gain="linear", discount="jarvelin"),
    ).iloc[0]  # fmt: skip
    ideal = sorted(GUIDE_LIST, reverse=True)
    for k in (3, 5):
        dcg, idcg = guide_dcg_classic(GUIDE_LIST[:k]), guide_dcg_classic(ideal[:k])
        assert abs(t[f"dcg_at_{k}"] - dcg) <= 1e-12
        assert abs(t[f"idcg_at_{k}"] - idcg) <= 1e-12
        assert abs(t[f"ndcg_at_{k}"] - dcg / idcg) <= 1e-12
    # by hand: 2 + 3/log2(2) + 1/log2(3) + 0 + 2/log2(5); ideal 3 + 2/1 + 2/log2(3) + 1/log2(4) + 0
    by_hand = (5 + 1 / math.log2(3) + 2 / math.log2(5)) / (5.5 + 2 / math.log2(3))
    assert t["ndcg_at_5"] == pytest.approx(by_hand, abs=1e-15)


def test_default_is_todays_discount_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, 300)
    scores = rng.integers(0, 8, 300).astype(np.float64)
    offsets = np.array([0, 3, 40, 41, 300])
    a = per_query_table(labels, scores, offsets, np.arange(4), ks=[1, 5, 10])
    b = per_query_table(labels, scores, offsets, np.arange(4), ks=[1, 5, 10],
                        conventions=MetricConventions(discount="log2_rank_plus_1"))  # fmt: skip
    assert a.equals(b)
    # the reference of the metrics docstring: NDCG@5 = 0.838647 (exp), 0.907591 (linear)
    one = per_query_table(np.array(GUIDE_LIST), np.array([5.0, 4, 3, 2, 1]), np.array([0, 5]), np.array([1]), ks=[5])
    assert round(float(one.loc[0, "ndcg_at_5"]), 6) == 0.838647


def test_jarvelin_base() -> None:
    # base 3: ranks 1 and 2 undiscounted, rank r >= 3 divided by log3(r)
    d = MetricConventions(discount="jarvelin", discount_base=3.0).discounts(4)
    assert d.tolist() == pytest.approx([1.0, 1.0, 1.0, math.log(3) / math.log(4)], abs=1e-15)
    with pytest.raises(ValueError, match=r"discount_base=1\.0 must be a number > 1"):
        MetricConventions(discount="jarvelin", discount_base=1.0)


def test_ltr_evaluate_discount(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"1 0 d{i} {lab}\n" for i, lab in enumerate(GUIDE_LIST)))
    run.write_text("".join(f"1 Q0 d{i} {i + 1} {10 - i} t\n" for i in range(5)))
    argv = ["--qrels", str(qrels), "--run", str(run), "--k", "5", "--gain", "linear", "--json"]
    assert main([*argv, "--discount", "jarvelin"]) == 0
    out = json.loads(capsys.readouterr().out)
    ideal = sorted(GUIDE_LIST, reverse=True)
    assert abs(out["ndcg_at_5"] - guide_dcg_classic(GUIDE_LIST) / guide_dcg_classic(ideal)) <= 1e-12
    assert main(argv) == 0
    assert round(json.loads(capsys.readouterr().out)["ndcg_at_5"], 6) == 0.907591
