"""The MLflow tracker: one run per job, logged through ``MlflowClient`` in batches.

The run's status always ends terminal: the pipeline calls :meth:`MlflowTracker.end_run` with
FINISHED, FAILED (exception) or KILLED (Ctrl-C / SIGTERM), and the error as the ``ltr.error`` tag.

On a tracking server (``http(s)://``), every request waits for a server that does not answer
for up to ``tracking.server_wait_s`` (:mod:`ltr.tracking.server_wait`), and what a run makes once
per experiment (the experiment, its tags, a dataset) may be made by another job at the same
moment: that job's is used (:func:`ltr.tracking.server_wait.once_made`).
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ltr.errors import DeviceFull, LtrUserError, full_device
from ltr.tracking.base import RunStatus
from ltr.tracking.liveness.heartbeat import TAG_HEARTBEAT, Heartbeat, Liveness, beat_time
from ltr.tracking.mlflow_uris import pointed_at
from ltr.tracking.server_wait import (
    ServerSilent,
    ServerWait,
    WaitingClient,
    once_made,
    quiet_retries,
)
from ltr.tracking.sqlite.lock import sqlite_db_path, sqlite_store_lock
from ltr.tracking.store import ensure_store, process_tags, reap_dead_runs, remember_server
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

T = TypeVar("T")


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class MlflowTracker:
    """Logs one run to the store at ``uri`` under ``experiment`` (created when missing); while
    the run is RUNNING, its heartbeat (``liveness``, :mod:`ltr.tracking.liveness.heartbeat`) beats."""

    def __init__(self, uri: str, experiment: str, *, liveness: Liveness | None = None) -> None:
        self.uri = uri
        self.liveness = Liveness() if liveness is None else liveness
        self._heartbeat: Heartbeat | None = None
        db = sqlite_db_path(uri)
        #: The store as a message names it when its disk is full (``ltr.errors.full_device``).
        self.store_path = str(db) if db is not None else uri
        self.experiment_name = experiment
        self.run_id: str | None = None
        #: the run's ``mlflow.source.*`` and ``mlflow.user`` tags: its datasets' source
        self._source_tags: dict[str, str] = {}
        self.enabled = True
        #: waits for a server that does not answer (``tracking.server_wait_s``); http(s) stores only
        self.wait = ServerWait(self.liveness.server_wait_s)
        self._server = uri.startswith(("http://", "https://"))
        if self._server:
            remember_server(uri, self.liveness.server_wait_s)  # a later job's check waits for it too
            quiet_retries()
        # The store is created (or checked) and the client built under the lock: MLflow creates
        # and migrates a sqlite schema when its store is first constructed. Runs of processes
        # that died without ending them are marked KILLED here.
        with sqlite_store_lock(uri):
            ensure_store(uri)
            try:
                #: the client without the wait (the heartbeat's: a beat is never waited for)
                self.direct = MlflowClient(tracking_uri=uri)
            except MlflowException as exc:
                raise self._store_error(exc) from exc
            self.client = cast(MlflowClient, WaitingClient(self.direct, self.wait)) if self._server else self.direct
            self.experiment_id = self._experiment_id()
            try:
                reap_dead_runs(self.client, [self.experiment_id])
            except (MlflowException, ServerSilent) as exc:  # never a reason not to track this run
                log.warning("ltr: could not look for dead runs in %s: %s", uri, str(exc).splitlines()[0])

    def _experiment_id(self) -> str:
        try:
            found = self.client.get_experiment_by_name(self.experiment_name)
            if found is not None:
                once_made(lambda: mark_model_training(self.client, found), "the experiment's kind tag")
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
            raise self._store_error(exc) from exc

    def _store_error(self, exc: MlflowException) -> LtrUserError | DeviceFull:
        """A store that cannot be used: one line (a full one: :class:`DeviceFull`, exit 1)."""
        full = full_device(exc, store=self.store_path)
        if full is not None:
            return DeviceFull(full)
        return LtrUserError(f"cannot use the MLflow store {self.uri}: {exc.message.splitlines()[0]}")

    def _locked(self) -> Any:
        """Writes to a sqlite store are serialised across processes (parallel sweep jobs)."""
        return sqlite_store_lock(self.uri)

    def _waiting(self, action: Callable[[], T]) -> T:
        """``action()`` (several requests, not all through :attr:`client`: MLflow's fluent API),
        tried again as a whole while the server does not answer (:class:`ServerWait`)."""
        return self.wait.call(action) if self._server else action()

    def start_run(
        self, run_name: str, tags: Mapping[str, str], *, parent_run_id: str | None = None
    ) -> str:
        # Who runs it: a run whose process dies unannounced (SIGKILL, OOM) is found by these.
        # Its heartbeat finds it on other hosts (ltr.tracking.liveness.heartbeat).
        all_tags = {**dict(tags), **process_tags(), **self.liveness.start_tags()}
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        self._stop_heartbeat()
        with self._locked():
            run = self.client.create_run(self.experiment_id, run_name=run_name, tags=all_tags)
        self.run_id = run.info.run_id
        self._source_tags = {k: v for k, v in all_tags.items() if k.startswith("mlflow.source.") or k == "mlflow.user"}
        if self.liveness.heartbeat_s is not None:
            self._heartbeat = Heartbeat(self._beat_of(self.run_id), self.liveness.heartbeat_s)
            self._heartbeat.start()
        return self.run_id

    def __getstate__(self) -> dict[str, Any]:
        """A copy sent to another process (a launcher pickles a sweep's callbacks) has no
        heartbeat: the run's own process beats it."""
        return {**self.__dict__, "_heartbeat": None}

    def _beat_of(self, run_id: str) -> Callable[[], None]:
        def beat() -> None:
            with self._locked():
                self.direct.set_tag(run_id, TAG_HEARTBEAT, beat_time())

        return beat

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None

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

    def log_table(self, table: Any, artifact_file: str) -> None:
        with self._locked():  # MLflow also records the table in a run tag
            self.client.log_table(self._require_run(), table, artifact_file)

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
        signature = infer_signature(input_example, booster.predict(input_example.to_numpy()))
        # LightGBM's booster, or a backend's model (ltr.training.backends) in its library's flavour
        flavour = str(getattr(booster, "flavour", "lightgbm"))
        if flavour == "lightgbm":
            import lightgbm  # loaded already (the booster is one); not for the store's other users

            native, requirements = booster, [f"lightgbm=={lightgbm.__version__}"]
        else:
            native, requirements = booster.native, [booster.requirement]
        logger = importlib.import_module(f"mlflow.{flavour}")

        def log() -> Any:
            with (
                self._locked(),
                pointed_at(self.uri),  # the fluent run log_model logs into, for this call only
                mlflow.start_run(run_id=run_id, experiment_id=self.experiment_id),
                requirement_check_of([flavour, "mlflow"]),
            ):
                info = logger.log_model(
                    native,
                    name=MODEL_NAME,
                    signature=signature,
                    input_example=input_example,
                    metadata=dict(metadata),
                    pip_requirements=requirements,
                )
                self.client.set_tag(run_id, "ltr.model_uri", info.model_uri)
            return info

        return str(self._waiting(log).model_id)

    def show_first(self, metric_keys: Sequence[str], curves: Sequence[str] = ()) -> None:
        """Save the experiment's shared runs-table view (:data:`VIEW_KEY`): these metric columns
        first, merged into those of the view earlier runs saved (:func:`merged_columns`: a later
        run never narrows the view), wide enough to read each key whole, the headline and stratum
        columns first so they fit a 1600 px window (:func:`column_width`); newest runs first; in the chart view, the
        per-round ``curves`` (``iter/...`` keys) first (:func:`chart_view`). MLflow's UI opens it
        from a link with ``viewStateShareKey`` (:func:`ltr.tracking.uri.ui_url`). Read and
        written under the store's lock, so parallel jobs never drop each other's columns; a job
        that saves the experiment's first view at the same moment as another reads theirs and
        merges again (:func:`once_made`)."""
        once_made(lambda: self._save_view(metric_keys, curves), "the experiment's view")

    def _save_view(self, metric_keys: Sequence[str], curves: Sequence[str]) -> None:
        tag = f"mlflow.sharedViewState.{VIEW_KEY}"
        with self._locked():
            experiment = self.client.get_experiment(self.experiment_id)
            view = saved_view(experiment.tags.get(tag))
            columns = merged_columns(view.get("columnOrder", []), [f"metrics.`{key}`" for key in metric_keys])
            widths = view.get("columnWidths", {})
            view |= {
                "selectedColumns": columns,
                "columnOrder": columns,
                "columnWidths": {column: column_width(column) for column in columns} | {
                    column: width for column, width in widths.items() if column not in columns
                },
                "orderByKey": "attributes.start_time",
                "orderByAsc": False,
            }
            if curves:
                view |= chart_view(view.get("compareRunCharts") or [], view.get("compareRunSections") or [], curves)
            self.client.set_experiment_tag(self.experiment_id, tag, json.dumps(view))

    def log_dataset(
        self, name: str, digest: str, features: Any, labels: Any, *, context: str
    ) -> None:
        from mlflow.data.code_dataset_source import CodeDatasetSource
        from mlflow.data.numpy_dataset import from_numpy
        from mlflow.entities import DatasetInput, InputTag

        # the source is the run's own (without one, MLflow asks every context provider again:
        # GitPython and its git processes, for each dataset)
        source = CodeDatasetSource(tags=dict(self._source_tags))
        dataset = from_numpy(features, targets=labels, source=source, name=name, digest=digest)
        entry = DatasetInput(
            dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)]
        )
        run_id = self._require_run()

        def log() -> None:
            with self._locked():
                self.client.log_inputs(run_id, datasets=[entry])

        # the experiment's first run of a dataset makes it; two at once: the second uses the first's
        once_made(log, f"the dataset {name}")

    def end_run(self, status: RunStatus, *, error: str | None = None) -> None:
        self._stop_heartbeat()  # no beat once the end is written
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


