"""Run states never lie: SIGTERM -> KILLED, a failing sweep job -> FAILED, parents and children."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.tracking.mlflow_tracker import MlflowTracker
from tests.conftest import FORCED_SPLIT_NO_ROW_TAKES

pytestmark = pytest.mark.slow


def _runs(uri: str) -> list:  # type: ignore[type-arg]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


def _ltr(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ltr", "train", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


@pytest.mark.parametrize(
    ("signals", "exit_code"),
    [((signal.SIGTERM,), 143), ((signal.SIGTERM, signal.SIGTERM), 143), ((signal.SIGINT, signal.SIGINT), 130)],
    ids=["sigterm", "sigterm-twice-5ms", "ctrl-c-twice-5ms"],
)
def test_signals_mid_training_mark_run_killed(
    tmp_path: Path, signals: tuple[signal.Signals, ...], exit_code: int
) -> None:
    """A second signal 5 ms after the first cannot leave the run RUNNING."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowTracker(uri, "ltr")  # create the store first, so polling it never races its creation
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", f"tracking.uri={uri}", "fit.num_boost_round=100000",
         "fit.early_stopping_rounds=null", "model.learning_rate=0.001"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 600  # generous: only a broken start waits it out (a busy machine imports slowly)
        while time.monotonic() < deadline:  # wait until the run exists and training is under way
            runs = _runs(uri)
            if runs and runs[0].info.status == "RUNNING":
                break
            time.sleep(0.5)
        else:
            pytest.fail("the run never started")
        time.sleep(2.0)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.005)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_code, stderr[-2000:]
    (run,) = _runs(uri)
    assert f"run {run.info.run_id} is marked KILLED" in stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr
    assert run.info.status == "KILLED"
    assert ("Terminated" if exit_code == 143 else "KeyboardInterrupt") in run.data.tags["ltr.error"]


