"""``ltr evaluate``: both input kinds, the outputs, and one-line user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ltr.cli.evaluate import main
from ltr.errors import DataError, LtrUserError

from .conftest import LOG2_3

QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 x 1\n3 0 z 1\n"
# topic 1 ranks a, c, b; b and c tie and docno descending puts c first
RUN = "1 Q0 a 1 3.0 r\n1 Q0 b 2 1.0 r\n1 Q0 c 3 1.0 r\n2 Q0 x 1 5.0 r\n"


@pytest.fixture
def trec(tmp_path: Path) -> tuple[Path, Path]:
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, float]:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_trec_input_json(trec: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    q, r = trec
    out = _json(capsys, ["--qrels", str(q), "--run", str(r), "--preset", "trec_eval", "--k", "3"])
    # topic 1: ranked [2, 1, 0] (ideal) -> 1; topic 2: 1; topic 3: judged, not retrieved -> 0
    assert out["ndcg_at_3"] == pytest.approx(2 / 3)
    assert out["n_queries"] == 3
    assert out["no_result_rate"] == pytest.approx(1 / 3)
    assert out["n_queries/len_1-10"] == 2
    # counts are integers in the JSON; the means stay floats
    counts = {key: value for key, value in out.items() if key.split("/")[0].startswith("n_")}
    assert {"n_queries", "n_queries/len_51_plus", "n_skipped_zero_idcg", "n_run_topics_unjudged"} <= set(counts)
    assert all(type(value) is int for value in counts.values()), counts
    assert type(out["no_result_rate"]) is float


def test_missing_topics_skip(trec: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    q, r = trec
    out = _json(
        capsys, ["--qrels", str(q), "--run", str(r), "--missing-topics", "skip", "--k", "3"]
    )
    assert out["n_queries"] == 2


def test_table_output_and_per_query(
    trec: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q, r = trec
    for name in ("pq.csv", "pq.parquet"):
        assert main(["--qrels", str(q), "--run", str(r), "--per-query", str(tmp_path / name)]) == 0
        text = capsys.readouterr().out
        assert "nDCG@10" in text
        assert "len 11-50" in text
        t = (
            pd.read_csv(tmp_path / name)
            if name.endswith("csv")
            else pd.read_parquet(tmp_path / name)
        )
        assert len(t) == 3
        assert "ndcg_at_10" in t.columns


def test_data_and_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.txt"
    data.write_text("1 qid:7 1:0.1\n0 qid:7 1:0.2\n2 qid:8 1:0.3\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.1\n0.9\n0.5\n")
    out = _json(
        capsys, ["--data", str(data), "--scores", str(scores), "--gain", "linear", "--k", "2"]
    )
    # qid 7 ranked [0, 1]: (1/log2 3) / 1; qid 8: 1
    assert out["ndcg_at_2"] == pytest.approx((1 / LOG2_3 + 1) / 2)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("1 Q0 a 1\n", "line 1 of .*: expected at least 6 fields"),
        ("1 Q0 a 1 1.0 r\n1 Q0 b 2 nan r\n", "line 2 of .*: score 'nan'"),
        ("1 Q0 a 1 1.0 r\n1 Q0 a 2 0.5 r\n", "line 2 of .*: docno a is ranked twice"),
    ],
)
def test_trec_errors(tmp_path: Path, run: str, message: str) -> None:
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(run)
    with pytest.raises(DataError, match=message):
        main(["--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r")])


def test_scores_errors(tmp_path: Path) -> None:
    data = tmp_path / "d.txt"
    data.write_text("1 qid:7 1:0.1\n0 qid:7 1:0.2\n")
    bad = tmp_path / "s.txt"
    bad.write_text("0.1\nNaN\n")
    with pytest.raises(DataError, match=r"line 2 of .*: score 'NaN' is not a finite number"):
        main(["--data", str(data), "--scores", str(bad)])
    bad.write_text("0.1\nhigh\n")
    with pytest.raises(DataError, match=r"line 2 of .*: score 'high' is not a number"):
        main(["--data", str(data), "--scores", str(bad)])
    bad.write_text("0.1\n")
    with pytest.raises(DataError, match=r"has 1 scores; data file .* has 2 rows"):
        main(["--data", str(data), "--scores", str(bad)])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--qrels", "q"], "give either --qrels and --run, or --data and --scores"),
        (["--qrels", "q", "--run", "r", "--k", "0"], "--k values must be"),
        (["--qrels", "q", "--run", "r", "--strata", "0,5"], "first lower edge must be 1"),
        (["--qrels", "q", "--run", "r", "--per-query", "x.txt"], "must end in .csv or .parquet"),
        (["--qrels", "q", "--run", "r", "--label-gain", "0,a"], "not a comma-separated list"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(LtrUserError, match=message):
        main(argv)


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read qrels file"):
        main(["--qrels", str(tmp_path / "nope"), "--run", str(tmp_path / "nope2")])


def test_json_out_docstring_examples() -> None:
    import doctest

    import ltr.cli.support.json_out

    result = doctest.testmod(ltr.cli.support.json_out)
    assert result.attempted > 0
    assert result.failed == 0
