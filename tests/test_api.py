"""The Python API (``ltr.api``): its docstring examples, the README's example, its errors
(`LtrUserError`, never ``SystemExit``) and user config directories layered on ``ltr/conf/``."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import numpy as np
import pytest

import ltr.api
from ltr import api
from ltr.config.compose import compose_train
from ltr.errors import LtrUserError
from ltr.tracking.uri import find_tracking_uri
from tests.docs.examples import api_page_example

REPO = Path(__file__).resolve().parents[1]
FAST = ["debug=default", "fit.num_boost_round=3", "fit.show_progress=false"]



def readme_example() -> str:
    """The first ``python`` block of the manual's "Python API" page (the docs runner leaves it to
    this module, which checks its results)."""
    return api_page_example()


def test_docstring_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples train into ./mlflow.db, as a user's would
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(ltr.api, optionflags=flags)
    assert result.attempted >= 15
    assert result.failed == 0
    assert (tmp_path / "mlflow.db").is_file()


def test_readme_example_runs_in_under_15_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = readme_example()
    assert len([line for line in code.splitlines() if line.strip()]) < 15
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(code, "docs/guide/api.md", "exec"), scope)
    a, b, comparison = scope["a"], scope["b"], scope["comparison"]
    assert isinstance(a, api.RunOutcome)
    assert isinstance(b, api.RunOutcome)
    assert comparison.labels == ("lambdarank", "xendcg")  # type: ignore[attr-defined]
    # the comparison reads the runs' per-query tables back: their means are the logged metrics
    means = {r.run: r.mean for r in comparison.rows_for("ndcg_at_10") if r.stratum == "all"}  # type: ignore[attr-defined]
    assert means["lambdarank"] == pytest.approx(a.metrics["test/ndcg_at_10"], abs=1e-12)
    assert means["xendcg"] == pytest.approx(b.metrics["test/ndcg_at_10"], abs=1e-12)
    best = max((a, b), key=lambda o: o.metrics["valid/ndcg_at_10"])
    assert scope["best"].run_id == best.run_id  # type: ignore[attr-defined]
    # the logged model scores the run's own test split to the run's logged metric, bit for bit
    assert scope["prediction"].summary["ndcg_at_10"] == best.metrics["test/ndcg_at_10"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["model.num_leafs=7"], "num_leafs"),  # a typo: Hydra's "not in struct"
        (["model=lambdamart"], "lambdamart"),  # no such option
        (["model.num_leaves=3,7"], "sweep"),  # sweeps are ltr train -m's
        (["model.num_leaves=1"], "model.num_leaves=1 is out of range: it must be >= 2"),  # ltr.experiment.checks
        (["tracking.uri=file:///tmp/x"], "file stores are not supported"),
    ],
)
def test_train_refuses_in_one_line_before_any_run(
    overrides: list[str], needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LtrUserError) as info:
        api.train([*FAST, *overrides])
    message = str(info.value)
    assert needle.lower() in message.lower()
    assert "\n" not in message
    assert not (tmp_path / "mlflow.db").exists()  # nothing was started


def test_user_config_dir_adds_options_and_cannot_shadow_shipped_ones(tmp_path: Path) -> None:
    mine = tmp_path / "myconf"
    (mine / "local").mkdir(parents=True)
    (mine / "model").mkdir()
    # personal settings: the `optional local: default` entry of ltr/conf/train.yaml
    (mine / "local" / "default.yaml").write_text("# @package _global_\nseed: 7\nfit:\n  num_threads: 1\n")
    (mine / "model" / "tiny.yaml").write_text("defaults:\n  - lambdarank\nnum_leaves: 3\n")
    (mine / "model" / "lambdarank.yaml").write_text("defaults:\n  - model_schema\nnum_leaves: 99\n")
    plain = compose_train([])
    layered = compose_train([], config_dir=mine)
    assert (plain.seed, layered.seed) == (42, 7)
    assert layered.fit.num_threads == 1
    assert compose_train(["model=tiny"], config_dir=mine).model.num_leaves == 3
    # the shipped option comes first on the search path: a user file of the same name is not used
    assert layered.model.num_leaves == plain.model.num_leaves != 99
    with pytest.raises(LtrUserError, match="no such directory"):
        compose_train([], config_dir=tmp_path / "missing")


def test_ltr_train_takes_a_config_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ltr.cli.main import main

    mine = tmp_path / "myconf" / "local"
    mine.mkdir(parents=True)
    (mine / "default.yaml").write_text("# @package _global_\nseed: 7\n")
    assert main(["train", "--config-dir", str(mine.parent), "--cfg", "job"]) == 0
    assert "seed: 7\n" in capsys.readouterr().out.splitlines(keepends=True)
    assert main(["train", f"hydra.searchpath=['file://{mine.parent}']", "--cfg", "job"]) == 0
    assert "seed: 7\n" in capsys.readouterr().out.splitlines(keepends=True)


def test_predict_needs_data_or_split_and_refuses_a_wider_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = api.train([*FAST, "tracking.run_name=narrow", "data.n_informative=2", "data.n_noise=2"])
    with pytest.raises(LtrUserError, match="give data"):
        api.predict("narrow")
    wide = tmp_path / "wide.txt"
    wide.write_text("1 qid:1 1:0.5 9:1.0\n0 qid:1 1:0.1 9:0.0\n")
    with pytest.raises(LtrUserError, match=r"feature index 9 at line 1 .* is above n_features"):
        api.predict(outcome.run_id or "", wide)
    # a file of the model's width: hand-checkable scores are the booster's own
    ok = tmp_path / "ok.txt"
    ok.write_text("1 qid:1 1:0.5 2:1.0\n0 qid:1 1:0.1\n2 qid:2 3:2.0\n")
    logged = api.load_run("narrow")
    prediction = api.predict(logged, ok)
    assert prediction.n_rows == 3
    assert prediction.n_queries == 2
    features = np.zeros((3, logged.n_features))  # the sparse rows above, zeros elsewhere
    features[0, :2] = [0.5, 1.0]
    features[1, 0] = 0.1
    features[2, 2] = 2.0
    assert list(prediction.model_scores) == list(logged.booster.predict(features))


def test_evaluate_and_compare_raise_ltr_errors_not_system_exit(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    with pytest.raises(LtrUserError, match="give either qrels and run, or data and scores"):
        api.evaluate(qrels=tmp_path / "q")
    with pytest.raises(LtrUserError, match="no MLflow store"):
        api.compare("a", "b", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
    with pytest.raises(LtrUserError, match="no MLflow store"):
        api.load_run("a", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")


def test_evaluate_takes_the_column_options_of_the_command(tmp_path: Path) -> None:
    """``qid_column`` / ``label_column`` as ``--qid-column`` / ``--label-column``: a table's own
    names; a missing column is one line naming the file's columns; a blank name is refused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "export.parquet"
    pq.write_table(pa.table({"query_id": [1, 1, 2, 2], "grade": [1, 0, 0, 2], "docno": ["a", "b", "c", "d"]}), table)
    # query 1: the grade-1 document first (nDCG 1); query 2: grade 0 then grade 2, DCG@2 3/log2(3), IDCG 3
    result = api.evaluate(data=table, scores=[1.0, 0.0, 1.0, 0.0], qid_column="query_id", label_column="grade", k=[2])
    assert result.summary["ndcg_at_2"] == pytest.approx((1.0 + 1 / np.log2(3)) / 2, abs=1e-12)
    with pytest.raises(LtrUserError, match=r"has no qid column 'qid' \(columns: query_id, grade, docno\)"):
        api.evaluate(data=table, scores=[1.0, 0.0, 1.0, 0.0], label_column="grade")
    with pytest.raises(LtrUserError, match=r"^qid_column='' is empty$"):
        api.evaluate(data=table, scores=[1.0, 0.0, 1.0, 0.0], qid_column="")


