"""``ltr labels A B --run RUN --data FILE``: the label audit scored by a run's model (#27).

Two tiny real runs in a tmp sqlite store (plain, and re-ranked by ``rerank=diversify``, whose
order is not the model's scores); FILE is their test split as LETOR text with ``#docid`` comments; B is A shifted up one grade on a third of the documents. ``--run RUN --data FILE``
must give exactly the report of ``--scores`` on the TREC run ``ltr predict`` writes for FILE,
and its nDCG@10 under B is recomputed here by hand from the booster's own scores.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.main import main as ltr_main
from ltr.data.ranking_data import RankingData
from ltr.experiment import run as pipeline
from ltr.models.inputs import split_input
from ltr.models.logged import load_run
from tests.conftest import compose_train, made_store

RUN = "audited"
RERANKED = "audited_reranked"  # rerank=diversify: its order is not the model's scores


def _letor(data: RankingData, path: Path) -> list[str]:
    """Write ``data`` as LETOR lines with ``#docid = q<qid>-d<i>``; the doc ids in row order."""
    qids = data.row_qids()
    docs = [f"q{q}-d{i}" for i, q in enumerate(qids.tolist())]
    lines = []
    for row, (qid, doc) in enumerate(zip(qids.tolist(), docs, strict=True)):
        feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(data.features[row]))
        lines.append(f"{int(data.labels[row])} qid:{qid} {feats} #docid = {doc}\n")
    path.write_text("".join(lines))
    return docs


def _qrels(path: Path, qids: np.ndarray, docs: list[str], labels: np.ndarray) -> None:
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(qids.tolist(), docs, labels.tolist(), strict=True)))


