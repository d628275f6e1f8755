"""How a search's jobs find their Optuna trial, and what they hand back.

The sweeper (:mod:`ltr.sweeper.search`, in the launching process) writes ``.ltr_optuna.json``
into the sweep's folder before it launches each batch: the study's storage and name, the
pruner's config, and job number -> trial id. A job (in that process or a launcher's worker)
reads it (:func:`search_trial`), reports its valid metric every boosting round to its trial
and stops when the pruner says so (:mod:`ltr.training.round_hook`), then returns a
:class:`JobResult`: the objective value as a ``float`` (what any sweeper reads) that also
carries the run's metrics and the round a pruned job stopped at.

The storage is the user's (``hydra.sweeper.storage``), or a journal file in the sweep's folder
(``optuna_journal.log``, which processes share through a lock file). Optuna is imported only
when a job is a trial (every ``ltr train`` imports this module).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.utils import instantiate

from ltr.tracking.liveness.reaped_trials import trial_tags
from ltr.tracking.sqlite.lock import sqlite_db_path, sqlite_store_lock
from ltr.tracking.uri import redacted
from ltr.training.round_hook import watching_rounds

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

LINK_FILE = ".ltr_optuna.json"
JOURNAL_FILE = "optuna_journal.log"
#: In the sweep's folder, written by the search at its end: job number -> trial, state, values.
TRIALS_FILE = ".ltr_trials.json"
#: How often :func:`rdb_storage` tries to open a database another process is creating tables in.
_OPEN_ATTEMPTS = 8
#: In the sweep's folder: the best feasible trial (or the front), as hydra-optuna-sweeper wrote it.
RESULTS_FILE = "optimization_results.yaml"


class JobResult(float):
    """A search job's objective value (a ``float``) with the run's ``metrics`` (key -> value),
    ``pruned_at_round`` (1-based; None: not pruned) and ``run_id`` (its MLflow run; None with
    ``tracking=none``), which the search stores on the trial (so a resumed study's parent finds
    the run of a trial an earlier invocation ran)."""

    metrics: dict[str, float]
    pruned_at_round: int | None
    run_id: str | None

    def __new__(
        cls, value: float, metrics: Mapping[str, float], pruned_at_round: int | None = None, run_id: str | None = None
    ) -> JobResult:
        self = super().__new__(cls, value)
        self.metrics = {str(k): float(v) for k, v in metrics.items()}
        self.pruned_at_round = pruned_at_round
        self.run_id = run_id
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by launchers that run jobs elsewhere
        return (JobResult, (float(self), self.metrics, self.pruned_at_round, self.run_id))


def open_storage(storage: str | None, sweep_dir: str | Path) -> optuna.storages.BaseStorage:
    """The study's storage: an RDB URL (``sqlite:///study.db``, :func:`rdb_storage`), or (None) a
    journal file in ``sweep_dir`` that this search's processes share."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    if storage:
        return rdb_storage(storage)
    path = str(Path(sweep_dir) / JOURNAL_FILE)
    return optuna.storages.JournalStorage(JournalFileBackend(path, lock_obj=JournalFileOpenLock(path)))


def rdb_storage(url: str) -> optuna.storages.RDBStorage:
    """Optuna's storage at the database ``url``, its tables created by one process at a time.

    Optuna creates a new storage's tables and stamps its schema version when it first opens it;
    two processes doing that at once fail (``table studies already exists``, ``UNIQUE constraint
    failed: alembic_version.version_num``). A sqlite file is opened holding the lock file beside
    it (``<file>.lock``, as ltr's MLflow store); another database is opened again, up to
    :data:`_OPEN_ATTEMPTS` times, while the other process's creation makes it fail.
    """
    import optuna
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    if sqlite_db_path(url) is not None:
        with sqlite_store_lock(url):
            return optuna.storages.RDBStorage(url)
    for attempt in range(_OPEN_ATTEMPTS):
        try:
            return optuna.storages.RDBStorage(url)
        except (IntegrityError, ProgrammingError) as exc:  # a table or version row created meanwhile
            if attempt == _OPEN_ATTEMPTS - 1:
                raise
            log.debug("opening Optuna storage %s again (%s)", redacted(url), type(exc).__name__)
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


