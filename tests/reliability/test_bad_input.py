"""An adversarial user's bad inputs: each is one line, exit 2, no traceback, no run left behind.

Every case runs the real ``ltr`` command in this process (``ltr.cli.main.main``) in a fresh
folder; the folder's store, if any, must hold no run afterwards.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main
from tests.processes import free_port

Setup = Callable[[Path], list[str]]



def _letor(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _binary(path: Path) -> Path:
    path.write_bytes(b"1\n\xff\xfe\x00\x01")
    return path


def _good_lines(n_queries: int = 20) -> list[str]:
    return [f"{(q + d) % 3} qid:{q} 1:{d / 10:.2f} 2:{q / 100:.2f}" for q in range(n_queries) for d in range(5)]


def _train_file(tmp: Path, lines: list[str]) -> list[str]:
    f = _letor(tmp / "train.txt", lines)
    return ["train", "data=svmlight", f"data.train={f}", f"data.cache_dir={tmp / 'cache'}", "fit.show_progress=false"]


def _click_log(path: Path, rows: list[tuple[str, str, int, object]]) -> str:
    """A click log (query, doc_id, position, click) as CSV or Parquet (by the suffix): a Parquet
    log keeps the clicks' own type (text stays text)."""
    frame = pd.DataFrame(rows, columns=["query", "doc_id", "position", "click"])
    frame.to_parquet(path) if path.suffix == ".parquet" else frame.to_csv(path, index=False)
    return str(path)


_TEXT_CLICKS = [("q1", "d1", 0, "1"), ("q1", "d2", 1, "0"), ("q2", "d3", 0, "0"), ("q2", "d4", 1, "1")]
_SHARED_POSITION = [("q1", "d1", 0, 1), ("q1", "d2", 1, 0), ("q2", "d3", 0, 0), ("q2", "d4", 0, 1)]
_ONE_POSITION = [("q1", "d1", 0, 1), ("q2", "d2", 0, 0), ("q3", "d3", 0, 1)]


def _ope(log: str, t: Path) -> list[str]:
    return ["ope", "a-run", "--log", log, "--data", str(t / "features.parquet"), "--eta", "1", "--no-log"]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


