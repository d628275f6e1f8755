"""``run(cfg)``: spec -> data -> trainer -> per-query tables -> evaluation -> record.

1. :func:`ltr.experiment.checks.check_config` turns the composed config into a typed, checked
   :class:`ExperimentSpec` (one-line `LtrUserError` naming the config key otherwise).
2. The tracking URI is checked (an unreachable server, a bad scheme fail here, in seconds).
   With tracking on, MLflow's logging code starts loading in a background thread
   (:class:`ltr.tracking.prepare.Preparation`: imports only, nothing written); the run waits for
   it before recording, and :func:`run` never returns before it has ended. A child process
   (:class:`ltr.experiment.figures.figure_worker.FigureWorker`) loads matplotlib meanwhile and, at the
   end, draws the run's figures while the run logs the rest; it never outlives :func:`run`.
3. :func:`ltr.experiment.sources.open_source` reads and validates the data;
   :func:`ltr.experiment.checks.check_data` applies the rules that need it; then the tracker
   opens (and creates) the store. Nothing so far has started a run: bad input never leaves a
   run behind.
4. Inside :func:`ltr.tracking.lifecycle.tracked_run` (FINISHED, FAILED or KILLED, always): the
   source trains the trainer ``trainer.kind`` names and scores the evaluated splits, the scores
   are evaluated, and everything is recorded.

Hydra only composes the config (:mod:`ltr.cli.train`); everything here takes a composed config.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
from omegaconf import DictConfig

from ltr.config.choices import TrainerKind
from ltr.config.groups.backends import backend_of
from ltr.dask.trainer import DaskTrainer
from ltr.data.cache import wait_for_stores
from ltr.experiment.checks import check_config, check_data
from ltr.experiment.evaluation import evaluate
from ltr.experiment.figures.figure_worker import FigureWorker, start_worker
from ltr.experiment.record import record_results, record_start, run_name, run_tags, summary_markdown
from ltr.experiment.report import print_table
from ltr.experiment.sources import binned_store, open_source, part_tags
from ltr.experiment.spec import ExperimentSpec
from ltr.tracking import Tracker, check_tracking_uri, open_tracker
from ltr.tracking.lifecycle import tracked_run
from ltr.tracking.liveness.heartbeat import liveness_of
from ltr.tracking.prepare import Preparation
from ltr.training.backends import local_trainer, reranks
from ltr.training.config_rules import trains_with
from ltr.training.trainer import Trainer

log = logging.getLogger(__name__)

#: The trainer of each ``trainer.kind``.
TRAINERS: dict[TrainerKind, Callable[[ExperimentSpec], Trainer]] = {
    TrainerKind.local: lambda spec: local_trainer(spec, binned_store(spec.config.data)),
    TrainerKind.dask: lambda spec: dask_trainer(spec),
}


def dask_trainer(spec: ExperimentSpec) -> Trainer:
    """The trainer of ``trainer=dask``, by backend: LightGBM's data-parallel :class:`DaskTrainer`,
    XGBoost's ``xgboost.dask`` trainer; CatBoost has no Dask training and trains in this process
    (:func:`ltr.training.config_rules.trains_with`; the config check has said so in one line)."""
    config = spec.config
    if trains_with(config) == TrainerKind.local:
        trainer: Trainer = local_trainer(spec, binned_store(config.data))
        return trainer
    if backend_of(config.model) == "xgboost":
        from ltr.dask.xgboost_train import XGBoostDaskTrainer

        return XGBoostDaskTrainer(config.model, config.fit, spec.conventions, spec.table_ks, reranks(spec), cluster=config.trainer)
    return DaskTrainer(config.model, config.fit, config.trainer, spec.conventions)


@dataclass
class RunOutcome:
    """What one job produced: summaries per split (keys without the split prefix), the flat
    metrics, the run id (None without tracking) and the value a sweeper maximises."""

    summaries: dict[str, dict[str, float]]
    tables: dict[str, pd.DataFrame]
    metrics: dict[str, float]
    run_id: str | None
    best_iteration: int
    objective_value: float
    timings: dict[str, float] = field(default_factory=dict)
    run_url: str | None = None  # the run's page in the MLflow UI


def run(
    cfg: DictConfig,
    *,
    spec: ExperimentSpec | None = None,
    overrides: Sequence[str] = (),
    tracker: Tracker | None = None,
    parent_run_id: str | None = None,
    extra_tags: dict[str, str] | None = None,
    varying: Sequence[str] | None = None,
    on_run_start: Callable[[str | None], None] | None = None,
    print_summary: bool = True,
) -> RunOutcome:
    """Run one experiment described by a composed ``ltr train`` config (see the module docstring).

    ``spec``: ``check_config(cfg)`` when the caller has checked it already (``ltr train``
    checks before it imports this module), else it is checked here.
    ``varying``: the config keys a sweep varies (a job's name is its values of those keys).
    ``on_run_start``: called with the run id (None without tracking) once every check has
    passed and the run has started (an error before it is a refusal: no run exists).
    ``print_summary``: print the summary table to stdout (the CLI's; the Python API's is quiet).
    Returns the summaries and ``metrics[spec.optimized_metric]`` as the objective value.
    """
    t0 = time.perf_counter()
    spec = check_config(cfg) if spec is None else spec
    trainer = TRAINERS[spec.config.trainer.kind](spec)
    tracking = spec.config.tracking
    # an unreachable server or a bad URI fails here, before the data; the store opens after it
    checked_uri = check_tracking_uri(tracking.uri) if tracker is None and tracking.enabled else None
    # MLflow's logging code loads in a thread while the data loads and the model trains
    preparation = Preparation() if tracking.enabled else None
    logs_figures = tracking.enabled and (tracker is None or tracker.enabled)
    figure_worker = start_worker() if logs_figures else None  # matplotlib loads in the child
    try:
        return _run(spec, trainer, checked_uri, preparation, figure_worker, t0, overrides=overrides, tracker=tracker,
                    parent_run_id=parent_run_id, extra_tags=extra_tags, varying=varying,
                    on_run_start=on_run_start, print_summary=print_summary)  # fmt: skip
    finally:  # nothing the run starts outlives it
        if figure_worker is not None:
            figure_worker.close()
        if preparation is not None:
            preparation.wait()
        wait_for_stores()  # the data's cache entries, written while the run trained


def _run(
    spec: ExperimentSpec,
    trainer: Trainer,
    checked_uri: str | None,
    preparation: Preparation | None,
    figure_worker: FigureWorker | None,
    t0: float,
    *,
    overrides: Sequence[str],
    tracker: Tracker | None,
    parent_run_id: str | None,
    extra_tags: dict[str, str] | None,
    varying: Sequence[str] | None,
    on_run_start: Callable[[str | None], None] | None,
    print_summary: bool,
) -> RunOutcome:
    """:func:`run` once the config and the tracking URI are checked."""
    tracking = spec.config.tracking
    source = open_source(spec)
    train_info = source.fingerprint.get("train")  # partitions: the width from the files' footers
    check_data(spec, source.training, n_features=train_info.get("n_features") if isinstance(train_info, dict) else None)
    timings = {"load": time.perf_counter() - t0}
    if tracker is None:
        tracker = open_tracker(checked_uri, tracking.experiment, liveness=liveness_of(tracking))

    tags = run_tags(spec, str(source.fingerprint["sha256"]), overrides) | part_tags(source, spec) | (extra_tags or {})
    name = run_name(spec, overrides, varying, job=(extra_tags or {}).get("ltr.job_num"))
    with tracked_run(tracker, name, tags, parent_run_id=parent_run_id) as run_id:
        if on_run_start is not None:
            on_run_start(run_id)
        t = time.perf_counter()
        record_start(tracker, spec, overrides)
        source.log_inputs(tracker)
        timings["log_start"] = time.perf_counter() - t

        scored = source.train_and_score(trainer, spec)
        timings |= scored.timings
        t = time.perf_counter()
        evaluation = evaluate(spec, scored)
        timings["evaluate"] = time.perf_counter() - t

        if preparation is not None:
            t = time.perf_counter()
            preparation.wait()
            timings["wait_mlflow_load"] = time.perf_counter() - t
        t = time.perf_counter()
        title, summary_md, header, rows = summary_markdown(
            spec, evaluation, scored.result, scored.propensity, scored.label_sources
        )
        record_results(tracker, spec, evaluation, scored, source.fingerprint, summary_md, name, figure_worker)
        timings["log"] = time.perf_counter() - t
    if print_summary:
        print_table(header, rows, title=title)
    for note in evaluation.gap_notes:
        log.info(note)
    for line in evaluation.advice:
        log.warning(line)
    timings["total"] = time.perf_counter() - t0
    log.info("time: %s", ", ".join(f"{key} {seconds:.2f} s" for key, seconds in timings.items()))
    return RunOutcome(
        evaluation.summaries,
        evaluation.tables,
        evaluation.metrics,
        run_id,
        scored.result.best_iteration,
        evaluation.metrics.get(spec.optimized_metric, float("nan")),
        timings,
        tracker.run_url() if run_id else None,
    )
