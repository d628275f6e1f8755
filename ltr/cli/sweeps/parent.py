"""The parent run of a multirun: created at its start, summarised and ended at its end.

:class:`SweepParent` does the work of :class:`ltr.cli.sweeps.callback.MlflowSweepCallback` (see
that module's docstring for what a sweep records); it lives apart because it needs MLflow, the
run's records and pandas, which a single ``ltr train``, its ``--help`` and its config errors
never import.
"""

from __future__ import annotations

import atexit
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ltr.cli.sweeps.callback import (
    PARENT_ID_FILE,
    VARYING_KEYS_FILE,
    SweepEnded,
    job_errors,
    job_outcomes,
    summary_line,
    sweep_exit_code,
    varying_keys,
)
from ltr.cli.sweeps.checks import SweepPlan
from ltr.errors import LtrUserError, ServerFault
from ltr.experiment.record import headline_keys
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.parent_run import (
    children_objective,
    search_space_params,
    study_tags,
    summarise_folds,
    sweep_name,
)
from ltr.sweeper.record import is_ltr_search, record_search
from ltr.sweeper.sweep_tradeoffs import summarise_tradeoffs
from ltr.tracking import RunStatus, make_tracker
from ltr.tracking.gitinfo import source_tags
from ltr.tracking.lifecycle import end_run
from ltr.tracking.liveness.heartbeat import liveness_of
from ltr.tracking.sweep_summary import SweepSummary, child_runs, child_summary

log = logging.getLogger(__name__)


def open_sweep_store(config: DictConfig) -> Any:
    """The tracker of a sweep's parent run, checked once before the first job (the tracking URI
    and the store do not depend on the swept values); a refused one refuses the whole sweep."""
    try:
        return make_tracker(True, config.tracking.uri, config.tracking.experiment, liveness=liveness_of(config.tracking))
    except LtrUserError as exc:
        code = 1 if isinstance(exc, ServerFault) else 2  # a server down is no bad setting
        raise SweepEnded(code, f"ltr: error: the sweep is refused before its first job: {exc}") from None


