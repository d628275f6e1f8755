"""Register a run's model in the MLflow Model Registry under an alias, never a worse one unasked.

:func:`plan_promotion` checks the model and alias names with MLflow's own rules and ltr's (no
number, no whitespace or control character in a name; :func:`check_names`) before it reads
anything, resolves what to promote (a run; a sweep: its best run, as the sweep's parent names it in
``ltr.sweep.best_run_id``: its best child, or for an Optuna search its study's best trial of all
invocations, which a resumed study's earlier invocation may have run) and, when the alias already points to a model evaluated on the
same data (the ``ltr.data.fingerprint`` tags agree), compares the two runs per query and per
stratum (``ltr compare``) on ``split`` (default ``valid``: a promotion chooses a model, and test
is for the final report). :func:`apply_promotion` then refuses a candidate whose value of the
sweep's metric on ``split`` is below the current holder's, unless forced, and points the alias at
the run's model:

- the alias already points to the run's model: nothing is done (a rerun of a deploy script);
- the registered model already has a version of the run's model (same run, same source): the
  alias moves to that version, nothing is registered;
- else a new version is registered, its description the run's stratified table and a link to
  the run, its tags the run id, the data fingerprint, the metric and its value. Registration is
  all or nothing: if anything fails after the version was created, the version (and the
  registered model, if this call created it and no other version is in it) is deleted again
  before the error is raised.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import (  # MLflow's own rules: what its registry would refuse later
    _validate_model_alias_name,
    _validate_model_alias_name_reserved,
    _validate_model_name,
)

from ltr.compare.loading import LoadedComparison, check_n_resamples, load_comparison
from ltr.errors import DeviceFull, LtrUserError, full_device
from ltr.models.logged import require_finished
from ltr.tracking import find_tracking_uri
from ltr.tracking.mlflow_uris import pointed_at
from ltr.tracking.runs import RunRecord, RunStore
from ltr.tracking.sqlite.lock import sqlite_db_path
from ltr.tracking.store import read_only_store
from ltr.tracking.uri import ui_path, ui_url

#: Tags of a registered version (and what a later promotion compares against).
TAG_RUN = "ltr.run_id"
TAG_FINGERPRINT = "ltr.data.fingerprint"
TAG_METRIC = "ltr.metric"
TAG_VALUE = "ltr.metric.value"


@dataclass(frozen=True)
class Holder:
    """The version an alias points to now."""

    version: str
    run_id: str
    fingerprint: str | None


@dataclass(frozen=True)
class PromotionPlan:
    """What :func:`apply_promotion` will do: register ``run``'s model as ``name`` with ``alias``.

    ``metric``: the key the decision reads (``{split}/{measure}`` of the sweep's
    ``optimized_metric`` measure); ``value`` / ``holder_value``: its value for the candidate and
    for the version the alias points to now (None: no holder, or one on other data).
    ``existing``: the version of ``name`` that already holds the run's model (the alias moves
    there, nothing is registered), or None (a new version is registered).
    """

    store: RunStore
    run: RunRecord
    name: str
    alias: str
    model_uri: str
    metric: str
    value: float | None
    holder: Holder | None
    holder_value: float | None
    comparison: LoadedComparison | None
    notes: tuple[str, ...]
    existing: str | None = None

    @property
    def current(self) -> bool:
        """True when the alias already points to the run's model: nothing to do."""
        return self.holder is not None and self.holder.run_id == self.run.run_id

    @property
    def worse(self) -> bool:
        """True when the candidate's value is below the current holder's on the same data."""
        return self.value is not None and self.holder_value is not None and self.value < self.holder_value


@dataclass(frozen=True)
class Promotion:
    """``models:/{name}@{alias}`` points to ``version``, the model of ``run``.

    ``registered``: the version was created by this promotion (False: an existing version of the
    run's model); ``changed``: the alias moved (False: it already pointed there, nothing was done);
    ``replaced``: the version it pointed to before, if any.
    """

    name: str
    version: str
    alias: str
    run: RunRecord
    replaced: Holder | None
    registered: bool = True
    changed: bool = True


