"""A sweep stopped by Ctrl-C or SIGTERM leaves no child run RUNNING, whatever its launcher.

On the basic launcher (and Optuna's jobs on it) a job runs in the ``ltr train`` process and its
run ends KILLED itself (:func:`ltr.tracking.lifecycle.tracked_run`). A launcher that runs jobs in
worker processes may end them before their runs are ended: joblib's loky workers get the
terminal's SIGINT too, but when the interrupt reaches ``Parallel`` in the launching process,
joblib aborts and kills its workers with SIGKILL, often while a worker is still ending its run
(and a signal sent to ``ltr train`` alone never reaches them). Those runs stayed RUNNING until
another command found their process dead.

So the launching process, once the stop has come out of the launcher (joblib has killed and
joined its workers by then), ends each child run of its sweep still RUNNING as KILLED, with the
``ltr.error`` tag, and names each on the line ``ltr: interrupted; run <id> (<name>) is marked
KILLED`` (:func:`end_stopped_children`, called by :func:`ltr.cli.train.main`), before the sweep's
parent run is summarised and ended (at exit, :mod:`ltr.cli.sweeps.parent`). A child whose process
is still alive on this host is given a few seconds to end its run itself, and never touched.

:class:`SweepStopCallback` (``ltr/conf/train.yaml``'s ``hydra.callbacks``) notes, at the start of
a multirun, where its runs are logged.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from ltr.cli.sweeps.callback import parent_run_id_for
from ltr.runtime.stops import signals_deferred
from ltr.tracking.sqlite.lock import sqlite_store_lock

log = logging.getLogger(__name__)

#: How long a child run of a live process (on this host) is given to end itself.
LIVE_GRACE_S = 10.0
_POLL_S = 0.2


@dataclass(frozen=True)
class SweepStore:
    """Where a multirun of this process logs its runs."""

    uri: str | None
    experiment: str
    sweep_dir: Path


#: The multiruns this process started (at most one per ``ltr train``).
started: list[SweepStore] = []


class SweepStopCallback(Callback):
    """Hydra's callback that notes a multirun's store (see the module docstring)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.tracking.enabled:
            started.append(
                SweepStore(config.tracking.uri, str(config.tracking.experiment), Path(str(config.hydra.sweep.dir)).resolve())
            )


def end_stopped_children(stop: BaseException) -> None:
    """End KILLED every child run still RUNNING of the multiruns this process started, adding
    ``run <id> (<name>) is marked KILLED`` to ``stop``'s notes for each; nothing without one.
    Never raises (the stop is what the command reports)."""
    while started:
        sweep = started.pop()
        try:
            for run_id, name in _end_children(sweep):
                stop.add_note(f"run {run_id} ({name}) is marked KILLED")
        except Exception:
            log.exception("could not end the runs of the stopped sweep %s", sweep.sweep_dir)


def _end_children(sweep: SweepStore) -> list[tuple[str, str]]:
    parent_id = parent_run_id_for(sweep.sweep_dir)
    if parent_id is None:
        return []
    from mlflow.tracking import MlflowClient

    from ltr.tracking.store import TAG_ERROR, check_tracking_uri, identity_of, process_identity

    uri = check_tracking_uri(sweep.uri)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(sweep.experiment)
    if experiment is None:
        return []
    me = process_identity()
    query = f"tags.mlflow.parentRunId = '{parent_id}' and attributes.status = 'RUNNING'"
    deadline = time.monotonic() + LIVE_GRACE_S
    while True:
        found = client.search_runs([experiment.experiment_id], filter_string=query, max_results=10_000)
        runs = sorted(found, key=lambda r: int(r.data.tags.get("ltr.job_num", "0")))
        over = [r for r in runs if _process_over(identity_of(dict(r.data.tags)), me)]
        if len(over) == len(runs) or time.monotonic() > deadline:
            break
        time.sleep(_POLL_S)  # a worker still ending its run after the same signal
    for run in runs:
        if run not in over:
            log.warning("run %s of the stopped sweep is left RUNNING: its process %s is alive or on another host",
                        run.info.run_id, identity_of(dict(run.data.tags)).get("pid", "?"))  # fmt: skip
    ended = []
    for run in over:
        with signals_deferred(), sqlite_store_lock(uri):
            client.set_tag(run.info.run_id, TAG_ERROR, "KeyboardInterrupt: interrupted (its sweep was stopped)")
            client.set_terminated(run.info.run_id, status="KILLED")
        ended.append((run.info.run_id, str(run.info.run_name)))
    return ended


def _process_over(identity: dict[str, str], me: dict[str, str]) -> bool:
    """True when the run's process (``identity``, its ``ltr.process`` tag) can no longer end it:
    this process (its job is over: the stop came out of it) or one known dead on this host
    (:func:`ltr.tracking.store.process_died`; a process of another host, or without the tag, is
    not ours to judge)."""
    from ltr.tracking.store import HOST, HOST_ID, PID, process_died

    this_host = identity.get(HOST) == me.get(HOST) and identity.get(HOST_ID, "") == me.get(HOST_ID, "")
    return (this_host and identity.get(PID) == me.get(PID)) or process_died(identity, me)