class SweepParent:
    """Create, summarise and end the parent run of a multirun (see :mod:`ltr.cli.sweeps.callback`)."""

    def __init__(self) -> None:
        self.tracker: Any = None
        self.sweep_dir: Path | None = None
        self.ended = False
        self.objective = ""
        self.spec: ExperimentSpec | None = None
        self.n_planned: int | None = None
        self.name = ""

    def on_multirun_start(self, config: DictConfig, plan: SweepPlan) -> None:
        """Create the parent run of a sweep whose start checks passed (``plan``)."""
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        self.sweep_dir = sweep_dir
        self.spec = plan.spec
        self.n_planned = plan.n_jobs
        self.objective = plan.spec.optimized_metric if plan.spec is not None else ""
        if not config.tracking.enabled:
            return
        self.tracker = open_sweep_store(config)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        overrides = " ".join(config.hydra.overrides.task)
        sweeper = str(config.hydra.sweeper.get("_target_", "basic")).rsplit(".", 1)[-1]
        varying = varying_keys(config)
        self.name = sweep_name(config, varying, plan.spec, plan.n_jobs)
        run_id = self.tracker.start_run(
            self.name,
            {
                "ltr.role": "sweep",
                "ltr.sweep_id": str(sweep_dir),
                "ltr.sweep.overrides": overrides,
                "ltr.sweep.sweeper": sweeper,
            }
            | source_tags("ltr train -m")
            | study_tags(config, plan.spec, sweep_dir),
        )
        if is_ltr_search(config):  # the name says the search; its space is in the params
            self.tracker.log_params(search_space_params(config, varying))
        (sweep_dir / VARYING_KEYS_FILE).write_text("".join(f"{key}\n" for key in varying))
        (sweep_dir / PARENT_ID_FILE).write_text(run_id)
        atexit.register(self._end_if_open)
        log.info("MLflow parent run %s for sweep %s", run_id, sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Summarise the parent run, then end the sweep with its exit code and one line."""
        parent_url = best_url = None
        if self.tracker is not None and not self.ended:
            summary = self._summarise(completed=True)
            parent_url = self.tracker.run_url()
            best_url = self.tracker.run_url(summary.best_run_id) if summary.best_run_id else None
        outcomes = list(job_outcomes(self.sweep_dir).values()) if self.sweep_dir is not None else []
        cv = self.spec is not None and bool(self.spec.config.cv.fold_key)
        line = summary_line(outcomes, parent_url=parent_url, best_url=best_url, cv=cv)
        raise SweepEnded(sweep_exit_code(outcomes), line)

    def _summarise(self, *, completed: bool) -> SweepSummary:
        assert self.sweep_dir is not None
        if not self.objective:  # the base config was refused: the children say what they optimised
            self.objective = children_objective(self.tracker)
        cv = self.spec is not None and bool(self.spec.config.cv.fold_key)
        # a fold is no candidate: a CV sweep has no best run, its result is the fold means
        summary = child_summary(
            self.tracker, self.objective, job_errors(self.sweep_dir), pick_best=not cv,
            job_outcomes=job_outcomes(self.sweep_dir), n_planned=self.n_planned,
        )  # fmt: skip
        if self.spec is not None and not cv:  # pruned and infeasible jobs are never the best (ltr.sweeper.record)
            summary = record_search(self.tracker, self.spec, self.sweep_dir, summary)
        metrics: dict[str, float] = {
            "sweep/n_jobs": summary.n_jobs, "sweep/n_finished": summary.n_finished, "sweep/n_failed": summary.n_failed,
            "sweep/n_refused": summary.n_refused, "sweep/n_killed": summary.n_killed, "sweep/n_not_run": summary.n_not_run,
        }  # fmt: skip
        if summary.best_value is not None:
            metrics[f"sweep/best/{self.objective}"] = summary.best_value
        self.tracker.log_metrics(metrics)
        tags = {"ltr.sweep.best_run_id": summary.best_run_id or ""} if not cv else {}
        assert self.sweep_dir is not None
        optuna_results = self.sweep_dir / "optimization_results.yaml"
        if optuna_results.exists():
            results = OmegaConf.to_container(OmegaConf.load(optuna_results))
            assert isinstance(results, dict)
            best_params = results.get("best_params") or {}
            self.tracker.log_params({f"best.{k}": v for k, v in best_params.items()})
            if results.get("best_value") is not None:
                self.tracker.log_metrics({"sweep/optuna/best_value": float(results["best_value"])})
        self.tracker.set_tags(tags | {"mlflow.note.content": summary.markdown})
        self.tracker.log_text(summary.markdown, "report/sweep.md")
        print(summary.text)
        description = summary.markdown
        finished = child_runs(self.tracker.client, self.tracker.experiment_id, self.tracker.run_id, finished_only=True)
        if self.spec is not None and self.spec.config.cv.fold_key:
            description = summarise_folds(
                self.tracker, self.spec, self.spec.config.cv.fold_key, summary.markdown, finished, n_planned=self.n_planned,
                name=self.name,
            )  # fmt: skip
        elif self.spec is not None and summary.best_run_id is not None:
            best = next((r for r in finished if r.info.run_id == summary.best_run_id), None)
            if best is None:  # a resumed Optuna study's best trial, run by an earlier invocation
                best = self.tracker.client.get_run(summary.best_run_id)
            if best is not None:  # the parent's row shows its best run's headline values
                keys = headline_keys(self.spec, dict(best.data.metrics))
                self.tracker.log_metrics({key: best.data.metrics[key] for key in keys if key in best.data.metrics})
                self.tracker.show_first(keys)
        if self.spec is not None:
            tradeoffs = summarise_tradeoffs(self.tracker, self.spec, finished)
            if tradeoffs:
                self.tracker.set_tags({"mlflow.note.content": f"{tradeoffs}\n\n{description}"})
                self.tracker.log_text(tradeoffs, "report/tradeoffs.md")
                print(tradeoffs)
        if summary.n_killed or summary.n_not_run or not completed:
            status = RunStatus.KILLED
        elif summary.n_failed or summary.n_refused:
            status = RunStatus.FAILED
        else:
            status = RunStatus.FINISHED
        error = "; ".join(summary.failures) if summary.failures else None
        if error is None and status is not RunStatus.FINISHED:
            error = "the sweep was interrupted before all jobs ran"
        end_run(self.tracker, status, error=error)
        self.ended = True
        return summary

    def _end_if_open(self) -> None:
        """At interpreter exit: a sweep that Hydra did not finish (a failed job, Ctrl-C) ends here."""
        if self.tracker is None or self.ended:
            return
        try:
            self._summarise(completed=False)
        except Exception:  # the store may be gone at exit; never leave the run RUNNING silently
            log.exception("could not summarise the sweep's parent run")
            end_run(self.tracker, RunStatus.KILLED, error="sweep ended without a summary")
