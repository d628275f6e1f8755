"""Issue 48, the metric speaks the business: value gains, position weights, composites and K
notes in ``ltr evaluate``, hand-computed (the ranked gains in a comment, the value a formula)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.cli import evaluate as evaluate_cli
from ltr.errors import LtrUserError
from ltr.experiment.external import evaluate_rankings
from ltr.metrics import MetricConventions, resolve_conventions
from ltr.metrics.table import per_query_columns

#: Revenue of the five documents, in ranked order (score 5, 4, 3, 2, 1).
REVENUE = [12.5, 0.0, 3.0, 40.0, 7.25]
#: DCG@5 = 12.5/log2(2) + 0/log2(3) + 3/log2(4) + 40/log2(5) + 7.25/log2(6)
DCG5 = 12.5 / math.log2(2) + 0.0 / math.log2(3) + 3.0 / math.log2(4) + 40.0 / math.log2(5) + 7.25 / math.log2(6)
#: IDCG@5: the same values in the ideal order 40, 12.5, 7.25, 3, 0
IDCG5 = 40.0 / math.log2(2) + 12.5 / math.log2(3) + 7.25 / math.log2(4) + 3.0 / math.log2(5) + 0.0 / math.log2(6)
#: DCG@3 and IDCG@3 with the position weights 1, 0.7, 0.5 (positions beyond weigh 0)
WDCG3 = 1.0 * 12.5 + 0.7 * 0.0 + 0.5 * 3.0
WIDCG3 = 1.0 * 40.0 + 0.7 * 12.5 + 0.5 * 7.25
#: ... and at K = 5: positions 4 and 5 weigh 0, so DCG@5 = DCG@3
WDCG5, WIDCG5 = WDCG3, WIDCG3


@pytest.fixture
def trec(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    run = tmp_path / "run.txt"
    qrels.write_text("".join(f"q1 0 d{i} {v:g}\n" for i, v in enumerate(REVENUE)))
    run.write_text("".join(f"q1 Q0 d{i} {i + 1} {5 - i}.0 r\n" for i in range(5)))
    return qrels, run


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    assert evaluate_cli.main([*argv, "--json"]) == 0
    out: dict[str, float] = json.loads(capsys.readouterr().out)
    return out


def test_value_gains_by_hand(trec: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = trec
    s = _cli_json(["--qrels", str(qrels), "--run", str(run), "--gain", "value", "--k", "5", "--measure", "ndcg,dcg,idcg"], capsys)
    assert s["dcg_at_5"] == pytest.approx(DCG5, abs=1e-12)
    assert s["idcg_at_5"] == pytest.approx(IDCG5, abs=1e-12)
    assert s["ndcg_at_5"] == pytest.approx(DCG5 / IDCG5, abs=1e-12)


def test_position_weights_by_hand(trec: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    qrels, run = trec
    argv = ["--qrels", str(qrels), "--run", str(run), "--gain", "value", "--k", "3", "--k", "5", "--measure", "ndcg,dcg,idcg"]
    s = _cli_json([*argv, "--discount", "1,0.7,0.5"], capsys)
    assert s["dcg_at_3"] == pytest.approx(WDCG3, abs=1e-12)
    assert s["idcg_at_3"] == pytest.approx(WIDCG3, abs=1e-12)
    assert s["ndcg_at_3"] == pytest.approx(WDCG3 / WIDCG3, abs=1e-12)
    assert s["ndcg_at_5"] == pytest.approx(WDCG5 / WIDCG5, abs=1e-12)
    weights = tmp_path / "placements.txt"
    weights.write_text("# weight per placement\n1.0\n0.7\n0.5\n")
    assert _cli_json([*argv, "--discount", str(weights)], capsys) == s


def test_value_gains_from_tables_and_text(tmp_path: Path) -> None:
    parquet = tmp_path / "revenue.parquet"
    pd.DataFrame({"qid": [1] * 5, "revenue": REVENUE}).to_parquet(parquet)
    text = tmp_path / "revenue.txt"
    text.write_text("".join(f"{v:g} qid:1 1:0\n" for v in REVENUE))
    scores = [5.0, 4.0, 3.0, 2.0, 1.0]
    for data, column in ((parquet, "revenue"), (text, "label")):
        r = evaluate_rankings(data=data, scores=scores, gain="value", k=[5], label_column=column)
        assert r.summary["ndcg_at_5"] == pytest.approx(DCG5 / IDCG5, abs=1e-12)
    with pytest.raises(LtrUserError, match=r"label 12\.5 at line 1 of .*revenue.txt is not an integer grade; --gain value"):
        evaluate_rankings(data=text, scores=scores, k=[5])
    with pytest.raises(LtrUserError, match=r"label 12\.5 at row 1 of .* \(column 'revenue'\) is not an integer grade; --gain value"):
        evaluate_rankings(data=parquet, scores=scores, k=[5], label_column="revenue")


def test_integer_grades_as_values_equal_linear_gain() -> None:
    labels = np.array([2, 3, 1, 0, 2])
    scores = np.array([5.0, 4, 3, 2, 1])
    args = (scores, np.array([0, 5]), np.array([7]))
    linear = per_query_columns(labels, *args, ks=[1, 3, 5], conventions=MetricConventions(gain="linear"))
    value = per_query_columns(labels.astype(float), *args, ks=[1, 3, 5], conventions=MetricConventions(gain="value"))
    for key in ("ndcg_at_5", "dcg_at_3", "p_at_3", "rr", "ap", "err_at_5"):
        assert np.array_equal(linear[key], value[key]), key


def test_integer_grades_unchanged_by_default() -> None:
    c = per_query_columns(np.array([2, 3, 1, 0, 2]), np.array([5.0, 4, 3, 2, 1]), np.array([0, 5]), np.array([7]), ks=[5])
    assert round(float(c["ndcg_at_5"][0]), 6) == 0.838647


def test_value_gains_refused_where_they_cannot_be(trec: tuple[Path, Path]) -> None:
    qrels, run = trec
    for preset in ("lightgbm", "sklearn", "trec_eval"):
        with pytest.raises(ValueError, match=f"preset '{preset}' refuses gain='value'"):
            resolve_conventions(preset, gain="value")
    with pytest.raises(LtrUserError, match=r"relevance '12\.5' \(topic q1\) is not an integer; .*--gain value"):
        evaluate_rankings(qrels=qrels, run=run)
    qrels.write_text("q1 0 d0 -3.5\n")
    with pytest.raises(LtrUserError, match=r"line 1 of .*: relevance '-3\.5' .*>= 0"):
        evaluate_rankings(qrels=qrels, run=run, gain="value")
    with pytest.raises(LtrUserError, match=r"--discount weight -1 at position 2"):
        evaluate_rankings(qrels=qrels, run=run, discount="1,-1")


def test_composite_in_evaluate_equals_train(tmp_path: Path) -> None:
    """``ltr evaluate --composite`` and ``ltr train``'s ``eval.composite``: one value, overall, per
    stratum and per query, for the same per-query table."""
    from ltr.experiment.checks import check_config
    from ltr.experiment.evaluation import split_summary
    from tests.conftest import compose_train

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 40, size=60)
    n = int(sizes.sum())
    data = tmp_path / "test.txt"
    labels = rng.integers(0, 4, size=n)
    qids = np.repeat(np.arange(sizes.shape[0]), sizes)
    data.write_text("".join(f"{lab} qid:{q} 1:0\n" for lab, q in zip(labels, qids, strict=True)))
    scores = rng.normal(size=n)
    r = evaluate_rankings(data=data, scores=scores, k=[5, 10], composite=["blend=0.4*ndcg_at_3+0.6*ndcg_at_10"])
    spec = check_config(compose_train(["+eval.composite.blend={ndcg_at_3: 0.4, ndcg_at_10: 0.6}"]))
    full = evaluate_rankings(data=data, scores=scores, k=[3, 10])  # the table train would have
    table, summary = split_summary(spec, full.table)
    for key in ("blend", "blend/len_1-10", "blend/len_11-50"):
        assert r.summary[key] == summary[key], key
    np.testing.assert_array_equal(r.columns["blend"], table["blend"].to_numpy())
    assert "ndcg_at_3" not in r.summary  # a part's cut-off is computed, not shown


def test_k_note_on_short_lists(trec: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = trec
    assert evaluate_cli.main(["--qrels", str(qrels), "--run", str(run), "--k", "100", "--gain", "value"]) == 0
    err = capsys.readouterr().err
    assert "note: K=100 exceeds the longest list (5 documents)" in err
    assert evaluate_cli.main(["--qrels", str(qrels), "--run", str(run), "--k", "5", "--gain", "value"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_one_composite_syntax_for_a_sweep_objective() -> None:
    """``optimized_metric`` takes the text of ``ltr evaluate --composite`` after the split."""
    from ltr.experiment.checks import check_config
    from tests.conftest import compose_train

    spec = check_config(compose_train(['optimized_metric="valid/blend=0.4*ndcg_at_3+0.6*ndcg_at_10"']))
    assert spec.optimized_metric == "valid/blend"
    assert spec.composites == {"blend": {"ndcg_at_3": 0.4, "ndcg_at_10": 0.6}}
    assert 3 in spec.table_ks
    assert spec.params()["eval.composite.blend.ndcg_at_3"] == 0.4
    with pytest.raises(LtrUserError, match=r"'0\.4\*ndcg@3' is not weight\*measure"):
        check_config(compose_train(['optimized_metric="valid/blend=0.4*ndcg@3"']))


def test_train_refuses_value_gains_with_the_rule_and_takes_position_weights() -> None:
    from ltr.experiment.checks import check_config
    from ltr.experiment.record import discount_text
    from tests.conftest import compose_train

    with pytest.raises(LtrUserError, match=r"eval.gain=value: .*integer grades.*ltr evaluate --gain value"):
        check_config(compose_train(["eval.gain=value"]))
    spec = check_config(compose_train(["eval.position_weights=[1.0,0.7,0.5]"]))
    assert spec.conventions.discount == (1.0, 0.7, 0.5)
    assert spec.params()["eval.discount"] == "weights 1,0.7,0.5"
    assert discount_text(spec.conventions) == "weights 1,0.7,0.5"
    with pytest.raises(LtrUserError, match=r"eval.position_weights replaces eval.discount=jarvelin"):
        check_config(compose_train(["eval.position_weights=[1.0]", "eval.discount=jarvelin"]))
