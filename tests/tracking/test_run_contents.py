"""What every run holds: names, params, tags, artifacts, the model, the dataset inputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import lightgbm as lgb
import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.experiment import run as pipeline
from ltr.metrics import Strata, summarize
from tests.conftest import compose_train, made_store

#: ``small_cfg``'s overrides (tests/conftest.py), for the module's one shared run.
SMALL = (
    "data.n_queries=300",
    "fit.num_boost_round=40",
    "fit.early_stopping_rounds=10",
    "fit.show_progress=false",
    "model.num_leaves=7",
)


@pytest.fixture(scope="module")
def run_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The store of :func:`finished_run`: made once for the module, as ``small_cfg``'s is."""
    return made_store(tmp_path_factory.mktemp("run_contents") / "mlflow.db")


@pytest.fixture(scope="module")
def finished_run(run_store: str) -> tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome]:
    """One run of ``small_cfg``'s small experiment, trained once and only read by the tests that
    take it (none logs to its run or changes its store)."""
    cfg = compose_train([*SMALL, f"tracking.uri={run_store}"])
    outcome = pipeline.run(cfg, overrides=["model.num_leaves=7"])
    assert outcome.run_id is not None
    return MlflowClient(run_store), outcome.run_id, cfg, outcome


def _paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for item in client.list_artifacts(run_id, path):
        out |= _paths(client, run_id, item.path) if item.is_dir else {item.path}
    return out


def test_artifacts_params_tags_and_names(
    finished_run: tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome], run_store: str
) -> None:
    client, run_id, cfg, _ = finished_run
    mlflow.set_tracking_uri(run_store)  # MLflow lists the run's "model" folder through the process-wide store
    run = client.get_run(run_id)
    assert run.info.run_name == "nl=7 (lambdarank)"  # what varies first, its key shortened
    expected = {
        "config/config.yaml", "config/overrides.yaml", "data/fingerprint.json",
        "report/summary.md", "report/ndcg_by_stratum.png", "feature_importance.png",
        "feature_importance.json", "per_query/valid.parquet", "per_query/test.parquet",
        "model_text/model.txt",
    } | {f"idcg/{s}/hist_at_{k}.{ext}" for s in ("valid", "test") for k in (5, 10) for ext in ("png", "json")}
    assert expected <= _paths(client, run_id)
    # params: the flattened composed config, every leaf
    assert run.data.params["fit.early_stopping_metric"] == "ndcg_at_10"
    assert "None" not in run.data.params.values()  # unset settings are not logged
    assert "model.max_depth" in run.data.params
    assert "model.label_gain" not in run.data.params  # None in the schema
    assert run.data.params["eval.ties"] == "average"
    assert run.data.params["seed"] == str(cfg.seed)
    tags = run.data.tags
    assert tags["ltr.eval.gain"] == "exp"
    assert tags["ltr.eval.zero_idcg"] == "zero"
    assert tags["ltr.eval.strata"] == "1-10,11-50,51+"
    assert len(tags["ltr.data.fingerprint"]) == 16
    assert tags["ltr.git.dirty"] in {"true", "false"}
    # relative data paths are taken from it: the module's folder, where `finished_run` trained (tests/conftest.py)
    assert tags["ltr.workdir"] == str(Path.cwd().parent)
    # what the MLflow UI shows as Source, Created by and Git commit; the description
    assert tags["mlflow.source.name"] == "ltr train"
    assert tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.user"]
    assert tags["mlflow.source.git.commit"] == tags["ltr.git.commit"]
    summary = Path(client.download_artifacts(run_id, "report/summary.md")).read_text()
    lead, _, body = tags["mlflow.note.content"].partition("\n\n")  # a lead line, then the summary
    assert lead.startswith(f"**valid nDCG@10 {run.data.metrics['valid/ndcg_at_10']:.4f} · ")
    assert body == "\n".join("##" + line if line.startswith("#") else line for line in summary.split("\n"))  # headings 2 down
    assert "| 51+ |" in summary
    assert run.data.metrics["best_iteration"] >= 1
    # the dataset inputs: one per split, digest = the whole data's fingerprint (the run's tag)
    fingerprint = json.loads(Path(client.download_artifacts(run_id, "data/fingerprint.json")).read_text())
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    assert set(inputs) == {"synthetic/train", "synthetic/valid", "synthetic/test"}
    assert {d.dataset.digest for d in inputs.values()} == {fingerprint["sha256"]} == {tags["ltr.data.fingerprint"]}
    # their source is the run's: its mlflow.source.* and mlflow.user tags
    source = {k: v for k, v in tags.items() if k.startswith("mlflow.source.") or k == "mlflow.user"}
    assert source["mlflow.source.name"] == "ltr train"
    for d in inputs.values():
        assert d.dataset.source_type == "code"
        assert json.loads(d.dataset.source) == {"tags": source}
    # the model is named "model": runs:/<run id>/model resolves to it, as MLflow documents
    model = client.get_logged_model(tags["ltr.model_uri"].removeprefix("models:/"))
    assert model.name == "model"
    from mlflow.artifacts import download_artifacts

    via_runs_uri = Path(download_artifacts(f"runs:/{run_id}/model", tracking_uri=client._tracking_client.tracking_uri))
    assert (via_runs_uri / "MLmodel").is_file()
    # LightGBM's resolved parameters are on the run; importance of both kinds from the shipped trees
    assert run.data.params["lightgbm.objective"] == "lambdarank"
    assert run.data.params["lightgbm.num_leaves"] == "7"
    importance = json.loads(Path(client.download_artifacts(run_id, "feature_importance.json")).read_text())
    assert set(importance) == {"split", "gain"}
    assert sum(importance["split"].values()) > 0
    # the model's page shows the run's metrics (not the per-round curves), the same values
    on_model = {m.key: m.value for m in model.metrics}
    summary_keys = {k for k in run.data.metrics if not k.startswith("iter/")}
    assert set(on_model) == summary_keys
    assert all(on_model[k] == run.data.metrics[k] for k in summary_keys)


