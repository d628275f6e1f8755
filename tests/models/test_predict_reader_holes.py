"""``ltr predict``'s Parquet input takes what ``ltr train`` takes: string qids (numbered as
``ltr train`` numbers them; the TREC run and the per-query table carry them as written) and
files whose feature columns differ in type (int64 in one, double in the next: scored as each
file alone); a feature that is text in one file is one line naming the file and the column.
A score the model gives NaN is one line naming the qid as written. Document ids: a doc id column of numbers gives the ids ``ltr train``'s readers give (Arrow's text
of the numbers), a null is one line, and ``--doc-id-column`` for LETOR text is refused, not
ignored."""

from __future__ import annotations

import re
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from ltr import api
from ltr.cli.main import main as ltr_main
from ltr.dask.parquet import read_part
from ltr.data.formats.readers import read_ranking_file
from ltr.data.query_parts import write_query_partitions
from ltr.errors import DataError
from ltr.experiment import run as pipeline
from ltr.models.inputs import split_input
from ltr.models.logged import MODEL_TEXT, load_run
from ltr.tracking.sqlite.local_runs import find_local_run
from tests.conftest import compose_train

SMALL = ["data.n_queries=120", "fit.num_boost_round=12", "fit.early_stopping_rounds=4", "fit.show_progress=false", "model.num_leaves=7"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pd.DataFrame]:
    """A tiny run and its test split as a table (qid int64, label, float32 features)."""
    root = tmp_path_factory.mktemp("holes")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    pipeline.run(compose_train([*SMALL, f"tracking.uri={uri}", "tracking.run_name=holes"]))
    data = next(split_input(load_run("holes", tracking_uri=uri), "test").batches())
    path = write_query_partitions(data, root / "test", n_partitions=1)[0]
    return uri, pd.read_parquet(path)


def _predict(uri: str, paths: list[Path], out: Path, *extra: str) -> dict[str, object]:
    files = {"scores": out / "scores.txt", "run": out / "test.run", "pq": out / "pq.parquet"}
    out.mkdir()
    code = ltr_main([
        "predict", "holes", "--data", *map(str, paths), "--out", str(files["scores"]), "--trec-run", str(files["run"]),
        "--per-query", str(files["pq"]), "--tracking-uri", uri, *extra,
    ])
    assert code == 0
    return {
        "scores": files["scores"].read_text(), "run": [line.split() for line in files["run"].read_text().splitlines()],
        "pq": pd.read_parquet(files["pq"]),
    }


