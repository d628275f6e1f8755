"""Register a run's model in the MLflow Model Registry under an alias, never a worse one unasked.

:func:`plan_promotion` resolves what to promote (a run; a sweep: its best child, as the sweep's
parent names it in ``ltr.sweep.best_run_id``) and, when the alias already points to a model
evaluated on the same data (the ``ltr.data.fingerprint`` tags agree), compares the two runs per
query and per stratum (``ltr compare``) on ``split``. :func:`apply_promotion` then refuses a
candidate whose value of the sweep's metric on ``split`` is below the current holder's, unless
forced, and registers it: the version's description is the run's stratified table and a link to
the run; its tags carry the run id, the data fingerprint, the metric and its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ltr.compare.loading import LoadedComparison, load_comparison
from ltr.errors import LtrUserError
from ltr.models.logged import require_finished
from ltr.tracking import find_tracking_uri
from ltr.tracking.mlflow_uris import pointed_at
from ltr.tracking.runs import RunRecord, RunStore
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

    @property
    def worse(self) -> bool:
        """True when the candidate's value is below the current holder's on the same data."""
        return self.value is not None and self.holder_value is not None and self.value < self.holder_value


@dataclass(frozen=True)
class Promotion:
    """A registered version: ``models:/{name}@{alias}`` now points to it."""

    name: str
    version: str
    alias: str
    run: RunRecord
    replaced: Holder | None


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


def plan_promotion(
    ref: str,
    *,
    name: str,
    alias: str = "champion",
    split: str = "test",
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    n_resamples: int = 10_000,
) -> PromotionPlan:
    """Resolve ``ref`` (a run or a sweep parent) and compare it with the alias's holder."""
    if not name.strip():
        raise LtrUserError("--name is empty: give the registered model's name")
    if not alias.strip() or alias.strip().isdigit() or alias.lower() == "latest":
        raise LtrUserError(f"--alias {alias!r} is not a usable alias (not empty, not a number, not 'latest')")
    store = RunStore(find_tracking_uri(tracking_uri))
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
    if holder is not None and holder.run_id == run.run_id:
        raise LtrUserError(f"{name}@{alias} is already version {holder.version}, the model of run {run.short_id}")
    if holder is not None:
        if holder.fingerprint and holder.fingerprint == run.tags.get(TAG_FINGERPRINT) and holder.run_id:
            holder_record = store.resolve(holder.run_id, experiment=experiment)
            holder_value = store.metrics(holder_record).get(metric)
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
    return PromotionPlan(store, run, name, alias, model_uri, metric, value, holder, holder_value, comparison, tuple(notes))


def apply_promotion(plan: PromotionPlan, *, force: bool = False) -> Promotion:
    """Register the plan's model and point the alias at it; a worse candidate needs ``force``."""
    if plan.worse and not force:
        raise LtrUserError(
            f"run {plan.run.short_id} has {plan.metric} = {plan.value:.6f}, below {plan.name}@{plan.alias} "
            f"(version {plan.holder.version if plan.holder else '?'}: {plan.holder_value:.6f}); not promoted (--force to promote it anyway)"
        )
    client = MlflowClient(tracking_uri=plan.store.uri, registry_uri=plan.store.uri)
    run = plan.run
    fingerprint = run.tags.get(TAG_FINGERPRINT, "")
    # the registry is the tracking store; MLflow resolves a version's models:/m-... source through
    # the process-wide URIs: pointed at the store for the registration only
    with pointed_at(plan.store.uri, registry=True):
        version = _register(client, plan, fingerprint)
    return Promotion(plan.name, str(version.version), plan.alias, run, plan.holder)


def _register(client: MlflowClient, plan: PromotionPlan, fingerprint: str) -> Any:
    """Create the registered model if needed, the version, and point the alias at it."""
    run = plan.run
    try:
        try:
            client.get_registered_model(plan.name)
        except MlflowException:
            client.create_registered_model(plan.name, description="Ranking models registered by ltr promote.")
        version = client.create_model_version(
            plan.name, plan.model_uri, run_id=run.run_id,
            tags={
                TAG_RUN: run.run_id, TAG_FINGERPRINT: fingerprint, TAG_METRIC: plan.metric,
                TAG_VALUE: "" if plan.value is None else repr(plan.value),
            },
            description=version_description(plan),
        )
        client.set_registered_model_alias(plan.name, plan.alias, str(version.version))
    except MlflowException as exc:
        raise LtrUserError(f"cannot register the model of run {run.short_id} as {plan.name!r}: {str(exc.message).splitlines()[0]}") from exc
    return version


def version_description(plan: PromotionPlan) -> str:
    """The version's description: a link to the run, the metric, and the run's stratified table
    (its description in the MLflow UI)."""
    run = plan.run
    base = plan.store.uri if plan.store.uri.startswith("http") else ""
    link = ui_url(base, run.experiment_id, run.run_id) if base else f"#{ui_path(run.experiment_id, run.run_id)}"
    value = "n/a" if plan.value is None else f"{plan.value:.6f}"
    table = run.tags.get("mlflow.note.content", "")
    return f"From run [{run.run_name or run.run_id}]({link}) ({run.run_id}); {plan.metric} = {value}.\n\n{table}"
