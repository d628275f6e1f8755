"""Run states never lie: SIGTERM -> KILLED, a failing sweep job -> FAILED, parents and children.

The signal tests stop a real ``ltr train`` process (``slow``); the sweeps that end by themselves
run ``ltr train`` in this process (:func:`ltr.cli.main.main`): the process boundary is not what
they check.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.tracking.mlflow_tracker import MlflowTracker
from tests.conftest import FORCED_SPLIT_NO_ROW_TAKES

#: The log line ``ltr train`` (and a launcher's worker) writes to stdout as LightGBM's boosting starts.
TRAINING_STARTS = "[ltr.training.local][INFO] - training "
#: What none of these tests is about: one boosting thread (a run trained until a signal keeps one
#: core busy, not all), no progress bar, the valid split only (the one they read), no model artifact.
QUIET = ("fit.num_threads=1", "fit.show_progress=false", "eval.splits=[valid]", "tracking.log_model=false")


def _runs(uri: str) -> list:  # type: ignore[type-arg]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


def _ltr_train(
    *args: str, cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """``ltr train ARGS`` in ``cwd``, in this process: (exit code, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = ltr_main(["train", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


class _Lines:
    """What a process writes to one pipe, read by a thread as it comes (so that a test can wait
    for a line, and no pipe fills while it waits)."""

    def __init__(self, stream: Iterable[str]) -> None:
        self.lines: list[str] = []
        self.ended = False
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Iterable[str]) -> None:
        for line in stream:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float, *, n: int = 1) -> bool:
        """Whether ``n`` lines holding ``text`` came within ``timeout`` seconds (False: the pipe
        ended first)."""

        def seen() -> bool:
            return sum(text in line for line in self.lines) >= n

        with self.changed:
            self.changed.wait_for(lambda: self.ended or seen(), timeout)
            return seen()

    def text(self) -> str:
        """All of it, once the pipe ended."""
        self.thread.join(timeout=300)
        return "".join(self.lines)


def _start(
    *args: str, cwd: Path, new_session: bool = False
) -> tuple[subprocess.Popen[str], _Lines, _Lines]:
    """``ltr train ARGS`` as its own process: the process, its stdout and its stderr as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=new_session,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stderr is not None
    return proc, _Lines(proc.stdout), _Lines(proc.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signals", "exit_code"),
    [
        ((signal.SIGTERM,), 143),
        ((signal.SIGTERM, signal.SIGTERM), 143),
        ((signal.SIGINT, signal.SIGINT), 130),
    ],
    ids=["sigterm", "sigterm-twice-5ms", "ctrl-c-twice-5ms"],
)
def test_signals_mid_training_mark_run_killed(
    tmp_path: Path, signals: tuple[signal.Signals, ...], exit_code: int
) -> None:
    """A second signal 5 ms after the first cannot leave the run RUNNING."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowTracker(uri, "ltr")  # create the store first, so reading it never races its creation
    proc, stdout_lines, stderr_lines = _start(
        "debug=default", f"tracking.uri={uri}", "fit.num_boost_round=100000", "fit.early_stopping_rounds=null",
        "model.learning_rate=0.001", *QUIET, cwd=tmp_path,
    )  # fmt: skip
    try:
        # generous: only a broken start waits it out (a busy machine imports slowly)
        if not stdout_lines.wait_for(TRAINING_STARTS, timeout=600):
            pytest.fail(f"training never started: {stderr_lines.text()[-2000:]}")
        runs = _runs(uri)
        assert runs
        assert runs[0].info.status == "RUNNING"
        time.sleep(0.5)  # boosting is under way
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.005)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = stderr_lines.text()
    assert proc.returncode == exit_code, stderr[-2000:]
    (run,) = _runs(uri)
    assert f"run {run.info.run_id} is marked KILLED" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr
    assert run.info.status == "KILLED"
    assert ("Terminated" if exit_code == 143 else "KeyboardInterrupt") in run.data.tags["ltr.error"]


