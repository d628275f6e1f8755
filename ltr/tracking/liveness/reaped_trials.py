"""What a reaped run's Optuna trials are told: FAIL, so a dead search leaves no trial RUNNING.

A job of an ltr Optuna search starts its run with :func:`trial_tags`: the study's name, its
storage (an RDB URL, its password hidden; or the path of the sweep's journal file) and the
trial's id in that storage. The search's parent run starts with :func:`search_tags` (the study
and storage), and the search gives each trial it asks its sweep's id (user attribute
:data:`SWEEP_ATTR`, the sweep's folder). When a run is reaped (its process died:
:mod:`ltr.tracking.store`), :func:`fail_trial_of` opens that storage and tells FAIL to its trial,
or, for a parent, to every trial of its sweep, that is still RUNNING (also one whose job died
before its run started), with the reaping's message as the trial's ``ltr.error`` user attribute. A storage that cannot be opened
from here (a URL whose password is hidden, a journal file of another machine) is left as it is,
with one warning: keep an RDB storage's password out of its URL (``~/.pgpass``, ``PGPASSWORD``)
and a study searched from several hosts in a database.

Optuna is imported only when a reaped run has these tags.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ltr.tracking.sqlite.lock import sqlite_db_path
from ltr.tracking.uri import redacted, resolve_tracking_uri

log = logging.getLogger(__name__)

#: The run's study name, storage and trial id (Optuna's ``trial._trial_id`` in that storage).
TAG_STUDY = "ltr.optuna.study"
TAG_STORAGE = "ltr.optuna.storage"
TAG_TRIAL_ID = "ltr.optuna.trial_id"
#: The trial's user attribute holding why it was told FAIL.
ERROR_ATTR = "ltr.error"
#: The trial's user attribute holding its sweep's id (the ``ltr.sweep_id`` tag of its runs).
SWEEP_ATTR = "ltr.sweep_id"
_SWEEP_ID, _ROLE = "ltr.sweep_id", "ltr.role"


def search_tags(study_name: str, storage: str) -> dict[str, str]:
    """The tags of a search's parent run whose study is ``study_name`` in ``storage`` (an RDB
    URL, shown with its password hidden, a sqlite file's path made absolute; or the absolute path
    of a journal file)."""
    shown = redacted(resolve_tracking_uri(storage)) if "://" in storage else str(Path(storage).absolute())
    return {TAG_STUDY: study_name, TAG_STORAGE: shown}


def trial_tags(study_name: str, storage: str, trial_id: int) -> dict[str, str]:
    """The tags of a run that is trial ``trial_id`` of study ``study_name`` in ``storage``
    (:func:`search_tags`)."""
    return search_tags(study_name, storage) | {TAG_TRIAL_ID: str(trial_id)}


def _open(storage: str) -> Any:
    """The Optuna storage a run's :data:`TAG_STORAGE` names, or a `ValueError` saying why not."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    if "://" in storage:
        if urllib.parse.urlsplit(storage).password is not None:  # a tag holds it hidden
            raise ValueError("its URL's password is not kept with the run")
        db = sqlite_db_path(storage)
        if db is not None and not db.is_file():  # opening it would create an empty study database
            raise ValueError(f"no such file {db} on this host")
        return optuna.storages.RDBStorage(storage)
    if not Path(storage).is_file():
        raise ValueError("no such journal file on this host")
    return optuna.storages.JournalStorage(JournalFileBackend(storage, lock_obj=JournalFileOpenLock(storage)))


def _theirs(tags: Mapping[str, str], trial: Any) -> bool:
    """Whether a RUNNING ``trial`` is the reaped run's: its trial, or one of its sweep's (a parent)."""
    if TAG_TRIAL_ID in tags:
        return str(trial._trial_id) == tags[TAG_TRIAL_ID]
    return tags.get(_ROLE) == "sweep" and bool(tags.get(_SWEEP_ID)) and trial.user_attrs.get(SWEEP_ATTR) == tags[_SWEEP_ID]


def fail_trial_of(tags: Mapping[str, str], reason: str) -> list[int]:
    """Tell FAIL to the RUNNING Optuna trials a reaped run's ``tags`` name (its trial; a search's
    parent: every trial of its sweep); their numbers ([]: none, or a storage not reachable from
    here: a warning says so). Never raises."""
    storage, study = tags.get(TAG_STORAGE), tags.get(TAG_STUDY)
    if not storage or not study or (TAG_TRIAL_ID not in tags and tags.get(_ROLE) != "sweep"):
        return []
    told: list[int] = []
    opened: Any = None
    try:
        from optuna.trial import TrialState

        opened = _open(storage)
        running = opened.get_all_trials(opened.get_study_id_from_name(study), deepcopy=False, states=(TrialState.RUNNING,))
        for trial in running:
            if _theirs(tags, trial):
                opened.set_trial_user_attr(trial._trial_id, ERROR_ATTR, reason)
                opened.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # a trial told meanwhile: raises
                told.append(int(trial.number))
    except Exception as exc:  # an unreachable storage, a study deleted meanwhile: never a reason to fail
        log.warning("ltr: could not tell Optuna study %r in %s that the trials of a dead run failed: %s", study, storage, exc)
    finally:
        engine = getattr(opened, "engine", None)  # an RDB storage's pooled connections, closed
        if engine is not None:
            engine.dispose()
    if told:
        log.warning("ltr: told trial%s %s of Optuna study %r FAIL (the run that ran %s was reaped)",
                    "" if len(told) == 1 else "s", ", ".join(map(str, told)), study, "it" if len(told) == 1 else "them")  # fmt: skip
    return told


__all__ = ["ERROR_ATTR", "SWEEP_ATTR", "TAG_STORAGE", "TAG_STUDY", "TAG_TRIAL_ID", "fail_trial_of", "search_tags", "trial_tags"]
