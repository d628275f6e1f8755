"""What a sweep's parent run records of its search and guardrails (grids and searches alike).

Called by the sweep callback (:mod:`ltr.cli.sweeps.callback`):

- :func:`check_sweep` at the start, before the parent run exists: the Optuna search's settings
  (``hydra.sweeper.n_trials`` >= 1, a storage URL, a readable search space), a stored study
  built on another config (:mod:`ltr.sweeper.study_config`) and the named baseline run of
  ``sweep.constraints``, each refused with one line.
- :func:`record_search` at the end, on the parent (``tracker``'s current run):

  * an Optuna search: params ``optuna.study_name`` and ``optuna.storage`` (its password hidden; the sweep's journal
    file when no storage was given), metrics ``sweep/optuna/n_trials`` (the study's, all
    invocations), ``sweep/optuna/n_pruned`` and ``sweep/optuna/n_rounds_reported`` (boosting
    rounds the jobs reported to their trials); each child gets the tags ``ltr.optuna.trial``,
    ``ltr.optuna.state`` (``COMPLETE`` / ``PRUNED`` / ``FAIL``) and, when pruned,
    ``ltr.pruned_at_round``. A pruned job's run is FINISHED (its model is the best round
    before the pruner stopped it, as with early stopping), never FAILED.
  * ``sweep.constraints``: each finished child gets ``ltr.feasible`` (``true`` / ``false``) and,
    when infeasible, ``ltr.failed_constraints`` (the constraints it failed, ``; ``-separated);
    the parent gets ``sweep/n_feasible``.
  * the sweep's best is the best *eligible* child: FINISHED, not pruned, meeting every
    constraint, best on the first ``optimized_metric`` key in its direction. It replaces the
    unconstrained best of the summary: the parent's tag ``ltr.sweep.best_run_id`` (empty when no
    job is eligible) and metric ``sweep/best/<key>``; ``ltr.sweep.best_feasible`` says
    ``true`` / ``false``.
  * an Optuna search of one objective holds its *study's* best trial, of all invocations
    (``ltr.sweep.best_of=study``): a resumed study whose best trial an earlier invocation ran
    names that trial's run (another sweep's child, found through the trial's ``ltr.run_id``) as
    the parent's best, what ``ltr promote PARENT`` registers; the parent's line and description
    say so, and give this invocation's own best next to it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ltr.config.groups.sweeper import SWEEPER_TARGET
from ltr.experiment.guardrails import Constraint, failed_constraints, parse_constraints
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.baseline import baseline_metrics
from ltr.sweeper.link import JOURNAL_FILE, RESULTS_FILE, TRIALS_FILE
from ltr.tracking.store import redact_uri
from ltr.tracking.sweep_summary import SweepSummary, child_runs, run_link

log = logging.getLogger(__name__)


def is_ltr_search(config: DictConfig) -> bool:
    """True when the sweep runs ltr's Optuna sweeper."""
    return str(config.hydra.sweeper.get("_target_", "")) == SWEEPER_TARGET


def check_sweep(config: DictConfig, spec: ExperimentSpec | None) -> None:
    """Refuse a bad search setting or baseline run before the parent run exists (``spec``: the
    sweep's base config, None when only the swept values make it valid)."""
    if is_ltr_search(config):
        from ltr.sweeper.search import (  # imports Optuna: searches only
            check_resumed_study,
            check_settings,
        )

        check_settings(config.hydra.sweeper)
        if spec is not None:  # a resumed study built on another config (ltr.sweeper.study_config)
            check_resumed_study(config.hydra.sweeper, list(config.hydra.overrides.task), spec)
    if spec is not None and spec.config.sweep.baseline is not None:
        baseline_metrics(spec)


def _job(run: Any) -> str:
    return str(run.data.tags.get("ltr.job_num", "?"))


