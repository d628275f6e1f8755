"""Runs trained in a test's own process draw their figures there (:func:`figures_in_this_process`)."""

from __future__ import annotations

import pytest

from ltr.experiment import run as pipeline


def figures_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run this test trains in its process draws its figures in that process: the path a
    run takes where no worker process can start (:func:`ltr.experiment.figures.figure_worker.start_worker`
    gives None), the same files (``tests/tracking/test_run_contents.py``). A worker per run is a
    Python start-up and its imports (about a CPU-second) that only shortens a run's wall time;
    ``tests/experiment/test_figure_worker.py`` tests the worker."""
    monkeypatch.setattr(pipeline, "start_worker", lambda: None)