def _candidate(store: RunStore, ref: str, experiment: str) -> tuple[RunRecord, list[str]]:
    record = store.resolve(ref, experiment=experiment)
    notes: list[str] = []
    if record.tags.get("ltr.cv.fold_key"):
        raise LtrUserError(
            f"run {record.short_id} ({record.run_name!r}) is a cross-validation parent: its folds are "
            "estimates, not a model to ship; promote one fold's run or train on all the data"
        )
    if record.tags.get("ltr.role") == "sweep":
        best = record.tags.get("ltr.sweep.best_run_id", "")
        if not best:
            raise LtrUserError(
                f"sweep {record.short_id} ({record.run_name!r}) has no best job (none finished or met its constraints): nothing to promote"
            )
        if record.tags.get("ltr.sweep.best_of") == "study":
            notes.append(f"sweep {record.short_id} ({record.run_name}): its Optuna study's best trial (all invocations) is run {best[:8]}")
        else:
            notes.append(f"sweep {record.short_id} ({record.run_name}): its best job is run {best[:8]}")
        record = store.resolve(best, experiment=experiment)
    require_finished(record)
    return record, notes


def _holder(store: RunStore, name: str, alias: str) -> Holder | None:
    try:
        version = MlflowClient(tracking_uri=store.uri, registry_uri=store.uri).get_model_version_by_alias(name, alias)
    except MlflowException:
        return None  # no such model, or no such alias yet
    return Holder(str(version.version), str(version.tags.get(TAG_RUN) or version.run_id or ""), version.tags.get(TAG_FINGERPRINT))


#: A name or alias that reads as a number (``12``, ``-3``, ``1.5``, ``1e3``): refused, as
#: ``models:/12/1`` and ``@3`` read as versions.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def check_names(name: str, alias: str) -> None:
    """Refuse, in one line and before anything is read, a registered model name or an alias that
    MLflow's registry would refuse (with its reason), and what ltr refuses besides: a name that
    is empty, a number (``12``), or has whitespace (``a b``) or a control character (ESC, BEL:
    a name is printed to terminals and written into URIs); an alias that is empty or a number
    (``models:/m@3`` reads as version 3)."""
    if not name.strip():
        raise LtrUserError("--name is empty: give the registered model's name")
    control = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        raise LtrUserError(f"--name {name!r} has a control character ({control!r}): give a name of printable characters")
    if any(c.isspace() for c in name):
        raise LtrUserError(f"--name {name!r} has whitespace: give a name without spaces, e.g. {'_'.join(name.split())!r}")
    if _NUMBER.fullmatch(name):
        raise LtrUserError(f"--name {name!r} is a number (models:/{name}/1 reads like an id): give a name with a letter, e.g. 'ranker'")
    try:
        _validate_model_name(name)
    except MlflowException as exc:
        raise LtrUserError(f"--name {name!r} is not a registered model name MLflow accepts: {_first_line(exc)}") from None
    if not alias.strip() or _NUMBER.fullmatch(alias.strip()):
        raise LtrUserError(f"--alias {alias!r} is not a usable alias (not empty, not a number)")
    try:
        _validate_model_alias_name(alias)  # type: ignore[no-untyped-call]  # MLflow's, untyped
        _validate_model_alias_name_reserved(alias)  # type: ignore[no-untyped-call]
    except MlflowException as exc:
        raise LtrUserError(f"--alias {alias!r} is not an alias MLflow accepts: {_first_line(exc)}") from None


def _first_line(exc: MlflowException) -> str:
    return str(exc.message).splitlines()[0] if str(exc.message) else type(exc).__name__


def _existing_version(store: RunStore, name: str, run: RunRecord, model_uri: str) -> str | None:
    """The oldest version of ``name`` whose model is ``run``'s (same run id, same source), or None."""
    client = MlflowClient(tracking_uri=store.uri, registry_uri=store.uri)
    try:
        versions = client.search_model_versions(f"run_id = '{run.run_id}'")
    except MlflowException:
        return None
    sources = {model_uri, f"runs:/{run.run_id}/model"}
    same = [int(v.version) for v in versions if v.name == name and v.run_id == run.run_id and v.source in sources]
    return str(min(same)) if same else None