def test_evaluate_with_a_score_array_equals_the_file(tmp_path: Path) -> None:
    data = tmp_path / "d.txt"
    # q1: labels 2, 0, 1 ranked by scores 0.1, 0.9, 0.5 -> order 0, 1, 2 (labels)
    data.write_text("2 qid:1 1:0\n0 qid:1 1:0\n1 qid:1 1:0\n")
    (tmp_path / "s.txt").write_text("0.1\n0.9\n0.5\n")
    from_array = api.evaluate(data=data, scores=[0.1, 0.9, 0.5], k=[3], gain="linear")
    from_file = api.evaluate(data=data, scores=tmp_path / "s.txt", k=[3], gain="linear")
    # DCG = 0/log2(2) + 1/log2(3) + 2/log2(4); IDCG = 2 + 1/log2(3)
    import math

    expected = (1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3))
    assert from_array.summary["ndcg_at_3"] == pytest.approx(expected, abs=1e-12)
    assert from_array.summary == from_file.summary
    with pytest.raises(LtrUserError, match="has 2 scores"):
        api.evaluate(data=data, scores=[0.1, 0.2], k=[3])


def test_readers_find_the_store_in_cwd_then_the_project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    here = root / "notebooks"
    assert find_tracking_uri(start=here) == f"sqlite:///{here / 'mlflow.db'}"  # nothing yet: cwd's
    (root / "mlflow.db").write_bytes(b"")
    assert find_tracking_uri(start=here) == f"sqlite:///{root / 'mlflow.db'}"
    (here / "mlflow.db").write_bytes(b"")
    assert find_tracking_uri(start=here) == f"sqlite:///{here / 'mlflow.db'}"  # cwd first
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    assert find_tracking_uri(start=here) == "http://127.0.0.1:1"
    monkeypatch.setenv("LTR_TRACKING_URI", f"sqlite:///{tmp_path / 'other.db'}")
    assert find_tracking_uri(start=here) == f"sqlite:///{tmp_path / 'other.db'}"
    assert find_tracking_uri("sqlite:///x.db", start=here) == f"sqlite:///{Path('x.db').resolve()}"


