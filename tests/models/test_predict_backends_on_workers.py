"""``ltr predict --dask`` on XGBoost and CatBoost runs: the model travels to the workers as its
library's own file and scores what the local path scores, byte for byte, with the run's logged
test metrics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.data.query_parts import write_query_partitions
from ltr.experiment import run as pipeline
from ltr.models.inputs import split_input
from ltr.models.logged import load_run
from ltr.models.predict import ShippedModel
from tests.conftest import compose_train

pytest.importorskip("distributed")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["xgboost", "catboost"])
def test_predict_on_dask_workers_scores_an_xgboost_or_catboost_run_as_the_local_path(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip(backend)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outcome = pipeline.run(compose_train([
        f"model={backend}", "data.n_queries=120", "fit.num_boost_round=6", "fit.early_stopping_rounds=null",
        "fit.show_progress=false", f"tracking.uri={uri}", "tracking.run_name=r",
    ]), print_summary=False)  # fmt: skip
    run = load_run("r", tracking_uri=uri)
    shipped = ShippedModel.of(run)
    assert shipped.backend == backend
    assert isinstance(shipped.model_text, bytes)
    parts = tmp_path / "parts"
    write_query_partitions(next(split_input(run, "test").batches()), parts, n_partitions=2)
    written = {}
    for mode in ("local", "dask"):
        files = {name: tmp_path / f"{mode}.{name}" for name in ("scores", "pq")}
        args = ["predict", "r", "--data", str(parts), "--out", str(files["scores"]), "--per-query", str(files["pq"]), "--tracking-uri", uri]
        assert ltr_main([*args, "--dask", "--workers", "1"] if mode == "dask" else args) == 0
        written[mode] = {name: path.read_bytes() for name, path in files.items()}
    assert "on Dask workers" in " ".join(capsys.readouterr().out.split())
    assert written["dask"] == written["local"]
    logged = pd.read_parquet(MlflowClient(uri).download_artifacts(str(outcome.run_id), "per_query/test.parquet", str(tmp_path)))
    table = pd.read_parquet(tmp_path / "dask.pq")
    pd.testing.assert_frame_equal(table[logged.columns], logged, check_exact=True)