@contextmanager
def requirement_check_of(packages: Sequence[str]) -> Iterator[None]:
    """Inside the block, MLflow checks a logged model's pinned requirements against the
    environment without a map of every installed file.

    ``log_model`` warns when the environment does not satisfy the model's requirements; for each
    requirement it looks the installed version up by distribution name, and falls back to
    importing a module it finds in a map of every installed distribution's top-level modules
    (``importlib.metadata.packages_distributions()``, built on first use: a ``stat`` of each
    installed file, 43,000 files and about 1 s in ltr's development install). While MLflow has
    not built that map, the block gives it one of just ``packages``, each its own module (the
    modules the full map gives them: the same versions, the same warnings), and takes it away
    after: a later user of the map in this process builds the full one as before. A map MLflow
    built already, or an MLflow without it (a private name), is left alone.
    """
    from mlflow.utils import requirements_utils as mlflow_requirements

    requirements_utils: Any = mlflow_requirements  # its private map's declared type is None
    if getattr(requirements_utils, "_MODULES_TO_PACKAGES", False) is not None:
        yield
        return
    requirements_utils._MODULES_TO_PACKAGES = {package: [package] for package in packages}
    try:
        yield
    finally:
        requirements_utils._MODULES_TO_PACKAGES = None


def mark_model_training(client: MlflowClient, experiment: Any) -> None:
    """Tag an experiment made without :data:`EXPERIMENT_KIND` (by an older ltr, by hand) with it."""
    if "mlflow.experimentKind" not in experiment.tags:
        for key, value in EXPERIMENT_KIND.items():
            client.set_experiment_tag(experiment.experiment_id, key, value)


