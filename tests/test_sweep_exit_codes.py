"""A sweep's exit code is one a CI can trust: 0 all finished, 1 a job failed, 2 all refused.

The subprocess cases are the five of issue 30 (a sweep whose every job is refused, and four
tracking URIs refused once, before the first job); each must exit 2 with one summary line, no
traceback, and leave no run behind.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ltr.cli.sweep_callback import summary_line, sweep_exit_code


@pytest.mark.parametrize(
    ("outcomes", "code"),
    [
        ([], 0),
        (["finished", "finished"], 0),
        (["refused", "refused"], 2),
        (["refused"], 2),
        (["finished", "failed"], 1),
        (["finished", "refused"], 1),
        (["failed", "refused"], 1),
        (["failed", "failed"], 1),
    ],
)
def test_exit_code_policy(outcomes: list[str], code: int) -> None:
    assert sweep_exit_code(outcomes) == code


def test_summary_line_counts_every_outcome_and_links_the_best_run() -> None:
    line = summary_line(["finished", "failed", "refused", "finished"], parent_url="P", best_url="B")
    assert line == "ltr: sweep of 4 jobs: 2 finished, 1 failed, 1 refused; parent run P; best run B"
    assert summary_line(["finished"]) == "ltr: sweep of 1 job: 1 finished, 0 failed, 0 refused"


def _sweep(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ltr", "train", "-m", "debug=default", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )


def _summary_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("ltr: ")]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("foo://bar", "unsupported scheme 'foo'"),
        ("http://127.0.0.1:9", "does not answer"),
        ("sqlite://", "in-memory sqlite"),
    ],
    ids=["unknown-scheme", "server-down", "sqlite-in-memory"],
)
def test_a_refused_tracking_uri_refuses_the_whole_sweep_before_its_first_job(tmp_path: Path, uri: str, says: str) -> None:
    proc = _sweep(tmp_path, "seed=1,2", f"tracking.uri={uri}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = _summary_lines(proc)
    assert line.startswith("ltr: error: the sweep is refused before its first job")
    assert says in line
    assert "Traceback" not in proc.stderr
    assert "Launching" not in proc.stderr, "no job may start"
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "multirun").exists()


@pytest.mark.slow
def test_a_sweep_whose_every_job_is_refused_exits_2(tmp_path: Path) -> None:
    """Issue 30's first case: every job refused by the checks; the parent run says so."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = _sweep(tmp_path, "seed=1,2", "eval.strata=[5]", f"tracking.uri={uri}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = _summary_lines(proc)
    assert line.startswith("ltr: sweep of 2 jobs: 0 finished, 0 failed, 2 refused; parent run http://"), line
    assert line.endswith("; no job finished")
    assert "Traceback" not in proc.stderr
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    (parent,) = runs  # no child run: both were refused before theirs existed
    assert parent.info.status == "FAILED"
    assert "eval.strata" in parent.data.tags["ltr.error"]
    assert parent.info.run_id in line


@pytest.mark.slow
def test_a_sweep_without_tracking_has_the_same_exit_codes(tmp_path: Path) -> None:
    """Tracking off: no parent run, the same policy: a job refused and one finished -> 1."""
    proc = _sweep(tmp_path, "tracking=none", "eval.k=[10],[0]", "fit.num_boost_round=3")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert _summary_lines(proc) == ["ltr: sweep of 2 jobs: 1 finished, 0 failed, 1 refused"]
