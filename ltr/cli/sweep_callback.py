"""Multirun sweeps in MLflow: one parent run per sweep, one child run per job.

:class:`MlflowSweepCallback` is a Hydra callback (configured in ``ltr/conf/train.yaml``). At the start
of a multirun, in the launching process, it creates the parent run and writes its id to
``<sweep dir>/.ltr_parent_run_id``; every job (in this process or a launcher's worker) reads it
from there and starts its run as a child. Each sweep has its own folder (``ltr/conf/train.yaml``:
``multirun/<date>/<time>-<random suffix>``), so two sweeps started in the same second never share
a parent. The config is checked (:func:`ltr.experiment.checks.check_config`) before the parent
run exists. At the end the parent gets the best child's value of ``optimized_metric`` and, for an
Optuna sweep, the best params; it ends FAILED when a job failed, and KILLED when the sweep is
interrupted (an ``atexit`` hook ends it if Hydra never calls back).
"""

from __future__ import annotations

import atexit
import copy
import logging
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.cv import cv_metrics, cv_table
from ltr.experiment.record import override_key, short_overrides, shown_overrides
from ltr.experiment.spec import ExperimentSpec
from ltr.experiment.sweep_tradeoffs import summarise_tradeoffs
from ltr.sweeper.record import check_sweep, record_search
from ltr.tracking import RunStatus, make_tracker
from ltr.tracking.gitinfo import source_tags
from ltr.tracking.lifecycle import end_run
from ltr.tracking.sweep_summary import SweepSummary, child_runs, child_summary

log = logging.getLogger(__name__)

PARENT_ID_FILE = ".ltr_parent_run_id"
#: In the sweep's folder: the config keys the sweep varies, one per line (the jobs' run names).
VARYING_KEYS_FILE = ".ltr_varying_keys"
#: In a job's folder: why the job failed (a job whose config is refused has no run to say so).
JOB_ERROR_FILE = ".ltr_job_error"
#: In a job's folder: how the job ended, one of :data:`OUTCOMES`.
JOB_OUTCOME_FILE = ".ltr_job_outcome"
#: A job's outcomes: it ran to the end; it failed (its run, if it has one, is FAILED); its input was
#: refused (an `LtrUserError`) before its run existed.
OUTCOMES = ("finished", "failed", "refused")


class SweepRefused(BaseException):
    """A sweep setting refused before the parent run exists (:func:`ltr.sweeper.record.check_sweep`),
    carried past Hydra (which turns a callback's ``Exception`` into a warning) to
    :func:`ltr.cli.train.main`, which re-raises the `LtrUserError` itself."""

    def __init__(self, error: LtrUserError) -> None:
        super().__init__(str(error))
        self.error = error


def parent_run_id_for(sweep_dir: str | Path) -> str | None:
    """The parent run id a multirun wrote into its sweep dir, or None (no tracking)."""
    path = Path(sweep_dir) / PARENT_ID_FILE
    return path.read_text().strip() or None if path.exists() else None


def varying_keys(config: DictConfig) -> list[str]:
    """The config keys a multirun varies: those of its sweep overrides (``model.num_leaves=7,15``,
    ``choice(...)``, ``range(...)``, ...) and of ``hydra.sweeper.params`` (Optuna's search space,
    an experiment's sweep)."""
    parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
    keys = [o.key_or_group for o in parsed if o.is_sweep_override()]
    params = config.hydra.sweeper.get("params") or {}
    keys += [str(k) for k in params if str(k) not in keys]
    return keys


def sweep_name(config: DictConfig, varying: list[str]) -> str:
    """A sweep's parent run name: what it varies first (``num_leaves=7,15``, the
    ``hydra.sweeper.params`` as ``key=values``; ``varying``: :func:`varying_keys`), then its other
    shown overrides, shortened as job names are; the MLflow UI cuts names short, so the part
    that tells sweeps apart leads."""
    shown = shown_overrides(config.hydra.overrides.task)
    varied = [o for o in shown if override_key(o) in set(varying)]
    params = config.hydra.sweeper.get("params") or {}
    searched = [f"{key}={value}" for key, value in params.items() if not any(o.startswith(f"{key}=") for o in varied)]
    rest = [o for o in shown if o not in varied]
    return " ".join(short_overrides([*varied, *searched, *rest])) or "sweep"


def varying_keys_for(sweep_dir: str | Path) -> list[str] | None:
    """The keys :func:`varying_keys` wrote for a multirun, or None (no tracking)."""
    path = Path(sweep_dir) / VARYING_KEYS_FILE
    return path.read_text().split() if path.exists() else None