def _tag_trials(tracker: Any, sweep_dir: Path, runs: dict[str, Any]) -> set[str]:
    """Tag each child with its trial; log the study on the parent; returns the pruned jobs."""
    trials = json.loads((sweep_dir / TRIALS_FILE).read_text())
    results = _results(sweep_dir)
    storage = redact_uri(str(results["storage"])) if results.get("storage") else str(sweep_dir / JOURNAL_FILE)
    tracker.log_params({"optuna.study_name": str(results.get("study_name", "")), "optuna.storage": storage})
    pruned = {job for job, t in trials.items() if t["state"] == "PRUNED"}
    tracker.log_metrics({
        "sweep/optuna/n_trials": float(results.get("n_trials", len(trials))),
        "sweep/optuna/n_pruned": float(len(pruned)),
        "sweep/optuna/n_rounds_reported": float(sum(t.get("rounds_reported", 0) for t in trials.values())),
    })  # fmt: skip
    for job, trial in trials.items():
        run = runs.get(job)
        if run is None:
            continue
        tags = {"ltr.optuna.trial": str(trial["trial"]), "ltr.optuna.state": trial["state"]}
        if trial.get("pruned_at_round") is not None:
            tags["ltr.pruned_at_round"] = str(trial["pruned_at_round"])
        for key, value in tags.items():
            tracker.client.set_tag(run.info.run_id, key, value)
    return pruned


def _results(sweep_dir: Path) -> dict[str, Any]:
    """What the search wrote into ``optimization_results.yaml`` ({} when there is none)."""
    path = sweep_dir / RESULTS_FILE
    if not path.exists():
        return {}
    loaded = OmegaConf.to_container(OmegaConf.load(path))
    assert isinstance(loaded, dict)
    return {str(k): v for k, v in loaded.items()}


def _study_best(tracker: Any, spec: ExperimentSpec, sweep_dir: Path, children: list[Any], summary: SweepSummary) -> SweepSummary:
    """An Optuna search of one objective holds its *study's* best trial, of all invocations: when
    a resumed study's best trial ran in an earlier invocation (its run is another sweep's child),
    ``summary``'s best becomes that run, and its text and description say so next to this
    invocation's own best. The parent is tagged ``ltr.sweep.best_of=study``. ``summary`` as it is
    for other sweeps, and when the study's best is one of this sweep's jobs."""
    results = _results(sweep_dir)
    if not results or len(spec.objectives) != 1:  # not an Optuna search, or one of several objectives
        return summary
    tracker.set_tags({"ltr.sweep.best_of": "study"})
    run_id, trial = results.get("best_run_id"), results.get("best_trial")
    if trial is None or not run_id or any(r.info.run_id == run_id for r in children):
        return summary  # no best trial, one that predates ltr.run_id on trials, or one of this sweep's
    from mlflow.exceptions import MlflowException

    try:
        best = tracker.client.get_run(str(run_id))
    except MlflowException:
        log.warning("the study's best trial %s ran as run %s, which is not in this store: the sweep's best is its own", trial, run_id)
        return summary
    value = best.data.metrics.get(spec.optimized_metric)
    if best.info.status != "FINISHED" or value is None:
        return summary
    own = (
        f"this invocation's best: {spec.optimized_metric} = {summary.best_value:.4f}" if summary.best_value is not None
        else "this invocation has no best job"
    )  # fmt: skip
    study = results.get("study_name", "")
    line = (
        f"sweep: the study's best trial {trial} (Optuna study {study!r}, all invocations) is run {best.info.run_id[:8]} "
        f"({best.info.run_name}) of an earlier invocation: {spec.optimized_metric} = {value:.4f}; {own}"
    )
    link = run_link(best.info.run_name or best.info.run_id, best.info.experiment_id, best.info.run_id)
    markdown = (
        f"**Best of the study** (Optuna study `{study}`, all its invocations; what this parent holds and `ltr promote` "
        f"registers): {link} (trial {trial}, run by an earlier invocation), {spec.optimized_metric} = {value:.4f}; "
        f"{own}."
    )
    return dataclasses.replace(
        summary, best_run_id=best.info.run_id, best_value=value, text=f"{summary.text}\n{line}", markdown=f"{markdown}\n\n{summary.markdown}"
    )