def test_per_query_parquet_reproduces_logged_summary_exactly(
    finished_run: tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome],
) -> None:
    client, run_id, _, _ = finished_run
    metrics = client.get_run(run_id).data.metrics
    for split in ("valid", "test"):
        table = pd.read_parquet(client.download_artifacts(run_id, f"per_query/{split}.parquet"))
        recomputed = summarize(table, strata=Strata())
        for key, value in recomputed.items():
            assert metrics[f"{split}/{key}"] == value, key  # exact, not approximate


def test_logged_mlflow_model_predicts_like_the_in_process_model(
    finished_run: tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome], run_store: str, tmp_path: Path
) -> None:
    client, run_id, cfg, _ = finished_run
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    booster = lgb.Booster(model_file=client.download_artifacts(run_id, "model_text/model.txt", str(tmp_path)))
    expected = booster.predict(splits.test.features)
    mlflow.set_tracking_uri(run_store)
    loaded = mlflow.pyfunc.load_model(client.get_run(run_id).data.tags["ltr.model_uri"])
    got = np.asarray(loaded.predict(pd.DataFrame(splits.test.features, columns=list(splits.test.feature_names))))
    np.testing.assert_array_equal(got, expected)


def test_lightgbm_gap_is_explained_exactly(finished_run: tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome]) -> None:
    """ours + zero_idcg part + ties part (+ gain part, 0 here) = LightGBM's own value."""
    _, _, _, outcome = finished_run
    m = outcome.metrics
    for split in ("valid", "test"):
        total = m[f"{split}/ndcg_at_10"] + m[f"{split}/lightgbm_gap/ndcg_at_10/zero_idcg"] + m[f"{split}/lightgbm_gap/ndcg_at_10/ties"]
        assert total == pytest.approx(m[f"{split}/lightgbm/ndcg_at_10"], abs=1e-9)
        assert m[f"{split}/lightgbm_gap/ndcg_at_10/zero_idcg"] > 0  # the data has all-zero queries


#: Tags whose value names this very run or when/where it ran (its model's id, the process), and
#: the one metric that is a duration.
_RUN_SPECIFIC_TAGS = {"ltr.model_uri", "mlflow.log-model.history", "ltr.process", "ltr.heartbeat"}
_DURATIONS = {"train_seconds"}


def _content(client: MlflowClient, run_id: str) -> dict[str, object]:
    """Everything a run holds that does not name the run itself: every metric's whole history
    (value and step), params, tags, artifact paths and the bytes of the text artifacts."""
    run = client.get_run(run_id)
    history = {
        key: [(m.step, m.value) for m in sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)]
        for key in run.data.metrics
        if key not in _DURATIONS
    }
    paths = _paths(client, run_id)
    texts = {
        path: Path(client.download_artifacts(run_id, path)).read_text()
        for path in sorted(paths)
        if path.endswith((".yaml", ".md", ".txt")) and not path.startswith("model/")
    }
    return {
        "metrics": history,
        "params": run.data.params,
        "tags": {k: v for k, v in run.data.tags.items() if k not in _RUN_SPECIFIC_TAGS},
        "artifacts": paths,
        "texts": texts,
        "status": run.info.status,
    }


