"""Multirun sweeps in MLflow: one parent run per sweep, one child run per job.

:class:`MlflowSweepCallback` is a Hydra callback (configured in ``conf/train.yaml``). At the start
of a multirun, in the launching process, it creates the parent run and writes its id to
``<sweep dir>/.ltr_parent_run_id``; every job (in this process or a launcher's worker) reads it
from there and starts its run as a child. At the end the parent gets the best child's value
and, for an Optuna sweep, the best params; it ends FAILED when a job failed, and KILLED when the
sweep is interrupted (an ``atexit`` hook ends it if Hydra never calls back).
"""

from __future__ import annotations

import atexit
import logging
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ltr.tracking import RunStatus, make_tracker

log = logging.getLogger(__name__)

PARENT_ID_FILE = ".ltr_parent_run_id"
OBJECTIVE_KEY = "valid/ndcg_at_10"


def parent_run_id_for(sweep_dir: str | Path) -> str | None:
    """The parent run id a multirun wrote into its sweep dir, or None (no tracking)."""
    path = Path(sweep_dir) / PARENT_ID_FILE
    return path.read_text().strip() or None if path.exists() else None


class MlflowSweepCallback(Callback):
    """Create, summarise and end the parent run of a multirun (see the module docstring)."""

    def __init__(self) -> None:
        self.tracker: Any = None
        self.sweep_dir: Path | None = None
        self.ended = False

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not config.tracking.enabled:
            return
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        self.sweep_dir = sweep_dir
        self.tracker = make_tracker(True, config.tracking.uri, config.tracking.experiment)
        overrides = " ".join(config.hydra.overrides.task)
        sweeper = str(config.hydra.sweeper.get("_target_", "basic")).rsplit(".", 1)[-1]
        run_id = self.tracker.start_run(
            f"sweep {overrides}".strip(),
            {
                "ltr.role": "sweep",
                "ltr.sweep_id": str(sweep_dir),
                "ltr.sweep.overrides": overrides,
                "ltr.sweep.sweeper": sweeper,
            },
        )
        (sweep_dir / PARENT_ID_FILE).write_text(run_id)
        atexit.register(self._end_if_open)
        log.info("MLflow parent run %s for sweep %s", run_id, sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.tracker is None or self.ended:
            return
        self._summarise(completed=True)

    def _summarise(self, *, completed: bool) -> None:
        from ltr.tracking.sweep_summary import child_summary

        summary = child_summary(self.tracker, OBJECTIVE_KEY)
        metrics: dict[str, float] = {"sweep/n_jobs": summary.n_jobs, "sweep/n_failed": summary.n_failed}
        if summary.best_value is not None:
            metrics[f"sweep/best/{OBJECTIVE_KEY}"] = summary.best_value
        self.tracker.log_metrics(metrics)
        tags = {"ltr.sweep.best_run_id": summary.best_run_id or ""}
        assert self.sweep_dir is not None
        optuna_results = self.sweep_dir / "optimization_results.yaml"
        if optuna_results.exists():
            results = OmegaConf.to_container(OmegaConf.load(optuna_results))
            assert isinstance(results, dict)
            best_params = results.get("best_params") or {}
            self.tracker.log_params({f"best.{k}": v for k, v in best_params.items()})
            if results.get("best_value") is not None:
                self.tracker.log_metrics({"sweep/optuna/best_value": float(results["best_value"])})
        self.tracker.set_tags(tags)
        self.tracker.log_text(summary.markdown, "report/sweep.md")
        print(summary.text)
        if summary.n_killed or not completed:
            status = RunStatus.KILLED
        elif summary.n_failed:
            status = RunStatus.FAILED
        else:
            status = RunStatus.FINISHED
        error = "; ".join(summary.failures) if summary.failures else None
        if error is None and status is not RunStatus.FINISHED:
            error = "the sweep was interrupted before all jobs ran"
        self.tracker.end_run(status, error=error)
        self.ended = True
        if completed and summary.failures:
            print(f"ltr: {len(summary.failures)} of {summary.n_jobs} jobs failed (see above)", file=sys.stderr)
            sys.exit(1)

    def _end_if_open(self) -> None:
        """At interpreter exit: a sweep that Hydra did not finish (a failed job, Ctrl-C) ends here."""
        if self.tracker is None or self.ended:
            return
        try:
            self._summarise(completed=False)
        except Exception:  # the store may be gone at exit; never leave the run RUNNING silently
            log.exception("could not summarise the sweep's parent run")
            self.tracker.end_run(RunStatus.KILLED, error="sweep ended without a summary")
