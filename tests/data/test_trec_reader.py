"""`ltr.data.formats.trec.read_trec` against a plain-Python reading of the same files.

The reference parses each line with ``bytes.split``, joins with dicts and orders topics with
Python's ``bytes`` comparison (C ``strcmp``): what trec_eval does, without any of the reader's
machinery (memory maps, windows, topic table growth, hashes, numpy's score parser for the
scores the kernel leaves to it). Files are generated with interleaved topics, ties, duplicate
docnos across topics, non-UTF-8 bytes, comments, CRLF and tab separators; windows and buffers
are shrunk so that every resume path of the kernels runs.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ltr.data.formats.trec as trec
from ltr.data.formats.trec import read_trec
from ltr.errors import DataError
from ltr.metrics.conventions import UNJUDGED
from tests.conftest import examples

TOPICS = [b"1", b"2", b"10", b"q\xff", b"q\xfe", b"301", b"ab#1", b"Z"]
DOCNOS = [b"a", b"b", b"ab", b"d#1", b"\xe9t\xe9", b"doc-7", b"doc-70", b"x" * 40, b"B"]
SCORES = [
    "1", "1.0", "1.000000", "-0.0", "0", "0.5", "+0.5", ".5", "2.5e-3", "0.0025", "3E2", "300",
    "0.30000000000000004", "12.345678901234567", "1e-30", "-7.25", "123456789012345678901",
]  # fmt: skip


def reference(run: bytes, qrels: bytes, missing: str, max_docs: int | None) -> dict[str, Any]:
    judged: dict[bytes, dict[bytes, int]] = {}
    ideal: dict[bytes, list[int]] = {}
    for line in qrels.split(b"\n"):
        f = line.split()
        if not f or f[0].startswith(b"#"):
            continue
        judged.setdefault(f[0], {})[f[2]] = int(f[3])
        ideal.setdefault(f[0], []).append(int(f[3]))
    ranked: dict[bytes, list[tuple[bytes, float]]] = {}
    for line in run.split(b"\n"):
        f = line.split()
        if not f or f[0].startswith(b"#"):
            continue
        ranked.setdefault(f[0], []).append((f[2], float(f[4])))
    topics = sorted(t for t in judged if missing == "empty" or t in ranked)
    out: dict[str, Any] = {"qids": [], "rows": [], "ideal": [], "over": 0}
    for t in topics:
        rows = ranked.get(t, [])
        if max_docs is not None:
            best = sorted(rows, key=lambda r: (-r[1], [-b for b in r[0]] + [1]))[:max_docs]
            out["over"] += len(rows) - len(best)
            rows = [r for r in rows if r in best]
        out["qids"].append(t.decode("utf-8", "backslashreplace"))
        out["rows"].append([(d, s, judged[t].get(d, UNJUDGED)) for d, s in rows])
        out["ideal"].append(ideal[t])
    out["unjudged_topics"] = sum(1 for t in ranked if t not in judged)
    out["unjudged_topic_rows"] = sum(len(r) for t, r in ranked.items() if t not in judged)
    out["missing"] = sum(1 for t in judged if t not in ranked)
    return out


@st.composite
def trec_files(draw: st.DrawFn) -> tuple[bytes, bytes]:
    sep = draw(st.sampled_from([b" ", b"\t", b"  "]))
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    pairs = draw(
        st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(DOCNOS)), max_size=40, unique=True)
    )
    scores = draw(st.lists(st.sampled_from(SCORES), min_size=len(pairs), max_size=len(pairs)))
    run_lines = [
        sep.join([t, b"Q0", d, str(i + 1).encode(), s.encode(), b"tag"])
        for i, ((t, d), s) in enumerate(zip(pairs, scores, strict=True))
    ]
    judged = draw(
        st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(DOCNOS)), min_size=1, max_size=30, unique=True)
    )
    labels = draw(st.lists(st.integers(-1, 4), min_size=len(judged), max_size=len(judged)))
    qrels_lines = [sep.join([t, b"0", d, str(lab).encode()]) for (t, d), lab in zip(judged, labels, strict=True)]
    for lines in (run_lines, qrels_lines):
        for _ in range(draw(st.integers(0, 2))):
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from([b"", b"# a comment", b"  #x y"])))
    if not any(line and not line.lstrip().startswith(b"#") for line in run_lines):
        run_lines.append(sep.join([b"1", b"Q0", b"a", b"1", b"1.5", b"t"]))
    run = eol.join(run_lines) + draw(st.sampled_from([eol, b""]))
    return run, eol.join(qrels_lines) + eol


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=trec_files(), missing=st.sampled_from(["skip", "empty"]), max_docs=st.sampled_from([None, 1, 2]))
def test_read_trec_equals_reference(
    files: tuple[bytes, bytes], missing: str, max_docs: int | None, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(trec, "WINDOW_BYTES", 37)  # many windows, lines across their edges
    monkeypatch.setattr(trec, "SLOW_ROWS", 2)  # the kernel returns early for numpy's scores
    monkeypatch.setattr(trec, "TOPICS_START", 1)  # the topic table grows in the qrels and in the run
    monkeypatch.setattr(trec, "_CHUNK", 5)  # newline counts and per-topic counts over many chunks
    run, qrels = files
    (tmp_path / "run").write_bytes(run)
    (tmp_path / "qrels").write_bytes(qrels)
    ref = reference(run, qrels, missing, max_docs)
    inp = read_trec(tmp_path / "run", tmp_path / "qrels", missing_topics=missing, max_docs=max_docs)

    assert inp.qids.tolist() == ref["qids"]
    assert np.diff(inp.offsets).tolist() == [len(r) for r in ref["rows"]]
    rows = [r for q in ref["rows"] for r in q]
    assert inp.labels.tolist() == [lab for _, _, lab in rows]
    assert inp.scores.tolist() == [s for _, s, _ in rows]  # == : -0.0 and 0.0 both fine
    assert np.array_equal(inp.scores.view(np.uint64), np.array([s for _, s, _ in rows]).view(np.uint64))
    assert np.diff(inp.ideal_offsets).tolist() == [len(i) for i in ref["ideal"]]
    assert inp.ideal_labels.tolist() == [lab for i in ref["ideal"] for lab in i]
    for q, (lo, hi) in enumerate(zip(inp.offsets[:-1], inp.offsets[1:], strict=True)):
        docs = [d for d, _, _ in ref["rows"][q]]
        for i in range(lo, hi):
            for j in range(lo, hi):
                if i != j and inp.scores[i] == inp.scores[j]:  # ties ordered by docno bytes
                    assert (inp.tie_keys[i] > inp.tie_keys[j]) == (docs[i - lo] > docs[j - lo])
    assert inp.n_run_topics_unjudged == ref["unjudged_topics"]
    assert inp.n_run_rows_unjudged_topics == ref["unjudged_topic_rows"]
    assert inp.n_judged_topics_without_run == ref["missing"]
    assert inp.n_rows_unjudged == sum(1 for _, _, lab in rows if lab == UNJUDGED)
    assert inp.n_rows_over_max_docs == ref["over"]


def test_topic_table_grows_past_the_qrels_size(tmp_path: Path) -> None:
    # one judged topic, 5,000 run topics: the table grows many times while the run is read
    run = "".join(f"t{i} Q0 d{i % 7} 1 {i % 3}.5 r\n" for i in range(5000)) + "t1 Q0 x 2 9 r\n"
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text("t1 0 x 2\nt1 0 d1 1\n")
    inp = read_trec(tmp_path / "run", tmp_path / "qrels")
    assert inp.qids.tolist() == ["t1"]
    assert inp.labels.tolist() == [1, 2]  # d1 (1.5) then x (9), in file order
    assert (inp.n_run_topics_unjudged, inp.n_run_rows_unjudged_topics) == (4999, 4999)


def test_topic_table_grows_while_the_qrels_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 judged topics, a table of 1 topic at first: it grows in the qrels (and a relevance the
    # kernel leaves to Python, "1.0", is found again after each growth)
    monkeypatch.setattr(trec, "TOPICS_START", 1)
    (tmp_path / "qrels").write_text("".join(f"t{i} 0 d{i} {'1.0' if i % 9 == 0 else i % 3}\n" for i in range(40)))
    (tmp_path / "run").write_text("".join(f"t{i} Q0 d{i} 1 {i}.5 r\nt{i} Q0 e 2 0 r\n" for i in range(39, -1, -1)))
    inp = read_trec(tmp_path / "run", tmp_path / "qrels")
    assert inp.qids.tolist() == sorted(f"t{i}" for i in range(40))  # byte order: t0 t1 t10 t11 ...
    label = {f"t{i}": 1 if i % 9 == 0 else i % 3 for i in range(40)}
    assert inp.labels.tolist() == [x for q in inp.qids.tolist() for x in (label[q], UNJUDGED)]
    assert inp.ideal_labels.tolist() == [label[q] for q in inp.qids.tolist()]


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("1 Q0 a 1 1 r\n2 Q0 a 1 1 r\n1 Q0 b 2 0 r\n1 Q0 a 3 0 r\n",
         r"line 4 of .*run: docno a is ranked twice for topic 1"),
        ("1 Q0 a 1 1 r\n# note\n1 Q0 b 2 abc r\n", r"line 3 of .*run: score 'abc' \(topic 1\) is not a finite"),
        ("1 Q0 a 1 1 r\n1 Q0 b 2 1e999 r\n", r"line 2 of .*run: score '1e999' \(topic 1\) is not a finite"),
        ("1 Q0 a 1 1 r\n\n1 Q0 b 2 -inf r\n", r"line 3 of .*run: score '-inf' \(topic 1\) is not a finite"),
        ("1 Q0 a 1 1 r\n1 Q0 b 2\n", r"line 2 of .*run: expected at least 6 fields for a run line, got 4"),
        ("# only a comment\n\n", r"run file .*run has no lines"),
        ("", r"run file .*run has no lines"),
    ],
)  # fmt: skip
def test_run_errors_name_file_and_line(tmp_path: Path, run: str, message: str) -> None:
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    with pytest.raises(DataError, match=message):
        read_trec(tmp_path / "run", tmp_path / "qrels")


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ("1 0 a 1\n2 0 a 1\n1 0 a 2\n", r"line 3 of .*qrels: docno a is judged twice for topic 1"),
        ("1 0 a 1\n1 0 b 1.5\n", r"line 2 of .*qrels: relevance '1.5' \(topic 1\) is not an integer"),
        ("1 0 a 1\n1 0 b 2.0\n", None),  # an integral float is a label
        ("1 0 a\n", r"line 1 of .*qrels: expected at least 4 fields for a qrels line, got 3"),
    ],
)  # fmt: skip
def test_qrels_errors_name_file_and_line(tmp_path: Path, qrels: str, message: str | None) -> None:
    (tmp_path / "run").write_text("1 Q0 a 1 1 r\n1 Q0 b 2 0.5 r\n")
    (tmp_path / "qrels").write_text(qrels)
    if message is None:
        assert read_trec(tmp_path / "run", tmp_path / "qrels").labels.tolist() == [1, 2]
        return
    with pytest.raises(DataError, match=message):
        read_trec(tmp_path / "run", tmp_path / "qrels")


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    with pytest.raises(DataError, match=r"cannot read run file .*nope"):
        read_trec(tmp_path / "nope", tmp_path / "qrels")


def test_gzip_files_read_as_their_text(tmp_path: Path) -> None:
    """A gzipped qrels or run (by its magic bytes, any name) gives what its text gives; a cut-off
    gzip file is one line."""

    run = "1 Q0 a 1 1 r\n1 Q0 b 2 0.5 r\n2 Q0 c 1 3 r\n2 Q0 a 2 3 r\n"
    qrels = "1 0 a 1\n1 0 b 2\n2 0 c 1\n"
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run.gz").write_bytes(gzip.compress(run.encode()))
    (tmp_path / "qrels.txt").write_bytes(gzip.compress(qrels.encode()))  # the name does not matter
    plain = read_trec(tmp_path / "run", tmp_path / "qrels")
    zipped = read_trec(tmp_path / "run.gz", tmp_path / "qrels.txt")
    assert zipped.qids.tolist() == plain.qids.tolist() == ["1", "2"]
    assert zipped.labels.tolist() == plain.labels.tolist()
    assert zipped.scores.tolist() == plain.scores.tolist()
    assert zipped.offsets.tolist() == plain.offsets.tolist()
    (tmp_path / "cut.gz").write_bytes(gzip.compress(run.encode())[:20])
    with pytest.raises(DataError, match=r"run file .*cut\.gz is not a readable gzip file"):
        read_trec(tmp_path / "cut.gz", tmp_path / "qrels")
