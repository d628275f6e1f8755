"""`ltr.cli.support.quick_exit`: the ``ltr`` process ends without the module teardown, losing nothing.

Each test runs a real interpreter: the exit handlers ran, the output is complete, the exit code is
the one asked for; another thread is waited for; the teardown (seen by a finalizer that writes a
file) is skipped.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import session_processes

SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from ltr.cli.support.quick_exit import exit_now

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


CHILDREN = """
import subprocess, sys
from multiprocessing import shared_memory
from ltr.cli.support.quick_exit import exit_now

subprocess.Popen(["sleep", "60"])  # still running at the exit
killed = subprocess.Popen(["sleep", "60"])
killed.kill()  # killed, never waited for: a zombie until reaped
leaked = shared_memory.SharedMemory(create=True, size=4096)  # starts the resource tracker
print(leaked.name, flush=True)
exit_now(0)
"""


@pytest.mark.slow
def test_no_child_outlives_the_exit_and_the_resource_tracker_cleans_up_first() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILDREN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert session_processes(proc.pid) == []  # the running child, the zombie and the tracker: all gone
    name = out.strip()
    assert name
    assert not Path("/dev/shm", name).exists()  # the tracker unlinked what was leaked before it ended
    assert "leaked shared_memory" in err  # and said so, as at a normal exit


HALF_MADE = """
import logging, logging.handlers, sys
from pathlib import Path
from ltr.cli.support.quick_exit import exit_now

class Interrupted(logging.NullHandler):
    def createLock(self):  # where a Ctrl-C during a library's import lands: registered, no lock yet
        raise KeyboardInterrupt

target = logging.FileHandler(Path(sys.argv[1]) / "log.txt")
buffered = logging.handlers.MemoryHandler(capacity=100, target=target)  # writes when it is closed
log = logging.getLogger("kept")
log.addHandler(buffered)
log.warning("held until logging's exit")
try:
    Interrupted()
except KeyboardInterrupt as exc:
    stop = exc  # the traceback keeps the half-made handler alive, as a recorded stop does
exit_now(130)
"""


@pytest.mark.slow
def test_a_handler_half_made_by_a_stop_signal_neither_prints_a_traceback_nor_loses_a_record(tmp_path: Path) -> None:
    """logging's exit closes handlers newest first: the half-made one (no lock) would raise there,
    with a traceback, and the buffered handler made before it would never write its record."""
    done = subprocess.run([sys.executable, "-c", HALF_MADE, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130
    assert done.stderr == ""
    assert (tmp_path / "log.txt").read_text() == "held until logging's exit\n"


POOL_SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor, thread as pools
from pathlib import Path
from ltr.cli.support.quick_exit import exit_now

out = Path(sys.argv[1])
busy = ThreadPoolExecutor(max_workers=1, thread_name_prefix="busy")
busy.submit(lambda: (__import__("time").sleep(0.5), (out / "busy").write_text("done")))
lost = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lost")
lost.submit(lambda: None).result()
# a stop signal's exception between the pool's start of its worker and the registration of its
# queue for the exit hook: what is left is an idle worker the hook cannot reach
(worker,) = lost._threads
del pools._threads_queues[worker]
sys.stdout.write("out")
exit_now(5)
"""


@pytest.mark.slow
@pytest.mark.parametrize("stdout", ["pipe", "full"])
def test_an_idle_pool_worker_a_stop_signal_kept_from_its_exit_hook_does_not_hang_the_exit(tmp_path: Path, stdout: str) -> None:
    """A thread pool's worker started but not yet registered for the pools' exit hook when a stop
    signal's exception landed (seen in ``ltr rerun`` under SIGTERM: MLflow's artifact pool) is
    released: the exit ends, with its code, and still waits for a pool worker that is busy; also
    the normal exit taken when stdout cannot be flushed (a full device: Python's own exit code)."""
    with open("/dev/full", "w") if stdout == "full" else contextlib.nullcontext(subprocess.PIPE) as out:
        done = subprocess.run(
            [sys.executable, "-c", POOL_SCRIPT, str(tmp_path)], stdout=out, stderr=subprocess.PIPE, text=True, timeout=60,
            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},  # the write stays in the buffer until the exit
        )  # fmt: skip
    if stdout == "pipe":
        assert (done.returncode, done.stdout, done.stderr) == (5, "out", "")
    else:
        assert done.returncode == 120, done.stderr  # Python's code for an exit whose flush failed
    assert (tmp_path / "busy").read_text() == "done"
