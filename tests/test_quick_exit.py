"""`ltr.cli.quick_exit`: the ``ltr`` process ends without the module teardown, losing nothing.

Each test runs a real interpreter: the exit handlers ran, the output is complete, the exit code is
the one asked for; another thread is waited for; the teardown (seen by a finalizer that writes a
file) is skipped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from ltr.cli.quick_exit import exit_now

out = Path(sys.argv[1])

class Finalized:  # its __del__ runs only in the interpreter's teardown of this module
    def __del__(self):
        (out / "torn-down").write_text("yes")

keep = Finalized()
atexit.register(lambda: (out / "exit-handler").write_text("ran"))
if sys.argv[2] == "thread":
    def late():
        time.sleep(0.5)
        (out / "thread").write_text("done")
    threading.Thread(target=late, name="writer").start()
sys.stdout.write("no newline, still buffered")
exit_now(3)
"""


@pytest.mark.slow
@pytest.mark.parametrize("other_thread", [False, True], ids=["alone", "a-thread-alive"])
def test_exit_handlers_run_output_is_complete_and_the_code_kept(other_thread: bool, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), "thread" if other_thread else "alone"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == "no newline, still buffered"
    assert done.stderr == ""
    assert (tmp_path / "exit-handler").read_text() == "ran"
    if other_thread:  # waited for, as the normal exit waits
        assert (tmp_path / "thread").read_text() == "done"
    assert not (tmp_path / "torn-down").exists()  # the quick exit: no teardown


@pytest.mark.slow
def test_ltr_train_exits_quickly_with_its_log_and_run_complete(tmp_path: Path) -> None:
    """A real ``ltr train``: exit 0, Hydra's job log ends with the run's last line (flushed by
    the exit handlers), the MLflow run is FINISHED."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "ltr", "train", "debug=default", f"tracking.uri={uri}", "hydra.run.dir=out"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = (tmp_path / "out").glob("*.log")
    assert "[ltr.experiment.run][INFO] - time: " in log.read_text().splitlines()[-1]
    assert done.stdout.splitlines()[-1].startswith("MLflow run ")
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])  # type: ignore[union-attr]
    assert run.info.status == "FINISHED"