CASES: dict[str, tuple[Setup, str]] = {
    # config: Hydra composition
    "typo key": (lambda t: ["train", "model.num_leafs=7"], "num_leafs"),
    "unknown group option": (lambda t: ["train", "model=forest"], "model=forest is not an option of model (options: catboost, lambdarank, pointwise, rank_xendcg, xgboost)"),
    "unknown eval option": (lambda t: ["train", "eval=trec"], "eval=trec is not an option of eval (options: default, lightgbm, sklearn)"),
    "enum trainer": (lambda t: ["train", "trainer.kind=gpu"], "gpu"),
    "enum ties": (lambda t: ["train", "eval.ties=random"], "random"),
    "enum gain": (lambda t: ["train", "eval.gain=log"], "log"),
    "enum estimator": (lambda t: ["train", "model.estimator=tree"], "tree"),
    "enum propensity": (lambda t: ["train", "eval.clicks.propensity=foo"], "foo"),
    "enum preset": (lambda t: ["train", "eval.preset=trec"], "trec"),
    "wrong type": (lambda t: ["train", "seed=abc"], "seed"),
    "override syntax": (lambda t: ["train", "model.num_leaves=[1"], "num_leaves"),
    # config: ltr's rules
    "strata": (lambda t: ["train", "eval.strata=[2,5]"], "eval.strata"),
    "empty k": (lambda t: ["train", "eval.k=[]"], "eval.k"),
    "zero k": (lambda t: ["train", "eval.k=[0,5]"], "eval.k"),
    "objective key": (lambda t: ["train", "optimized_metric=valid/ndcg_at_7"], "optimized_metric"),
    "early stopping metric": (lambda t: ["train", "fit.early_stopping_metric=map@3"], "fit.early_stopping_metric"),
    "threads": (lambda t: ["train", "fit.num_threads=-3"], "fit.num_threads"),
    "rounds": (lambda t: ["train", "fit.num_boost_round=0"], "fit.num_boost_round"),
    "patience": (lambda t: ["train", "fit.early_stopping_rounds=0"], "fit.early_stopping_rounds"),
    "learning rate": (lambda t: ["train", "model.learning_rate=-1"], "model.learning_rate"),
    "leaves": (lambda t: ["train", "model.num_leaves=1"], "model.num_leaves"),
    "lightgbm refuses": (lambda t: ["train", "+model.params.min_data_in_bin=0"], "LightGBM refuses"),
    "unknown lightgbm key": (lambda t: ["train", "+model.params.num_leafs=3"], "not a LightGBM parameter"),
    "reserved lightgbm key": (lambda t: ["train", "+model.params.seed=3"], "set by ltr"),
    "objective mismatch": (lambda t: ["train", "model.objective=regression"], "not a ranking objective"),
    "decreasing label gain": (lambda t: ["train", "model.label_gain=[0,3,1,7,15]"], "decreases"),
    "eval splits": (lambda t: ["train", "eval.splits=[holdout]"], "holdout"),
    "no valid split": (lambda t: ["train", "eval.splits=[test]"], "optimized_metric"),
    "rel threshold": (lambda t: ["train", "eval.rel_threshold=-5"], "eval.rel_threshold"),
    "idcg bins": (lambda t: ["train", "eval.idcg_bins=0"], "eval.idcg_bins"),
    "min propensity": (lambda t: ["train", "eval.clicks.min_propensity=0"], "min_propensity"),
    "composite part": (lambda t: ["train", "+eval.composite.blend={ndcg@3: 1.0}"], "ndcg@3"),
    "partitions need dask": (lambda t: ["train", "data=parquet_partitions", f"data.root={t}"], "trainer=dask"),
    "position bias on dask": (lambda t: ["train", "model.position_bias=true", "trainer=dask"], "trainer=local"),
    "pointwise on dask": (lambda t: ["train", "model=pointwise", "trainer=dask"], "trains rankers only"),
    "position bias objective": (lambda t: ["train", "model=rank_xendcg", "model.position_bias=true"], "lambdarank"),
    "missing root": (lambda t: ["train", "data=letor"], "data.root"),
    # tracking URIs, checked before the data
    "in-memory sqlite": (lambda t: ["train", "tracking.uri=sqlite://"], "memory"),
    "file store": (lambda t: ["train", f"tracking.uri=file://{t}/mlruns"], "file"),
    "unknown scheme": (lambda t: ["train", "tracking.uri=foo://bar"], "foo"),
    "server not answering": (lambda t: ["train", "tracking.uri=http://127.0.0.1:9"], "127.0.0.1:9"),
    "store under a file": (lambda t: ["train", f"tracking.uri=sqlite:///{_letor(t / 'afile', ['x'])}/mlflow.db"], "afile"),
    # data
    "no such root": (lambda t: ["train", "data=letor", f"data.root={t}/nowhere"], "nowhere"),
    "no such file": (lambda t: ["train", "data=svmlight", f"data.train={t}/missing.txt"], "missing.txt"),
    "label too large": (lambda t: ["train", "model.label_gain=[0,1]"], "model.label_gain"),
    "malformed line": (lambda t: _train_file(t, [*_good_lines(), "1 qid:5 1:0.5 2:abc"]), "line 101"),
    "negative label": (lambda t: _train_file(t, ["-1 qid:1 1:0.5", *_good_lines()]), "line 1"),
    "missing qid": (lambda t: _train_file(t, [*_good_lines(), "1 1:0.5"]), "qid"),
    "empty file": (lambda t: _train_file(t, []), "train.txt"),
    "position bias without positions": (lambda t: ["train", "model.position_bias=true"], "position"),
    # ltr evaluate / compare / cache / ui
    "evaluate no input": (lambda t: ["evaluate"], "--qrels"),
    "evaluate missing qrels": (lambda t: ["evaluate", "--qrels", f"{t}/q.txt", "--run", f"{t}/r.txt"], "q.txt"),
    "compare no store": (lambda t: ["compare", "a", "b", "--tracking-uri", f"sqlite:///{t}/mlflow.db"], "no MLflow store"),
    "compare one run": (lambda t: ["compare", "a"], "two different runs; got 1 (a)"),
    "compare a run with itself": (lambda t: ["compare", "a", "a"], "two different runs; got 1 (a, a)"),
    "compare a baseline with itself": (lambda t: ["compare", "a", "--baseline", "a"], "two different runs; got 1 (a)"),
    "predict scores named as a table": (lambda t: ["predict", "a", "--data", "d.txt", "--out", "s.parquet"], "--out=s.parquet is named as a table"),
    "predict scores named as csv": (lambda t: ["predict", "a", "--data", "d.txt", "--out", "s.csv.gz"], "writes text, one score per line"),
    "cache bad action": (lambda t: ["cache", "explode"], "explode"),
    # outputs onto the store, its artifacts or an input (tests/reliability/test_output_guard.py: every verb)
    "predict out onto the store": (lambda t: ["predict", "a", "--data", "d.txt", "--out", "mlflow.db"], "--out mlflow.db is the tracking store's database"),
    "evaluate per-query into the artifacts": (
        lambda t: ["evaluate", "--qrels", "q", "--run", "r", "--per-query", "mlartifacts/1/x.csv"], "the artifact folder of the tracking store",
    ),
    "calibrate figure onto the store lock": (
        lambda t: ["calibrate", "t.csv", "--offline", "a", "--online", "b", "--figure", "mlflow.db.lock"], "the tracking store's lock file",
    ),
    "calibrate figure onto its table": (
        lambda t: ["calibrate", str(_letor(t / "t.csv", ["a,b"])), "--offline", "a", "--online", "b", "--figure", "t.csv"], "is the input",
    ),
    "data write into mlruns": (lambda t: ["data", "write", "synthetic", "--out", "mlruns/x"], "the artifact folder of the tracking store"),
    "partition onto the store": (lambda t: ["partition", "--train", "d.txt", "-o", "mlflow.db-wal"], "the tracking store's write-ahead log"),
    "predict two outputs on stdout": (lambda t: ["predict", "a", "--data", "d.txt", "--out", "-", "--trec-run", "-"], "only one output"),
    # degenerate settings
    "calibrate a column on itself": (lambda t: ["calibrate", "t.csv", "--offline", "x", "--online", "x"], "a column fitted on itself"),
    "discount all zero": (lambda t: ["evaluate", "--qrels", "q", "--run", "r", "--discount", "0,0,0"], "--discount=0,0,0: every weight is 0"),
    "position weights all zero": (lambda t: ["train", "eval.position_weights=[0,0]"], "eval.position_weights=[0,0]: every weight is 0"),
    "discount file abc on line 2": (
        lambda t: ["evaluate", "--qrels", "q", "--run", "r", "--discount", str(_letor(t / "w.txt", ["1", "abc"]))],
        "w.txt, line 2: 'abc' is not a number",
    ),
    "discount file binary": (
        lambda t: ["evaluate", "--qrels", "q", "--run", "r", "--discount", str(_binary(t / "w.bin"))], "w.bin, line 2: not text",
    ),
    "discount file missing": (lambda t: ["evaluate", "--qrels", "q", "--run", "r", "--discount", f"{t}/w.txt"], "w.txt does not exist"),
    "run name too long": (lambda t: ["train", "debug=default", f"tracking.run_name={'x' * 1000}"], "tracking.run_name is 1,000 characters long"),
    "unknown verb": (lambda t: ["trian"], "did you mean 'train'?"),
    "ui without store": (lambda t: ["ui", "--port", str(free_port())], "no MLflow store"),
    "ui port out of range": (lambda t: ["ui", "--port", "70000"], "70000"),
    # click logs (ltr.data.feedback.click_checks): the same refusal in ltr ope and ltr exposure
    "ope text clicks": (lambda t: _ope(_click_log(t / "log.parquet", _TEXT_CLICKS), t), "log.parquet, row 1: click '1' is text"),
    "ope two documents at one position": (
        lambda t: _ope(_click_log(t / "log.csv", _SHARED_POSITION), t), "rows 3 and 4: query 'q2' shows two documents at position 0"),
    "ope one position": (lambda t: _ope(_click_log(t / "log.csv", _ONE_POSITION), t), "every row is at position 0"),
    "exposure text clicks": (lambda t: ["exposure", _click_log(t / "log.parquet", _TEXT_CLICKS)], "log.parquet, row 1: click '1' is text"),
    "exposure two documents at one position": (
        lambda t: ["exposure", _click_log(t / "log.csv", _SHARED_POSITION)], "rows 3 and 4: query 'q2' shows two documents at position 0"),
    "exposure one position": (lambda t: ["exposure", _click_log(t / "log.csv", _ONE_POSITION)], "no position information"),
    "exposure em without features": (
        lambda t: ["exposure", _click_log(t / "log.csv", _SHARED_POSITION), "--propensity", "em"], "--propensity em needs the rows' features"),
}


#: Cases that are a server down, not a bad setting: the same one line, exit 1.
SERVER_DOWN = frozenset({"server not answering"})


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_nothing_left(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "cache"))
    argv = setup(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[LightGBM]")]
    assert code == (1 if case in SERVER_DOWN else 2), err[-2000:]
    assert "Traceback" not in err
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith("ltr: error: "), lines[0]
    assert expected in lines[0], lines[0]
    db = tmp_path / "mlflow.db"
    if db.exists():
        client = MlflowClient(f"sqlite:///{db}")
        runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
        assert runs == [], [r.info.status for r in runs]


def test_ui_on_a_busy_port(busy_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["ui", "--port", str(busy_port)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"port {busy_port} is in use" in line
