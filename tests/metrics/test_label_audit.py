"""``ltr labels``: agreement, kappa and the NDCG a change of labels moves, recomputed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.cli.labels import main
from ltr.cli.main import main as ltr_main
from ltr.metrics.reports.label_audit import label_agreement

N_Q, N_DOC = 12, 9


def _data() -> pd.DataFrame:
    """12 queries x 9 docs; B = A + 1 on every third document (a third of them), scores random."""
    rng = np.random.default_rng(5)
    qid = np.repeat([f"q{i}" for i in range(N_Q)], N_DOC)
    docno = np.tile([f"d{j}" for j in range(N_DOC)], N_Q)
    a = rng.integers(0, 4, N_Q * N_DOC)
    b = a + (np.arange(N_Q * N_DOC) % 3 == 0)
    score = rng.normal(size=N_Q * N_DOC)
    return pd.DataFrame({"qid": qid, "docno": docno, "old": a, "new": b, "score": score})


def _kappa_by_hand(a: np.ndarray, b: np.ndarray) -> float:
    """Quadratic-weighted Cohen's kappa: 1 - sum(w * observed) / sum(w * expected), w = (i - j)^2."""
    grades = sorted(set(a) | set(b))
    idx = {g: i for i, g in enumerate(grades)}
    n = len(grades)
    obs = np.zeros((n, n))
    for x, y in zip(a, b, strict=True):
        obs[idx[x], idx[y]] += 1
    exp = np.outer(obs.sum(1), obs.sum(0)) / obs.sum()
    w = np.array([[(i - j) ** 2 for j in range(n)] for i in range(n)], dtype=float)
    return float(1 - (w * obs).sum() / (w * exp).sum())


def _ndcg10_by_hand(labels: list[int], scores: list[float]) -> float:
    ranked = [lab for _, lab in sorted(zip(scores, labels, strict=True), key=lambda t: -t[0])]
    dcg = sum((2**g - 1) / math.log2(p + 2) for p, g in enumerate(ranked[:10]))
    ideal = sorted(labels, reverse=True)
    idcg = sum((2**g - 1) / math.log2(p + 2) for p, g in enumerate(ideal[:10]))
    return dcg / idcg if idcg > 0 else 0.0