def test_every_verb_uses_the_store_of_mlflow_tracking_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``$MLFLOW_TRACKING_URI`` (which ``mlflow.set_tracking_uri`` sets in MLflow 3): ``ltr train``
    and ``api.train`` write there, and ``predict``, ``promote`` and ``load_run`` read the runs
    there; nothing lands in ``./mlflow.db``. Unset, ``./mlflow.db`` it is."""
    import mlflow

    from ltr.cli.main import main

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "x" / "elsewhere.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    assert main(["train", *FAST, "tracking.run_name=envrun"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("MLflow run ")]
    assert f" of sqlite:///{db} ($MLFLOW_TRACKING_URI): " in line
    assert db.is_file()
    assert not (tmp_path / "mlflow.db").exists()
    assert main(["predict", "envrun", "--split", "test"]) == 0
    assert main(["promote", "envrun", "--name", "ranker"]) == 0
    assert "registered run" in capsys.readouterr().out
    logged = api.load_run("envrun")
    assert logged.run_id in line
    assert api.predict("envrun", split="test").summary["ndcg_at_10"] == logged.metrics["test/ndcg_at_10"]

    # a notebook that pointed its MLflow somewhere: api.train and the readers follow it
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    notebook_db = tmp_path / "notebook.db"
    mlflow.set_tracking_uri(f"sqlite:///{notebook_db}")
    outcome = api.train([*FAST, "tracking.run_name=nb"])
    assert notebook_db.is_file()
    assert api.load_run("nb").run_id == outcome.run_id
    assert mlflow.get_tracking_uri() == f"sqlite:///{notebook_db}"  # and the notebook's MLflow left as it was
    assert not (tmp_path / "mlflow.db").exists()

    # an explicit tracking.uri still wins; unset, ./mlflow.db as ever
    given = tmp_path / "given.db"
    api.train([*FAST, f"tracking.uri=sqlite:///{given}", "tracking.run_name=given"])
    assert api.load_run("given", tracking_uri=f"sqlite:///{given}").run_name == "given"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    api.train([*FAST, "tracking.run_name=here"])
    assert (tmp_path / "mlflow.db").is_file()
    assert api.load_run("here").run_name == "here"


#: (function, positional arguments, keyword arguments, the argument the message must name).
#: Files ``q`` and ``r`` exist in the test's folder (a qrels and a run file); nothing else does.
BAD_ARGUMENTS = [
    ("train", ("debug=default",), {}, "overrides"),  # one string: its characters are no overrides
    ("train", ([3],), {}, "overrides"),
    ("train", (["debug=default"],), {"config_dir": "missing"}, "config_dir"),
    ("train", (["debug=default"],), {"config_dir": 3}, "config_dir"),
    ("evaluate", (), {"qrels": "q", "run": "r", "k": "10"}, "k"),  # was a bare TypeError
    ("evaluate", (), {"qrels": "q", "run": "r", "k": 10}, "k"),
    ("evaluate", (), {"qrels": "q", "run": "r", "k": [True]}, "k"),
    ("evaluate", (), {"qrels": "q", "run": "r", "k": [0]}, "k"),
    ("evaluate", (), {"qrels": "missing", "run": "r"}, "qrels"),
    ("evaluate", (), {"qrels": "q", "run": "missing"}, "run"),
    ("evaluate", (), {"data": "missing", "scores": [1.0]}, "data"),
    ("evaluate", (), {"data": "q", "scores": "missing"}, "scores"),
    ("evaluate", (), {"qrels": "q", "run": "r", "preset": "trec"}, "preset"),
    ("evaluate", (), {"qrels": "q", "run": "r", "gain": 2}, "gain"),
    ("evaluate", (), {"qrels": "q", "run": "r", "gain": "cubic"}, "gain"),
    ("evaluate", (), {"qrels": "q", "run": "r", "label_gain": "0,1,3"}, "label_gain"),
    ("evaluate", (), {"qrels": "q", "run": "r", "ties": "random"}, "ties"),
    ("evaluate", (), {"qrels": "q", "run": "r", "zero_idcg": "nan"}, "zero_idcg"),
    ("evaluate", (), {"qrels": "q", "run": "r", "rel_threshold": -1}, "rel_threshold"),
    ("evaluate", (), {"qrels": "q", "run": "r", "rel_threshold": "1"}, "rel_threshold"),
    ("evaluate", (), {"qrels": "q", "run": "r", "discount": "log10"}, "discount"),
    ("evaluate", (), {"qrels": "q", "run": "r", "discount_base": "2"}, "discount_base"),
    ("evaluate", (), {"qrels": "q", "run": "r", "err_max_grade": -1}, "err_max_grade"),
    ("evaluate", (), {"qrels": "q", "run": "r", "strata": "1,10"}, "strata"),
    ("evaluate", (), {"qrels": "q", "run": "r", "strata": [0, 10]}, "strata"),
    ("evaluate", (), {"qrels": "q", "run": "r", "missing_topics": "drop"}, "missing_topics"),
    ("evaluate", (), {"qrels": "q", "run": "r", "max_docs": 0}, "max_docs"),
    ("evaluate", (), {"qrels": "q", "run": "r", "per_query": "no/such/folder.csv"}, "per_query"),
    ("evaluate", (), {"qrels": "q", "run": "r", "per_query": "table.txt"}, "per_query"),
    ("evaluate", (), {"qrels": "q", "run": "r", "measures": "ndcg"}, "measures"),
    ("evaluate", (), {"qrels": "q", "run": "r", "measures": ["nDCG@10"]}, "measures"),
    ("compare", ("a", "b"), {"metrics": "ndcg_at_10"}, "metrics"),  # was: missing columns n, d, c, g
    ("compare", ("a", "b"), {"metrics": ["ndcg_at_10", ""]}, "metrics[1]"),
    ("compare", ("a", 7), {}, "runs[1]"),
    ("compare", ("", "b"), {}, "runs[0]"),
    ("compare", ("a", "b"), {"baseline": 1}, "baseline"),
    ("compare", ("a", "b"), {"split": "tset"}, "split"),
    ("compare", ("a", "b"), {"experiment": ""}, "experiment"),
    ("compare", ("a", "b"), {"tracking_uri": ""}, "tracking_uri"),
    ("compare", ("a", "b"), {"force": "yes"}, "force"),
    ("compare", ("a", "b"), {"force": 1}, "force"),
    ("compare", ("a", "b"), {"seed": -1}, "seed"),
    ("compare", ("a", "b"), {"seed": 1.5}, "seed"),
    ("compare", ("a", "b"), {"n_resamples": 0}, "n_resamples"),
    ("compare", ("a", "b"), {"n_resamples": 50}, "n_resamples"),
    ("load_run", ("",), {}, "run"),
    ("load_run", (3,), {}, "run"),
    ("load_run", ("a",), {"tracking_uri": 3}, "tracking_uri"),
    ("load_run", ("a",), {"experiment": " "}, "experiment"),
    ("predict", (3,), {"split": "test"}, "run"),
    ("predict", ("a", "missing"), {}, "data"),
    ("predict", ("a", ["q", "missing"]), {}, "data[1]"),
    ("predict", ("a",), {"split": "tests"}, "split"),
    ("predict", ("a", "q"), {"format": "xml"}, "format"),
    ("predict", ("a", "q"), {"batch_rows": 0}, "batch_rows"),
    ("predict", ("a", "q"), {"batch_rows": "100"}, "batch_rows"),
    ("predict", ("a", "q"), {"qid_column": ""}, "qid_column"),
    ("predict", ("a", "q"), {"label_column": 0}, "label_column"),
    ("predict", ("a", "q"), {"doc_id_column": ""}, "doc_id_column"),
    ("predict", ("a", "q"), {"dask": "local"}, "dask"),
    ("predict", ("a", "q"), {"experiment": ""}, "experiment"),
    ("scored_pairs", ("a", "missing"), {}, "data"),
    ("scored_pairs", ("a", "q"), {"format": "tsv"}, "format"),
    ("scored_pairs", ("a", "q"), {"doc_id_column": ""}, "doc_id_column"),
    ("scored_pairs", ("a", "q"), {"tracking_uri": ""}, "tracking_uri"),
]


@pytest.mark.parametrize(
    ("function", "args", "kwargs", "argument"), BAD_ARGUMENTS, ids=[f"{f}-{a}-{i}" for i, (f, _, _, a) in enumerate(BAD_ARGUMENTS)]
)
def test_a_bad_argument_is_refused_in_one_line_naming_it(
    function: str, args: tuple[object, ...], kwargs: dict[str, object], argument: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every public function checks every argument before it reads anything: one line, naming
    the Python argument (``k='10'``), never the command line's option (``--k``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LTR_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 x\n")
    with pytest.raises(LtrUserError) as info:
        getattr(api, function)(*args, **kwargs)
    message = str(info.value)
    assert re.match(rf"^{re.escape(argument)}(?!\w)", message), message  # the line starts with the argument
    assert "--" not in message, message
    assert "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q", "r"], "nothing was written (no store, no run)"


def test_a_notebook_without_a_store_is_told_the_argument_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No store found (a fresh folder, no variables): the API says ``tracking_uri=``, the
    command line ``--tracking-uri``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LTR_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    for call in (lambda: api.load_run("a"), lambda: api.compare("a", "b"), lambda: api.predict("a", split="test")):
        with pytest.raises(LtrUserError) as info:
            call()
        assert str(info.value) == (
            f"no MLflow store at {tmp_path / 'mlflow.db'} (from sqlite:///{tmp_path / 'mlflow.db'}); "
            "train a run first or pass tracking_uri="
        )
    from ltr.cli.main import main

    capsys.readouterr()
    assert main(["compare", "a", "b"]) == 2
    assert capsys.readouterr().err.strip().endswith("train a run first or pass --tracking-uri")  # the command's own name


def test_a_sequence_argument_takes_numpy_arrays_and_tuples(tmp_path: Path) -> None:
    """The checks refuse wrong types, not other sequences: ``k`` as a tuple or a numpy array."""
    (tmp_path / "qrels").write_text("q1 0 d1 2\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d2 1 2.0 x\nq1 Q0 d1 2 1.0 x\n")
    # d2 (label 0) first, d1 (label 2) second: DCG@2 = 3/log2(3), IDCG@2 = 3 (exp gain 2^2-1)
    expected = (3 / np.log2(3)) / 3
    for k in ((2,), np.array([2])):
        result = api.evaluate(qrels=tmp_path / "qrels", run=tmp_path / "run", k=k)
        assert result.summary["ndcg_at_2"] == pytest.approx(expected, abs=1e-12)
