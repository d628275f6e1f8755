"""The figure worker (:mod:`ltr.experiment.figures.figure_worker`) and a run's figures through it
(:mod:`ltr.experiment.figures.run_figures`): the same PNG files as ``log_figure`` writes, every failure of
the worker drawn again in the run's process, and no worker outliving its run or its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

from ltr.experiment.figures import figure_worker
from ltr.experiment.figures.charts import plot_feature_importance, plot_ndcg_by_stratum
from ltr.experiment.figures.figure_worker import FigureWorker, start_worker
from ltr.experiment.figures.run_figures import RunFigures
from ltr.metrics import Strata, idcg_report, per_query_table
from ltr.metrics.clicks.exposure import exposure_report
from ltr.metrics.clicks.position_bias import position_bias_report, xgboost_bias
from ltr.metrics.clicks.propensity import PropensityEstimate
from ltr.metrics.plots import plot_exposure, plot_idcg_histogram, plot_position_bias
from ltr.tracking import NullTracker

TITLE = "num_leaves=7\nwhat the figure shows"

#: (artifact file, draw, args, kwargs) of every kind of figure a run logs.
Job = tuple[str, Callable[..., Figure], tuple[Any, ...], dict[str, Any]]


def _jobs() -> list[Job]:
    strata = Strata()
    summary = {"ndcg_at_10": 0.7, "n_queries": 3.0} | {f"ndcg_at_10/{key}": 0.6 for key in strata.keys}
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 5, 400)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(1, 30, 40))])
    offsets = offsets[offsets < 400]
    offsets = np.append(offsets, 400).astype(np.int64)
    table = per_query_table(labels, rng.normal(size=400), offsets, np.arange(offsets.size - 1), ks=(10,))
    exposure = exposure_report(rng.integers(0, 20, 500), rng.integers(0, 2, 500), 1.0 / np.arange(1, 21))
    given = 1.0 / np.arange(1, 21)
    bias = position_bias_report(
        PropensityEstimate(given, given, given, "given"), xgboost_bias([1.0, 0.6, 0.0, 0.3]), training="xgboost", truth=given
    )
    return [
        ("data/position_bias.png", plot_position_bias, (bias,), {"title": TITLE}),
        ("idcg/valid/hist_at_10.png", plot_idcg_histogram, (idcg_report(table, 10),), {"title": TITLE}),
        ("data/exposure.png", plot_exposure, (exposure,), {"title": TITLE, "eval_k": 10}),
        ("report/ndcg_by_stratum.png", plot_ndcg_by_stratum, ({"valid": summary, "test": summary},),
         {"ks": [10], "strata": strata, "title": TITLE}),
        ("feature_importance.png", plot_feature_importance, (np.arange(30.0), [f"f{i}" for i in range(30)]), {"title": TITLE}),
    ]  # fmt: skip


class FileTracker(NullTracker):
    """Our tracker protocol writing artifacts to a folder, as MLflow's local store does:
    ``log_figure`` saves the figure as MLflow's ``log_figure`` does (``figure.savefig(path)``)."""

    enabled = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.drawn_here: list[str] = []

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        path = self.root / artifact_file
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path)
        self.drawn_here.append(artifact_file)

    def log_file(self, local_path: Path, artifact_dir: str | None = None) -> None:
        folder = self.root / (artifact_dir or "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / local_path.name).write_bytes(local_path.read_bytes())


def _in_process(tmp_path: Path, jobs: list[Job]) -> dict[str, bytes]:
    expected = FileTracker(tmp_path / "expected")
    for artifact_file, draw, args, kwargs in jobs:
        expected.log_figure(draw(*args, **kwargs), artifact_file)
    return {name: (expected.root / name).read_bytes() for name, *_ in jobs}


@pytest.fixture(scope="module")
def expected_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files ``log_figure`` writes for every job of :func:`_jobs`, drawn in this process
    once (the tests only read them; a draw of the same arguments writes the same bytes)."""
    return _in_process(tmp_path_factory.mktemp("expected"), _jobs())


@pytest.fixture
def worker() -> Iterator[FigureWorker]:
    started = start_worker()
    assert started is not None
    with started:
        yield started


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] not in {"Z", "X"}


def test_the_worker_writes_the_files_log_figure_writes(tmp_path: Path, worker: FigureWorker, expected_files: dict[str, bytes]) -> None:
    jobs = _jobs()
    tracker = FileTracker(tmp_path / "run")
    with RunFigures(worker) as figures:
        for artifact_file, draw, args, kwargs in jobs:
            figures.add(artifact_file, draw, *args, **kwargs)
        figures.log_to(tracker)
    assert tracker.drawn_here == []  # all four drawn by the worker
    for name, data in expected_files.items():
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tracker.root / name).read_bytes() == data, name
    assert worker.pid is None  # RunFigures closed it


def _raises(message: str) -> Figure:
    raise ValueError(message)


def test_a_draw_that_fails_in_the_worker_fails_in_the_run(tmp_path: Path, worker: FigureWorker, expected_files: dict[str, bytes]) -> None:
    """The worker's failure is not the error the run reports: the parent draws the figure
    itself and meets the real one (with its traceback); the figures before it are logged."""
    (first, *_rest) = _jobs()
    tracker = FileTracker(tmp_path / "run")
    with RunFigures(worker) as figures:
        figures.add(first[0], first[1], *first[2], **first[3])
        figures.add("broken.png", _raises, "no bars today")
        with pytest.raises(ValueError, match="no bars today"):
            figures.log_to(tracker)
    assert (tracker.root / first[0]).read_bytes() == expected_files[first[0]]
    assert tracker.drawn_here == []  # the broken one raised before it could be logged


def test_arguments_that_do_not_pickle_are_drawn_in_the_run(tmp_path: Path, worker: FigureWorker) -> None:
    def local_draw(scale: float) -> Figure:  # a local function does not pickle
        return plot_feature_importance(np.arange(5.0) * scale, list("abcde"), title=TITLE)

    tracker = FileTracker(tmp_path / "run")
    with RunFigures(worker) as figures:
        figures.add("feature_importance.png", local_draw, 2.0)
        figures.log_to(tracker)
    assert tracker.drawn_here == ["feature_importance.png"]
    want = FileTracker(tmp_path / "want")
    want.log_figure(plot_feature_importance(np.arange(5.0) * 2.0, list("abcde"), title=TITLE), "f.png")
    assert (tracker.root / "feature_importance.png").read_bytes() == (want.root / "f.png").read_bytes()


def test_a_killed_worker_leaves_every_figure_drawn_in_the_run(tmp_path: Path, worker: FigureWorker, expected_files: dict[str, bytes]) -> None:
    jobs = _jobs()
    pid = worker.pid
    assert pid is not None
    tracker = FileTracker(tmp_path / "run")
    with RunFigures(worker) as figures:
        figures.add(*jobs[0][:2], *jobs[0][2], **jobs[0][3])
        os.kill(pid, signal.SIGKILL)
        for artifact_file, draw, args, kwargs in jobs[1:]:
            figures.add(artifact_file, draw, *args, **kwargs)  # sent to a dying worker, or refused
        figures.log_to(tracker)
    assert sorted(tracker.drawn_here) == sorted(name for name, *_ in jobs)
    for name, data in expected_files.items():
        assert (tracker.root / name).read_bytes() == data, name
    assert not _alive(pid)


def test_a_stopped_worker_is_given_up_and_its_figures_drawn_in_the_run(
    tmp_path: Path, worker: FigureWorker, monkeypatch: pytest.MonkeyPatch, expected_files: dict[str, bytes]
) -> None:
    """A worker that gives no answer (here: stopped with SIGSTOP, as a hung one) costs the run
    at most ``RESULT_TIMEOUT_S``: it is killed and every figure is drawn in the run."""
    monkeypatch.setattr(figure_worker, "RESULT_TIMEOUT_S", 1.0)
    jobs = _jobs()
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    tracker = FileTracker(tmp_path / "run")
    start = time.monotonic()
    with RunFigures(worker) as figures:
        for artifact_file, draw, args, kwargs in jobs:
            figures.add(artifact_file, draw, *args, **kwargs)  # frames are small: sending never waits
        figures.log_to(tracker)
    assert time.monotonic() - start < 30  # one timeout, not one per figure, nor forever
    assert sorted(tracker.drawn_here) == sorted(name for name, *_ in jobs)
    for name, data in expected_files.items():
        assert (tracker.root / name).read_bytes() == data, name
    assert not _alive(pid)


def test_the_worker_ignores_ctrl_c(tmp_path: Path, worker: FigureWorker, expected_files: dict[str, bytes]) -> None:
    """A Ctrl-C in a terminal reaches the whole process group: the run decides what it does
    (ends KILLED, closing the worker); the worker does not die under it."""
    pid = worker.pid
    assert pid is not None
    jobs = _jobs()[:2]
    assert worker.submit(jobs[1][1], jobs[1][2], jobs[1][3], tmp_path / "first.png")
    assert worker.result() is None  # serving: its handler is set
    os.kill(pid, signal.SIGINT)
    time.sleep(0.2)
    tracker = FileTracker(tmp_path / "run")
    with RunFigures(worker) as figures:
        figures.add(jobs[0][0], jobs[0][1], *jobs[0][2], **jobs[0][3])
        figures.log_to(tracker)
    assert tracker.drawn_here == []
    assert (tracker.root / jobs[0][0]).read_bytes() == expected_files[jobs[0][0]]
    assert not _alive(pid)


def test_the_folder_of_the_workers_files_is_removed(tmp_path: Path, worker: FigureWorker) -> None:
    jobs = _jobs()[:1]
    figures = RunFigures(worker)
    figures.add(jobs[0][0], jobs[0][1], *jobs[0][2], **jobs[0][3])
    folder = figures._folder
    assert folder is not None
    assert folder.is_dir()
    figures.close()  # never logged (the run failed before): the worker is closed first, then the folder goes
    assert not folder.exists()
    assert worker.pid is None


PARENT = """
import sys, time
from ltr.experiment.figures.figure_worker import start_worker
worker = start_worker()
print(worker.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_the_worker_ends_with_its_killed_parent() -> None:
    """A parent killed outright (SIGKILL: nothing of it runs) closes the worker's stdin with its
    death; the worker then exits by itself."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