def _halves(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The table cut at the query boundary nearest its middle."""
    cut = int(np.flatnonzero(table["qid"].to_numpy()[1:] != table["qid"].to_numpy()[:-1])[len(table["qid"].unique()) // 2 - 1]) + 1
    return table.iloc[:cut].reset_index(drop=True), table.iloc[cut:].reset_index(drop=True)



def _assert_same_output(got: dict[str, object], want: dict[str, object]) -> None:
    """Two predictions wrote the same scores, TREC run and per-query table, bit for bit."""
    assert got["scores"] == want["scores"]
    assert got["run"] == want["run"]
    pd.testing.assert_frame_equal(got["pq"], want["pq"], check_exact=True)


def test_string_qids_score_as_their_integer_twin_and_are_written_as_given(
    trained: tuple[str, pd.DataFrame], tmp_path: Path
) -> None:
    uri, table = trained
    ints = tmp_path / "ints.parquet"
    table.to_parquet(ints)
    # string qids over two files, streamed in batches of 7 rows that join the files
    name = {q: f"Q{q:04d}-x" for q in table["qid"].unique()}
    texts = table.assign(qid=table["qid"].map(name))
    a, b = _halves(texts)
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    want = _predict(uri, [ints], tmp_path / "int-out")
    got = _predict(uri, [tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "text-out", "--batch-rows", "7")
    assert got["scores"] == want["scores"]
    assert len(got["run"]) == len(table)
    renamed = [[name[int(q)], q0, name[int(d.split("-")[0])] + "-" + d.split("-")[1], *rest] for q, q0, d, *rest in want["run"]]
    assert got["run"] == renamed
    expected = want["pq"].assign(qid=want["pq"]["qid"].map(name))
    pd.testing.assert_frame_equal(got["pq"], expected, check_exact=True)
    # on Dask workers (one task per file, numbered over the files on the client): the same files
    on_workers = _predict(uri, [tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "dask-out", "--dask", "--workers", "2")
    _assert_same_output(on_workers, got)


def test_files_with_an_int64_and_a_double_feature_score_as_each_alone(
    trained: tuple[str, pd.DataFrame], tmp_path: Path
) -> None:
    uri, table = trained
    feature = table.columns[2]
    rounded = table.assign(**{feature: np.round(table[feature].to_numpy(np.float64) * 4)})
    a, b = _halves(rounded)
    pq.write_table(pa.Table.from_pandas(a.astype({feature: np.int64}), preserve_index=False), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pandas(b.astype({feature: np.float64}), preserve_index=False), tmp_path / "b.parquet")
    joined = _predict(uri, [tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "joined", "--batch-rows", "7")
    alone = [_predict(uri, [tmp_path / f"{part}.parquet"], tmp_path / f"alone-{part}") for part in "ab"]
    assert joined["scores"] == alone[0]["scores"] + alone[1]["scores"]
    assert joined["run"] == alone[0]["run"] + alone[1]["run"]


def test_a_feature_that_is_text_in_the_next_file_is_one_line(
    trained: tuple[str, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, table = trained
    feature = table.columns[2]
    a, b = _halves(table)
    a.to_parquet(tmp_path / "a.parquet")
    b.astype({feature: str}).to_parquet(tmp_path / "b.parquet")
    out = tmp_path / "scores.txt"
    code = ltr_main([
        "predict", "holes", "--data", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--out", str(out),
        "--batch-rows", "7", "--tracking-uri", uri,
    ])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "scored" not in line]
    assert code == 2
    assert err == [
        f"ltr: error: feature column {feature!r} of {tmp_path / 'b.parquet'} is not numeric (type large_string); "
        "the model was trained on numbers: write the column as numbers"
    ]
    assert not out.exists()


def test_a_csv_with_string_qids_writes_them_as_given(trained: tuple[str, pd.DataFrame], tmp_path: Path) -> None:
    """A CSV is read by ``ltr train``'s reader, which numbers string qids the same way: the same
    scores, TREC run and per-query table as the Parquet file with those qids."""
    uri, table = trained
    texts = table.assign(qid=table["qid"].map(lambda q: f"Q{q:04d}-x"))
    texts.to_parquet(tmp_path / "texts.parquet")
    texts.to_csv(tmp_path / "texts.csv", index=False)
    parquet = _predict(uri, [tmp_path / "texts.parquet"], tmp_path / "parquet-out")
    csv = _predict(uri, [tmp_path / "texts.csv"], tmp_path / "csv-out")
    assert csv["scores"] == parquet["scores"]
    assert csv["run"] == parquet["run"]
    assert {line[0] for line in csv["run"]} == set(texts["qid"])
    pd.testing.assert_frame_equal(csv["pq"], parquet["pq"], check_exact=True)
    # two CSV files, each numbering its own qids from 0: still one query per written qid
    a, b = _halves(texts)
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    two = _predict(uri, [tmp_path / "a.csv", tmp_path / "b.csv"], tmp_path / "two-out")
    _assert_same_output(two, parquet)


def test_a_file_of_integer_qids_after_one_of_strings_is_read_as_ids(
    trained: tuple[str, pd.DataFrame], tmp_path: Path
) -> None:
    """One file with string qids makes the input's qids ids: the next file's integers are ids
    too (written as they are), and a batch joining the two files scores as the files alone."""
    uri, table = trained
    ints = tmp_path / "ints.parquet"
    table.to_parquet(ints)
    a, b = _halves(table)
    a.assign(qid=a["qid"].map(lambda q: f"Q{q}")).to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    want = _predict(uri, [ints], tmp_path / "int-out")
    got = _predict(uri, [tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "mixed-out", "--batch-rows", "7")
    assert got["scores"] == want["scores"]
    in_a = set(a["qid"])
    assert [line[0] for line in got["run"]] == [f"Q{q}" if int(q) in in_a else q for q, *_ in want["run"]]


def _letor_text(table: pd.DataFrame, path: Path) -> list[str]:
    """``table`` as LETOR lines with ``#docid = d<i>`` comments; the doc ids in row order."""
    features = table.columns[2:]
    docs = [f"d{i}" for i in range(len(table))]
    path.write_text("".join(
        f"{int(row['label'])} qid:{int(row['qid'])} "
        + " ".join(f"{j + 1}:{float(row[name])!r}" for j, name in enumerate(features))
        + f" #docid = {doc}\n"
        for (_, row), doc in zip(table.iterrows(), docs, strict=True)
    ))  # fmt: skip
    return docs


def test_a_doc_id_column_for_letor_text_is_refused_not_ignored(
    trained: tuple[str, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LETOR text has no columns (its doc ids are ``#docid = X`` comments, read without any
    option): ``ltr predict --doc-id-column`` on it is one line naming the option and the file, exit
    2, nothing written; without the option the comments give the TREC run's docnos."""
    uri, table = trained
    letor = tmp_path / "test.txt"
    docs = _letor_text(table, letor)
    run_file = tmp_path / "test.run"
    command = ["predict", "holes", "--data", str(letor), "--trec-run", str(run_file), "--tracking-uri", uri]
    assert ltr_main([*command, "--doc-id-column", "url"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ltr: error: --doc-id-column url names a column of a Parquet / CSV table, but {letor} is sparse text, "
        "whose lines name their documents in '# docid = X' comments; leave out --doc-id-column"
    ]
    assert not run_file.exists()
    assert ltr_main(command) == 0, capsys.readouterr().err
    assert sorted(line.split()[2] for line in run_file.read_text().splitlines()) == sorted(docs)


def test_doc_ids_of_numbers_are_those_of_the_training_reader_and_a_null_is_one_line(
    trained: tuple[str, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One conversion of a doc id column for ``ltr predict`` and ``ltr train``'s readers (in memory
    and on Dask workers): numbers as Arrow casts them to text (``7``; the float 1.0 is ``1``, not
    ``1.0``), a null refused in one line naming the column, the file and the row."""
    uri, table = trained
    n = len(table)
    ints = np.arange(n, dtype=np.int64) * 7 - 3
    floats = np.arange(n, dtype=np.float64) / 2  # 0, 0.5, 1, 1.5, ...
    with_null = pa.array([f"d{i}" if i != 5 else None for i in range(n)], pa.string())
    frame = pa.Table.from_pandas(table, preserve_index=False)
    frame = frame.append_column("doc_int", pa.array(ints)).append_column("doc_float", pa.array(floats))
    path = tmp_path / "test.parquet"
    pq.write_table(frame.append_column("doc_null", with_null), path)
    features = list(table.columns[2:])
    expected = {
        "doc_int": [str(v) for v in ints.tolist()],
        "doc_float": [f"{v:g}" if v != int(v) else str(int(v)) for v in floats.tolist()],
    }
    assert expected["doc_float"][:4] == ["0", "0.5", "1", "1.5"]
    for column, want in expected.items():
        assert pc.cast(frame.column(column), pa.string()).to_pylist() == want  # Arrow's text of the numbers
        predicted = api.predict("holes", path, tracking_uri=uri, doc_id_column=column)
        got = np.concatenate([b.doc_ids for b in predicted.batches if b.doc_ids is not None]).tolist()
        assert got == want
        assert read_part(str(path), "qid", "label", features, column)[4].tolist() == want  # trainer=dask's reader
        by_table = read_ranking_file(path, doc_id_column=column, feature_columns=features).doc_ids
        assert by_table is not None
        assert by_table.tolist() == want  # ltr train's reader (the queries' rows are contiguous)
    code = ltr_main(["predict", "holes", "--data", str(path), "--doc-id-column", "doc_null", "--tracking-uri", uri])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ltr: error: doc id column 'doc_null' of {path}: row 6 has no document id (null)"
    ]
    with pytest.raises(DataError, match=rf"^doc id column 'doc_null' of {re.escape(str(path))}: row 6 has no document id \(null\)$"):
        read_part(str(path), "qid", "label", features, "doc_null")


def _nan_leaf(model_text: str) -> str:
    """The model with the second leaf of its first tree NaN (every row reaching that leaf then
    scores NaN); ``tree_sizes`` dropped, so LightGBM parses the trees one by one."""
    text = re.sub(r"tree_sizes=.*\n", "", model_text)
    start = text.index("leaf_value=", text.index("Tree=0")) + len("leaf_value=")
    end = text.index("\n", start)
    values = text[start:end].split(" ")
    values[1] = "nan"
    return text[:start] + " ".join(values) + text[end:]


def test_a_nan_score_names_the_qid_as_written_in_one_line(
    trained: tuple[str, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that scores a row NaN (here: a leaf of its trees made NaN in the store) cannot be
    measured: ``ltr predict`` says so in one line, exit 2, naming the query as the input wrote it
    (``qid 'Q0042-x'``, not the number the reader gave it); integer qids as before (``qid 42``);
    without labels too (no NaN is ever written to ``--out``)."""
    uri, table = trained
    local = find_local_run(uri, "holes", experiment="ltr")
    assert local is not None
    model = local.artifact(MODEL_TEXT)
    assert model is not None
    ints, texts = tmp_path / "ints.parquet", tmp_path / "texts.parquet"
    table.to_parquet(ints)
    names = {q: f"Q{q:04d}-x" for q in table["qid"].unique()}
    table.assign(qid=table["qid"].map(names)).to_parquet(texts)
    unlabelled = tmp_path / "unlabelled.parquet"
    table.drop(columns=["label"]).to_parquet(unlabelled)
    original = model.read_text()
    model.write_text(_nan_leaf(original))
    try:
        scores = lgb.Booster(model_file=str(model)).predict(table.iloc[:, 2:].to_numpy(np.float32))
        row = int(np.flatnonzero(np.isnan(scores))[0])
        qid = int(table["qid"].iloc[row])
        assert qid != table["qid"].iloc[0]  # not the first query: the row and qid say which
        for path, named in ((texts, repr(names[qid])), (ints, str(qid)), (unlabelled, str(qid))):
            code = ltr_main(["predict", "holes", "--data", str(path), "--out", str(tmp_path / "s.txt"), "--tracking-uri", uri])
            assert code == 2
            assert capsys.readouterr().err.strip().splitlines() == [f"ltr: error: score at row {row} (qid {named}) is NaN"]
            assert not (tmp_path / "s.txt").exists()
    finally:
        model.write_text(original)
