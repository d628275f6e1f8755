"""``ltr evaluate --measure``: a subset of the measures gives exactly the full run's values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.evaluate import main as evaluate_main
from ltr.errors import LtrUserError
from ltr.experiment.external import MEASURE_NAMES, evaluate_rankings
from ltr.metrics.summary import is_metric_column, summarize
from ltr.metrics.table import per_query_columns

SUBSETS = [["ndcg"], ["ap"], ["p", "rr"], ["err", "dcg", "idcg"], ["recall"], ["rr"], "ndcg,ap"]


def _write_trec(folder: Path, seed: int) -> tuple[Path, Path]:
    """A TREC qrels and run: 40 topics, lists of 0-70 docs with tied scores, graded labels,
    judged docs the run misses, and topics with nothing relevant (IDCG = 0)."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for t in range(40):
        n_docs = int(rng.integers(0, 71))
        for d in range(n_docs + 5):
            if rng.random() < 0.6:
                label = 0 if t % 7 == 0 else int(rng.choice(4, p=[0.5, 0.3, 0.15, 0.05]))
                qrels.append(f"t{t} 0 d{d} {label}\n")
        for rank, d in enumerate(rng.permutation(n_docs)):
            run.append(f"t{t} Q0 d{d} {rank + 1} {float(rng.integers(0, 8)):.1f} x\n")
    (folder / "qrels").write_text("".join(qrels) or "t0 0 d0 1\n")
    (folder / "run").write_text("".join(run))
    return folder / "qrels", folder / "run"


@pytest.mark.parametrize("zero_idcg", ["zero", "skip"])
@pytest.mark.parametrize("subset", SUBSETS, ids=str)
def test_a_subset_of_measures_has_the_full_runs_values(
    tmp_path: Path, subset: list[str] | str, zero_idcg: str
) -> None:
    qrels, run = _write_trec(tmp_path, seed=7)
    options = {"qrels": qrels, "run": run, "k": [1, 5, 10], "zero_idcg": zero_idcg}
    full = evaluate_rankings(**options)  # type: ignore[arg-type]
    part = evaluate_rankings(**options, measures=subset)  # type: ignore[arg-type]
    names = subset.split(",") if isinstance(subset, str) else subset
    assert set(part.measures) == set(names)
    asked = {m.key for m in part.table_measures()}
    assert asked
    assert all(m.name in names for m in part.table_measures())
    # every key of the subset is the full run's key with the same value, bit for bit
    for key, value in part.summary.items():
        assert full.summary[key] == value or (value is None and full.summary[key] is None), key
    # and the subset has every key of the full run for its measures, and the counts
    wanted = {key for key in full.summary if not is_metric_column(key.split("/")[0]) or key.split("/")[0] in asked}
    assert set(part.summary) == wanted
    if zero_idcg == "skip":  # the count reads nDCG, asked for or not
        assert part.summary["n_skipped_zero_idcg"] == full.summary["n_skipped_zero_idcg"] > 0
    # the per-query table: the measures asked for, the same per-query values
    assert [c for c in part.table.columns if is_metric_column(str(c))] == [m.key for m in part.table_measures()]
    for key in asked:
        np.testing.assert_array_equal(part.table[key].to_numpy(), full.table[key].to_numpy())


@pytest.mark.parametrize("zero_idcg", ["zero", "skip"])
def test_the_columns_summarise_as_the_table_does_bit_for_bit(tmp_path: Path, zero_idcg: str) -> None:
    """``ltr evaluate`` summarises the per-query columns without pandas: the same summary as the
    DataFrame's, the table made of them is the columns plus the stratum of each list."""
    qrels, run = _write_trec(tmp_path, seed=11)
    result = evaluate_rankings(qrels=qrels, run=run, k=[1, 5, 10], zero_idcg=zero_idcg, strata="1,5,30")
    table = result.table
    assert list(table.columns) == ["qid", "list_len", "stratum", *[c for c in result.columns if c not in ("qid", "list_len")]]
    for name, values in result.columns.items():
        np.testing.assert_array_equal(table[name].to_numpy(), values)
    assert list(table["stratum"].cat.categories) == ["empty", "1-4", "5-29", "30+"]
    assert table["stratum"].astype(str).tolist() == [
        "empty" if n == 0 else "1-4" if n < 5 else "5-29" if n < 30 else "30+" for n in result.columns["list_len"]
    ]
    from_columns, from_table = summarize(result.columns, strata=result.strata), summarize(table, strata=result.strata)
    assert list(from_columns) == list(from_table)
    assert all(from_columns[k] == from_table[k] or (np.isnan(from_columns[k]) and np.isnan(from_table[k])) for k in from_table)
    assert from_columns["n_queries/len_empty"] > 0  # empty lists are there to be summarised


def test_per_query_columns_are_per_query_tables_columns() -> None:
    labels, scores = np.array([2, 3, 1, 0, 2, 1, 0]), np.array([5.0, 4, 3, 2, 1, 0.5, 0.5])
    offsets, qids = np.array([0, 5, 5, 7]), np.array(["a", "b", "c"])
    columns = per_query_columns(labels, scores, offsets, qids, ks=[5])
    # hand-checked (docs/DESIGN 2): labels [2,3,1,0,2] in that order give NDCG@5 0.838647 (exp gain)
    assert round(float(columns["ndcg_at_5"][0]), 6) == 0.838647
    assert columns["list_len"].tolist() == [5, 0, 2]
    assert list(columns)[:3] == ["qid", "list_len", "n_relevant"]


def test_the_default_is_every_measure(tmp_path: Path) -> None:
    qrels, run = _write_trec(tmp_path, seed=3)
    every = evaluate_rankings(qrels=qrels, run=run, measures=list(MEASURE_NAMES))
    default = evaluate_rankings(qrels=qrels, run=run)
    assert list(default.summary) == list(every.summary)
    assert list(default.table.columns) == list(every.table.columns)
    assert {"ndcg_at_10", "ap", "rr", "idcg_at_5", "err_at_10"} <= set(default.summary)


def test_the_cli_prints_only_the_measures_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _write_trec(tmp_path, seed=5)
    base = ["--qrels", str(qrels), "--run", str(run), "--k", "10", "--json"]
    assert evaluate_main([*base]) == 0
    full = json.loads(capsys.readouterr().out)
    assert evaluate_main([*base, "--measure", "ndcg", "--measure", "rr"]) == 0
    part = json.loads(capsys.readouterr().out)
    metric_keys = {key.split("/")[0] for key in part if is_metric_column(key.split("/")[0])}
    assert metric_keys == {"ndcg_at_10", "rr_at_10", "rr"}
    assert {key: full[key] for key in part} == part


@pytest.mark.parametrize(
    ("measures", "says"),
    [(["ndgc"], "--measure 'ndgc' is not a measure; did you mean 'ndcg'?"), ([","], "--measure: give some of")],
)
def test_an_unknown_measure_is_one_line(tmp_path: Path, measures: list[str], says: str) -> None:
    qrels, run = _write_trec(tmp_path, seed=1)
    with pytest.raises(LtrUserError) as caught:
        evaluate_rankings(qrels=qrels, run=run, measures=measures)
    assert str(caught.value).startswith(says)
    assert "\n" not in str(caught.value)