def record_job_error(job_dir: str | Path, error: str) -> None:
    """Leave ``error`` in the job's folder for the sweep's summary (one line)."""
    path = Path(job_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / JOB_ERROR_FILE).write_text(" ".join(error.split()))


def job_errors(sweep_dir: str | Path) -> dict[str, str]:
    """Job number -> the error a failed job of the sweep recorded (see `record_job_error`)."""
    return {
        path.parent.name: path.read_text().strip()
        for path in sorted(Path(sweep_dir).glob(f"*/{JOB_ERROR_FILE}"))
    }


def record_job_outcome(job_dir: str | Path, outcome: str) -> None:
    """Leave the job's outcome (one of :data:`OUTCOMES`) in its folder for the sweep's exit code."""
    assert outcome in OUTCOMES, outcome
    path = Path(job_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / JOB_OUTCOME_FILE).write_text(outcome)


def job_outcomes(sweep_dir: str | Path) -> dict[str, str]:
    """Job number -> outcome of every job of the sweep that recorded one."""
    return {path.parent.name: path.read_text().strip() for path in sorted(Path(sweep_dir).glob(f"*/{JOB_OUTCOME_FILE}"))}


def sweep_exit_code(outcomes: list[str]) -> int:
    """The sweep's exit code: 0 every job finished (or there was none), 2 every job was refused
    before a run, 1 otherwise (a job failed, or some were refused while others ran)."""
    if all(o == "finished" for o in outcomes):
        return 0
    if all(o == "refused" for o in outcomes):
        return 2
    return 1


def summary_line(outcomes: list[str], *, parent_url: str | None = None, best_url: str | None = None) -> str:
    """The one line a sweep ends with: its jobs by outcome, the parent's and the best run's links.

    >>> summary_line(["finished", "refused"], parent_url="http://p")
    'ltr: sweep of 2 jobs: 1 finished, 0 failed, 1 refused; parent run http://p; no job finished'
    """
    counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES)
    line = f"ltr: sweep of {len(outcomes)} job{'s' * (len(outcomes) != 1)}: {counts}"
    if parent_url:
        line += f"; parent run {parent_url}"
        line += f"; best run {best_url}" if best_url else "; no job finished"
    return line


class SweepEnded(BaseException):
    """The end of a sweep (or its refusal before the first job): ``code`` and the one ``line`` to
    print. A ``BaseException``, so Hydra's callback wrapper passes it through to ``ltr train``."""

    def __init__(self, code: int, line: str) -> None:
        super().__init__(line)
        self.code = code
        self.line = line


def sweep_tags(sweep_dir: str | Path) -> dict[str, str]:
    """The tag every run of one sweep shares (the parent too): its folder, which is unique."""
    return {"ltr.sweep_id": str(Path(sweep_dir).resolve())}


def job_spec(config: DictConfig) -> ExperimentSpec:
    """The checked spec of a sweep's base config (Hydra's ``hydra`` node left out)."""
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return check_config(task)


def open_sweep_store(config: DictConfig) -> Any:
    """The tracker of a sweep's parent run, checked once before the first job (the tracking URI
    and the store do not depend on the swept values); a refused one refuses the whole sweep."""
    try:
        return make_tracker(True, config.tracking.uri, config.tracking.experiment)
    except LtrUserError as exc:
        raise SweepEnded(2, f"ltr: error: the sweep is refused before its first job: {exc}") from None


def children_objective(tracker: Any) -> str:
    """The ``optimized_metric`` param of the current run's first child that logged one, or ""."""
    for run in child_runs(tracker.client, tracker.experiment_id, tracker.run_id):
        if run.data.params.get("optimized_metric"):
            return str(run.data.params["optimized_metric"])
    return ""


