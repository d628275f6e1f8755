"""A Dask worker killed during a job: one line, a non-zero exit, the run FAILED, never a hang.

Real worker processes (``dask_client``'s LocalCluster) killed with SIGKILL, as the OOM killer
does; no mock of Dask or LightGBM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from distributed import KilledWorker
from distributed.client import FutureCancelledError
from distributed.comm.core import CommClosedError
from mlflow.tracking import MlflowClient

from ltr.config.schema import TrainerConfig
from ltr.dask.train import dask_client
from ltr.errors import LtrUserError

pytestmark = pytest.mark.slow

LOST = "a Dask worker was lost during the job on the cluster"


def _sleep_on(rows: list[int], seconds: float) -> int:
    time.sleep(seconds)
    return len(rows)


def _kill_the_worker_under_a_task() -> float:
    """Kill (SIGKILL) the worker that holds a task's data while the task runs there, then wait
    for the task inside ``dask_client``'s block; the monotonic time of the kill."""
    with dask_client(TrainerConfig(n_workers=2, threads_per_worker=1)) as client:
        pids: dict[str, int] = client.run(os.getpid)
        worker = sorted(pids)[0]
        # data held by that worker and a task pinned to it, as trainer=dask places a machine's
        # partitions and its training task
        rows = client.scatter([1, 2, 3], workers=[worker], hash=False)
        task: Any = client.submit(_sleep_on, rows, 60, workers=[worker], allow_other_workers=False, pure=False)
        deadline = time.monotonic() + 30
        while not client.processing(workers=[worker])[worker] and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(pids[worker], signal.SIGKILL)
        killed = time.monotonic()
        task.result(timeout=50)
    return killed


def test_a_worker_killed_under_its_task_is_one_error_naming_what_happened() -> None:
    started = time.monotonic()
    with pytest.raises(LtrUserError, match=LOST) as raised:
        _kill_the_worker_under_a_task()
    assert time.monotonic() - started < 75  # not the task's 60 s after the kill: the loss is seen
    assert "\n" not in str(raised.value)
    assert isinstance(raised.value.__cause__, FutureCancelledError | KilledWorker | CommClosedError)


def test_ltr_train_with_a_worker_killed_mid_training_exits_2_and_its_run_is_failed(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "trainer=dask", "data.n_queries=300", "fit.num_boost_round=100000",
         "fit.early_stopping_rounds=null", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    linked = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "total number of machines: 2" in line:  # LightGBM's network is up: boosting
                linked.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert linked.wait(timeout=120), "".join(lines[-20:])
        workers = [
            p for p in psutil.Process(proc.pid).children(recursive=True)
            if "spawn_main" in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline())
        ]
        assert len(workers) >= 2, [p.cmdline() for p in workers]
        workers[0].send_signal(signal.SIGKILL)
        assert proc.wait(timeout=120) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        reader.join(timeout=30)
    out = "".join(lines)
    assert "Traceback" not in out
    errors = [line for line in lines if line.startswith("ltr: error:")]
    assert len(errors) == 1, out[-3000:]
    assert LOST in errors[0]
    [run] = MlflowClient(f"sqlite:///{db}").search_runs(["1"])
    assert run.info.status == "FAILED"
    assert LOST in run.data.tags["ltr.error"]
