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

REPO = Path(__file__).resolve().parents[1]
FAST = ["debug=default", "fit.num_boost_round=3", "fit.show_progress=false"]


def readme_example() -> str:
    """The first ``python`` block of the manual's "Python API" page."""
    text = (REPO / "docs" / "guide" / "api.md").read_text()
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match is not None, "no python block in docs/guide/api.md"
    return match.group(1)


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
    with pytest.raises(LtrUserError, match="give either qrels and run, or data and scores"):
        api.evaluate(qrels=tmp_path / "q")
    with pytest.raises(LtrUserError, match="no MLflow store"):
        api.compare("a", "b", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
    with pytest.raises(LtrUserError, match="no MLflow store"):
        api.load_run("a", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")


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
