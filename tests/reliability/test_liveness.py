"""Liveness of runs across hosts (issue 46): a run's heartbeat, the staleness rule that reaps a
run of another host without looking at its pid, and the Optuna trial a reaped run ran.

The searches are real ``ltr train`` processes (``slow``). "Another host" is a process whose
host identity is another (``$LTR_HOST_ID``, as on a machine cloned from one image): the reaper,
this test's process, then cannot judge the run by its pid, though it could see it, so only the
heartbeat can tell it alive or dead. A ``SIGSTOP`` makes the process as silent as a frozen host.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import doctest
import fcntl
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from mlflow.tracking import MlflowClient

import ltr.tracking.liveness.heartbeat
from ltr.cli.main import main
from ltr.tracking import RunStatus
from ltr.tracking.liveness.heartbeat import TAG_HEARTBEAT, TAG_STALE_AFTER, Liveness
from ltr.tracking.liveness.reaped_trials import (
    ERROR_ATTR,
    SWEEP_ATTR,
    fail_trial_of,
    search_tags,
    trial_tags,
)
from ltr.tracking.mlflow_tracker import MlflowTracker
from ltr.tracking.sqlite.lock import lock_path
from ltr.tracking.store import HOST_ID_VARIABLE, open_client

#: The heartbeat of the searches here: every 0.25 s, dead after 4 silent seconds (room for a busy
#: machine's slow store openings inside the bound).
BEAT_S, STALE_AFTER = 0.25, 16
BOUND_S = BEAT_S * STALE_AFTER
SMALL = ["debug=default", "fit.num_boost_round=5", "fit.show_progress=false"]



def test_doctests() -> None:
    assert doctest.testmod(ltr.tracking.liveness.heartbeat).failed == 0


def _stop_outside_a_write(pid: int, db: Path) -> None:
    """SIGSTOP process group ``pid`` at a moment it holds no lock on the sqlite store ``db`` (ltr's
    ``<db>.lock`` nor sqlite's own): a host frozen between its writes (one frozen inside a write
    holds every other process of a local sqlite store until it goes on, which no heartbeat can
    change; a team's server store has no such lock)."""
    for _ in range(200):
        os.killpg(pid, signal.SIGSTOP)
        probe = sqlite3.connect(db, timeout=0)
        try:
            with lock_path(db).open("a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ltr's own lock around each write
                probe.execute("BEGIN EXCLUSIVE")
                probe.rollback()
            return
        except (OSError, sqlite3.OperationalError):  # held: let the write finish, and stop it again
            os.killpg(pid, signal.SIGCONT)
            time.sleep(0.02)
        finally:
            probe.close()
    raise AssertionError(f"the search held a lock on {db} at 200 tries")


def _beat(client: MlflowClient, run_id: str) -> dt.datetime:
    return dt.datetime.fromisoformat(client.get_run(run_id).data.tags[TAG_HEARTBEAT])


def test_a_run_beats_while_it_runs_and_never_after(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr", liveness=Liveness(0.1, 3))
    run_id = tracker.start_run("beating", {})
    tags = tracker.client.get_run(run_id).data.tags
    assert tags[TAG_STALE_AFTER] == "0.3"
    first = _beat(tracker.client, run_id)
    deadline = time.monotonic() + 60
    while _beat(tracker.client, run_id) == first:
        assert time.monotonic() < deadline, "no heartbeat after the first"
        time.sleep(0.05)
    copy = pickle.loads(pickle.dumps(tracker))  # as a launcher sends a sweep's callbacks to its workers
    assert copy.run_id == run_id
    assert copy._heartbeat is None  # the run's own process beats it, no copy
    tracker.end_run(RunStatus.FINISHED)
    last = _beat(tracker.client, run_id)
    assert not any(t.name == "ltr-heartbeat" for t in threading.enumerate())
    time.sleep(0.3)  # three beats' time: none comes
    assert _beat(tracker.client, run_id) == last
    assert tracker.client.get_run(run_id).info.status == "FINISHED"


def test_no_heartbeat_when_switched_off(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr", liveness=Liveness(None))
    run_id = tracker.start_run("silent", {})
    tags = tracker.client.get_run(run_id).data.tags
    tracker.end_run(RunStatus.FINISHED)
    assert TAG_HEARTBEAT not in tags
    assert TAG_STALE_AFTER not in tags


def test_the_heartbeat_changes_no_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with a heartbeat every 0.1 s and with none: the same metrics, bit for bit."""
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for beat in ("0.1", "null"):
        assert main(["train", *SMALL, f"tracking.uri={uri}", "tracking.log_model=false", f"tracking.heartbeat_s={beat}",
                     f"tracking.run_name=beat-{beat}"]) == 0  # fmt: skip
    client = MlflowClient(uri)
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("ltr").experiment_id])}
    beating, silent = runs["beat-0.1"], runs["beat-null"]
    assert TAG_HEARTBEAT in beating.data.tags
    assert TAG_HEARTBEAT not in silent.data.tags
    timings = {k for k in beating.data.metrics if k.endswith("_seconds")}  # wall-clock times
    assert timings == {"train_seconds"}
    measured = {k: v for k, v in beating.data.metrics.items() if k not in timings}
    assert len(measured) > 100
    assert measured == {k: v for k, v in silent.data.metrics.items() if k not in timings}


def test_a_heartbeat_below_its_floor_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", *SMALL, "tracking.heartbeat_s=0", "tracking.stale_after=1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ltr: error: ")
    assert "tracking.heartbeat_s=0" in line
    assert not (tmp_path / "mlflow.db").exists()


def test_a_reaped_run_fails_its_trial_and_a_reaped_parent_its_sweep_s(tmp_path: Path) -> None:
    """The study of a search without ``hydra.sweeper.storage`` is a journal file: a reaped run's
    trial is told FAIL there; a reaped parent's, every RUNNING trial of its sweep (one whose job
    died before starting its run too); finished trials and other sweeps' are left as they are."""
    from ltr.sweeper.link import open_storage

    study = optuna.create_study(study_name="s", storage=open_storage(None, tmp_path))
    trials = [study.ask() for _ in range(4)]
    for trial, sweep in zip(trials, ["/a", "/a", "/a", "/b"], strict=True):
        trial.set_user_attr(SWEEP_ATTR, sweep)
    study.tell(trials[2], 1.0)
    journal = str(tmp_path / "optuna_journal.log")
    assert fail_trial_of(trial_tags("other", journal, trials[0]._trial_id), "reaped") == []  # not its study
    assert fail_trial_of(trial_tags("s", journal, trials[0]._trial_id), "run reaped") == [trials[0].number]
    assert fail_trial_of(trial_tags("s", journal, trials[2]._trial_id), "run reaped") == []  # finished
    parent = search_tags("s", journal) | {"ltr.role": "sweep", "ltr.sweep_id": "/a"}
    assert fail_trial_of(parent, "parent reaped") == [trials[1].number]
    states = [(t.state.name, t.user_attrs.get(ERROR_ATTR)) for t in optuna.load_study(study_name="s", storage=open_storage(None, tmp_path)).trials]
    assert states == [("FAIL", "run reaped"), ("FAIL", "parent reaped"), ("COMPLETE", None), ("RUNNING", None)]


# --- real searches ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _search(cwd: Path, db: Path, storage: str, *, host_id: str | None = None) -> Iterator[subprocess.Popen[str]]:
    """A real search of one trial whose job trains until killed, in its own process group
    (``host_id``: the host it says it runs on); nothing of it outlives the block."""
    env = dict(os.environ)
    if host_id is not None:
        env[HOST_ID_VARIABLE] = host_id
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "hparams_search=optuna", "hydra.sweeper.n_trials=1",
         f"hydra.sweeper.storage={storage}", "debug=default", "fit.num_threads=1", "fit.num_boost_round=1000000",
         "fit.early_stopping_rounds=null", "hydra.sweeper.pruner=null", "fit.show_progress=false",
         f"tracking.uri=sqlite:///{db}", f"tracking.heartbeat_s={BEAT_S}", f"tracking.stale_after={STALE_AFTER}"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _runs(db: Path) -> tuple[Any, Any]:
    """(parent, child) of the one search in the store; (None, None) before both exist."""
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("ltr")
    runs = client.search_runs([experiment.experiment_id]) if experiment is not None else []
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return (parents[0] if parents else None), (children[0] if children else None)


def _training(db: Path, proc: subprocess.Popen[str]) -> tuple[Any, Any]:
    """(parent, child) once the search's job trains (its run RUNNING)."""
    deadline = time.monotonic() + 600  # generous: only a broken start waits it out
    while True:
        parent, child = _runs(db)
        if child is not None and child.info.status == "RUNNING":
            return parent, child
        if proc.poll() is not None or time.monotonic() > deadline:
            assert proc.stderr is not None
            pytest.fail(f"no job started: {proc.stderr.read()[-2000:]}")
        time.sleep(0.25)


def _trial(storage: str) -> optuna.trial.FrozenTrial:
    (trial,) = optuna.load_study(study_name="ltr_lambdarank", storage=storage).trials
    return trial


@pytest.mark.slow
def test_a_search_on_another_host_is_reaped_by_its_heartbeat_only(tmp_path: Path, study_storage: Callable[[str], str]) -> None:
    """A search of "host A" seen from this host (its pid means nothing here): stopped (SIGSTOP)
    for half the bound and continued, it is left alone; SIGKILLed mid-trial, it is left alone
    until its heartbeat is older than the bound, then the next command that opens the store
    (``ltr ui``'s and ``ltr compare``'s :func:`open_client`) reaps parent and child KILLED and
    tells the trial FAIL: a SIGKILLed search leaves no trial RUNNING. (On this host the runs of a
    SIGKILLed process are reaped by their pid, ``tests/tracking/test_store.py``, through the same
    reaping that tells the trial.)"""
    db, storage = tmp_path / "mlflow.db", study_storage("study")
    MlflowTracker(f"sqlite:///{db}", "ltr")  # the store first, so polling it never races its creation
    client = MlflowClient(f"sqlite:///{db}")
    with _search(tmp_path, db, storage, host_id="host-a") as proc:
        parent, child = _training(db, proc)
        assert "host_id=host-a" in child.data.tags["ltr.process"]
        assert child.data.tags["ltr.optuna.storage"] == storage
        # the parent names the study, and the trial its sweep: reaping the parent alone fails it too
        assert (parent.data.tags["ltr.optuna.storage"], parent.data.tags["ltr.optuna.study"]) == (storage, "ltr_lambdarank")
        assert _trial(storage).user_attrs[SWEEP_ATTR] == parent.data.tags["ltr.sweep_id"]
        assert child.data.tags[TAG_STALE_AFTER] == f"{BOUND_S:g}"

        _stop_outside_a_write(proc.pid, db)  # a frozen host: no beat
        time.sleep(BEAT_S)
        silent_beat = _beat(client, child.info.run_id)  # its last (the process is stopped)
        time.sleep(3 * BEAT_S)  # three beats' time: none comes
        open_client(f"sqlite:///{db}")
        judged = time.time()
        assert _beat(client, child.info.run_id) == silent_beat  # really stopped meanwhile
        assert judged - silent_beat.timestamp() < BOUND_S  # the opening judged the run inside the bound
        assert {r.info.status for r in _runs(db)} == {"RUNNING"}, "a stopped process was reaped within the bound"
        os.killpg(proc.pid, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while _beat(client, child.info.run_id) == silent_beat:  # the heartbeat resumes
            assert time.monotonic() < deadline, "no heartbeat after SIGCONT"
            time.sleep(0.1)
        open_client(f"sqlite:///{db}")
        assert {r.info.status for r in _runs(db)} == {"RUNNING"}

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = time.time()
        attempts: list[tuple[float, float, bool]] = []  # (before, after, reaped) of each opening
        while True:
            before = time.time()
            open_client(f"sqlite:///{db}")
            after = time.time()
            statuses = {r.info.run_id: r.info.status for r in _runs(db)}
            attempts.append((before, after, statuses[child.info.run_id] == "KILLED"))
            if set(statuses.values()) == {"KILLED"}:
                break
            assert after - killed < 120, f"not reaped: {statuses}"
            time.sleep(0.25)
    parent, child = _runs(db)
    last_beat = _beat(client, child.info.run_id).timestamp()
    assert last_beat <= killed
    # The openings that left the run alive judged it while its last beat was younger than the
    # bound; the one that reaped it, once older.
    first_reaped = next(i for i, (*_, reaped) in enumerate(attempts) if reaped)
    assert all(before - last_beat <= BOUND_S for before, _, _ in attempts[:first_reaped])
    assert attempts[first_reaped][1] - last_beat > BOUND_S
    print(f"\nreaping delay after SIGKILL: {attempts[first_reaped][1] - killed:.2f} s (bound {BOUND_S:g} s, "
          f"last beat {killed - last_beat:.2f} s before the kill, {len(attempts)} openings)")  # fmt: skip
    error = child.data.tags["ltr.error"]
    assert error.startswith(f"process {child.data.tags['ltr.process'].split('pid=')[1].split()[0]} on ")
    assert "sent no heartbeat for " in error
    assert f"(more than {BOUND_S:g} s): taken for dead" in error
    assert parent.info.status == "KILLED"
    trial = _trial(storage)
    assert trial.state == optuna.trial.TrialState.FAIL
    assert trial.user_attrs[ERROR_ATTR] in {error, parent.data.tags["ltr.error"]}  # whichever was reaped first