def test_shift_by_one_grade_on_a_third(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data()
    # two qrels files for A and B, scores as a TREC run
    (tmp_path / "a.qrels").write_text("".join(f"{r.qid} 0 {r.docno} {r.old}\n" for r in d.itertuples()))
    (tmp_path / "b.qrels").write_text("".join(f"{r.qid} 0 {r.docno} {r.new}\n" for r in d.itertuples()))
    (tmp_path / "run").write_text("".join(f"{r.qid} Q0 {r.docno} 0 {r.score!r} t\n" for r in d.itertuples()))
    argv = [str(tmp_path / "a.qrels"), str(tmp_path / "b.qrels"), "--scores", str(tmp_path / "run"), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    a, b = d["old"].to_numpy(), d["new"].to_numpy()
    assert out["n_pairs"] == N_Q * N_DOC
    assert out["exact_agreement"] == pytest.approx(2 / 3)
    assert out["kappa_quadratic"] == pytest.approx(_kappa_by_hand(a, b), abs=1e-12)
    assert out["shift"]["0"]["mean_shift"] == pytest.approx(float(np.mean(b[a == 0] - 0)))
    per_q = {side: [] for side in ("old", "new")}
    for _, g in d.groupby("qid"):
        for side in per_q:
            per_q[side].append(_ndcg10_by_hand(g[side].tolist(), g["score"].tolist()))
    moved = float(np.mean(per_q["new"]) - np.mean(per_q["old"]))
    assert out["ndcg"]["b_minus_a"]["ndcg_at_10"] == pytest.approx(moved, abs=1e-12)
    assert out["ndcg"]["a"]["ndcg_at_10"] == pytest.approx(float(np.mean(per_q["old"])), abs=1e-12)
    # the same from one table with two columns (and the printed sentence)
    d.to_csv(tmp_path / "t.csv", index=False)
    assert main([str(tmp_path / "t.csv"), "--columns", "old", "new", "--scores", str(tmp_path / "t.csv")]) == 0
    text = capsys.readouterr().out
    assert f"same ranking, the labels moved nDCG@10 by {moved:+.4f}" in text
    assert "kappa (quadratic)" in text


def test_sample_is_seeded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _data().to_parquet(tmp_path / "t.parquet")
    runs = []
    for seed in (1, 1, 2):
        assert main([str(tmp_path / "t.parquet"), "--columns", "old", "new", "--sample", "4", "--seed", str(seed), "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0] == runs[1]
    assert runs[0]["n_queries"] == 4
    assert runs[0]["n_pairs"] == 4 * N_DOC


def test_agreement_of_identical_labels() -> None:
    a = label_agreement(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3]))
    assert a.exact == 1.0
    assert a.kappa == pytest.approx(1.0)
    assert a.confusion.trace() == 4


def test_missing_pair_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.csv").write_text("qid,docno,label\n1,x,1\n1,y,0\n2,z,2\n")
    (tmp_path / "b.csv").write_text("qid,docno,label\n1,x,1\n2,z,1\n")
    assert ltr_main(["labels", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "1 (query, document) pair(s)" in err
    assert "qid 1 docno y" in err
    (tmp_path / "c.csv").write_text("qid,docno,label\n1,x,one\n")
    assert ltr_main(["labels", str(tmp_path / "c.csv"), str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "row 1: label 'one' is not an integer" in err


def test_json_counts_are_integers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _data()
    d[["qid", "docno", "old", "new", "score"]].to_csv(tmp_path / "t.csv", index=False)
    d[["qid", "docno", "score"]].to_csv(tmp_path / "s.csv", index=False)
    assert main([str(tmp_path / "t.csv"), "--columns", "old", "new", "--scores", str(tmp_path / "s.csv"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert type(out["n_queries"]) is int
    assert type(out["n_pairs"]) is int
    assert all(type(s["n"]) is int for s in out["shift"].values())
    assert sum(s["n"] for s in out["shift"].values()) == N_Q * N_DOC
    assert out["ndcg"]["a"]["n_queries"] == N_Q
    assert type(out["ndcg"]["a"]["n_queries"]) is int
    assert type(out["ndcg"]["a"]["ndcg_at_10"]) is float


def test_scores_of_other_pairs_name_the_scores_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The label sets agree; the scores lack a judged pair (a TREC run ranks some of the judged
    documents), or score a pair nobody judged: the line names the scores file and what to do."""
    (tmp_path / "a.qrels").write_text("1 0 x 1\n1 0 y 0\n2 0 z 2\n")
    (tmp_path / "b.qrels").write_text("1 0 x 1\n1 0 y 1\n2 0 z 2\n")
    (tmp_path / "part.run").write_text("1 Q0 x 1 2.0 r\n2 Q0 z 1 1.0 r\n")
    (tmp_path / "more.run").write_text("1 Q0 x 1 2.0 r\n1 Q0 y 2 1.0 r\n1 Q0 w 3 0.5 r\n2 Q0 z 1 1.0 r\n")
    sets = [str(tmp_path / "a.qrels"), str(tmp_path / "b.qrels")]
    assert ltr_main(["labels", *sets, "--scores", str(tmp_path / "part.run")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"ltr: error: --scores {tmp_path / 'part.run'} lacks 1 of the 3 judged (query, document) pairs, e.g. qid 1 "
        "docno y: NDCG under each label set needs a score for every judged pair; a TREC run usually ranks only some "
        "of the judged documents (and others that are not judged): score every judged document with your system, "
        "or give --run RUN --data FILE\n"
    )
    assert ltr_main(["labels", *sets, "--scores", str(tmp_path / "more.run")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ltr: error: --scores {tmp_path / 'more.run'} scores 1 (query, document) pair(s) that neither label set "
        "judges, e.g. qid 1 docno w: give scores of the judged pairs only\n"
    )


def test_trec_files_are_read_by_content_whatever_their_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run.txt`` and ``qrels.old`` are TREC files (issue 48: ``.txt`` was read as a table, "run.txt has
    no column 'qid'"); a ``.txt`` with a header row is still a table: one rule for every command."""
    (tmp_path / "qrels.old").write_text("1 0 x 1\n1 0 y 0\n2 0 z 2\n")
    (tmp_path / "qrels.new").write_text("1 0 x 1\n1 0 y 1\n2 0 z 2\n")
    (tmp_path / "run.txt").write_text("1 Q0 x 1 2.0 r\n1 Q0 y 2 1.0 r\n2 Q0 z 1 1.0 r\n")
    sets = [str(tmp_path / "qrels.old"), str(tmp_path / "qrels.new")]
    assert ltr_main(["labels", *sets, "--scores", str(tmp_path / "run.txt"), "--json"]) == 0
    by_trec = json.loads(capsys.readouterr().out)
    (tmp_path / "scores.txt").write_text("qid\tdocno\tscore\n1\tx\t2.0\n1\ty\t1.0\n2\tz\t1.0\n")
    assert ltr_main(["labels", *sets, "--scores", str(tmp_path / "scores.txt"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_trec