def test_multirun_parent_with_children_and_best_value(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = _ltr("-m", "debug=default", "model.num_leaves=3,7", f"tracking.uri={uri}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1].startswith("ltr: sweep of 2 jobs: 2 finished, 0 failed, 0 refused; parent")
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


def test_failing_job_does_not_hide_the_others(tmp_path: Path) -> None:
    """Jobs 1 and 3 fail inside LightGBM (a forced split no row takes: runs FAILED); jobs 0 and 2 run."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    splits = tmp_path / "forced.json"
    splits.write_text(json.dumps(FORCED_SPLIT_NO_ROW_TAKES))
    proc = _ltr(
        "-m", "debug=default", "fit.early_stopping_metric=ndcg@10,ndcg@5",
        f"+model.params.forcedsplits_filename=null,{splits}", f"tracking.uri={uri}", cwd=tmp_path,
    )
    assert proc.returncode == 1
    runs = _runs(uri)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    statuses = sorted(r.info.status for r in children)
    assert statuses == ["FAILED", "FAILED", "FINISHED", "FINISHED"], statuses
    metrics = parent.data.metrics
    assert (metrics["sweep/n_jobs"], metrics["sweep/n_finished"], metrics["sweep/n_failed"]) == (4, 2, 2)
    assert (metrics["sweep/n_refused"], metrics["sweep/n_killed"], metrics["sweep/n_not_run"]) == (0, 0, 0)
    assert "sweep: 4 jobs: 2 finished, 2 failed\n" in proc.stdout  # the table's counts are the last line's
    summary = proc.stderr.strip().splitlines()[-1]
    assert summary.startswith("ltr: sweep of 4 jobs: 2 finished, 2 failed, 0 refused; parent run http"), summary
    assert parent.info.run_id in summary
    finished = [r for r in children if r.info.status == "FINISHED"]
    top = max(r.data.metrics["valid/ndcg_at_10"] for r in finished)
    best_ids = {r.info.run_id for r in finished if r.data.metrics["valid/ndcg_at_10"] == top}
    best_url = summary.rsplit("; best run ", 1)[1]
    assert best_url.startswith(f"http://127.0.0.1:5000/#/experiments/{parent.info.experiment_id}/runs/")
    assert best_url.split("/runs/")[1].split("?")[0] in best_ids
    assert parent.info.status == "FAILED"
    assert "right_count" in parent.data.tags["ltr.error"]
    assert not any(r.info.status == "RUNNING" for r in runs)


def test_old_file_store_mlruns_in_cwd_does_not_break_a_run(tmp_path: Path) -> None:
    (tmp_path / "mlruns" / "0").mkdir(parents=True)
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text("artifact_location: mlruns/0\nname: Default\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ltr", "train", "debug=default"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env={**os.environ, "MLFLOW_TRACKING_URI": ""},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = _runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert run.info.status == "FINISHED"


def test_an_interrupted_sweep_counts_the_jobs_it_never_started(tmp_path: Path) -> None:
    """Ctrl-C in job 0 of 3: the parent is KILLED and counts 1 killed, 2 not run (3 jobs, not 1)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowTracker(uri, "ltr")  # create the store first, so polling it never races its creation
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "-m", "seed=1,2,3", f"tracking.uri={uri}", "fit.num_boost_round=100000",
         "fit.early_stopping_rounds=null", "model.learning_rate=0.001"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # wait until job 0's run exists and trains
            if any("mlflow.parentRunId" in r.data.tags and r.info.status == "RUNNING" for r in _runs(uri)):
                break
            time.sleep(0.5)
        else:
            pytest.fail("job 0 never started")
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    (parent,) = [r for r in _runs(uri) if r.data.tags.get("ltr.role") == "sweep"]
    assert parent.info.status == "KILLED"
    metrics = parent.data.metrics
    assert (metrics["sweep/n_jobs"], metrics["sweep/n_killed"], metrics["sweep/n_not_run"]) == (3, 1, 2)
    assert "sweep: 3 jobs: 0 finished, 0 failed, 1 killed, 2 not run\n" in stdout


def _wait_for_running_children(uri: str, n: int, proc: subprocess.Popen[str]) -> None:
    """Poll the store until ``n`` child runs are RUNNING (their jobs are training)."""
    deadline = time.monotonic() + 600  # generous: only a broken start waits it out
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ltr train ended early: {proc.communicate()[1][-2000:]}")
        children = [r for r in _runs(uri) if "mlflow.parentRunId" in r.data.tags and r.info.status == "RUNNING"]
        if len(children) >= n:
            return
        time.sleep(0.5)
    pytest.fail("the sweep's jobs never started")


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
    MlflowTracker(uri, "ltr")  # create the store first, so polling it never races its creation
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "-m", "debug=default", "seed=1,2,3", "fit.num_threads=1",
         "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"tracking.uri={uri}", "fit.num_boost_round=100000",
         "fit.early_stopping_rounds=null", "model.learning_rate=0.001", "fit.show_progress=false"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_for_running_children(uri, 2, proc)
        time.sleep(1.0)
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=300)
    finally:  # nothing of the group outlives the test (a launcher's workers neither)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == exit_code, stderr[-2000:]
    runs = _runs(uri)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2, "job 2 waits for a free worker"
    assert [r.info.status for r in runs] == ["KILLED"] * 3, [(r.info.run_name, r.info.status) for r in runs]
    (line,) = [line for line in stderr.splitlines() if line.startswith("ltr: interrupted" if exit_code == 130 else "ltr: terminated")]
    for child in children:
        assert child.data.tags["ltr.error"], "a KILLED run says why"
        if child.data.tags["ltr.error"].endswith("(its sweep was stopped)"):  # ended by the launching process
            assert f"run {child.info.run_id} ({child.info.run_name}) is marked KILLED" in line
    assert "RUNNING" not in stdout, "the sweep's summary lists no job as running"
    assert "Traceback" not in stderr
