"""Shipping a model from outside the harness (#24): a TREC run of real docnos that ``ltr evaluate``
scores as the run did, ``ltr promote`` on a real sweep, and a real ``mlflow models serve``."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.experiment import run as pipeline
from ltr.models.logged import load_run
from tests.conftest import SHARED_DATA, compose_train
from tests.processes import free_port, stop_process_group, wait_for_http
from tests.test_sweeps import train_in_process

MQ2008 = SHARED_DATA / "mq2008"
DEBUG = ["debug=default", "fit.show_progress=false"]


def _qrels_of(letor_gz: Path, out: Path) -> None:
    """TREC qrels (``qid 0 docno label``) of a LETOR file's own labels and ``#docid`` comments,
    read here with a regular expression (not with ltr's reader)."""
    line_re = re.compile(r"^(\d+)\s+qid:(\S+)\s.*#\s*docid\s*=\s*(\S+)")
    with gzip.open(letor_gz, "rt") as f, out.open("w") as q:
        for line in f:
            m = line_re.match(line)
            assert m, line[:80]
            q.write(f"{m.group(2)} 0 {m.group(3)} {m.group(1)}\n")


@pytest.mark.slow
@pytest.mark.skipif(not MQ2008.is_dir(), reason="../shared/data/mq2008 is absent")
def test_mq2008_trec_run_has_real_docnos_and_ltr_evaluate_gives_the_runs_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LTR_SHARED_DATA", str(SHARED_DATA))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outcome = pipeline.run(compose_train([
        "experiment=mq2008", "fit.num_boost_round=30", "fit.show_progress=false", "data.cache=false",
        f"tracking.uri={uri}", "tracking.run_name=mq",
    ]))
    logged = MlflowClient(uri).get_run(str(outcome.run_id)).data.metrics
    run_file, qrels = tmp_path / "S5.run", tmp_path / "S5.qrels"
    assert ltr_main(["predict", "mq", "--data", str(MQ2008 / "S5.txt.gz"), "--trec-run", str(run_file), "--tracking-uri", uri]) == 0
    docnos = {line.split()[2] for line in run_file.read_text().splitlines()}
    assert all(d.startswith("GX") for d in docnos)  # MQ2008's own document ids (GOV2)
    _qrels_of(MQ2008 / "S5.txt.gz", qrels)
    capsys.readouterr()
    assert ltr_main(["evaluate", "--qrels", str(qrels), "--run", str(run_file), "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    summary = evaluated.get("summary", evaluated)
    assert summary["n_queries"] == logged["test/n_queries"]
    for key in ("ndcg_at_10", "ndcg_at_5", "ndcg_at_10/len_11-50"):
        assert summary[key] == pytest.approx(logged[f"test/{key}"], abs=1e-12), key


@pytest.mark.slow
def test_promote_a_sweeps_best_child_and_refuse_a_worse_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real ``ltr train -m`` sweep and ``ltr promote``, both in this process (their exit codes,
    stdout and stderr are what the command gives: the process boundary is not the point)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = train_in_process(tmp_path, capsys, "-m", *DEBUG, "model.num_leaves=7,15", f"tracking.uri={uri}")
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    parent = next(r for r in runs if r.data.tags.get("ltr.role") == "sweep")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    objective = "valid/ndcg_at_10"
    best = max(children, key=lambda r: r.data.metrics[objective])
    base = ["--name", "ranker", "--n-resamples", "200", "--tracking-uri", uri]
    capsys.readouterr()
    code = ltr_main(["promote", parent.info.run_id, *base])
    assert code == 0, capsys.readouterr().err
    version = client.get_model_version_by_alias("ranker", "champion")
    assert version.run_id == best.info.run_id
    assert version.tags["ltr.run_id"] == best.info.run_id
    assert version.tags["ltr.data.fingerprint"] == best.data.tags["ltr.data.fingerprint"]
    assert version.tags["ltr.metric"] == "valid/ndcg_at_10"  # decided on valid, as the sweep chose
    assert best.info.run_id in version.description
    assert "| 51+ |" in version.description
    # a child worse on valid nDCG@10 than the champion: the comparison is printed, the promotion refused
    worse = [r for r in children if r.data.metrics[objective] < best.data.metrics[objective]]
    assert worse, "the sweep's children all tie on valid nDCG@10"
    capsys.readouterr()
    assert ltr_main(["promote", worse[0].info.run_id, *base]) == 2
    refused = capsys.readouterr()
    assert "51+" in refused.out
    assert "baseline" in refused.out
    assert refused.err.strip().count("\n") == 0
    assert "--force" in refused.err
    assert client.get_model_version_by_alias("ranker", "champion").version == version.version
    # a failed run is refused in one line
    failed = client.create_run(parent.info.experiment_id, run_name="broken")
    client.set_terminated(failed.info.run_id, "FAILED")
    assert ltr_main(["promote", failed.info.run_id, *base]) == 2
    bad = capsys.readouterr()
    assert "is FAILED" in bad.err
    assert bad.err.strip().count("\n") == 0


@pytest.mark.slow
def test_mlflow_models_serve_answers_with_ltr_predicts_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manual's shipping path on files (docs/guide/shipping.md): ``ltr data write`` a Parquet
    data set, train on it, promote, then the real server scores the test file's rows with the
    scores ``ltr predict --data`` writes, bit for bit."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert ltr_main(["data", "write", "synthetic", "--out", "data", "--format", "parquet", "data.n_queries=300"]) == 0
    files = [f"data.{s}=data/{s}.parquet" for s in ("train", "valid", "test")]
    pipeline.run(compose_train(["data=parquet", *files, "data.doc_id_column=doc_id", "fit.num_boost_round=20",
                                "fit.show_progress=false", f"tracking.uri={uri}", "tracking.run_name=served"]))  # fmt: skip
    assert ltr_main(["promote", "served", "--name", "served", "--tracking-uri", uri]) == 0
    assert ltr_main(["predict", "served", "--data", "data/test.parquet", "--out", "scores.txt", "--tracking-uri", uri]) == 0
    expected = np.array([float(line) for line in Path("scores.txt").read_text().split()])
    run = load_run("served", tracking_uri=uri)
    frame = pd.read_parquet("data/test.parquet")[run.feature_names].astype(np.float64)  # the file's own columns
    assert len(frame) == len(expected)
    port = free_port()
    # mlflow models serve starts uvicorn from PATH: the environment's bin folder, as when activated
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = (tmp_path / "serve.log").open("w")  # a file, not a pipe nobody reads (it could fill)
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "models", "serve", "-m", "models:/served@champion", "--env-manager", "local",
         "-h", "127.0.0.1", "-p", str(port), "-w", "1"],
        env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ping", server, log=tmp_path / "serve.log")
        body = json.dumps({"dataframe_split": frame.to_dict(orient="split")}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            served = np.asarray(json.loads(r.read())["predictions"], dtype=np.float64)
        assert np.array_equal(served, expected)
        # the columns in reverse order: MLflow aligns them by name
        reversed_body = json.dumps({"dataframe_split": frame[frame.columns[::-1]].to_dict(orient="split")}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", reversed_body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            assert np.array_equal(np.asarray(json.loads(r.read())["predictions"], dtype=np.float64), expected)
    finally:
        stop_process_group(server)
        log.close()