def plan_promotion(
    ref: str,
    *,
    name: str,
    alias: str = "champion",
    split: str = "valid",
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    n_resamples: int = 10_000,
) -> PromotionPlan:
    """Resolve ``ref`` (a run or a sweep parent) and compare it with the alias's holder on
    ``split``; a name or alias MLflow would refuse is refused first (:func:`check_names`)."""
    check_names(name, alias)
    check_n_resamples(n_resamples)
    store = RunStore(find_tracking_uri(tracking_uri), reap=False)  # it registers a model, and reaps no run
    run, notes = _candidate(store, ref, experiment)
    model_uri = run.tags.get("ltr.model_uri")
    if not model_uri:
        raise LtrUserError(
            f"run {run.short_id} ({run.run_name!r}) has no MLflow model (tracking.log_model=false); retrain with tracking.log_model=true"
        )
    objective = run.tags.get("ltr.optimized_metric") or "valid/ndcg_at_10"
    metric = f"{split}/{objective.split('/', 1)[1]}" if "/" in objective else f"{split}/{objective}"
    metrics = store.metrics(run)
    value = metrics.get(metric)
    holder = _holder(store, name, alias)
    comparison, holder_value = None, None
    if holder is not None and holder.run_id == run.run_id:  # already there: nothing to compare or do
        return PromotionPlan(store, run, name, alias, model_uri, metric, value, holder, None, None, tuple(notes), holder.version)
    if holder is not None:
        if holder.fingerprint and holder.fingerprint == run.tags.get(TAG_FINGERPRINT) and holder.run_id:
            holder_record = store.resolve(holder.run_id, experiment=experiment)
            holder_value = store.metrics(holder_record).get(metric)
            for who, has in ((run, value), (holder_record, holder_value)):
                _require_split(store, who, split, metric, has)
            measure = metric.split("/", 1)[1]
            comparison = load_comparison(
                [holder.run_id, run.run_id], tracking_uri=store.uri, experiment=experiment, split=split,
                metrics=[measure.split("/")[0]], n_resamples=n_resamples,
            )
        else:
            notes.append(
                f"{name}@{alias} (version {holder.version}) was evaluated on other data "
                f"(fingerprint {holder.fingerprint or 'unknown'} vs {run.tags.get(TAG_FINGERPRINT)}): not compared"
            )
    existing = _existing_version(store, name, run, model_uri)
    return PromotionPlan(store, run, name, alias, model_uri, metric, value, holder, holder_value, comparison, tuple(notes), existing)


def _require_split(store: RunStore, run: RunRecord, split: str, metric: str, value: float | None) -> None:
    """Refuse, naming the other split, a run that cannot be compared on ``split``: it logged no
    ``metric`` or no per-query table of ``split`` (its ``eval.splits`` left the split out)."""
    other = "test" if split == "valid" else "valid"
    if value is None:
        missing = metric
    else:
        try:
            tables = {Path(a.path).name for a in store.client.list_artifacts(run.run_id, "per_query")}
        except (MlflowException, OSError):
            return  # the comparison's own download says what is missing
        if f"{split}.parquet" in tables:
            return
        missing = f"per-query table of {split} (per_query/{split}.parquet)"
    raise LtrUserError(
        f"run {run.short_id} ({run.run_name!r}) logged no {missing}: its eval.splits have no {split} split; "
        f"decide on the other split (--split {other})"
    )


def apply_promotion(plan: PromotionPlan, *, force: bool = False) -> Promotion:
    """Point the plan's alias at the run's model; a worse candidate needs ``force``.

    Nothing is done when the alias already points there; an existing version of the run's model
    gets the alias; else a new version is registered (all or nothing, see the module)."""
    if plan.current:
        return Promotion(plan.name, str(plan.existing), plan.alias, plan.run, plan.holder, registered=False, changed=False)
    if plan.worse and not force:
        raise LtrUserError(
            f"run {plan.run.short_id} has {plan.metric} = {plan.value:.6f}, below {plan.name}@{plan.alias} "
            f"(version {plan.holder.version if plan.holder else '?'}: {plan.holder_value:.6f}); not promoted (--force to promote it anyway)"
        )
    read_only = read_only_store(plan.store.uri)
    if read_only is not None:
        raise LtrUserError(
            f"the store {read_only} can only be read: ltr promote registers the model of run {plan.run.short_id} "
            "in its Model Registry; promote in a store you can write"
        )
    client = MlflowClient(tracking_uri=plan.store.uri, registry_uri=plan.store.uri)
    run = plan.run
    fingerprint = run.tags.get(TAG_FINGERPRINT, "")
    # the registry is the tracking store; MLflow resolves a version's models:/m-... source through
    # the process-wide URIs: pointed at the store for the registration only
    with pointed_at(plan.store.uri, registry=True):
        if plan.existing is not None:
            _move_alias(client, plan, plan.existing)
            return Promotion(plan.name, plan.existing, plan.alias, run, plan.holder, registered=False)
        version = _register(client, plan, fingerprint)
    return Promotion(plan.name, str(version.version), plan.alias, run, plan.holder)


