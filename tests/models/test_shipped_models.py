"""Every exit of a run scores what the run measured (#24): the logged model, ``ltr predict``, the
MLflow pyfunc, for every trainer and option.

One small run per kind (local, Dask, position bias, click data, re-ranking, DART) in one real
sqlite store. For each: the run's test split is written to a Parquet file, ``ltr predict`` reads
that file with the run's model and gives every logged ``test/*`` value bit for bit; the MLflow
pyfunc (``runs:/<id>/model``) gives ``ltr predict``'s model scores bit for bit, whatever the
column order; the shipped booster holds exactly the best round's trees.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from pathlib import Path

import lightgbm as lgb
import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ltr import api
from ltr.cli.main import main as ltr_main
from ltr.data.query_parts import write_query_partitions
from ltr.experiment import run as pipeline
from ltr.models.inputs import open_input, split_input
from ltr.models.logged import load_run
from ltr.models.predict import predict_input
from tests.conftest import compose_train
from tests.processes import dask_cluster

SMALL = ["data.n_queries=160", "fit.num_boost_round=24", "fit.early_stopping_rounds=4", "fit.show_progress=false", "model.num_leaves=7"]
CLICKS = ["data=synthetic_clicks", "data.n_queries=160", "fit.num_boost_round=24", "fit.early_stopping_rounds=4", "fit.show_progress=false", "model.num_leaves=7"]

#: run name -> overrides: every trainer kind and option whose model leaves the harness
KINDS: dict[str, list[str]] = {
    "local": SMALL,
    "dask": [*SMALL, "trainer=dask"],  # on the module's cluster (trainer.scheduler_address)
    "position_bias": [*CLICKS, "model.position_bias=true"],
    "clicks": [*CLICKS, "data.train_labels=clicks"],
    "rerank": [*SMALL, "rerank=diversify", "rerank.alpha=0.5"],
    "dart": [*SMALL, "+model.params.boosting=dart", "fit.early_stopping_rounds=null"],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of the module's Dask cluster (:func:`tests.processes.dask_cluster`): a
    LocalCluster of two worker processes, as
    ``trainer.n_workers=2`` and ``ltr predict --dask --workers 2`` start (one start for the
    Dask run and every ``--dask`` prediction; starting one of their own is tested in
    tests/dask/test_training_dask.py, tests/models/test_predict_partitions.py and
    tests/models/test_predict_reader_holes.py)."""
    with dask_cluster(2, log=tmp_path_factory.mktemp("cluster") / "cluster.log") as address:
        yield address


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, cluster: str) -> tuple[str, dict[str, pipeline.RunOutcome]]:
    root = tmp_path_factory.mktemp("shipped")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    on_cluster = {"dask": [f"trainer.scheduler_address='{cluster}'"]}
    outcomes = {
        name: pipeline.run(compose_train([*overrides, *on_cluster.get(name, []), f"tracking.uri={uri}", f"tracking.run_name={name}"]))
        for name, overrides in KINDS.items()
    }
    return uri, outcomes


def _test_file(uri: str, name: str, directory: Path) -> Path:
    """The run's test split (as its evaluation saw it) written as one Parquet file."""
    run = load_run(name, tracking_uri=uri)
    data = next(split_input(run, "test").batches())
    out = directory / f"{name}-test"
    return write_query_partitions(data, out, n_partitions=1)[0]


