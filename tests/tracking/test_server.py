"""Against a real ``mlflow server`` on 127.0.0.1: runs, artifacts, the model, sweep parent/child."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.cli.main import main as ltr_main
from ltr.data.load import load_splits
from ltr.experiment import run as pipeline
from ltr.training.local import fit_ranker
from tests.conftest import made_store
from tests.processes import running_mlflow_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real MLflow server; its whole process group (uvicorn workers, job runners) is stopped after."""
    root = tmp_path_factory.mktemp("server")
    backend = made_store(root / "server.db")  # as ltr train makes a store: the server has no migration to run
    with running_mlflow_server(backend, root / "artifacts", root / "server.log") as (url, _):
        yield url


def test_two_experiments_against_a_server(server: str, small_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    outcomes = {
        name: pipeline.run(small_cfg(f"tracking.uri={server}", f"tracking.experiment={name}", *extra))
        for name, extra in (("server-a", ()), ("server-b", ("model=rank_xendcg", "tracking.log_model=false")))
    }
    client = MlflowClient(server)
    for name, outcome in outcomes.items():
        run = client.get_run(outcome.run_id)
        assert run.info.status == "FINISHED"
        assert client.get_experiment(run.info.experiment_id).name == name
        for key, value in outcome.metrics.items():
            assert run.data.metrics[key] == value, key
        table = pd.read_parquet(client.download_artifacts(outcome.run_id, "per_query/test.parquet", str(tmp_path)))
        assert len(table) == outcome.metrics["test/n_queries"]
        assert {a.path for a in client.list_artifacts(outcome.run_id, "idcg/test")} >= {"idcg/test/hist_at_10.png"}

    # the logged model (server-a's), loaded back through the server, predicts like the in-process model
    cfg = small_cfg()
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    in_process = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed)
    mlflow.set_tracking_uri(server)
    run_id = outcomes["server-a"].run_id
    assert run_id is not None
    loaded = mlflow.pyfunc.load_model(client.get_run(run_id).data.tags["ltr.model_uri"])
    frame = pd.DataFrame(splits.test.features, columns=list(splits.test.feature_names))
    np.testing.assert_array_equal(np.asarray(loaded.predict(frame)), in_process.predict(splits.test.features))


def test_multirun_parent_and_children_on_a_server(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the sweep runs in this process: the server is the other side
    code = ltr_main(["train", "-m", "debug=default", "model.num_leaves=3,7", "fit.show_progress=false", "fit.num_threads=1",
                     "tracking.log_model=false", f"tracking.uri={server}", "tracking.experiment=server-sweep"])  # fmt: skip
    assert code == 0, capsys.readouterr().err[-3000:]
    client = MlflowClient(server)
    experiment = client.get_experiment_by_name("server-sweep")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2
    assert len(runs) == 3
    assert all(r.info.status == "FINISHED" for r in runs)
