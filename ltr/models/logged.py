"""A logged run's model and settings, read back from its store: what ``ltr predict`` and
``ltr promote`` start from.

A finished run of a local sqlite store is read without importing MLflow
(:func:`ltr.tracking.sqlite.local_runs.find_local_run`: about 4 s of CPU less at start-up); every other
store and every run that did not finish, through MLflow (:class:`ltr.tracking.runs.RunStore`),
which :attr:`LoggedRun.store` also opens on first use (logged metrics, per-query tables).

The model is the run's ``model_text/model.txt`` (LightGBM's text format, the trees up to the
best round: :mod:`ltr.training.artifact`); the settings are the run's composed config
(``config/config.yaml``) on ``ltr train``'s schemas, checked as ``ltr train`` checks them, so predictions use the run's metric conventions, strata and ranking
step, whatever the defaults are today. The settings' data paths need not exist: scoring other
data needs only the model, its feature names and the run's conventions (the run's own split,
made again, checks its files: :func:`ltr.models.inputs.split_input`).
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.config.compose import compose_shipped, one_line
from ltr.config.groups.backends import MODEL_OPTIONS
from ltr.config.groups.data import DATA_OPTIONS
from ltr.config.logged import read_logged_config
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.spec import ExperimentSpec
from ltr.models.registered import is_registered, registered_run
from ltr.tracking import find_tracking_uri
from ltr.tracking.records import RunRecord
from ltr.tracking.sqlite.local_runs import LocalRun, find_local_run
from ltr.training.artifact import model_feature_names
from ltr.training.backends import MODEL_FILES, backend_of, load_model, require_library

if TYPE_CHECKING:
    from ltr.tracking.runs import RunStore

#: The run's model in LightGBM's text format (trees up to the best round).
MODEL_TEXT = "model_text/model.txt"


@dataclass(frozen=True)
class LoggedRun:
    """A finished run's model (``booster``: the best round's trees) and checked settings.

    ``uri``: the store it was read from; ``notes``: what resolving the reference decided on the
    user's behalf (a name of several runs); ``store``: the store opened through MLflow, on first
    use when the run was read without it.
    """

    record: RunRecord
    uri: str
    spec: ExperimentSpec
    booster: Any  # lgb.Booster, or a backend's ltr.training.backends.ScoringModel
    notes: list[str] = field(default_factory=list)
    opened: RunStore | None = field(default=None, repr=False)
    #: the run's artifact folder when it was read without MLflow (a local store), else None
    artifacts: Path | None = None

    @functools.cached_property
    def store(self) -> RunStore:
        """The run's store through MLflow (opened here on first use if the run was read without
        it), as it is: no dead run reaped (``ltr ope`` writes on its run, nowhere else)."""
        if self.opened is not None:
            return self.opened
        from ltr.tracking.runs import RunStore

        return RunStore(self.uri, reap=False)

    def text_artifact(self, path: str) -> str | None:
        """The text of the run's artifact ``path`` (``data/fingerprint.json``), or None when the
        run has none: read from the local folder when the run was, else through MLflow."""
        if self.artifacts is not None:
            found = self.artifacts / path
            return found.read_text() if found.is_file() else None
        try:
            return self.store.text_artifact(self.record, path)
        except LtrUserError:  # the run holds no such artifact
            return None

    @property
    def feature_names(self) -> list[str]:
        """The model's feature names (``f1 .. fN`` for data without column names)."""
        return model_feature_names(list(self.booster.feature_name()))

    @property
    def n_features(self) -> int:
        return int(self.booster.num_feature())

    @property
    def label(self) -> str:
        return f"{self.record.short_id} ({self.record.run_name})"

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def run_name(self) -> str:
        return self.record.run_name

    @property
    def metrics(self) -> dict[str, float]:
        """The run's logged metrics (the last value of each key: ``test/ndcg_at_10``, ...)."""
        return self.store.metrics(self.record)

    def per_query(self, split: str = "test") -> pd.DataFrame:
        """The run's logged per-query table of ``split`` (``per_query/{split}.parquet``)."""
        return self.store.per_query_table(self.record, split)


def require_finished(record: RunRecord) -> None:
    """Refuse a run that did not finish (running, failed, killed): its model may be missing or
    not the one its metrics describe."""
    if record.status != "FINISHED":
        error = record.tags.get("ltr.error", "")
        why = f": {error.splitlines()[0]}" if error else ""
        raise LtrUserError(f"run {record.short_id} ({record.run_name!r}) is {record.status}, not FINISHED{why}; use a finished run")