class MlflowSweepCallback(Callback):
    """Create, summarise and end the parent run of a multirun (see the module docstring)."""

    def __init__(self) -> None:
        self.tracker: Any = None
        self.sweep_dir: Path | None = None
        self.ended = False
        self.objective = ""
        self.spec: ExperimentSpec | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        self.sweep_dir = sweep_dir
        try:
            self.spec = job_spec(config)
            self.objective = self.spec.optimized_metric
        except LtrUserError as exc:  # the swept values may mend it: each job is checked with its own
            log.info("the sweep's base config is refused (%s); each job is checked with its own values", exc)
        try:
            check_sweep(config, self.spec)
        except LtrUserError as exc:
            raise SweepRefused(exc) from exc
        if not config.tracking.enabled:
            return
        self.tracker = open_sweep_store(config)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        overrides = " ".join(config.hydra.overrides.task)
        sweeper = str(config.hydra.sweeper.get("_target_", "basic")).rsplit(".", 1)[-1]
        varying = varying_keys(config)
        run_id = self.tracker.start_run(
            sweep_name(config, varying),
            {
                "ltr.role": "sweep",
                "ltr.sweep_id": str(sweep_dir),
                "ltr.sweep.overrides": overrides,
                "ltr.sweep.sweeper": sweeper,
            }
            | source_tags("ltr train -m"),
        )
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
        raise SweepEnded(sweep_exit_code(outcomes), summary_line(outcomes, parent_url=parent_url, best_url=best_url))

    def _summarise(self, *, completed: bool) -> SweepSummary:
        assert self.sweep_dir is not None
        if not self.objective:  # the base config was refused: the children say what they optimised
            self.objective = children_objective(self.tracker)
        summary = child_summary(self.tracker, self.objective, job_errors(self.sweep_dir))
        if self.spec is not None:  # pruned and infeasible jobs are never the best (ltr.sweeper.record)
            summary = record_search(self.tracker, self.spec, self.sweep_dir, summary)
        metrics: dict[str, float] = {"sweep/n_jobs": summary.n_jobs, "sweep/n_failed": summary.n_failed}
        if summary.best_value is not None:
            metrics[f"sweep/best/{self.objective}"] = summary.best_value
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
        self.tracker.set_tags(tags | {"mlflow.note.content": summary.markdown})
        self.tracker.log_text(summary.markdown, "report/sweep.md")
        print(summary.text)
        description = summary.markdown
        finished = child_runs(self.tracker.client, self.tracker.experiment_id, self.tracker.run_id, finished_only=True)
        if self.spec is not None and self.spec.config.cv.fold_key:
            description = self._summarise_folds(self.spec, self.spec.config.cv.fold_key, summary.markdown, finished)
        if self.spec is not None:
            tradeoffs = summarise_tradeoffs(self.tracker, self.spec, finished)
            if tradeoffs:
                self.tracker.set_tags({"mlflow.note.content": f"{tradeoffs}\n\n{description}"})
                self.tracker.log_text(tradeoffs, "report/tradeoffs.md")
                print(tradeoffs)
        if summary.n_killed or not completed:
            status = RunStatus.KILLED
        elif summary.n_failed:
            status = RunStatus.FAILED
        else:
            status = RunStatus.FINISHED
        error = "; ".join(summary.failures) if summary.failures else None
        if error is None and status is not RunStatus.FINISHED:
            error = "the sweep was interrupted before all jobs ran"
        end_run(self.tracker, status, error=error)
        self.ended = True
        return summary

    def _summarise_folds(self, spec: ExperimentSpec, fold_key: str, summary_md: str, children: list[Any]) -> str:
        """Mean and standard deviation over the folds (``children``: the finished child runs),
        logged and printed; the parent's description is this table, then the jobs'
        (``summary_md``): returned."""
        folds = {str(r.data.params.get(fold_key, r.info.run_id)): dict(r.data.metrics) for r in children}
        metrics = cv_metrics(folds)
        self.tracker.log_metrics(metrics)
        c = spec.conventions
        title = (
            f"{spec.config.model.name} on {spec.config.data.name}: mean ± std over {len(folds)} folds "
            f"({fold_key} = {', '.join(sorted(folds))}), test, nDCG ({c.gain} gain, ties={c.ties}, "
            f"zero_idcg={c.zero_idcg})"
        )
        table = cv_table(metrics, split="test", ks=spec.ks, strata=spec.strata, title=title)
        self.tracker.log_text(table, "report/cv.md")
        self.tracker.set_tags({"mlflow.note.content": f"{table}\n\n{summary_md}", "ltr.cv.fold_key": fold_key})
        print(table)
        return f"{table}\n\n{summary_md}"

    def _end_if_open(self) -> None:
        """At interpreter exit: a sweep that Hydra did not finish (a failed job, Ctrl-C) ends here."""
        if self.tracker is None or self.ended:
            return
        try:
            self._summarise(completed=False)
        except Exception:  # the store may be gone at exit; never leave the run RUNNING silently
            log.exception("could not summarise the sweep's parent run")
            end_run(self.tracker, RunStatus.KILLED, error="sweep ended without a summary")
