"""Load MLflow's logging code in a background thread while the data loads and the model trains.

A tracked ``ltr train`` spends about 2 s (idle 2-core machine) importing what it logs with:
MLflow and its SQLAlchemy store, MLflow's LightGBM flavour and model signatures (MLflow's map of
every installed distribution, which ``log_model`` would build to check the model's requirements,
is not needed: :func:`ltr.tracking.mlflow_tracker.requirement_check_of`). matplotlib is not
among them: the run's figures are drawn in a child process
(:mod:`ltr.experiment.figures.figure_worker`), which loads it on a core of its own.
None of it depends on the run: :class:`Preparation` does it in a thread started as soon as the
config is checked, and the runner waits for it (:meth:`Preparation.wait`) before it records the run.

What it may and may not do: it only imports modules; it writes nothing, opens no store and starts
no run, so the run's content and lifecycle are exactly those of a run without it. An error in the thread is logged (debug) and otherwise
ignored: the main thread then does the same work itself where it needs it, and reports any
error there as it always did.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


def _load() -> None:
    import ltr.tracking.mlflow_tracker  # noqa: F401  first: what opening the store needs

    _load_logging()


def _load_logging() -> None:
    import mlflow.lightgbm
    import mlflow.models  # noqa: F401  log_model's signature and MLmodel


class Preparation:
    """The background load (see the module docstring); :meth:`wait` before logging."""

    def __init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ltr-mlflow-load", daemon=True)
        self._thread.start()

    @staticmethod
    def _run() -> None:
        try:
            _load()
        except Exception:  # the main thread redoes what failed and reports it
            log.debug("ltr: loading MLflow in the background failed", exc_info=True)

    def wait(self) -> None:
        """Block until the background load has finished (at once when it has)."""
        self._thread.join()