def _ndcg10_ties_averaged(labels: np.ndarray, scores: np.ndarray) -> float:
    """nDCG@10, exp gain, by hand: tied scores share their block's mean gain (the expectation over
    the block's orders, ``ties=average``); IDCG 0 scores 0 (``zero_idcg=zero``)."""
    gains = 2.0 ** labels.astype(float) - 1
    order = np.argsort(-scores, kind="stable")
    ranked_scores, ranked_gains = scores[order], gains[order]
    shared = ranked_gains.copy()
    for s in np.unique(ranked_scores):
        block = ranked_scores == s
        shared[block] = ranked_gains[block].mean()
    dcg = sum(g / math.log2(p + 2) for p, g in enumerate(shared[:10]))
    idcg = sum(g / math.log2(p + 2) for p, g in enumerate(sorted(gains, reverse=True)[:10]))
    return dcg / idcg if idcg > 0 else 0.0


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A trained run (once for the module), FILE (its test split with doc ids) and the label
    sets A and B as qrels."""
    tmp = tmp_path_factory.mktemp("labels_run")
    uri = made_store(tmp / "mlflow.db")
    small = ["data.n_queries=80", "fit.num_boost_round=8", "fit.show_progress=false", "model.num_leaves=7", f"tracking.uri={uri}"]
    pipeline.run(compose_train([*small, f"tracking.run_name={RUN}"]))
    pipeline.run(compose_train([*small, "rerank=diversify", "rerank.alpha=0.5", f"tracking.run_name={RERANKED}"]))
    data = next(split_input(load_run(RUN, tracking_uri=uri), "test").batches())
    file = tmp / "test.txt"
    docs = _letor(data, file)
    labels_a = data.labels.astype(np.int64)
    labels_b = labels_a + (np.arange(data.n_rows) % 3 == 0)  # one grade up on a third of the documents
    qids = data.row_qids()
    _qrels(tmp / "a.qrels", qids, docs, labels_a)
    _qrels(tmp / "b.qrels", qids, docs, labels_b)
    return {"data": data, "file": file, "labels_b": labels_b, "uri": uri, "dir": tmp}


def _labels(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = ltr_main(["labels", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_data_gives_the_report_of_the_scores_ltr_predict_writes(
    audit: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp, uri, file = audit["dir"], str(audit["uri"]), str(audit["file"])
    assert isinstance(tmp, Path)
    sets = [str(tmp / "a.qrels"), str(tmp / "b.qrels")]
    for run in (RUN, RERANKED):
        trec = tmp / f"{run}.trec"
        assert ltr_main(["predict", run, "--data", file, "--trec-run", str(trec), "--tracking-uri", uri]) == 0
        capsys.readouterr()
        for fmt in (["--json"], []):
            code, by_scores, _ = _labels(capsys, *sets, "--scores", str(trec), "--k", "5", "--k", "10", *fmt)
            assert code == 0
            code, by_run, _ = _labels(capsys, *sets, "--run", run, "--data", file, "--tracking-uri", uri, "--k", "5", "--k", "10", *fmt)
            assert code == 0
            assert by_run == by_scores, run
    # the re-ranked run's scores are its order (0, -1, -2, ...), not the model's: what was compared
    reranked = np.array([float(line.split()[4]) for line in (tmp / f"{RERANKED}.trec").read_text().splitlines()])
    assert reranked.max() == 0.0
    assert np.array_equal(reranked, np.round(reranked))
    report = json.loads(_labels(capsys, *sets, "--run", RUN, "--data", file, "--tracking-uri", uri, "--json")[1])
    # by hand: the booster's own scores of the run's test rows, nDCG@10 under B, mean over queries
    data, labels_b = audit["data"], audit["labels_b"]
    assert isinstance(data, RankingData)
    assert isinstance(labels_b, np.ndarray)
    scores = np.asarray(load_run(RUN, tracking_uri=uri).booster.predict(data.features), dtype=np.float64)
    per_query = [
        _ndcg10_ties_averaged(labels_b[a:b], scores[a:b]) for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True)
    ]
    assert report["n_queries"] == data.n_queries
    assert report["ndcg"]["b"]["ndcg_at_10"] == pytest.approx(float(np.mean(per_query)), abs=1e-12)
    assert report["ndcg"]["b_minus_a"]["ndcg_at_10"] != 0.0, "the shifted labels move nDCG"


def test_run_errors_are_one_line_exit_2(audit: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    tmp, uri, file = audit["dir"], str(audit["uri"]), str(audit["file"])
    assert isinstance(tmp, Path)
    sets = [str(tmp / "a.qrels"), str(tmp / "b.qrels")]
    # a label pair with no score: one more judged document than FILE holds
    extra = tmp / "extra.qrels"
    extra.write_text((tmp / "a.qrels").read_text() + f"{int(audit['data'].qids[0])} 0 unscored 1\n")  # type: ignore[attr-defined]
    extra_b = tmp / "extra_b.qrels"
    extra_b.write_text((tmp / "b.qrels").read_text() + f"{int(audit['data'].qids[0])} 0 unscored 2\n")  # type: ignore[attr-defined]
    no_ids = tmp / "no_ids.txt"
    no_ids.write_text("".join(line.split(" #")[0] + "\n" for line in Path(file).read_text().splitlines()))
    cases = {
        "run without data": ([*sets, "--run", RUN, "--tracking-uri", uri], "--run RUN and --data FILE go together"),
        "run and scores": ([*sets, "--run", RUN, "--data", file, "--scores", file], "give --scores FILE or --run RUN --data FILE, not both"),
        "unscored pair": (
            [str(extra), str(extra_b), "--run", RUN, "--data", file, "--tracking-uri", uri],
            f"--data {file} (scored by run {RUN}) lacks 1 of the ",
        ),
        "no doc ids": ([*sets, "--run", RUN, "--data", str(no_ids), "--tracking-uri", uri], f"{no_ids} has no document ids"),
        "no such run": ([*sets, "--run", "nosuchrun", "--data", file, "--tracking-uri", uri], "nosuchrun"),
        "no such data file": (  # the command line's option, not ltr.api.scored_pairs' argument (data[1]=...)
            [*sets, "--run", RUN, "--data", file, str(tmp / "missing.txt"), "--tracking-uri", uri],
            f"ltr: error: --data {tmp / 'missing.txt'}: no such file or folder",
        ),
    }  # fmt: skip
    for name, (argv, expected) in cases.items():
        code, out, err = _labels(capsys, *argv)
        assert code == 2, name
        assert len(err.strip().splitlines()) == 1, (name, err)
        assert expected in err, (name, err)
        assert out == "", (name, out)  # nothing printed before the refusal


def test_csv_data_with_a_doc_id_column_is_scored_as_the_letor_file(
    audit: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--doc-id-column`` of a CSV file names the documents of ``ltr predict --trec-run`` and of
    ``ltr labels --run`` (it once reached only Parquet files: CSV runs got ``{qid}-{i}`` docnos)."""
    tmp, uri, data = audit["dir"], str(audit["uri"]), audit["data"]
    assert isinstance(tmp, Path)
    assert isinstance(data, RankingData)
    names = load_run(RUN, tracking_uri=uri).feature_names
    csv = tmp / "test.csv"
    docs = [f"q{q}-d{i}" for i, q in enumerate(data.row_qids().tolist())]
    rows = [
        ",".join([str(q), str(int(g)), d, *(repr(float(v)) for v in feats)])
        for q, g, d, feats in zip(data.row_qids().tolist(), data.labels.tolist(), docs, data.features, strict=True)
    ]
    csv.write_text(",".join(["qid", "label", "url", *names]) + "\n" + "\n".join(rows) + "\n")
    runs = {}
    for name, file, extra in (("letor", audit["file"], []), ("csv", csv, ["--doc-id-column", "url"])):
        out = tmp / f"{name}.trec"
        assert ltr_main(["predict", RUN, "--data", str(file), "--trec-run", str(out), "--tracking-uri", uri, *extra]) == 0
        runs[name] = out.read_text()
    capsys.readouterr()
    assert runs["csv"] == runs["letor"]
    assert {line.split()[2] for line in runs["csv"].splitlines()} == set(docs)
    sets = [str(tmp / "a.qrels"), str(tmp / "b.qrels")]
    by_letor = _labels(capsys, *sets, "--run", RUN, "--data", str(audit["file"]), "--tracking-uri", uri, "--json")
    by_csv = _labels(capsys, *sets, "--run", RUN, "--data", str(csv), "--doc-id-column", "url", "--tracking-uri", uri, "--json")
    assert by_csv == by_letor
    assert by_csv[0] == 0