def _move_alias(client: MlflowClient, plan: PromotionPlan, version: str) -> None:
    """Point the alias at an existing ``version`` of the run's model."""
    try:
        client.set_registered_model_alias(plan.name, plan.alias, version)
    except MlflowException as exc:
        full = full_device(exc, store=_store_path(plan))
        if full is not None:
            raise DeviceFull(f"{full}; {plan.name}@{plan.alias} still points where it did") from exc
        raise LtrUserError(
            f"cannot point {plan.name}@{plan.alias} at version {version} (run {plan.run.short_id}): {_first_line(exc)}"
        ) from exc


def logged_model_id(model_uri: str) -> str | None:
    """The logged model's id of ``models:/m-<id>`` (what the run's ``ltr.model_uri`` tag holds),
    which an MLflow server needs beside such a source to register it; None for other URIs.

    >>> logged_model_id("models:/m-0a1b"), logged_model_id("runs:/abc/model")
    ('m-0a1b', None)
    """
    rest = model_uri.removeprefix("models:/")
    return rest if rest != model_uri and rest.startswith("m-") and "/" not in rest else None


def _register(client: MlflowClient, plan: PromotionPlan, fingerprint: str) -> Any:
    """Create the registered model if needed, the version, and point the alias at it: all or
    nothing (on any error after a creation, what this call created is deleted again)."""
    run = plan.run
    created_model, version = False, None
    try:
        try:  # create, or find it made (by an earlier promotion, or one running beside this one)
            client.create_registered_model(plan.name, description="Ranking models registered by ltr promote.")
            created_model = True
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        version = client.create_model_version(
            plan.name, plan.model_uri, run_id=run.run_id, model_id=logged_model_id(plan.model_uri),
            tags={
                TAG_RUN: run.run_id, TAG_FINGERPRINT: fingerprint, TAG_METRIC: plan.metric,
                TAG_VALUE: "" if plan.value is None else repr(plan.value),
            },
            description=version_description(plan),
        )
        client.set_registered_model_alias(plan.name, plan.alias, str(version.version))
    except MlflowException as exc:
        left = _undo(client, plan.name, version, created_model)
        full = full_device(exc, store=_store_path(plan))
        if full is not None:  # exit 1: the store had no room
            raise DeviceFull(f"{full}; the model of run {run.short_id} is not registered as {plan.name!r}{left}") from exc
        raise LtrUserError(f"cannot register the model of run {run.short_id} as {plan.name!r}: {_first_line(exc)}{left}") from exc
    except BaseException:  # Ctrl-C, a stop signal, a bug: the registry is left as it was too
        _undo(client, plan.name, version, created_model)
        raise
    return version


def _store_path(plan: PromotionPlan) -> str:
    """The store as a message names it: its sqlite file, else its URI."""
    db = sqlite_db_path(plan.store.uri)
    return str(db) if db is not None else plan.store.uri


def _undo(client: MlflowClient, name: str, version: Any, created_model: bool) -> str:
    """Delete the version this promotion created, and the registered model if this promotion
    created it and no version is left in it (a promotion running beside this one may have added
    its own version since: that one, and the model holding it, stay); "" when done, else what is
    left behind (said at the end of the error line)."""
    what = f"version {version.version}" if version is not None else f"registered model {name!r}"
    try:
        if version is not None:
            client.delete_model_version(name, str(version.version))
        if created_model:
            what = f"registered model {name!r}"
            if not _has_versions(client, name):
                client.delete_registered_model(name)
    except MlflowException as exc:
        return f" (and {what} could not be deleted again: {_first_line(exc)})"
    return ""


def _has_versions(client: MlflowClient, name: str) -> bool:
    """Whether registered model ``name`` holds a version (True when MLflow's search cannot
    quote the name: it has both quote characters; the model is then kept)."""
    if "'" not in name:
        query = f"name='{name}'"
    elif '"' not in name:
        query = f'name="{name}"'
    else:
        return True
    return bool(client.search_model_versions(query, max_results=1))


def version_description(plan: PromotionPlan) -> str:
    """The version's description: a link to the run, the metric, and the run's stratified table
    (its description in the MLflow UI)."""
    run = plan.run
    base = plan.store.uri if plan.store.uri.startswith("http") else ""
    link = ui_url(base, run.experiment_id, run.run_id) if base else f"#{ui_path(run.experiment_id, run.run_id)}"
    value = "n/a" if plan.value is None else f"{plan.value:.6f}"
    table = run.tags.get("mlflow.note.content", "")
    return f"From run [{run.run_name or run.run_id}]({link}) ({run.run_id}); {plan.metric} = {value}.\n\n{table}"
