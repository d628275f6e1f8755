"""Multirun sweeps in MLflow: one parent run per sweep, one child run per job.

:class:`MlflowSweepCallback` is a Hydra callback (configured in ``ltr/conf/train.yaml``). At the start
of a multirun, in the launching process, it creates the parent run and writes its id to
``<sweep dir>/.ltr_parent_run_id``; every job (in this process or a launcher's worker) reads it
from there and starts its run as a child. Each sweep has its own folder (``ltr/conf/train.yaml``:
``multirun/<date>/<time>-<random suffix>``), so two sweeps started in the same second never share
a parent. The start checks (:mod:`ltr.cli.sweeps.checks`: every job's config, the search's
settings) run before the parent run exists; a refused sweep is one line and exit 2. At the end the parent gets the best child's value of ``optimized_metric``
(``sweep/best/...``) and that child's headline metrics under their own keys (the runs table's
columns show what the sweep reached) and, for an Optuna sweep, the best params. A
cross-validation sweep (``cv.fold_key``) has no best child: its parent's headline keys hold the
fold means, and their standard deviations as ``{key}/sd`` (:mod:`ltr.sweeper.cv`). The parent ends
FAILED when a job failed, and KILLED when the sweep is interrupted (an ``atexit`` hook ends it
if Hydra never calls back).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, open_dict, read_write

from ltr.errors import LtrUserError

if TYPE_CHECKING:
    from ltr.experiment.spec import ExperimentSpec

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
    """A sweep refused by its start checks, before the parent run exists (:mod:`ltr.cli.sweeps.checks`),
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


def summary_line(
    outcomes: list[str], *, parent_url: str | None = None, best_url: str | None = None, cv: bool = False
) -> str:
    """The one line a sweep ends with: its jobs by outcome, the parent's and the best run's links
    (a cross-validation, ``cv``, has no best run: its parent holds the fold means).

    >>> summary_line(["failed", "refused"], parent_url="http://p")
    'ltr: sweep of 2 jobs: 0 finished, 1 failed, 1 refused; parent run http://p; no job finished'
    >>> summary_line(["finished", "finished"], parent_url="http://p", cv=True)
    'ltr: sweep of 2 jobs: 2 finished, 0 failed, 0 refused; parent run http://p (the mean over the folds)'
    """
    counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES)
    line = f"ltr: sweep of {len(outcomes)} job{'s' * (len(outcomes) != 1)}: {counts}"
    if parent_url:
        line += f"; parent run {parent_url}"
        if cv:
            line += " (the mean over the folds)"
        elif best_url:
            line += f"; best run {best_url}"
        else:
            line += "; no best run" if "finished" in outcomes else "; no job finished"
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
    from ltr.experiment.checks import check_config  # numpy and the run's rules: not for --help

    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return check_config(task)


class MlflowSweepCallback(Callback):
    """Hydra's callback for the parent run of a multirun (``ltr/conf/train.yaml``).

    Hydra builds it for every ``ltr train``, a single run too; the work is
    :class:`ltr.cli.sweeps.parent.SweepParent`, imported when a multirun starts, so a single run,
    ``--help`` and a config error never import MLflow, LightGBM or pandas for it."""

    def __init__(self) -> None:
        self.parent: Any = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Run the sweep's start checks (:mod:`ltr.cli.sweeps.checks`; a refused sweep raises
        :class:`SweepRefused` before anything is written), then create the parent run."""
        from ltr.cli.sweeps.checks import check_sweep_start

        try:
            plan = check_sweep_start(config, varying_keys(config))
        except LtrUserError as exc:
            raise SweepRefused(exc) from exc
        from ltr.cli.sweeps.parent import SweepParent

        self.parent = SweepParent()
        self.parent.on_multirun_start(config, plan)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Summarise the parent run, then end the sweep with its exit code and one line."""
        assert self.parent is not None
        self.parent.on_multirun_end(config)
