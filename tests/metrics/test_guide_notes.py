"""The low-IDCG note, and the docstring examples of the modules issue 27 added."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.cli.evaluate import main
from ltr.metrics.reports.idcg_report import low_idcg_note

MODULES = [
    "ltr.metrics.clicks.exposure", "ltr.metrics.reports.label_audit", "ltr.metrics.reports.idcg_report",
    "ltr.metrics.measures", "ltr.metrics.conventions", "ltr.metrics.composite",
]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_note_only_when_low_idcg_queries_dominate() -> None:
    t = pd.DataFrame({
        "idcg_at_10": [1.0, 0.5, 3.0, 4.0], "ndcg_at_10": [1.0, 0.0, 0.5, 0.25], "err_at_10": [0.2, 0.0, 0.3, 0.1],
    })  # fmt: skip
    assert low_idcg_note(t, 10) is None  # half is not "dominate"
    t.loc[2, "idcg_at_10"] = 1.0
    note = low_idcg_note(t, 10, split="test")
    # low: rows 0-2, NDCG mean (1 + 0 + 0.5) / 3 = 0.5; rest 0.25; all 1.75 / 4; ERR 0.6 / 4
    assert note == (
        "test: 75 % of the queries have IDCG@10 <= 1 (one marginally relevant document at most): they pull the "
        "mean nDCG@10 0.4375 towards their own 0.5000 (the other 25 %: 0.2500); ERR@10 0.1500 is the steadier "
        "figure here"
    )


def test_ltr_evaluate_prints_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # three topics with one relevant doc of grade 1 each (IDCG@10 = 1), one with grade 3
    qrels = "".join(f"{t} 0 {t}a {g}\n{t} 0 {t}b 0\n" for t, g in (("1", 1), ("2", 1), ("3", 1), ("4", 3)))
    run = "".join(f"{t} Q0 {t}b 1 2.0 r\n{t} Q0 {t}a 2 1.0 r\n" for t in "1234")
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    assert main(["--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "--gain", "linear"]) == 0
    out = capsys.readouterr().out
    ndcg = 1 / np.log2(3)  # every relevant doc at rank 2
    err_low = (1 / 4) / 2  # stop probability 1 / (3 + 1) at rank 2; grade 3: 3/4 / 2
    err = (3 * err_low + (3 / 4) / 2) / 4
    assert (
        f"75 % of the queries have IDCG@10 <= 1 (one marginally relevant document at most): they pull the mean "
        f"nDCG@10 {ndcg:.4f} towards their own {ndcg:.4f} (the other 25 %: {ndcg:.4f}); ERR@10 {err:.4f}"
    ) in out.replace("\n", " ")


@pytest.mark.parametrize(("measure", "noted"), [(None, True), ("ndcg", True), ("ndcg,p", True), ("err", False), ("p", False)])
def test_the_note_comes_with_ndcg_whatever_else_is_shown(
    measure: str | None, noted: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three of four queries with IDCG@10 <= 1 (one relevant document of grade 1); the note is
    computed from IDCG, nDCG and ERR even when --measure shows nDCG alone, and nothing else is shown."""
    (tmp_path / "low.txt").write_text(
        "1 qid:1 1:0\n0 qid:1 1:0\n1 qid:2 1:0\n0 qid:2 1:0\n0 qid:3 1:0\n1 qid:3 1:0\n2 qid:4 1:0\n1 qid:4 1:0\n"
    )
    (tmp_path / "low.s").write_text("1\n0\n0\n1\n1\n0\n1\n0\n")
    argv = ["--data", str(tmp_path / "low.txt"), "--scores", str(tmp_path / "low.s")]
    assert main([*argv, *(["--measure", measure] if measure else [])]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    # ERR@10, stop probability (2**g - 1) / 2**2: query 1 (grade 1 at rank 1): 1/4; queries 2 and 3 (grade 1
    # at rank 2, below a 0): 1/4 / 2; query 4 (grade 2, then 1): 3/4 + (1 - 3/4) * 1/4 / 2
    err = (1 / 4 + 1 / 8 + 1 / 8 + (3 / 4 + 1 / 32)) / 4  # 41/128
    assert ("75 % of the queries have IDCG@10 <= 1" in out) == noted
    if noted:
        assert f"ERR@10 {err:.4f} is the steadier figure here" in out
    if measure == "ndcg":
        assert "ERR@" not in out.split("75 %")[0]  # the table shows nDCG only