@pytest.mark.parametrize("kind", list(KINDS))
def test_predict_on_the_runs_test_file_gives_its_logged_metrics_bit_for_bit(
    store: tuple[str, dict[str, pipeline.RunOutcome]], kind: str, tmp_path: Path
) -> None:
    uri, _ = store
    client = MlflowClient(uri)
    run = load_run(kind, tracking_uri=uri)
    logged = client.get_run(run.record.run_id).data.metrics
    path = _test_file(uri, kind, tmp_path)
    prediction = predict_input(run, open_input(run, [path], batch_rows=37), keep=True)  # many small batches
    compared = [key for key in prediction.summary if f"test/{key}" in logged]
    assert "ndcg_at_10" in compared
    assert "ndcg_at_10/len_11-50" in compared
    assert "n_queries/len_51_plus" in compared
    for key in compared:
        value, expected = prediction.summary[key], logged[f"test/{key}"]
        assert value == expected or (math.isnan(value) and math.isnan(expected)), key

    # the shipped booster holds the best round's trees, no more
    best = int(logged["best_iteration"])
    assert run.booster.current_iteration() == best
    # the MLflow pyfunc gives ltr predict's model scores, bit for bit, whatever the column order
    mlflow.set_tracking_uri(uri)  # MLflow's runs:/ loaders read the process-wide store
    model = mlflow.pyfunc.load_model(f"runs:/{run.record.run_id}/model")
    names = model.metadata.signature.inputs.input_names()
    assert names == run.feature_names
    table = pd.read_parquet(path)
    frame = table[names].astype(np.float64)
    in_order = np.asarray(model.predict(frame), dtype=np.float64)
    assert np.array_equal(in_order, prediction.model_scores)
    assert np.array_equal(np.asarray(model.predict(frame[names[::-1]]), dtype=np.float64), in_order)