def test_multirun_parent_with_children_and_best_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, stdout, stderr = _ltr_train(
        "-m",
        "debug=default",
        "model.num_leaves=3,7",
        f"tracking.uri={uri}",
        *QUIET,
        cwd=tmp_path,
        capsys=capsys,
        monkeypatch=monkeypatch,
    )
    assert code == 0, stderr[-3000:]
    assert (
        stdout.strip()
        .splitlines()[-1]
        .startswith("ltr: sweep of 2 jobs: 2 finished, 0 failed, 0 refused; parent")
    )
    runs = _runs(uri)
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    assert len(children) == 2
    parent = parents[0]
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    assert {c.data.params["model.num_leaves"] for c in children} == {"3", "7"}
    assert all(r.info.status == "FINISHED" for r in runs)
    best = max(c.data.metrics["valid/ndcg_at_10"] for c in children)
    assert parent.data.metrics["sweep/best/valid/ndcg_at_10"] == best
    assert parent.data.metrics["sweep/n_jobs"] == 2


def test_failing_job_does_not_hide_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs 1 and 3 fail inside LightGBM (a forced split no row takes: runs FAILED); jobs 0 and 2 run."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    splits = tmp_path / "forced.json"
    splits.write_text(json.dumps(FORCED_SPLIT_NO_ROW_TAKES))
    code, stdout, stderr = _ltr_train(
        "-m", "debug=default", "fit.early_stopping_metric=ndcg@10,ndcg@5",
        f"+model.params.forcedsplits_filename=null,{splits}", f"tracking.uri={uri}", *QUIET,
        cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch,
    )  # fmt: skip
    assert code == 1, stderr[-3000:]
    runs = _runs(uri)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    statuses = sorted(r.info.status for r in children)
    assert statuses == ["FAILED", "FAILED", "FINISHED", "FINISHED"], statuses
    metrics = parent.data.metrics
    assert (metrics["sweep/n_jobs"], metrics["sweep/n_finished"], metrics["sweep/n_failed"]) == (
        4,
        2,
        2,
    )
    assert (metrics["sweep/n_refused"], metrics["sweep/n_killed"], metrics["sweep/n_not_run"]) == (
        0,
        0,
        0,
    )
    assert (
        "sweep: 4 jobs: 2 finished, 2 failed\n" in stdout
    )  # the table's counts are the last line's
    summary = stderr.strip().splitlines()[-1]
    assert summary.startswith(
        "ltr: sweep of 4 jobs: 2 finished, 2 failed, 0 refused; parent run http"
    ), summary
    assert parent.info.run_id in summary
    finished = [r for r in children if r.info.status == "FINISHED"]
    top = max(r.data.metrics["valid/ndcg_at_10"] for r in finished)
    best_ids = {r.info.run_id for r in finished if r.data.metrics["valid/ndcg_at_10"] == top}
    best_url = summary.rsplit("; best run ", 1)[1]
    assert best_url.startswith(
        f"http://127.0.0.1:5000/#/experiments/{parent.info.experiment_id}/runs/"
    )
    assert best_url.split("/runs/")[1].split("?")[0] in best_ids
    assert parent.info.status == "FAILED"
    assert "right_count" in parent.data.tags["ltr.error"]
    assert not any(r.info.status == "RUNNING" for r in runs)


