"""An Optuna search as a Hydra sweep, over Optuna's ask-and-tell API.

Each batch of ``n_jobs`` trials is asked from the study, launched as Hydra jobs through the
configured launcher (basic, joblib, ...), and told back with the jobs' values:

- **Objectives**: ``optimized_metric`` (one key or several), each in its ``sweep.directions``
  direction (maximise by default); one key: TPE (seeded), several: TPE too (multi-objective),
  or any sampler ``hydra.sweeper.sampler`` names (NSGA-II: ``optuna.samplers.NSGAIISampler``).
- **Guardrails**: ``sweep.constraints`` are evaluated on each job's metrics; the violations are
  the trial's ``ltr.constraints`` user attribute and, for a trial that completed or was pruned,
  its constraints (``Trial.set_constraint``, one per constraint, keyed by its index: Optuna's
  own ``constraints_func`` keys, which Optuna 5 deprecates), which every constrained sampler
  (TPE, NSGA-II, GP) reads, so the search steers towards feasible settings.
- **Pruning**: with a pruner (``hydra.sweeper.pruner``; a median pruner by default) and one
  objective that is ``valid/<the metric early stopping watches>``, each job reports that
  metric every round and stops when pruned (:mod:`ltr.sweeper.link`); the trial is told
  ``PRUNED``.
- A job that failed (no value, NaN) is told ``FAIL``; the search goes on. A search stopped by
  Ctrl-C or SIGTERM tells ``FAIL`` to the trials it launched and had not told (none stays
  ``RUNNING``), then stops.

Persistent studies: with ``hydra.sweeper.storage`` (an RDB URL) the study is loaded if it
exists, so a second invocation adds its trials to the first's, and searches started at once from
several hosts share it. A seeded sampler draws new points there: each trial's sampler is made
afresh (:class:`ltr.sweeper.trial_seed.TrialSeeded`), its seed :func:`sampler_seed` of the
config's seed and the trial's number (the seed itself for trial 0), so the same commands give the
same trials and no two trials of a study, of any invocation or host, share a seed. The study keeps the config its values depend
on (:mod:`ltr.sweeper.study_config`); another config is refused before any run. At the end the
search writes ``optimization_results.yaml`` (the study's best feasible trial, of all invocations: its
params, value, number and run id, each trial keeping its job's run id as ``ltr.run_id``; or the
front of a multi-objective search) and ``.ltr_trials.json`` (job number -> trial) into the sweep's folder,
which the sweep's parent run reads (:mod:`ltr.sweeper.record`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from hydra.core.utils import JobReturn, JobStatus
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from ltr.errors import LtrUserError, ServerFault
from ltr.experiment.guardrails import Constraint, parse_constraints
from ltr.experiment.spec import ExperimentSpec
from ltr.runtime.stops import raise_if_stop_requested, signals_deferred
from ltr.sweeper.baseline import baseline_metrics
from ltr.sweeper.link import RESULTS_FILE, TRIALS_FILE, JobResult, Link, open_storage
from ltr.sweeper.space import params_overrides, search_space, trial_overrides
from ltr.sweeper.study_config import (
    CONFIG_ATTR,
    check_study_config,
    stored_study_config,
    study_config,
    study_name,
)
from ltr.sweeper.trial_seed import TrialSeeded
from ltr.tracking.liveness.reaped_trials import SWEEP_ATTR
from ltr.tracking.store import bound_database_connects, redact_uri

log = logging.getLogger(__name__)

#: The trial's user attribute holding its constraint violations (<= 0: met).
CONSTRAINTS_ATTR = "ltr.constraints"
OVERRIDES_ATTR = "ltr.overrides"
#: The trial's user attribute holding its job's MLflow run id (what a later invocation's parent
#: promotes when the study's best trial is one of an earlier invocation).
RUN_ATTR = "ltr.run_id"


def sampler_seed(seed: int, n_trials_before: int) -> int:
    """The seed of the sampler of the trial that finds ``n_trials_before`` trials in its study
    (the trial's number): ``seed`` for the first; else a number drawn from both
    (``numpy.random.SeedSequence``), so each trial of a persistent study draws a new point, the
    same one for the same commands.

    >>> sampler_seed(42, 0)
    42
    >>> sampler_seed(42, 2) == sampler_seed(42, 2) != sampler_seed(42, 4)
    True
    """
    if n_trials_before == 0:
        return seed
    return int(np.random.SeedSequence([seed, n_trials_before]).generate_state(1)[0])


def constraint_values(trial: optuna.trial.FrozenTrial) -> Sequence[float]:
    """The violations the search stored on the trial (``<= 0``: met; one per constraint)."""
    return list(trial.user_attrs.get(CONSTRAINTS_ATTR, []))


@dataclass(frozen=True)
class SearchSettings:
    """``hydra.sweeper`` of :class:`hydra_plugins.ltr_sweeper.ltr_optuna_sweeper.LtrOptunaSweeper`."""

    sampler: Mapping[str, Any] | None
    pruner: Mapping[str, Any] | None
    study_name: str | None
    storage: str | None
    n_trials: int
    n_jobs: int
    params: Mapping[str, Any] | None


def check_settings(sweeper: Mapping[str, Any]) -> None:
    """The search's own settings, refused with one line before any run exists."""
    n_trials = sweeper.get("n_trials")
    if not isinstance(n_trials, int) or n_trials < 1:
        raise LtrUserError(f"hydra.sweeper.n_trials={n_trials} must be a whole number >= 1 (the trials to run)")
    n_jobs = sweeper.get("n_jobs")
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise LtrUserError(f"hydra.sweeper.n_jobs={n_jobs} must be a whole number >= 1 (trials launched together)")
    storage = sweeper.get("storage")
    if storage is not None:
        check_storage(str(storage))
    try:
        search_space(params_overrides(sweeper.get("params")))
    except Exception as exc:
        if isinstance(exc, LtrUserError):
            raise
        raise LtrUserError(f"hydra.sweeper.params: {_first_line(exc)}") from exc


def check_storage(storage: str) -> None:
    """``hydra.sweeper.storage`` is a database URL; a sqlite file's folder exists (Optuna would
    fail in its first query, after the parent run exists). One line otherwise."""
    if "://" not in storage:
        raise LtrUserError(
            f"hydra.sweeper.storage={storage!r} is not a database URL; e.g. hydra.sweeper.storage=sqlite:///study.db"
        )
    if not storage.lower().startswith("sqlite:"):
        return
    from sqlalchemy.engine import make_url

    try:
        database = make_url(storage).database
    except Exception as exc:
        raise LtrUserError(f"hydra.sweeper.storage={storage!r} is not a database URL ({_first_line(exc)})") from exc
    if not database or database == ":memory:" or "mode=memory" in storage:
        raise LtrUserError(
            f"hydra.sweeper.storage={storage!r} is an in-memory sqlite database, which the search's jobs cannot "
            "share; name a file: hydra.sweeper.storage=sqlite:///study.db"
        )
    path = Path(database).absolute()
    if path.is_dir():
        raise LtrUserError(f"hydra.sweeper.storage={storage!r}: {path} is a folder; name a file in it")
    if not path.parent.is_dir():
        raise LtrUserError(
            f"hydra.sweeper.storage={storage!r}: the folder {path.parent} does not exist; create it, or name a "
            "file in an existing folder"
        )


def check_resumed_study(sweeper: Mapping[str, Any], task_overrides: Iterable[str], spec: ExperimentSpec) -> None:
    """Refuse, before any run, a sweep that would resume a study of ``hydra.sweeper.storage``
    built on another config (:func:`check_study_config`); ``sweeper``: ``hydra.sweeper`` (its
    settings already checked), ``task_overrides``: the command line's (sweeps among them)."""
    storage = sweeper.get("storage")
    if not storage:
        return  # the study is a new journal file in the sweep's own folder
    name = study_name(sweeper.get("study_name"), spec)
    space, _ = search_space([*params_overrides(sweeper.get("params")), *task_overrides])
    bound_database_connects()
    try:
        exists, stored = stored_study_config(str(storage), name)
    except Exception as exc:  # an unreachable server, a file that is no database
        error = ServerFault if _server_down(str(storage), exc) else LtrUserError
        raise error(f"hydra.sweeper.storage={redact_uri(str(storage))}: {_first_line(exc)}") from exc
    if exists:
        check_study_config(stored, study_config(spec, space), name=name, storage=redact_uri(str(storage)))


def _server_down(storage: str, exc: BaseException) -> bool:
    """Whether ``exc``, raised opening the database server ``storage``, says the server did not
    answer (refused, timed out: :class:`ltr.errors.ServerFault`), not that a setting is wrong."""
    from sqlalchemy.exc import OperationalError

    if storage.startswith("sqlite") or not isinstance(exc, OperationalError):
        return False
    text = str(exc).lower()
    return "authentication" not in text and "does not exist" not in text


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class OptunaSearch:
    """The search (see the module docstring); ``spec``: the sweep's checked base config."""

    def __init__(self, settings: SearchSettings, spec: ExperimentSpec, config: DictConfig, launcher: Any) -> None:
        self.settings = settings
        self.spec = spec
        self.config = config
        self.launcher = launcher
        self.sweep_dir = Path(str(config.hydra.sweep.dir))
        self.constraints: tuple[Constraint, ...] = parse_constraints(list(spec.config.sweep.constraints))
        # the baseline of "<key> >= baseline": a named run's metrics, else the first job's (in _tell)
        self.baseline: dict[str, float] | None = (
            baseline_metrics(spec) if spec.config.sweep.baseline is not None and any(c.needs_baseline for c in self.constraints) else None
        )
        self.multi = len(spec.objectives) > 1

    def _sampler(self, n_trials_before: int) -> optuna.samplers.BaseSampler:
        """The configured sampler (TPE seeded with ``seed`` by default), its seed (if it has one)
        replaced by :func:`sampler_seed` of it and ``n_trials_before`` (the trial's number)."""
        if not self.settings.sampler:
            return optuna.samplers.TPESampler(seed=sampler_seed(self.spec.seed, n_trials_before))
        config = OmegaConf.to_container(OmegaConf.create(dict(self.settings.sampler)))
        assert isinstance(config, dict)
        if isinstance(config.get("seed"), int):
            config["seed"] = sampler_seed(config["seed"], n_trials_before)
        try:
            sampler = instantiate(config)
        except Exception as exc:
            raise LtrUserError(f"hydra.sweeper.sampler: {_first_line(exc)}") from exc
        assert isinstance(sampler, optuna.samplers.BaseSampler)
        return sampler

    def _prune_key(self) -> str | None:
        """The key pruning watches, or None (no pruner; several objectives; an objective that is
        not the metric early stopping watches on valid)."""
        if not self.settings.pruner:
            return None
        watched = f"valid/{self.spec.early_stopping_metric}"
        if self.multi or self.spec.optimized_metric != watched:
            log.warning(
                "pruning is off: it watches %s each round, and the search optimises %s", watched,
                ", ".join(self.spec.objectives),
            )  # fmt: skip
            return None
        return watched

    def run(self, arguments: Sequence[str]) -> optuna.Study:
        space, fixed = search_space([*params_overrides(self.settings.params), *arguments])
        if not space:
            raise LtrUserError(
                "the Optuna search has nothing to search: give hydra.sweeper.params (hparams_search=optuna does) "
                "or sweep overrides such as model.num_leaves='int(interval(7,63))'"
            )
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        name = study_name(self.settings.study_name, self.spec)
        directions = [optuna.study.StudyDirection.MAXIMIZE if d == "maximize" else optuna.study.StudyDirection.MINIMIZE
                      for d in self.spec.directions]  # fmt: skip
        study = open_study(self.settings.storage, self.sweep_dir, name, TrialSeeded(self._sampler), directions)
        if list(study.directions) != directions:
            raise LtrUserError(
                f"Optuna study {name!r} in {self.settings.storage} optimises "
                f"{[d.name.lower() for d in study.directions]}, this sweep {list(self.spec.directions)}: use another study_name"
            )
        self._keep_config(study, study_config(self.spec, space))
        n_before = len(study.get_trials(deepcopy=False))
        if n_before:  # a resumed study: new points, deterministically
            log.info("Optuna study %r holds %d trials: each new trial's sampler is seeded from the seed and its number",
                     name, n_before)  # fmt: skip
        prune_key = self._prune_key()
        pruner = dict(self.settings.pruner) if prune_key and self.settings.pruner else None
        link = Link(self.settings.storage, name, pruner, prune_key)
        log.info("Optuna study %r in %s: %s, sampler %s", name, self.settings.storage or "the sweep's journal file",
                 " and ".join(f"{d} {k}" for d, k in zip(self.spec.directions, self.spec.objectives, strict=True)),
                 type(getattr(study.sampler, "current", study.sampler)).__name__)  # fmt: skip
        jobs: dict[str, dict[str, Any]] = {}
        sweep_id = str(self.sweep_dir.resolve())  # the ltr.sweep_id of its runs
        job_idx = 0
        left = self.settings.n_trials
        while left > 0:
            batch: list[optuna.trial.Trial] = []
            try:
                raise_if_stop_requested()  # a stop signal whose exception was swallowed stops here
                for _ in range(min(left, self.settings.n_jobs)):
                    batch.append(study.ask(space))
                overrides = [trial_overrides(t.params, fixed) for t in batch]
                for i, (trial, job_overrides) in enumerate(zip(batch, overrides, strict=True)):
                    trial.set_user_attr(OVERRIDES_ATTR, list(job_overrides))
                    trial.set_user_attr(SWEEP_ATTR, sweep_id)  # its sweep's parent, when reaped, fails it
                    link.trials[str(job_idx + i)] = trial._trial_id
                link.write(self.sweep_dir)
                returns = self.launcher.launch(overrides, initial_job_idx=job_idx)
                for i, (trial, ret) in enumerate(zip(batch, returns, strict=True)):
                    jobs[str(job_idx + i)] = self._tell(study, trial, ret)
            except BaseException:  # Ctrl-C, SIGTERM, a launcher's error: no trial left RUNNING
                _fail_untold(study, batch)
                raise
            job_idx += len(returns)
            left -= len(batch)
        self._write_results(study, jobs)
        return study

    def _keep_config(self, study: optuna.Study, config: dict[str, str]) -> None:
        """Store ``config`` (:func:`ltr.sweeper.study_config.study_config`) on the study, or refuse
        a study that holds another (a sweep that started on it meanwhile; the usual refusal is
        :func:`ltr.sweeper.record.check_sweep`'s, before any run)."""
        stored = study.user_attrs.get(CONFIG_ATTR)
        if stored is None:
            if study.get_trials(deepcopy=False):
                log.info("Optuna study %r predates ltr's study config: it now holds this sweep's", study.study_name)
            study.set_user_attr(CONFIG_ATTR, config)
            return
        check_study_config(stored, config, name=study.study_name, storage=redact_uri(str(self.settings.storage)))

    def _tell(self, study: optuna.Study, trial: optuna.trial.Trial, ret: JobReturn) -> dict[str, Any]:
        """Tell ``study`` the job's outcome; returns what ``.ltr_trials.json`` keeps of it. A trial
        told FAIL meanwhile (its job taken for dead on another host: its run reaped,
        :mod:`ltr.tracking.liveness.reaped_trials`) keeps that state."""
        frozen = study._storage.get_trial(trial._trial_id)
        if frozen.state.is_finished():
            log.warning("trial %d was told %s while its job ran (%s)", trial.number, frozen.state.name,
                        frozen.user_attrs.get("ltr.error", "by another process"))  # fmt: skip
            return {"trial": trial.number, "state": frozen.state.name, "pruned_at_round": None, "values": [],
                    "violations": [], "rounds_reported": len(frozen.intermediate_values)}  # fmt: skip
        result = ret.return_value if ret.status == JobStatus.COMPLETED else None
        metrics = result.metrics if isinstance(result, JobResult) else {}
        pruned_at = result.pruned_at_round if isinstance(result, JobResult) else None
        if isinstance(result, JobResult) and result.run_id:
            trial.set_user_attr(RUN_ATTR, result.run_id)
        values = [metrics.get(key, math.nan) for key in self.spec.objectives]
        if not metrics and result is not None and not self.multi:
            values = [float(result)]
        if self.baseline is None and self.spec.config.sweep.baseline is None and metrics:
            self.baseline = dict(metrics)  # the sweep's first job that finished
        violations = [c.violation(metrics, self.baseline) for c in self.constraints]
        if self.constraints:
            trial.set_user_attr(CONSTRAINTS_ATTR, violations)
        failed = any(math.isnan(v) for v in values) or (not metrics and result is None)
        if failed:
            told = study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:  # constraints are what the samplers read, of complete and pruned trials (as Optuna keeps them)
            for index, violation in enumerate(violations):
                trial.set_constraint(str(index), violation)
            if pruned_at is not None:
                told = study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                told = study.tell(trial, values)
        return {"trial": trial.number, "state": told.state.name, "pruned_at_round": pruned_at, "values": values,
                "violations": violations, "rounds_reported": len(told.intermediate_values)}  # fmt: skip

    def _write_results(self, study: optuna.Study, jobs: dict[str, dict[str, Any]]) -> None:
        (self.sweep_dir / TRIALS_FILE).write_text(json.dumps(jobs, indent=1))
        feasible = [
            t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            if all(v <= 0 for v in constraint_values(t))
        ]  # fmt: skip
        results: dict[str, Any] = {
            "name": "optuna", "study_name": study.study_name, "storage": self.settings.storage,
            "n_trials": len(study.trials),
        }  # fmt: skip
        if not feasible:
            log.info("no trial of study %r is complete and meets the constraints", study.study_name)
        elif not self.multi:
            sign = 1.0 if self.spec.directions[0] == "maximize" else -1.0
            best = max(feasible, key=lambda t: sign * float(t.values[0]))
            results |= {"best_params": _used_params(best), "best_value": float(best.values[0]), "best_trial": best.number,
                        "best_run_id": best.user_attrs.get(RUN_ATTR)}  # fmt: skip
            log.info("best trial %d: %s = %.6f, %s", best.number, self.spec.optimized_metric, best.values[0], _used_params(best))
        else:
            front = optuna.study._multi_objective._get_pareto_front_trials_by_trials(feasible, study.directions)
            results["solutions"] = [{"trial": t.number, "params": _used_params(t), "values": list(t.values)} for t in front]
            log.info("%d trials on the front of %s", len(front), " and ".join(self.spec.objectives))
        OmegaConf.save(OmegaConf.create(results), self.sweep_dir / RESULTS_FILE)


def open_study(
    storage: str | None,
    sweep_dir: Path,
    name: str,
    sampler: optuna.samplers.BaseSampler,
    directions: Sequence[optuna.study.StudyDirection],
) -> optuna.Study:
    """Study ``name`` in ``storage`` (an RDB URL, or None: the journal file in ``sweep_dir``),
    created when missing. Searches that create one new study at the same moment all get it: the
    storage's tables are created by one of them (:func:`ltr.sweeper.link.rdb_storage`), the study
    by one and loaded by the others."""
    opened = open_storage(storage, sweep_dir)
    try:
        return optuna.create_study(
            study_name=name, storage=opened, sampler=sampler, directions=list(directions), load_if_exists=True
        )
    except ValueError as exc:
        raise LtrUserError(f"Optuna study {name!r}: {exc}") from exc


def _fail_untold(study: optuna.Study, trials: Sequence[optuna.trial.Trial]) -> None:
    """Tell ``FAIL`` to each of ``trials`` still RUNNING (a batch the search stops in), signals
    held back meanwhile (a second Ctrl-C cannot leave one RUNNING)."""
    with signals_deferred():
        for trial in trials:
            frozen = study._storage.get_trial(trial._trial_id)
            if frozen.state == optuna.trial.TrialState.RUNNING:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                log.info("trial %d is told FAIL: the search stopped before its job ended", trial.number)


def _used_params(trial: optuna.trial.FrozenTrial) -> dict[str, str]:
    """The values the trial's job ran with (its overrides, floats to 4 significant digits)."""
    overrides = trial.user_attrs.get(OVERRIDES_ATTR)
    if overrides is None:
        return {k: str(v) for k, v in trial.params.items()}
    return {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] in trial.params}