def saved_view(text: str | None) -> dict[str, Any]:
    """The saved view of an experiment tag's JSON text; {} when absent or unreadable."""
    try:
        view = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return view if isinstance(view, dict) else {}


def merged_columns(existing: Sequence[str], new: Sequence[str]) -> list[str]:
    """``existing`` columns in their order, with each column of ``new`` they lack inserted right
    after the column that precedes it in ``new`` (first if none does): the union, in an order
    that adding runs never shuffles.

    Examples
    --------
    >>> merged_columns(["v", "t", "b"], ["v", "pre", "ild", "t", "b"])
    ['v', 'pre', 'ild', 't', 'b']
    >>> merged_columns(["v", "pre", "ild", "t", "b"], ["v", "ctr", "t", "sd", "b"])
    ['v', 'ctr', 'pre', 'ild', 't', 'sd', 'b']
    """
    out = [str(c) for c in existing]
    for i, column in enumerate(new):
        if column in out:
            continue
        before = new[i - 1] if i else None
        out.insert(out.index(before) + 1 if before in out else 0, column)
    return out


#: The chart view's first sections (uuid, title): our curves of valid, of test, then LightGBM's.
CURVE_SECTIONS = (
    ("ltr-curves-valid", "valid: our nDCG per boosting round (iter/valid/...)"),
    ("ltr-curves-test", "test: our nDCG per boosting round (iter/test/...)"),
    ("ltr-curves-lightgbm", "LightGBM's own ndcg@k per round (its conventions: a query with nothing relevant scores 1)"),
)


