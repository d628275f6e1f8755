"""Per-query tables of string-qid data name every query as written, in every table ltr writes.

``ltr train`` on a CSV of string qids logs ``per_query/{split}`` with the qids as the file
writes them; its metric columns are those of the integer-qid twin of the file (the same rows,
integer qids) bit for bit, and the twin's table keeps its integers as written. ``ltr predict
--split`` writes the logged table again, and ``ltr evaluate --data ... --per-query`` names the
queries as written too. ``ltr compare`` pairs two string-qid runs query by query and refuses,
in one line, to pair a string-qid table with an integer one (a run logged before ltr kept
string qids as written numbers them 0, 1, ...); ``ltr rerun`` of such a run says so.

Real training on a tiny CSV, a real sqlite MLflow store in ``tmp_path``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.api import evaluate
from ltr.cli.main import main as ltr_main
from ltr.compare.align import UnpairedQids
from ltr.compare.loading import load_comparison
from ltr.experiment import run as pipeline
from tests.conftest import compose_train

N_QUERIES = 60
_names_rng = np.random.default_rng(1)
#: the qids as the string file writes them (distinct, in no sorted order) ...
NAMES = [f"q-{v:05x}" for v in _names_rng.choice(1 << 20, N_QUERIES, replace=False)]
#: ... and as its integer twin writes them (distinct, not 0, 1, ...)
INTS = [int(v) for v in _names_rng.choice(10**6, N_QUERIES, replace=False)]
NAME_OF = dict(zip(INTS, NAMES, strict=True))


def write_rows(path: Path, qids: list[str] | list[int]) -> Path:
    """A CSV of ``N_QUERIES`` queries of 2-14 rows (contiguous), labels 0-4 loosely following
    ``f1``; the same rows whatever ``qids`` are (one per query)."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(2, 15, N_QUERIES)
    n = int(sizes.sum())
    features = rng.normal(size=(n, 4))
    labels = np.clip(np.round(features[:, 0] + 0.7 * rng.normal(size=n) + 1.5), 0, 4).astype(np.int64)
    frame = pd.DataFrame({"qid": np.repeat(np.asarray(qids, dtype=object), sizes), "label": labels})
    for j in range(features.shape[1]):
        frame[f"f{j + 1}"] = features[:, j]
    frame.to_csv(path, index=False)
    return path


def train_overrides(path: Path, uri: str, name: str, *extra: str) -> list[str]:
    """A tiny ``ltr train`` of the table ``path`` (valid and test cut from it by query)."""
    return [
        "data=parquet", f"data.train={path}", "data.cache=false", "fit.num_boost_round=15",
        "fit.early_stopping_rounds=5", "fit.num_threads=1", "fit.show_progress=false", "model.num_leaves=7",
        f"tracking.uri={uri}", f"tracking.run_name={name}", *extra,
    ]


def logged_table(uri: str, run_id: str, split: str, tmp_path: Path) -> pd.DataFrame:
    """A run's per-query table of ``split``, read with MLflow directly (not through ltr)."""
    path = MlflowClient(uri).download_artifacts(run_id, f"per_query/{split}.parquet", str(tmp_path / run_id / split))
    return pd.read_parquet(path)