def test_old_file_store_mlruns_in_cwd_does_not_break_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mlruns" / "0").mkdir(parents=True)
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text(
        "artifact_location: mlruns/0\nname: Default\n"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")
    code, _, stderr = _ltr_train(
        "debug=default", *QUIET, cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch
    )
    assert code == 0, stderr[-3000:]
    (run,) = _runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert run.info.status == "FINISHED"


@pytest.mark.slow
def test_an_interrupted_sweep_counts_the_jobs_it_never_started(tmp_path: Path) -> None:
    """Ctrl-C in job 0 of 3: the parent is KILLED and counts 1 killed, 2 not run (3 jobs, not 1)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowTracker(uri, "ltr")  # create the store first, so reading it never races its creation
    proc, stdout_lines, stderr_lines = _start(
        "-m", "debug=default", "seed=1,2,3", f"tracking.uri={uri}", "fit.num_boost_round=100000",
        "fit.early_stopping_rounds=null", "model.learning_rate=0.001", *QUIET, cwd=tmp_path,
    )  # fmt: skip
    try:
        if not stdout_lines.wait_for(TRAINING_STARTS, timeout=600):  # job 0 trains
            pytest.fail(f"job 0 never started: {stderr_lines.text()[-2000:]}")
        assert any(
            "mlflow.parentRunId" in r.data.tags and r.info.status == "RUNNING" for r in _runs(uri)
        )
        time.sleep(0.5)  # boosting is under way
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    stdout, stderr = stdout_lines.text(), stderr_lines.text()
    assert proc.returncode == 130, stderr[-2000:]
    (parent,) = [r for r in _runs(uri) if r.data.tags.get("ltr.role") == "sweep"]
    assert parent.info.status == "KILLED"
    metrics = parent.data.metrics
    assert (metrics["sweep/n_jobs"], metrics["sweep/n_killed"], metrics["sweep/n_not_run"]) == (
        3,
        1,
        2,
    )
    assert "sweep: 3 jobs: 0 finished, 0 failed, 1 killed, 2 not run\n" in stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "to_group", "exit_code"),
    [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
    ids=["ctrl-c-to-the-terminals-group", "sigterm-to-ltr-alone"],
)
def test_a_stopped_joblib_sweep_leaves_no_run_running(
    tmp_path: Path, sig: signal.Signals, to_group: bool, exit_code: int
) -> None:
    """Ctrl-C (the whole process group, as a terminal sends it: the loky workers get it too) or
    SIGTERM to ``ltr train`` alone, while two joblib workers train: every run ends KILLED before
    the command exits, and the last line names each child run it marked (joblib kills its
    workers with SIGKILL when the interrupt reaches it, often before they end their runs)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowTracker(uri, "ltr")  # create the store first, so reading it never races its creation
    proc, stdout_lines, stderr_lines = _start(
        "-m", "debug=default", "seed=1,2,3", "fit.num_threads=1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        f"tracking.uri={uri}", "fit.num_boost_round=100000", "fit.early_stopping_rounds=null",
        "model.learning_rate=0.001", "fit.show_progress=false", cwd=tmp_path, new_session=True,
    )  # fmt: skip
    try:
        # generous: only a broken start waits it out
        if not stdout_lines.wait_for(TRAINING_STARTS, timeout=600, n=2):
            pytest.fail(f"the sweep's jobs never started: {stderr_lines.text()[-2000:]}")
        running = [
            r
            for r in _runs(uri)
            if "mlflow.parentRunId" in r.data.tags and r.info.status == "RUNNING"
        ]
        assert len(running) == 2
        time.sleep(0.5)  # boosting is under way in both
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=300)
    finally:  # nothing of the group outlives the test (a launcher's workers neither)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stdout, stderr = stdout_lines.text(), stderr_lines.text()
    assert proc.returncode == exit_code, stderr[-2000:]
    runs = _runs(uri)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2, "job 2 waits for a free worker"
    assert [r.info.status for r in runs] == ["KILLED"] * 3, [
        (r.info.run_name, r.info.status) for r in runs
    ]
    (line,) = [
        line
        for line in stderr.splitlines()
        if line.startswith("ltr: interrupted" if exit_code == 130 else "ltr: terminated")
    ]
    for child in children:
        assert child.data.tags["ltr.error"], "a KILLED run says why"
        if child.data.tags["ltr.error"].endswith(
            "(its sweep was stopped)"
        ):  # ended by the launching process
            assert f"run {child.info.run_id} ({child.info.run_name}) is marked KILLED" in line
    assert "RUNNING" not in stdout, "the sweep's summary lists no job as running"
    assert "Traceback" not in stderr