def _baseline(spec: ExperimentSpec, constraints: tuple[Constraint, ...], runs: dict[str, Any]) -> dict[str, float] | None:
    if not any(c.needs_baseline for c in constraints):
        return None
    if spec.config.sweep.baseline is not None:
        return baseline_metrics(spec)
    first = runs.get("0")
    return dict(first.data.metrics) if first is not None else None


def record_search(tracker: Any, spec: ExperimentSpec, sweep_dir: Path, summary: SweepSummary) -> SweepSummary:
    """Record the search and the guardrails on the parent (see the module docstring); returns
    ``summary`` with the sweep's best replaced by the best eligible child (unchanged when the
    sweep has no trials file, no constraints and maximises)."""
    children = child_runs(tracker.client, tracker.experiment_id, tracker.run_id)
    runs = {_job(r): r for r in children}
    pruned = _tag_trials(tracker, sweep_dir, runs) if (sweep_dir / TRIALS_FILE).exists() else set()
    constraints = parse_constraints(list(spec.config.sweep.constraints))
    if not pruned and not constraints and spec.directions[0] == "maximize":
        return _study_best(tracker, spec, sweep_dir, children, summary)
    baseline = _baseline(spec, constraints, runs)
    finished = [r for r in runs.values() if r.info.status == "FINISHED"]
    feasible = []
    for run in finished:
        failed = failed_constraints(constraints, run.data.metrics, baseline)
        if constraints:
            tags = {"ltr.feasible": "false" if failed else "true"}
            if failed:
                tags["ltr.failed_constraints"] = "; ".join(c.text for c in failed)
            for key, value in tags.items():
                tracker.client.set_tag(run.info.run_id, key, value)
        if not failed and _job(run) not in pruned and not math.isnan(run.data.metrics.get(spec.optimized_metric, math.nan)):
            feasible.append(run)
    sign = 1.0 if spec.directions[0] == "maximize" else -1.0
    best = max(feasible, key=lambda r: sign * r.data.metrics[spec.optimized_metric], default=None)
    if constraints:
        tracker.log_metrics({"sweep/n_feasible": float(len(feasible))})
    line = _best_line(spec, constraints, finished, feasible, best, baseline)
    tracker.set_tags({"ltr.sweep.best_feasible": "true" if best is not None else "false"})
    best_md = (
        f"**Best feasible run**: {run_link(best.info.run_name or best.info.run_id, tracker.experiment_id, best.info.run_id)} "
        f"(job {_job(best)}), {spec.optimized_metric} = {best.data.metrics[spec.optimized_metric]:.4f}."
        if best is not None else f"**{line}**"
    )  # fmt: skip
    eligible = dataclasses.replace(
        summary,
        best_run_id=None if best is None else best.info.run_id,
        best_value=None if best is None else best.data.metrics[spec.optimized_metric],
        text=f"{summary.text}\n{line}",
        markdown=f"{best_md}\n\n{summary.markdown}",
    )
    return _study_best(tracker, spec, sweep_dir, children, eligible)


def _best_line(
    spec: ExperimentSpec, constraints: tuple[Constraint, ...], finished: list[Any], feasible: list[Any],
    best: Any, baseline: dict[str, float] | None,
) -> str:  # fmt: skip
    """One line: the best eligible job, or why there is none."""
    if best is None and constraints:
        counts = ", ".join(
            f"{c.text}: {sum(c.met(r.data.metrics, baseline) for r in finished)} of {len(finished)}" for c in constraints
        )
        return f"sweep: no job meets the constraints ({counts}); the sweep has no best run"
    if best is None:
        return "sweep: no job finished unpruned; the sweep has no best run"
    what = f"{len(feasible)} of {len(finished)} finished jobs meet the constraints" if constraints else "unpruned jobs only"
    value = best.data.metrics[spec.optimized_metric]
    return f"sweep: best feasible job {_job(best)} ({best.info.run_name}): {spec.optimized_metric} = {value:.4f} ({what})"
