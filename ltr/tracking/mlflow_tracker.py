"""The MLflow tracker: one run per job, logged through ``MlflowClient`` in batches.

The run's status always ends terminal: the pipeline calls :meth:`MlflowTracker.end_run` with
FINISHED, FAILED (exception) or KILLED (Ctrl-C / SIGTERM), and the error as the ``ltr.error`` tag.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import lightgbm
import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ltr.errors import LtrUserError
from ltr.tracking.base import RunStatus
from ltr.tracking.store import ensure_store, process_tags, reap_dead_runs
from ltr.tracking.store_lock import sqlite_store_lock
from ltr.tracking.uri import UI_PORT, VIEW_KEY, artifact_root_for, ui_url

log = logging.getLogger(__name__)

#: The experiment tag MLflow's UI reads to open an experiment on its runs table (model
#: training), not on its GenAI screens (traces).
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}

# MLflow's limits per log_batch request (metrics, params, tags; 1000 entities in all).
_BATCH_METRICS = 1000
_BATCH_PARAMS = 100
_PARAM_VALUE_MAX = 6000
#: The name of every run's logged model: ``runs:/<run id>/model`` finds it.
MODEL_NAME = "model"


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class MlflowTracker:
    """Logs one run to the store at ``uri`` under ``experiment`` (created when missing)."""

    def __init__(self, uri: str, experiment: str) -> None:
        self.uri = uri
        self.experiment_name = experiment
        self.run_id: str | None = None
        self.enabled = True
        # The store is created (or checked) and the client built under the lock: MLflow creates
        # and migrates a sqlite schema when its store is first constructed. Runs of processes
        # that died without ending them are marked KILLED here.
        with sqlite_store_lock(uri):
            ensure_store(uri)
            try:
                self.client = MlflowClient(tracking_uri=uri)
            except MlflowException as exc:
                raise LtrUserError(
                    f"cannot use the MLflow store {uri}: {exc.message.splitlines()[0]}"
                ) from exc
            self.experiment_id = self._experiment_id()
            try:
                reap_dead_runs(self.client, [self.experiment_id])
            except MlflowException as exc:  # never a reason not to track this run
                log.warning("ltr: could not look for dead runs in %s: %s", uri, exc.message)

    def _experiment_id(self) -> str:
        try:
            found = self.client.get_experiment_by_name(self.experiment_name)
            if found is not None:
                mark_model_training(self.client, found)
                return str(found.experiment_id)
            try:
                return str(
                    self.client.create_experiment(
                        self.experiment_name, artifact_location=artifact_root_for(self.uri), tags=EXPERIMENT_KIND
                    )
                )
            except MlflowException:
                # Another job created it between our look-up and create: use theirs.
                found = self.client.get_experiment_by_name(self.experiment_name)
                if found is None:
                    raise
                return str(found.experiment_id)
        except MlflowException as exc:
            raise LtrUserError(
                f"cannot use the MLflow store {self.uri}: {exc.message.splitlines()[0]}"
            ) from exc

    def _locked(self) -> Any:
        """Writes to a sqlite store are serialised across processes (parallel sweep jobs)."""
        return sqlite_store_lock(self.uri)

    def start_run(
        self, run_name: str, tags: Mapping[str, str], *, parent_run_id: str | None = None
    ) -> str:
        # Who runs it: a run whose process dies unannounced (SIGKILL, OOM) is found by these.
        all_tags = {**dict(tags), **process_tags()}
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        with self._locked():
            run = self.client.create_run(self.experiment_id, run_name=run_name, tags=all_tags)
        self.run_id = run.info.run_id
        return self.run_id

    def _require_run(self) -> str:
        if self.run_id is None:
            raise RuntimeError("no active run: call start_run first")
        return self.run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        run_id = self._require_run()
        entries = [Param(k, str(v)[:_PARAM_VALUE_MAX]) for k, v in params.items()]
        for chunk in _chunks(entries, _BATCH_PARAMS):
            with self._locked():
                self.client.log_batch(run_id, params=chunk, synchronous=True)

    def log_metrics(
        self, metrics: Mapping[str, float], *, step: int | None = None, model_id: str | None = None
    ) -> None:
        run_id = self._require_run()
        now = int(time.time() * 1000)
        entries = [Metric(k, float(v), now, step or 0, model_id=model_id) for k, v in metrics.items()]
        for chunk in _chunks(entries, _BATCH_METRICS):
            with self._locked():
                self.client.log_batch(run_id, metrics=chunk, synchronous=True)

    def log_curves(self, curves: Mapping[str, Sequence[float]]) -> None:
        run_id = self._require_run()
        now = int(time.time() * 1000)
        entries = [
            Metric(key, float(value), now, step)
            for key, values in curves.items()
            for step, value in enumerate(values, start=1)
        ]
        for chunk in _chunks(entries, _BATCH_METRICS):
            with self._locked():
                self.client.log_batch(run_id, metrics=chunk, synchronous=True)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        run_id = self._require_run()
        entries = [RunTag(k, str(v)) for k, v in tags.items()]
        for chunk in _chunks(entries, _BATCH_PARAMS):
            with self._locked():
                self.client.log_batch(run_id, tags=chunk, synchronous=True)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        self.client.log_figure(self._require_run(), figure, artifact_file)

    def log_dict(self, data: Any, artifact_file: str) -> None:
        self.client.log_dict(self._require_run(), data, artifact_file)

    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self._require_run(), text, artifact_file)

    def log_file(self, local_path: Path, artifact_dir: str | None = None) -> None:
        self.client.log_artifact(self._require_run(), str(local_path), artifact_dir)

    def log_model(self, booster: Any, input_example: Any, metadata: Mapping[str, Any]) -> str | None:
        """The booster as an MLflow LightGBM model named ``model``, so ``runs:/<run id>/model``
        resolves as MLflow documents it; its ``models:/m-...`` URI is the run's ``ltr.model_uri``
        tag. Returns its model id.

        ``input_example`` (a DataFrame of the model's named feature columns) gives the model its
        signature: MLflow's pyfunc then aligns a client's columns by name and refuses a missing
        one. ``metadata`` goes to the model's MLmodel file (what the scores are, the run's ranking
        step, the best round).

        Log it before the run's metrics and pass the id to :meth:`log_metrics`: MLflow links the
        run's step-0 metrics logged *before* a model by reading every metric's history again
        (one query per key, a few hundred per run)."""
        from mlflow.models import infer_signature

        run_id = self._require_run()
        mlflow.set_tracking_uri(self.uri)
        signature = infer_signature(input_example, booster.predict(input_example.to_numpy()))
        with self._locked(), mlflow.start_run(run_id=run_id, experiment_id=self.experiment_id):
            info = mlflow.lightgbm.log_model(
                booster,
                name=MODEL_NAME,
                signature=signature,
                input_example=input_example,
                metadata=dict(metadata),
                pip_requirements=[f"lightgbm=={lightgbm.__version__}"],
            )
            self.client.set_tag(run_id, "ltr.model_uri", info.model_uri)
        return str(info.model_id)

    def show_first(self, metric_keys: Sequence[str]) -> None:
        """Save the experiment's shared runs-table view (:data:`VIEW_KEY`): these metric columns
        first, in this order, wide enough to read; newest runs first. MLflow's UI opens it from
        a link with ``viewStateShareKey`` (:func:`ltr.tracking.uri.ui_url`)."""
        columns = [f"metrics.`{key}`" for key in metric_keys]
        view = {
            "selectedColumns": columns,
            "columnOrder": columns,
            "columnWidths": {column: max(130, 8 * len(key) + 24) for column, key in zip(columns, metric_keys, strict=True)},
            "orderByKey": "attributes.start_time",
            "orderByAsc": False,
        }
        with self._locked():
            self.client.set_experiment_tag(self.experiment_id, f"mlflow.sharedViewState.{VIEW_KEY}", json.dumps(view))

    def log_dataset(
        self, name: str, digest: str, features: Any, labels: Any, *, context: str
    ) -> None:
        from mlflow.data.numpy_dataset import from_numpy
        from mlflow.entities import DatasetInput, InputTag

        dataset = from_numpy(features, targets=labels, name=name, digest=digest)
        entry = DatasetInput(
            dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)]
        )
        with self._locked():
            self.client.log_inputs(self._require_run(), datasets=[entry])

    def end_run(self, status: RunStatus, *, error: str | None = None) -> None:
        if self.run_id is None:
            return
        if error:
            with self._locked():
                self.client.set_tag(self.run_id, "ltr.error", error[:_PARAM_VALUE_MAX])
        with self._locked():
            self.client.set_terminated(self.run_id, status=status.value)

    def run_url(self, run_id: str | None = None) -> str | None:
        """The page of ``run_id`` (default: this tracker's run): on the tracking server, or on
        ``ltr ui``'s default address."""
        run_id = run_id or self.run_id
        if run_id is None:
            return None
        base = self.uri if self.uri.startswith("http") else f"http://127.0.0.1:{UI_PORT}"
        return ui_url(base, self.experiment_id, run_id)


def mark_model_training(client: MlflowClient, experiment: Any) -> None:
    """Tag an experiment made without :data:`EXPERIMENT_KIND` (by an older ltr, by hand) with it."""
    if "mlflow.experimentKind" not in experiment.tags:
        for key, value in EXPERIMENT_KIND.items():
            client.set_experiment_tag(experiment.experiment_id, key, value)