def test_background_mlflow_load_and_figure_worker_leave_the_run_as_without_them(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run whose MLflow code loaded in the background (:mod:`ltr.tracking.prepare`) holds
    exactly what the same run logged with everything loaded on the main thread holds; a failing
    background load changes nothing either; the thread never outlives the run.

    Its figures, drawn by its figure worker (:mod:`ltr.experiment.figures.figure_worker`), are the very
    PNG files (byte for byte) the same run logs when it draws them itself with MLflow's
    ``log_figure``; the worker never outlives the run. (One default run serves both checks: it
    loads MLflow in the background and draws with its worker.)"""
    import threading

    from ltr.experiment.figures.figure_worker import FigureWorker, start_worker
    from ltr.tracking import prepare

    def alive() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == "ltr-mlflow-load"]

    started: list[FigureWorker] = []

    def recorded() -> FigureWorker | None:
        worker = start_worker()
        assert worker is not None
        started.append(worker)
        return worker

    client = MlflowClient(tracking_uri)
    cfg = small_cfg("tracking.run_name=same")
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "start_worker", recorded)  # the real worker, recorded
        with_thread = pipeline.run(cfg)
    assert alive() == []
    assert len(started) == 1
    assert started[0].pid is None
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "Preparation", lambda: None)  # tracked, everything loaded on the main thread
        without = pipeline.run(cfg)
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "start_worker", lambda: None)  # every figure drawn in the run's process
        drawn_itself = pipeline.run(cfg)

    def broken() -> None:
        raise RuntimeError("no MLflow here")

    monkeypatch.setattr(prepare, "_load", broken)
    failed_load = pipeline.run(cfg)
    assert alive() == []

    expected = _content(client, str(without.run_id))
    assert expected["status"] == "FINISHED"
    metrics: dict[str, list[tuple[int, float]]] = expected["metrics"]  # type: ignore[assignment]
    assert len(metrics) > 100
    assert any(len(history) > 1 for history in metrics.values())  # the per-round curves
    for other in (with_thread, failed_load):
        content = _content(client, str(other.run_id))
        for part, value in expected.items():
            assert content[part] == value, part
    without.metrics.pop("train_seconds", None)
    for other in (with_thread, failed_load):
        other.metrics.pop("train_seconds", None)
        assert other.metrics == without.metrics

    def pictures(run_id: str | None) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        folders = [""]
        while folders:
            for entry in client.list_artifacts(str(run_id), folders.pop() or None):
                if entry.is_dir:
                    folders.append(entry.path)
                elif entry.path.endswith(".png"):
                    found[entry.path] = Path(client.download_artifacts(str(run_id), entry.path)).read_bytes()
        return found

    drawn = pictures(drawn_itself.run_id)
    assert sorted(drawn) == [
        "feature_importance.png", "idcg/test/hist_at_10.png", "idcg/test/hist_at_5.png",
        "idcg/valid/hist_at_10.png", "idcg/valid/hist_at_5.png", "report/ndcg_by_stratum.png",
    ]  # fmt: skip
    assert pictures(with_thread.run_id) == drawn


def test_model_pins_lightgbm_and_mlflow(
    finished_run: tuple[MlflowClient, str, DictConfig, pipeline.RunOutcome], run_store: str
) -> None:
    client, run_id, _, _ = finished_run
    mlflow.set_tracking_uri(run_store)
    model_uri = client.get_run(run_id).data.tags["ltr.model_uri"]
    requirements = Path(mlflow.pyfunc.get_model_dependencies(model_uri)).read_text().split()
    assert requirements == [f"mlflow=={mlflow.__version__}", f"lightgbm=={lgb.__version__}"]


def test_requirement_check_warns_as_with_mlflows_map_of_every_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """`requirement_check_of` gives MLflow's requirement check the versions and warnings its full
    map gives, leaves the map unbuilt after the block, and a built map untouched."""
    import logging

    from mlflow.utils import requirements_utils

    from ltr.tracking.mlflow_tracker import requirement_check_of

    requirements = ["lightgbm==0.0.1", f"lightgbm=={lgb.__version__}", "mlflow==0.0.1", f"mlflow=={mlflow.__version__}"]
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = logging.getLogger(requirements_utils.__name__)
    handler = Collect(level=logging.WARNING)
    logger.addHandler(handler)
    monkeypatch.setattr(requirements_utils, "_MODULES_TO_PACKAGES", None)  # restored after the test
    try:
        with requirement_check_of(["lightgbm", "mlflow"]):
            requirements_utils.warn_dependency_requirement_mismatches(requirements)
        scoped = seen[:]
        assert requirements_utils._MODULES_TO_PACKAGES is None  # taken away: MLflow builds its own next
        seen.clear()
        requirements_utils.warn_dependency_requirement_mismatches(requirements)  # with MLflow's full map
        built = requirements_utils._MODULES_TO_PACKAGES
        with requirement_check_of(["lightgbm"]):
            assert requirements_utils._MODULES_TO_PACKAGES is built  # a built map is left alone
    finally:
        logger.removeHandler(handler)
    assert built is not None
    assert "numpy" in built  # the full map, of every distribution
    assert len(scoped) == 1
    assert scoped == seen
    assert f"lightgbm (current: {lgb.__version__}, required: lightgbm==0.0.1)" in scoped[0]
    assert f"mlflow (current: {mlflow.__version__}, required: mlflow==0.0.1)" in scoped[0]