def run_spec(config_text: str, record: RunRecord) -> ExperimentSpec:
    """The run's checked settings: its logged config (``config_text``: ``config/config.yaml``)
    merged onto the schemas (the ``data`` group's by the logged ``data.kind``), checked as
    ``ltr train`` checks, but for the existence of its data paths (they may be gone: the model
    scores other data without them)."""
    try:
        logged = read_logged_config(config_text, f"run {record.short_id}")
        kind = OmegaConf.select(logged, "data.kind")
        option = next((name for name, schema in DATA_OPTIONS.items() if schema.kind == kind), None)
        options = [f"data={option}"] if option else []
        model = logged_model_option(OmegaConf.select(logged, "model"))
        options += [f"model={model}"] if model else []
        composed = compose_shipped(options, what=f"the config of run {record.short_id}")
        OmegaConf.set_struct(composed, False)  # free maps (model.params) hold the run's own keys
        merged = OmegaConf.merge(composed, logged)
        OmegaConf.set_struct(merged, True)
    except OmegaConfBaseException as exc:
        raise LtrUserError(f"the logged config of run {record.short_id} does not fit ltr's schemas: {one_line(exc)}") from exc
    if not isinstance(merged, DictConfig):  # pragma: no cover - the merge of two mappings
        raise LtrUserError(f"the logged config of run {record.short_id} is not a mapping")
    return check_config(merged, paths=False)


def logged_model_option(model: object) -> str | None:
    """The ``model`` option whose schema a logged ``model`` node has, when it is not LightGBM's
    (``xgboost``, ``catboost``): the option with every key of the node."""
    if not isinstance(model, DictConfig):
        return None
    keys = {str(k) for k in model}
    return next((name for name, schema in MODEL_OPTIONS.items() if keys <= {f.name for f in dataclasses.fields(schema)}), None)


def load_run(ref: str, *, tracking_uri: str | None = None, experiment: str = "ltr") -> LoggedRun:
    """The finished run ``ref`` names (run id, id prefix or run name, as ``ltr compare`` takes
    them; or a registered model, ``models:/NAME@ALIAS`` / ``models:/NAME/VERSION``, for the run
    that logged it, or a registered model's bare name for its ``champion`` alias when no run has
    that name: :mod:`ltr.tracking.registered`) in the store ``tracking_uri`` (default: :func:`ltr.tracking.find_tracking_uri`), with
    its model and settings.

    Raises
    ------
    LtrUserError
        no such run, a run that did not finish, a run without a model (``tracking.log_model``
        does not matter: every run logs ``model_text/model.txt``), in one line.
    """
    uri = find_tracking_uri(tracking_uri)
    registered: list[str] = []
    opened: RunStore | None = None
    if is_registered(ref):  # models:/NAME@ALIAS or models:/NAME/VERSION: its run, through MLflow
        opened = _open_store(uri)
        ref, note = registered_run(ref, opened)
        registered.append(note)
    local = find_local_run(uri, ref, experiment=experiment)
    if local is not None:
        loaded = _load_local(local)
        if loaded is not None:
            loaded.notes[:0] = registered
            return loaded
    store = opened or _open_store(uri)
    store.notes[:0] = registered
    record = store.resolve(ref, experiment=experiment)
    require_finished(record)
    spec = run_spec(store.text_artifact(record, "config/config.yaml"), record)
    backend = backend_of(spec.config.model)
    with tempfile.TemporaryDirectory() as tmp:
        booster = _booster(store.download(record, model_file(backend), tmp), record, backend)
    return LoggedRun(record, store.uri, spec, booster, store.notes, store)


def _open_store(uri: str) -> RunStore:
    """The store through MLflow (imported here: a local finished run is read without it), as it
    is: ``ltr predict`` reaps no dead run."""
    from ltr.tracking.runs import RunStore

    return RunStore(uri, reap=False)


def _load_local(local: LocalRun) -> LoggedRun | None:
    """The run read without MLflow; None when an artifact is missing (MLflow then says which)."""
    config = local.artifact("config/config.yaml")
    if config is None:
        return None
    spec = run_spec(config.read_text(), local.record)
    backend = backend_of(spec.config.model)
    model = local.artifact(model_file(backend))
    if model is None:
        return None
    return LoggedRun(local.record, local.uri, spec, _booster(model, local.record, backend), local.notes, artifacts=local.artifacts)


def model_file(backend: str) -> str:
    """The run's model file of ``backend`` (``model_text/model.txt`` for LightGBM)."""
    return f"model_text/{MODEL_FILES[backend]}"


def _booster(path: Path, record: RunRecord, backend: str = "lightgbm") -> Any:
    """The run's model: LightGBM's booster, or XGBoost's / CatBoost's
    :class:`ltr.training.backends.ScoringModel` (its library installed, else the extra to install)."""
    require_library(backend)
    try:
        return load_model(backend, path)
    except ValueError as exc:
        raise LtrUserError(f"run {record.short_id}: {model_file(backend)} is {exc}") from None