@dataclass
class Link:
    """What :data:`LINK_FILE` holds (see the module docstring)."""

    storage: str | None
    study_name: str
    pruner: dict[str, Any] | None
    prune_key: str | None  # the metric key pruning watches (None: pruning off)
    trials: dict[str, int] = field(default_factory=dict)  # job number -> trial id

    def write(self, sweep_dir: str | Path) -> None:
        path = Path(sweep_dir) / LINK_FILE
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.__dict__))
        tmp.replace(path)

    @classmethod
    def read(cls, sweep_dir: str | Path) -> Link | None:
        path = Path(sweep_dir) / LINK_FILE
        return cls(**json.loads(path.read_text())) if path.exists() else None


def make_pruner(config: Mapping[str, Any] | None) -> optuna.pruners.BasePruner:
    """The pruner of a ``_target_`` config (``hydra.sweeper.pruner``); None: never prune."""
    import optuna

    if not config:
        return optuna.pruners.NopPruner()
    pruner = instantiate(dict(config))
    assert isinstance(pruner, optuna.pruners.BasePruner)
    return pruner


class _Pruning:
    """The round hook of one trial: report the value, stop when the pruner says so."""

    def __init__(self, trial: optuna.trial.Trial) -> None:
        self.trial = trial
        self.pruned_at: int | None = None

    def __call__(self, round_: int, value: float) -> bool:
        if math.isnan(value):
            return False
        self.trial.report(value, round_)
        if self.trial.should_prune():
            self.pruned_at = round_
            return True
        return False


@dataclass
class TrialOfJob:
    """Whether a job is a trial of an ``ltr`` Optuna search, and its pruning state (None: the
    search does not prune this job)."""

    in_search: bool = False
    pruning: _Pruning | None = None
    #: The run's tags naming its trial (:func:`ltr.tracking.liveness.reaped_trials.trial_tags`: a reaped
    #: run's trial is told FAIL); {} outside a search.
    tags: dict[str, str] = field(default_factory=dict)

    def result(self, value: float, metrics: Mapping[str, float], run_id: str | None = None) -> float:
        """What the job returns: a plain ``float`` outside a search, else a :class:`JobResult`."""
        if not self.in_search:
            return value
        return JobResult(value, metrics, self.pruning.pruned_at if self.pruning else None, run_id)


@contextmanager
def search_trial(sweep_dir: str | Path, job_num: str) -> Iterator[TrialOfJob]:
    """Inside: training reports to job ``job_num``'s trial and stops when pruned (when the
    search prunes: it decided so from the sweep's objective, :mod:`ltr.sweeper.search`); the
    job's run is tagged with its trial (``TrialOfJob.tags``), so a reaped run's trial is told FAIL."""
    link = Link.read(sweep_dir)
    if link is None:
        yield TrialOfJob()
        return
    trial_id = link.trials.get(job_num)
    if trial_id is None:
        yield TrialOfJob(in_search=True)
        return
    tags = trial_tags(link.study_name, link.storage or str(Path(sweep_dir) / JOURNAL_FILE), trial_id)
    if link.prune_key is None:
        yield TrialOfJob(in_search=True, tags=tags)
        return
    import optuna

    storage = open_storage(link.storage, sweep_dir)
    study = optuna.load_study(study_name=link.study_name, storage=storage, pruner=make_pruner(link.pruner))
    pruning = _Pruning(optuna.trial.Trial(study, trial_id))
    with watching_rounds(pruning):
        yield TrialOfJob(in_search=True, pruning=pruning, tags=tags)
