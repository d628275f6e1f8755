"""A sweep's exit code is one a CI can trust: 0 all finished, 1 a job failed, 2 all refused.

The subprocess cases: a sweep refused by its start checks (a mistake every job shares or only
one has, a repeated key, a search setting) and tracking URIs refused once, before the first
job; each must exit 2 with one line, no traceback, and leave no run behind.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ltr.cli.sweeps.callback import summary_line, sweep_exit_code
from tests.conftest import FORCED_SPLIT_NO_ROW_TAKES
from tests.processes import run_ltr


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
    assert summary_line(["finished", "failed"], parent_url="P") == (
        "ltr: sweep of 2 jobs: 1 finished, 1 failed, 0 refused; parent run P; no best run"
    )
    assert summary_line(["failed"], parent_url="P") == "ltr: sweep of 1 job: 0 finished, 1 failed, 0 refused; parent run P; no job finished"
    assert summary_line(["finished"] * 5, parent_url="P", cv=True) == (
        "ltr: sweep of 5 jobs: 5 finished, 0 failed, 0 refused; parent run P (the mean over the folds)"
    )


def _sweep(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ltr(["train", "-m", "debug=default", *args], cwd=tmp_path)


def _summary_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("ltr: ")]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("uri", "says", "code"),
    [
        ("foo://bar", "unsupported scheme 'foo'", 2),
        ("http://127.0.0.1:9", "does not answer", 1),  # a server down: no bad setting, exit 1
        ("sqlite://", "in-memory sqlite", 2),
    ],
    ids=["unknown-scheme", "server-down", "sqlite-in-memory"],
)
def test_a_refused_tracking_uri_refuses_the_whole_sweep_before_its_first_job(
    tmp_path: Path, uri: str, says: str, code: int
) -> None:
    proc = _sweep(tmp_path, "seed=1,2", f"tracking.uri={uri}")
    assert proc.returncode == code, proc.stderr[-2000:]
    (line,) = _summary_lines(proc)
    assert line.startswith("ltr: error: the sweep is refused before its first job")
    assert says in line
    assert "Traceback" not in proc.stderr
    assert "Launching" not in proc.stderr, "no job may start"
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "multirun").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["seed=1,2", "eval.strata=[5]"], "ltr: error: eval.strata=[5]: the first lower edge must be 1"),
        (["model.num_leaves=7,1"], "ltr: error: job 1 (model.num_leaves=1): model.num_leaves=1 is out of range"),
        (["model.num_leaves=7,15", "model.num_leaves=3,4"], "ltr: error: model.num_leaves is given twice"),
        (["hparams_search=optuna", "hydra.sweeper.pruner=median2"], "ltr: error: hydra.sweeper.pruner='median2' is not a pruner"),
        (["hparams_search=optuna", "sweep.constraints=['valid/ndcg_at_11 >= 0.7']"], "ltr: error: sweep.constraints[0]"),
    ],
    ids=["every-job", "one-job", "repeated-key", "pruner", "constraint"],
)  # fmt: skip
def test_a_refused_sweep_is_one_line_exit_2_and_leaves_no_run(tmp_path: Path, args: list[str], says: str) -> None:
    """A mistake every job shares, one only some jobs have, a repeated key, a search setting:
    refused by the start checks, before the parent run, the sweep's folder or any job exists."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = _sweep(tmp_path, *args, f"tracking.uri={uri}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = _summary_lines(proc)
    assert line.startswith(says), line
    assert "Traceback" not in proc.stderr
    assert "Launching" not in proc.stderr, "no job may start"
    assert not (tmp_path / "mlflow.db").exists(), "no parent run"
    assert not (tmp_path / "multirun").exists()


@pytest.mark.slow
def test_a_sweep_without_tracking_has_the_same_exit_codes(tmp_path: Path) -> None:
    """Tracking off: no parent run, the same policy: a job failed in LightGBM and one finished -> 1."""
    splits = tmp_path / "forced.json"
    splits.write_text(json.dumps(FORCED_SPLIT_NO_ROW_TAKES))
    proc = _sweep(tmp_path, "tracking=none", f"+model.params.forcedsplits_filename=null,{splits}", "fit.num_boost_round=3")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert _summary_lines(proc) == ["ltr: sweep of 2 jobs: 1 finished, 1 failed, 0 refused"]