#: The libraries whose own ndcg@k a run may log per round (``iter/valid/xgboost/ndcg_at_10``),
#: by how a title names them.
LIBRARY_NAMES = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "catboost": "CatBoost"}


def _library_of(middle: Sequence[str]) -> str | None:
    """The library whose own values a curve's middle parts name (``lightgbm_train_labels``: LightGBM)."""
    return next((LIBRARY_NAMES[lib] for part in middle for lib in LIBRARY_NAMES if part.startswith(lib)), None)


def curve_section(key: str) -> str:
    """The uuid of the :data:`CURVE_SECTIONS` section an ``iter/...`` curve is drawn in (the
    libraries' own values, XGBoost's and CatBoost's too, in LightGBM's)."""
    parts = key.split("/")
    if _library_of(parts[2:-1]) is not None:
        return CURVE_SECTIONS[2][0]
    return CURVE_SECTIONS[0][0] if parts[1] == "valid" else CURVE_SECTIONS[1][0]


def curve_title(key: str) -> str:
    """A curve's chart title: ``iter/valid/pre_rerank/ndcg_at_10`` -> ``valid nDCG@10, model's
    order before re-ranking``; LightGBM's own keep LightGBM's spelling (``ndcg@10``)."""
    parts = key.split("/")
    split, measure, middle = parts[1], parts[-1], parts[2:-1]
    k = measure.rsplit("_at_", 1)[-1]
    library = _library_of(middle)
    if library is not None:
        labels = ", on the training labels" if "lightgbm_train_labels" in middle else ""
        return f"{split} ndcg@{k} ({library}'s own{labels})"
    notes = {"pre_rerank": ", model's order before re-ranking", "train_labels": ", on the training labels"}
    return f"{split} nDCG@{k}" + "".join(notes.get(part, f", {part}") for part in middle)


def chart_view(charts: Sequence[dict[str, Any]], sections: Sequence[dict[str, Any]], curves: Sequence[str]) -> dict[str, Any]:
    """The chart view's state merged with a chart per curve in ``curves`` that has none: our
    curves first (valid, then test), LightGBM's own in a section that says so; every other
    metric gets MLflow's own chart, in sections after these (``isAccordionReordered`` keeps
    this order)."""
    own = [section for section in sections if section.get("uuid") not in {uuid for uuid, _ in CURVE_SECTIONS}]
    ours = [
        {"uuid": uuid, "name": name, "display": True, "isReordered": True, "deleted": False, "isGenerated": False}
        for uuid, name in CURVE_SECTIONS
    ]
    drawn = {chart.get("metricKey") for chart in charts}
    new = [
        {
            "uuid": f"ltr-chart-{key}", "type": "LINE", "metricKey": key, "selectedMetricKeys": [key],
            "displayName": curve_title(key), "metricSectionId": curve_section(key), "isGenerated": False,
            "deleted": False, "isReordered": False, "lineSmoothness": 0, "xAxisScaleType": "linear",
            "scaleType": "linear", "range": {}, "xAxisKey": "step", "selectedXAxisMetricKey": "",
            "yAxisKey": "metric", "yAxisExpressions": [], "ignoreOutliers": False,
            "useGlobalXaxisKey": True, "useGlobalLineSmoothing": True,
        }
        for key in sorted(set(curves) - drawn, key=lambda key: (key.split("/")[1] != "valid", key))
    ]  # fmt: skip
    return {"compareRunCharts": [*charts, *new], "compareRunSections": ours + own, "isAccordionReordered": True}


def column_width(column: str) -> int:
    """A metric column's width in the runs table (px): its whole key readable in the header
    (MLflow cuts a header from the right, and ``test/ndcg_at_10`` and ``test/ndcg_at_10/sd``
    differ at the end), 7 px a character, at least 90."""
    key = column.removeprefix("metrics.`").removesuffix("`")
    return max(90, 7 * len(key) + 24)