def test_a_run_read_without_mlflow_is_the_run_read_through_it(
    store: tuple[str, dict[str, pipeline.RunOutcome]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load_run`` reads a finished run of a sqlite store without MLflow; with that path turned
    off it reads through MLflow (``RunStore``): same run, settings, trees and scores."""
    uri, outcomes = store
    fast = load_run("rerank", tracking_uri=uri)
    assert fast.opened is None  # the local read was taken
    monkeypatch.setattr("ltr.models.logged.find_local_run", lambda *args, **kwargs: None)
    slow = load_run("rerank", tracking_uri=uri)
    assert slow.opened is not None
    assert fast.record == slow.record
    assert fast.record.run_id == outcomes["rerank"].run_id
    assert fast.spec == slow.spec
    assert fast.booster.model_to_string() == slow.booster.model_to_string()
    assert fast.notes == slow.notes == []
    assert fast.metrics == slow.metrics  # the store opened on first use
    features = np.random.default_rng(0).normal(size=(50, fast.n_features)).astype(np.float32)
    assert np.array_equal(fast.booster.predict(features), slow.booster.predict(features))


def test_the_dask_model_is_cut_at_its_best_round(store: tuple[str, dict[str, pipeline.RunOutcome]]) -> None:
    uri, outcomes = store
    metrics = MlflowClient(uri).get_run(outcomes["dask"].run_id).data.metrics  # type: ignore[arg-type]
    assert metrics["n_rounds"] == 24
    assert metrics["best_iteration"] < metrics["n_rounds"]  # else the cut would not be tested
    mlflow.set_tracking_uri(uri)
    model = mlflow.lightgbm.load_model(f"runs:/{outcomes['dask'].run_id}/model")
    assert model.current_iteration() == metrics["best_iteration"]


def test_pyfunc_refuses_a_missing_column(store: tuple[str, dict[str, pipeline.RunOutcome]]) -> None:
    uri, outcomes = store
    mlflow.set_tracking_uri(uri)
    model = mlflow.pyfunc.load_model(f"runs:/{outcomes['local'].run_id}/model")
    names = model.metadata.signature.inputs.input_names()
    frame = pd.DataFrame(np.zeros((3, len(names))), columns=names)
    with pytest.raises(MlflowException, match=f"missing inputs.*{names[0]}"):
        model.predict(frame.drop(columns=[names[0]]))
    renamed = frame.rename(columns={names[1]: "not_a_feature"})
    with pytest.raises(MlflowException, match="missing inputs"):
        model.predict(renamed)


def test_importance_and_params_come_from_the_shipped_trees(store: tuple[str, dict[str, pipeline.RunOutcome]], tmp_path: Path) -> None:
    uri, outcomes = store
    client = MlflowClient(uri)
    run_id = str(outcomes["dask"].run_id)
    importance = pd.read_json(client.download_artifacts(run_id, "feature_importance.json", str(tmp_path)))
    booster = lgb.Booster(model_file=client.download_artifacts(run_id, "model_text/model.txt", str(tmp_path)))
    assert np.array_equal(importance["split"].to_numpy(), booster.feature_importance("split").astype(float))
    assert np.allclose(importance["gain"].to_numpy(), booster.feature_importance("gain"), rtol=0, atol=0)
    params = client.get_run(run_id).data.params
    assert params["lightgbm.objective"] == "lambdarank"
    assert params["lightgbm.num_leaves"] == "7"


def test_predict_cli_writes_scores_trec_run_and_table(
    store: tuple[str, dict[str, pipeline.RunOutcome]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, outcomes = store
    path = _test_file(uri, "rerank", tmp_path)
    out, run_file, per_query = tmp_path / "scores.txt", tmp_path / "test.run", tmp_path / "pq.parquet"
    code = ltr_main([
        "predict", "rerank", "--data", str(path), "--out", str(out), "--trec-run", str(run_file),
        "--per-query", str(per_query), "--tracking-uri", uri,
    ])
    assert code == 0
    printed = capsys.readouterr().out
    assert "re-ranked (diversify)" in printed
    assert "51+" in printed
    table = pd.read_parquet(path)
    scores = np.array([float(line) for line in out.read_text().splitlines()])
    assert scores.shape == (len(table),)
    # the TREC run lists each query in the run's final (re-ranked) order: the logged per-query
    # table of the run is reproduced from the run file by ltr evaluate's own table
    lines = [line.split() for line in run_file.read_text().splitlines()]
    assert len(lines) == len(table)
    assert {line[1] for line in lines} == {"Q0"}
    first_query = [line for line in lines if line[0] == lines[0][0]]
    assert [int(line[3]) for line in first_query] == list(range(1, len(first_query) + 1))
    assert [float(line[4]) for line in first_query] == sorted((float(line[4]) for line in first_query), reverse=True)
    logged = pd.read_parquet(MlflowClient(uri).download_artifacts(str(outcomes["rerank"].run_id), "per_query/test.parquet", str(tmp_path)))
    written = pd.read_parquet(per_query)
    pd.testing.assert_frame_equal(written[logged.columns], logged, check_exact=True)


def test_predict_refuses_bad_input_in_one_line_and_writes_nothing(
    store: tuple[str, dict[str, pipeline.RunOutcome]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, _ = store
    path = _test_file(uri, "local", tmp_path)
    table = pd.read_parquet(path)
    broken = tmp_path / "broken.parquet"
    table.drop(columns=[table.columns[3]]).to_parquet(broken)
    out = tmp_path / "scores.txt"
    code = ltr_main(["predict", "local", "--data", str(broken), "--out", str(out), "--tracking-uri", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert f"has no column {table.columns[3]!r}" in err[0]
    assert str(broken) in err[0]
    assert not out.exists()
    assert not list(tmp_path.glob(".scores.txt.tmp-*"))
    # rows of one query split apart are refused, naming the query
    shuffled = tmp_path / "shuffled.parquet"
    pd.concat([table.iloc[::2], table.iloc[1::2]]).to_parquet(shuffled)
    code = ltr_main(["predict", "local", "--data", str(shuffled), "--out", str(out), "--tracking-uri", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert "not contiguous" in err[0]
    assert not out.exists()
    # found by the read-ahead thread in a later batch: the same one line, and no thread left
    code = ltr_main(["predict", "local", "--data", str(shuffled), "--out", str(out), "--batch-rows", "7", "--tracking-uri", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert [line for line in err if "scored" not in line] == err[-1:]  # progress, then the one line
    assert err[-1].startswith("ltr: error: ")
    assert "not contiguous" in err[-1]
    assert not out.exists()
    assert not [t.name for t in threading.enumerate() if t.name.startswith("ltr-")]
    # an unfinished run is refused
    client = MlflowClient(uri)
    failed = client.create_run(client.get_experiment_by_name("ltr").experiment_id, run_name="half")
    client.set_terminated(failed.info.run_id, "FAILED")
    code = ltr_main(["predict", failed.info.run_id, "--data", str(path), "--tracking-uri", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert "is FAILED, not FINISHED" in err[0]




@pytest.mark.parametrize("kind", ["dask", "rerank"])
def test_predict_on_dask_workers_writes_what_the_local_predict_writes(
    store: tuple[str, dict[str, pipeline.RunOutcome]], cluster: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--dask``: the run's test split in 3 whole-query files, one task per file on 2 workers
    (the module's cluster, ``--scheduler``), gives the local path's files byte for byte and the
    run's logged test metrics bit for bit."""
    uri, outcomes = store
    run = load_run(kind, tracking_uri=uri)
    parts = tmp_path / "parts"
    write_query_partitions(next(split_input(run, "test").batches()), parts, n_partitions=3)
    written = {}
    for mode in ("local", "dask"):
        files = {name: tmp_path / f"{mode}.{name}" for name in ("scores", "run", "pq")}
        args = ["predict", kind, "--data", str(parts), "--out", str(files["scores"]), "--trec-run", str(files["run"]),
                "--per-query", str(files["pq"]), "--tracking-uri", uri]
        assert ltr_main([*args, "--dask", "--scheduler", cluster] if mode == "dask" else args) == 0
        written[mode] = {name: path.read_bytes() for name, path in files.items()}
    printed = capsys.readouterr()
    assert "on Dask workers" in " ".join(printed.out.split())
    assert not [line for line in printed.err.splitlines() if "[distributed" in line and "[INFO]" in line]  # not progress
    assert written["dask"]["scores"] == written["local"]["scores"]
    assert written["dask"]["run"] == written["local"]["run"]
    table = pd.read_parquet(tmp_path / "dask.pq")
    pd.testing.assert_frame_equal(table, pd.read_parquet(tmp_path / "local.pq"), check_exact=True)
    logged = pd.read_parquet(MlflowClient(uri).download_artifacts(str(outcomes[kind].run_id), "per_query/test.parquet", str(tmp_path)))
    pd.testing.assert_frame_equal(table[logged.columns], logged, check_exact=True)
    if kind == "dask":  # the Python API's path: the same scores
        scored = api.predict(kind, parts, tracking_uri=uri, dask=api.TrainerConfig(scheduler_address=cluster))
        expected = np.array([float(line) for line in written["local"]["scores"].decode().splitlines()])
        assert np.array_equal(scored.model_scores, expected)


def test_predict_on_dask_workers_refuses_a_query_in_two_files(
    store: tuple[str, dict[str, pipeline.RunOutcome]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, _ = store
    path = _test_file(uri, "local", tmp_path)
    table = pd.read_parquet(path)
    first_qid = table["qid"].iloc[0]
    parts = tmp_path / "parts"
    parts.mkdir()
    table.to_parquet(parts / "part-00000.parquet")
    table[table["qid"] == first_qid].to_parquet(parts / "part-00001.parquet")
    out = tmp_path / "scores.txt"
    code = ltr_main(["predict", "local", "--dask", "--data", str(parts), "--out", str(out), "--tracking-uri", uri])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"ltr: error: qid {first_qid} is in {parts / 'part-00000.parquet'} and in {parts / 'part-00001.parquet'}: each query's rows must sit in one file"]
    assert not out.exists()
    assert not list(tmp_path.glob(".scores.txt.tmp-*"))
    code = ltr_main(["predict", "local", "--workers", "2", "--data", str(parts), "--tracking-uri", uri])
    assert code == 2
    assert capsys.readouterr().err.strip() == "ltr: error: --workers, --threads-per-worker and --scheduler go with --dask"
