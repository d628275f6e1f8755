"""``ltr evaluate`` on the edges of real TREC files (issue 18): each case against trec_eval.

Hand-computed cases for unjudged documents, unjudged run topics, byte docnos, large labels,
JSON, comment lines, ``--max-docs`` and ``--err-max-grade``; then trec_eval's published outputs
for the test files of trec_eval 10.0 (``test/``, read from ``shared/data``, skipped when absent).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ltr import api
from ltr.cli.evaluate import build_parser, main
from ltr.data.formats.trec import read_qrels, read_run, read_trec, read_trec_eval_output
from ltr.errors import DataError, LtrUserError
from ltr.metrics import per_query_table, resolve_conventions, summarize
from ltr.metrics.conventions import UNJUDGED

from .conftest import LOG2_3, LOG2_5, SHARED_DATA

TREC = SHARED_DATA / "trec_eval_test"
needs_trec = pytest.mark.skipif(not TREC.is_dir(), reason=f"{TREC} is absent")
FULL = 100_000  # longer than any ranking: trec_eval's uncut ndcg


def _write(tmp_path: Path, qrels: str | bytes, run: str | bytes) -> tuple[str, str]:
    q, r = tmp_path / "qrels", tmp_path / "run"
    for path, text in ((q, qrels), (r, run)):
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(q), str(r)


def _strict_json(text: str) -> Any:
    def no_constant(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=no_constant)


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main([*argv, "--json"]) == 0
    return _strict_json(capsys.readouterr().out)  # type: ignore[no-any-return]


def _per_query(tmp_path: Path, argv: list[str]) -> pd.DataFrame:
    out = tmp_path / "pq.csv"
    assert main([*argv, "--per-query", str(out), "--json"]) == 0
    return pd.read_csv(out, dtype={"qid": str}).set_index("qid")


# ---- 1. unjudged documents: gain 0, never relevant -------------------------------------------

# ir_measures tests/test_pytrec_eval.py::test_nDCG (values printed by trec_eval via pytrec_eval)
IRM_QRELS = (
    "0 0 D0 1\n0 0 D1 -1\n0 0 D2 0\n0 0 D3 2\n0 0 D4 0\n1 0 D0 1\n1 0 D3 2\n1 0 D4 -1\n1 0 D5 0\n"
)
IRM_RUN = (
    "0 0 D0 1 0.8 run\n0 0 D2 2 0.7 run\n0 0 D1 3 0.3 run\n0 0 D3 4 0.4 run\n0 0 D4 5 0.1 run\n"
    "1 0 D1 1 0.8 run\n1 0 D4 2 0.7 run\n1 0 D3 3 0.3 run\n1 0 D2 4 0.4 run\n"
)


@pytest.mark.parametrize(
    ("extra", "col", "want"),
    [
        ([], f"ndcg_at_{FULL}", {"0": 0.76018, "1": 0.32739}),
        ([], "ndcg_at_3", {"0": 0.76018, "1": 0.0}),
        # nDCG(gains={0:1,1:4}): label 0 has gain 1, the unjudged D1 and D2 have none
        (["--label-gain", "1,4,2"], f"ndcg_at_{FULL}", {"0": 0.97177, "1": 0.14949}),
    ],
)
def test_ir_measures_ndcg_cases(
    tmp_path: Path, extra: list[str], col: str, want: dict[str, float]
) -> None:
    q, r = _write(tmp_path, IRM_QRELS, IRM_RUN)
    t = _per_query(
        tmp_path,
        ["--qrels", q, "--run", r, "--preset", "trec_eval", "--k", "3", "--k", str(FULL), *extra],
    )
    for topic, v in want.items():  # ir_measures' values are cut to 5 decimals
        assert t.loc[topic, col] == pytest.approx(v, abs=1e-5)


def test_gains_0_1_4_topic_1_by_hand(tmp_path: Path) -> None:
    # topic 1 ranks D1 (unjudged), D4 (-1), D2 (unjudged), D3 (2): DCG = 2 / log2 5; the ideal
    # is D0 (gain 4), D3 (2), D5 (label 0, gain 1): 4 + 2 / log2 3 + 1 / 2 -> 0.149490
    q, r = _write(tmp_path, IRM_QRELS, IRM_RUN)
    t = _per_query(
        tmp_path,
        ["--qrels", q, "--run", r, "--preset", "trec_eval", "--k", "10", "--label-gain", "1,4,2"],
    )
    want = (2 / LOG2_5) / (4 + 2 / LOG2_3 + 0.5)
    assert t.loc["1", "ndcg_at_10"] == pytest.approx(want, rel=1e-12)
    # trec_eval (pytrec_eval 0.5, qrels mapped to gains as ir_measures does) prints
    # 0.14949221081822212; ir_measures' test rounds it to 0.14949
    assert t.loc["1", "ndcg_at_10"] == pytest.approx(0.14949221081822212, abs=1e-15)


def test_unjudged_never_relevant_with_rel_threshold_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # trec_eval -l0: every judged doc is relevant; the unjudged top doc is not: P@1 = 0, RR 1/2
    q, r = _write(tmp_path, "1 0 a 0\n", "1 Q0 x 1 2.0 r\n1 Q0 a 2 1.0 r\n")
    out = _run(
        capsys,
        ["--qrels", q, "--run", r, "--preset", "trec_eval", "--rel-threshold", "0", "--k", "1"],
    )
    assert out["p_at_1"] == 0.0
    assert out["rr"] == 0.5
    assert out["n_rows_unjudged"] == 1


def test_unjudged_label_is_below_every_threshold(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("1 Q0 x 1 2.0 r\n1 Q0 a 2 1.0 r\n")
    qrels.write_text("1 0 a 1\n")
    inp = read_trec(run, qrels)
    assert inp.labels.tolist() == [UNJUDGED, 1]
    with pytest.raises(ValueError, match="unjudged rows"):
        resolve_conventions(None, rel_threshold=UNJUDGED)


# ---- 2. topics: unjudged run topics ignored and counted; judged topics without run lines ------


def test_unjudged_run_topic_is_ignored_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q, r = _write(tmp_path, "1 0 a 1\n", "9 Q0 a 1 1.0 r\n9 Q0 b 2 0.5 r\n1 Q0 a 1 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "1"])
    assert out["n_queries"] == 1
    assert out["p_at_1"] == 1.0
    assert out["n_run_topics_unjudged"] == 1
    assert out["n_run_rows_unjudged_topics"] == 2


@pytest.mark.parametrize(("policy", "n_queries"), [("empty", 2), ("skip", 1)])
def test_judged_topic_without_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, n_queries: int
) -> None:
    q, r = _write(tmp_path, "1 0 a 1\n2 0 b 1\n", "1 Q0 a 1 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "1", "--missing-topics", policy])
    assert out["n_queries"] == n_queries
    assert out["p_at_1"] == 1.0 / n_queries
    assert out["n_judged_topics_without_run"] == 1


def test_judged_topic_without_run_error_as_trec_eval_10(tmp_path: Path) -> None:
    q, r = _write(tmp_path, "1 0 a 1\n2 0 b 1\n", "1 Q0 a 1 1.0 r\n")
    with pytest.raises(
        DataError, match=r"topic 2 of qrels .* has no lines in run .*trec_eval 10.0"
    ):
        main(["--qrels", q, "--run", r, "--missing-topics", "error"])


def test_help_names_trec_eval_versions_and_preset_idcg() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "trec_eval 9.x's default" in text
    assert "trec_eval 10.0 without -c" in text
    assert "lightgbm and sklearn there differ" in text
    assert "trec_eval -M N" in text


# ---- 3. docnos are bytes ---------------------------------------------------------------------


def test_invalid_utf8_docnos_do_not_collide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # both docnos decode to "d\ufffd" with errors="replace"; as bytes they differ
    q, r = _write(tmp_path, b"1 0 d\xff 1\n", b"1 Q0 d\xfe 1 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--preset", "trec_eval", "--k", "1"])
    assert out["ndcg_at_1"] == 0.0
    assert out["n_rows_unjudged"] == 1


def test_ties_ordered_by_docno_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # tied scores: docno descending in byte order puts b"d\xff" before b"d\xfe" and b"dz"
    q, r = _write(
        tmp_path,
        b"1 0 d\xff 1\n1 0 dz 0\n",
        b"1 Q0 dz 1 1.0 r\n1 Q0 d\xfe 2 1.0 r\n1 Q0 d\xff 3 1.0 r\n",
    )
    out = _run(capsys, ["--qrels", q, "--run", r, "--preset", "trec_eval", "--k", "1"])
    assert out["p_at_1"] == 1.0


def test_topic_ids_are_bytes_and_shown_escaped(tmp_path: Path) -> None:
    q, r = _write(
        tmp_path, b"t\xff 0 a 1\nt\xfe 0 a 1\n", b"t\xff Q0 a 1 1.0 r\nt\xfe Q0 b 1 1.0 r\n"
    )
    t = _per_query(tmp_path, ["--qrels", q, "--run", r, "--k", "1"])
    assert t.loc["t\\xff", "p_at_1"] == 1.0
    assert t.loc["t\\xfe", "p_at_1"] == 0.0


# ---- 4. large labels and JSON ----------------------------------------------------------------


def test_exp_gain_up_to_label_1023_without_overflow() -> None:
    labels = np.array([1023, 1023, 1023, 1022, 0])
    t = per_query_table(
        labels, np.array([5.0, 4, 3, 2, 1]), np.array([0, 5]), np.array([1]), ks=[5]
    )
    row = t.iloc[0]
    assert row["ndcg_at_5"] == 1.0
    assert math.isfinite(row["err_at_5"])
    reversed_ = per_query_table(
        labels, np.array([1.0, 2, 3, 4, 5]), np.array([0, 5]), np.array([1]), ks=[5]
    )
    # ranked [0, 1022, 1023, 1023, 1023]: gains g/2 (1022) and g (1023), g = 2**1023 - 1
    disc = 1 / np.log2(np.arange(2, 7))
    dcg = 0.5 * disc[1] + disc[2] + disc[3] + disc[4]
    idcg = disc[0] + disc[1] + disc[2] + 0.5 * disc[3]
    assert reversed_.iloc[0]["ndcg_at_5"] == pytest.approx(dcg / idcg, rel=1e-12)


def test_ordinary_labels_unchanged_by_the_overflow_guard() -> None:
    t = per_query_table(
        np.array([2, 3, 1, 0, 2]),
        np.array([5.0, 4, 3, 2, 1]),
        np.array([0, 5]),
        np.array([7]),
        ks=[5],
    )
    assert round(float(t.loc[0, "ndcg_at_5"]), 6) == 0.838647


@pytest.mark.parametrize("label", [31, 1023])
def test_labels_above_30_accepted_with_exp_gain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: int
) -> None:
    q, r = _write(tmp_path, f"1 0 a {label}\n1 0 b 1\n", "1 Q0 b 1 2.0 r\n1 Q0 a 2 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "2", "--gain", "exp"])
    g = 2.0**label - 1
    assert out["ndcg_at_2"] == pytest.approx((1 + g / LOG2_3) / (g + 1 / LOG2_3), rel=1e-12)
    assert out["n_skipped_zero_idcg"] == 0


def test_label_1024_exp_gain_is_one_line_error(tmp_path: Path) -> None:
    q, r = _write(tmp_path, "1 0 a 1024\n", "1 Q0 a 1 1.0 r\n")
    with pytest.raises(
        LtrUserError, match=r"label 1024 has no exp gain .*\(--gain=linear\).*\(--label-gain\)"
    ):
        main(["--qrels", q, "--run", r, "--gain", "exp"])
    # from Python the fix names the function's arguments, not the command's options
    with pytest.raises(LtrUserError, match=r"label 1024 has no exp gain") as raised:
        api.evaluate(qrels=q, run=r, gain="exp")
    assert "(gain=linear)" in str(raised.value)
    assert "(label_gain)" in str(raised.value)
    assert "--" not in str(raised.value)


def test_json_is_valid_with_every_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every query has IDCG 0 under zero_idcg=skip: NDCG means over no values are null, not NaN
    q, r = _write(tmp_path, "1 0 a 0\n", "1 Q0 a 1 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--zero-idcg", "skip", "--k", "3"])
    assert out["ndcg_at_3"] is None
    assert out["ndcg_at_3/len_11-50"] is None
    assert out["p_at_3"] == 0.0
    assert out["n_skipped_zero_idcg"] == 1


# ---- 5. comment lines, --max-docs, --err-max-grade ---------------------------------------------


def test_comment_lines_are_skipped_and_hash_in_docno_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q, r = _write(
        tmp_path,
        "# judgments\n1 0 doc#1 1\n\n  # indented comment\n1 0 doc#2 0\n",
        "# run header\n1 Q0 doc#2 1 2.0 r\n1 Q0 doc#1 2 1.0 r # trailing fields are ignored\n",
    )
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "2"])
    assert out["rr"] == 0.5
    assert out["n_rows_unjudged"] == 0


def test_error_line_numbers_count_comment_lines(tmp_path: Path) -> None:
    q, r = _write(tmp_path, "# c\n1 0 a 1\n", "# c\n\n1 Q0 a 1 1.0 r\n1 Q0 b 2\n")
    with pytest.raises(DataError, match=r"line 4 of .*: expected at least 6 fields"):
        main(["--qrels", q, "--run", r])


def test_max_docs_uses_trec_eval_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # file order c, b, a; trec_eval order: b (3.0), then the tie a/c by docno descending: c
    q, r = _write(tmp_path, "1 0 a 1\n", "1 Q0 c 1 1.0 r\n1 Q0 b 2 3.0 r\n1 Q0 a 3 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "3", "--max-docs", "2"])
    assert out["p_at_3"] == 0.0
    assert out["n_rows_over_max_docs"] == 1
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "3", "--max-docs", "3"])
    assert out["p_at_3"] == pytest.approx(1 / 3)


def test_err_max_grade_as_gdeval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # gdeval: R = (2**label - 1) / 2**4; ranked [2, 1]: 3/16 + (1/2)(13/16)(1/16)
    q, r = _write(tmp_path, "1 0 a 2\n1 0 b 1\n", "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n")
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "2", "--err-max-grade", "4"])
    assert out["err_at_2"] == pytest.approx(3 / 16 + 0.5 * (13 / 16) * (1 / 16))
    out = _run(capsys, ["--qrels", q, "--run", r, "--k", "2"])  # largest grade in data: 2
    assert out["err_at_2"] == pytest.approx(3 / 4 + 0.5 * (1 / 4) * (1 / 4))
    with pytest.raises(LtrUserError, match="--err-max-grade 1: the data has label 2"):
        main(["--qrels", q, "--run", r, "--err-max-grade", "1"])


# ---- trec_eval 10.0's test/ files ------------------------------------------------------------


def _check(
    table: pd.DataFrame, want: dict[str, dict[str, float]], ours: dict[str, str], n_q: int
) -> int:
    summary = summarize(table)
    assert int(want.get("num_q", {"all": n_q})["all"]) == n_q == len(table)
    checked = 0
    for measure, col in ours.items():
        for topic, v in want[measure].items():
            got = summary[col] if topic == "all" else table.loc[table["qid"] == topic, col].item()
            assert got == pytest.approx(v, abs=5e-5), (measure, topic)
            checked += 1
    return checked


def _table(
    qrels: str,
    run: str,
    *,
    ks: tuple[int, ...],
    missing: str = "skip",
    max_docs: int | None = None,
    **conv: Any,
) -> pd.DataFrame:
    inp = read_trec(TREC / run, TREC / qrels, missing_topics=missing, max_docs=max_docs)
    return per_query_table(
        inp.labels, inp.scores, inp.offsets, inp.qids, ks=ks,
        conventions=resolve_conventions("trec_eval", **conv),
        ideal_labels=inp.ideal_labels, ideal_offsets=inp.ideal_offsets, tie_keys=inp.tie_keys,
    )  # fmt: skip


@needs_trec
def test_comment_test_msmarco_run() -> None:
    # `trec_eval qrels.comment.test results.comment.test`: 301 run topics, 31 judged; docnos
    # contain '#'. num_q 31, P_5..P_1000 and recip_rank as trec_eval prints them
    table = _table(
        "qrels.comment.test", "results.comment.test", ks=(5, 10, 15, 20, 30, 100, 200, 500, 1000)
    )
    ours = {f"P_{k}": f"p_at_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)}
    ours["recip_rank"] = "rr"
    assert _check(table, read_trec_eval_output(TREC / "out.comment.test"), ours, 31) == 10


@needs_trec
def test_qrels_with_comments_as_out_test() -> None:
    # `trec_eval qrels.test.with-comments results.test | diff - out.test`
    table = _table(
        "qrels.test.with-comments", "results.test", ks=(5, 10, 15, 20, 30, 100, 200, 500, 1000)
    )
    ours = {f"P_{k}": f"p_at_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)}
    ours["recip_rank"] = "rr"
    assert _check(table, read_trec_eval_output(TREC / "out.test"), ours, 3) == 10


@needs_trec
def test_qrels_123_with_and_without_comments() -> None:
    # the same judgments, but for 3 comment lines and one docno with a '#' (line 12)
    a, b = read_qrels(TREC / "qrels.123"), read_qrels(TREC / "qrels.comments.123")
    assert a.labels.shape[0] == b.labels.shape[0] == 10362
    assert np.array_equal(a.topics, b.topics)
    assert np.array_equal(a.labels, b.labels)
    differ = np.flatnonzero(a.docnos != b.docnos)
    assert differ.tolist() == [8]
    assert (a.docnos[8], b.docnos[8], int(b.lines[8])) == (b"CR93E-3103", b"CR93E-3103#37", 12)


@needs_trec
def test_qrels_123_is_judgment_groups_refused_as_qrels() -> None:
    # qrels.123 is trec_eval's qrels_jg format (-R qrels_jg: one judge per iteration column,
    # the same docno judged up to 3 times); read as plain qrels, trec_eval stops with
    # "duplicate docs", and so does ltr, naming the line
    with pytest.raises(
        DataError,
        match=r"line 3682 of .*qrels.123: docno CR93E-10279 is judged twice for topic 301",
    ):
        read_trec(TREC / "results.test", TREC / "qrels.123")


@needs_trec
def test_meas_params_custom_gains_and_cutoffs() -> None:
    # -m P.5,7,3 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 (23.4 is read as 23), -q
    table = _table(
        "qrels.test", "results.test", ks=(3, 5, 7, 10, 20, 23, FULL), label_gain=(0, 3, 9, 3, 4.5)
    )
    ours = {
        "P_3": "p_at_3",
        "P_5": "p_at_5",
        "P_7": "p_at_7",
        "ndcg_1=3,2=9,4=4.5": f"ndcg_at_{FULL}",
    }
    ours |= {f"ndcg_cut_{k}": f"ndcg_at_{k}" for k in (10, 20, 23)}
    assert _check(table, read_trec_eval_output(TREC / "out.test.meas_params"), ours, 3) == 28


@needs_trec
def test_max_docs_as_trec_eval_aqcm() -> None:
    # `trec_eval -m all_trec -q -c -M100 qrels.test results.trunc`
    cuts = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    table = _table("qrels.test", "results.trunc", ks=(*cuts, FULL), missing="empty", max_docs=100)
    ours = {f"P_{k}": f"p_at_{k}" for k in cuts} | {f"ndcg_cut_{k}": f"ndcg_at_{k}" for k in cuts}
    ours |= {"recip_rank": "rr", "ndcg": f"ndcg_at_{FULL}"}
    assert _check(table, read_trec_eval_output(TREC / "out.test.aqcM"), ours, 3) == 80


@needs_trec
@pytest.mark.parametrize(
    ("qrels", "run"), [("qrels-302.test", "results-302.test"), ("qrels.rel_level", "results.test")]
)
def test_files_without_published_output_match_pytrec_eval(qrels: str, run: str) -> None:
    # no published output for these pairs: pytrec_eval (trec_eval's C code) is the reference
    pytrec_eval = pytest.importorskip("pytrec_eval")
    q, rn = read_qrels(TREC / qrels), read_run(TREC / run)
    qd: dict[str, dict[str, int]] = {}
    for t, d, lab in zip(q.topics.tolist(), q.docnos.tolist(), q.labels.tolist(), strict=True):
        qd.setdefault(t.decode(), {})[d.decode()] = int(lab)
    rd: dict[str, dict[str, float]] = {}
    for t, d, s in zip(rn.topics.tolist(), rn.docnos.tolist(), rn.scores.tolist(), strict=True):
        rd.setdefault(t.decode(), {})[d.decode()] = float(s)
    ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg", "ndcg_cut.10", "P.10", "recip_rank"})
    want = ev.evaluate(rd)
    table = _table(qrels, run, ks=(10, FULL)).set_index("qid")
    assert sorted(want) == sorted(table.index)
    for topic, m in want.items():
        assert table.loc[topic, f"ndcg_at_{FULL}"] == pytest.approx(m["ndcg"], abs=1e-12)
        assert table.loc[topic, "ndcg_at_10"] == pytest.approx(m["ndcg_cut_10"], abs=1e-12)
        assert table.loc[topic, "p_at_10"] == pytest.approx(m["P_10"], abs=1e-12)
        assert table.loc[topic, "rr"] == pytest.approx(m["recip_rank"], abs=1e-12)