def assert_same_bits(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The same columns and values, every float the same 64 bits (NaN and -0.0 included)."""
    assert list(a.columns) == list(b.columns)
    for column in a.columns:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        if x.dtype.kind == "f":
            assert y.dtype == x.dtype, column
            assert x.tobytes() == y.tobytes(), column
        else:
            assert x.tolist() == y.tolist(), column


@dataclass(frozen=True)
class Runs:
    uri: str
    ids: dict[str, str]
    files: dict[str, Path]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """``text`` (string qids, seed 42), ``text-seed7`` (the same, seed 7: another model), ``ints``
    (the integer twin, seed 42), in one store."""
    root = tmp_path_factory.mktemp("string_qid_tables")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    files = {"text": write_rows(root / "text.csv", NAMES), "ints": write_rows(root / "ints.csv", INTS)}
    ids: dict[str, str] = {}
    for name, path, extra in (
        ("text", files["text"], ()), ("text-seed7", files["text"], ("seed=7", "split.seed=42")), ("ints", files["ints"], ()),
    ):
        overrides = train_overrides(path, uri, name, *extra)
        outcome = pipeline.run(compose_train(overrides), overrides=overrides)
        assert outcome.run_id is not None
        ids[name] = outcome.run_id
    return Runs(uri, ids, files)


def test_a_local_run_logs_string_qids_as_written_and_the_twin_metrics_bit_for_bit(runs: Runs, tmp_path: Path) -> None:
    for split in ("valid", "test"):
        text = logged_table(runs.uri, runs.ids["text"], split, tmp_path)
        ints = logged_table(runs.uri, runs.ids["ints"], split, tmp_path)
        assert len(text) == N_QUERIES // 5  # 0.2 of the queries
        assert ints["qid"].dtype == np.int64
        assert set(ints["qid"]) <= set(INTS)  # integers as written, not numbered 0, 1, ...
        assert text["qid"].tolist() == [NAME_OF[q] for q in ints["qid"]]  # each query by its written name
        assert_same_bits(text.drop(columns="qid"), ints.drop(columns="qid"))
    # the small tables the MLflow UI shows name them as written too
    path = MlflowClient(runs.uri).download_artifacts(runs.ids["text"], "per_query/test.json", str(tmp_path / "json"))
    shown = json.loads(Path(path).read_text())
    assert [row[shown["columns"].index("qid")] for row in shown["data"]] == text["qid"].tolist()
    a, b = (MlflowClient(runs.uri).get_run(runs.ids[n]).data.metrics for n in ("text", "ints"))
    assert a["test/ndcg_at_10"] == b["test/ndcg_at_10"]


def test_predict_of_the_run_s_own_split_writes_the_logged_table(runs: Runs, tmp_path: Path) -> None:
    """``ltr predict RUN --split test --per-query``: the logged table again, qids as written."""
    for name in ("text", "ints"):
        out = tmp_path / f"{name}.parquet"
        code = ltr_main(["predict", runs.ids[name], "--split", "test", "--per-query", str(out), "--tracking-uri", runs.uri])
        assert code == 0
        assert_same_bits(pd.read_parquet(out), logged_table(runs.uri, runs.ids[name], "test", tmp_path))


def test_evaluate_of_a_string_qid_file_writes_its_qids_as_written(runs: Runs, tmp_path: Path) -> None:
    n_rows = len(pd.read_csv(runs.files["ints"]))
    scores = np.random.default_rng(3).normal(size=n_rows)
    tables = {}
    for name in ("text", "ints"):
        out = tmp_path / f"{name}.csv"
        evaluate(data=runs.files[name], scores=scores, k=(5, 10), per_query=out)
        tables[name] = pd.read_csv(out, dtype={"qid": str} if name == "text" else None)
    assert tables["ints"]["qid"].tolist() == INTS
    assert tables["text"]["qid"].tolist() == NAMES
    assert_same_bits(tables["text"].drop(columns="qid"), tables["ints"].drop(columns="qid"))


def test_compare_pairs_string_qids_by_name(runs: Runs, tmp_path: Path) -> None:
    loaded = load_comparison(["text", "text-seed7"], tracking_uri=runs.uri, n_resamples=200)
    assert loaded.comparison.n_queries == N_QUERIES // 5  # every test query of both runs
    assert loaded.comparison.n_dropped == (0, 0)
    text = logged_table(runs.uri, runs.ids["text"], "test", tmp_path)
    other = logged_table(runs.uri, runs.ids["text-seed7"], "test", tmp_path).set_index("qid")
    want = other.loc[text["qid"], "ndcg_at_10"].to_numpy() - text["ndcg_at_10"].to_numpy()
    rows = [r for r in loaded.comparison.rows if not r.is_baseline and r.stratum == "all" and r.metric == "ndcg_at_10"]
    assert len(rows) == 1
    assert rows[0].n == len(text)
    assert (rows[0].wins, rows[0].losses) == (int((want > 0).sum()), int((want < 0).sum()))


def test_compare_refuses_to_pair_string_qids_with_integers(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The integer twin stands in for a run logged before ltr kept string qids as written (its
    table numbered them): the fingerprints differ, and with --force the qids cannot be paired."""
    first = logged_table(runs.uri, runs.ids["text"], "test", tmp_path)["qid"][0]
    number = int(logged_table(runs.uri, runs.ids["ints"], "test", tmp_path)["qid"][0])
    expected = (
        f"run 'text' names its queries as written (qid {first!r}) but run 'ints' by numbers (qid {number}): "
        "a run logged before ltr kept string qids as written numbers them 0, 1, ..., which pairs no query "
        "reliably; re-run 'ints' (ltr rerun) to compare them"
    )
    with pytest.raises(UnpairedQids) as caught:
        load_comparison(["text", "ints"], tracking_uri=runs.uri, force=True, n_resamples=200)
    assert str(caught.value) == expected
    capsys.readouterr()
    assert ltr_main(["compare", "ints", "text", "--force", "--tracking-uri", runs.uri, "--n-resamples", "200"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"ltr: error: {expected}"


def test_a_run_logged_before_string_qids_were_kept_is_refused_and_rerun_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An old run: its tables hold the readers' numbers (each name's place in the file), as ltr
    logged them before it kept string qids as written. Same data, same fingerprint: ``ltr
    compare`` refuses in one line; ``ltr rerun`` of it says why it shows no per-stratum
    comparison instead of failing."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    path = write_rows(tmp_path / "text.csv", NAMES)
    ids = {}
    for name in ("old", "new"):
        overrides = train_overrides(path, uri, name)
        outcome = pipeline.run(compose_train(overrides), overrides=overrides)
        assert outcome.run_id is not None
        ids[name] = outcome.run_id
    number = {q: i for i, q in enumerate(NAMES)}  # the file's numbers: order of first appearance
    for split in ("valid", "test"):
        table = logged_table(uri, ids["old"], split, tmp_path)
        table.assign(qid=table["qid"].map(number).astype(np.int64)).to_parquet(tmp_path / f"{split}.parquet", index=False)
        MlflowClient(uri).log_artifact(ids["old"], str(tmp_path / f"{split}.parquet"), "per_query")
    old = logged_table(uri, ids["old"], "test", tmp_path / "again")
    assert old["qid"].dtype == np.int64
    with pytest.raises(UnpairedQids, match=r"^run 'new' names its queries as written \(qid 'q-[0-9a-f]+'\) but run 'old' by numbers \(qid \d+\): "):
        load_comparison(["old", "new"], tracking_uri=uri, n_resamples=200)
    capsys.readouterr()
    assert ltr_main(["rerun", ids["old"], "model.num_leaves=5", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.endswith(" metric keys moved (rerun - source):") for line in out)
    (note,) = [line for line in out if line.startswith("(no per-stratum comparison: ")]
    assert "names its queries as written (qid 'q-" in note
    assert note.endswith("(ltr rerun) to compare them)")
