"""MLflow's process-wide tracking and registry URIs, pointed at a store for one block only.

Some MLflow calls read the process-wide URIs rather than a client's: the fluent run that
``mlflow.lightgbm.log_model`` logs into, and the ``models:/m-...`` source a model version
resolves. ``mlflow.set_tracking_uri`` / ``set_registry_uri`` change them for the rest of the
process and export ``MLFLOW_TRACKING_URI`` / ``MLFLOW_REGISTRY_URI`` to its environment, so a
notebook that called ``ltr.api.train`` or ``apply_promotion`` would find its own MLflow
pointed elsewhere afterwards (and a later ``MlflowClient(uri)`` would use another store's
registry). :func:`pointed_at` sets them inside a ``with`` block and puts back, after it, the
module values and the environment variables exactly as they were (unset stays unset, a user's
value stays the user's).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import mlflow
from mlflow.tracking._model_registry import utils as registry_utils
from mlflow.tracking._tracking_service import utils as tracking_utils

TRACKING_ENV = "MLFLOW_TRACKING_URI"
REGISTRY_ENV = "MLFLOW_REGISTRY_URI"


@contextmanager
def pointed_at(uri: str, *, registry: bool = False) -> Iterator[None]:
    """MLflow's tracking URI (and with ``registry`` its registry URI) is ``uri`` inside the
    block; after it, both and their environment variables are as before (also on an error)."""
    saved_tracking = getattr(tracking_utils, "_tracking_uri", None)
    saved_registry = getattr(registry_utils, "_registry_uri", None)
    saved_env = {var: os.environ.get(var) for var in (TRACKING_ENV, REGISTRY_ENV)}
    try:
        mlflow.set_tracking_uri(uri)
        if registry:
            mlflow.set_registry_uri(uri)
        yield
    finally:
        if getattr(tracking_utils, "_tracking_uri", None) != saved_tracking:
            mlflow.set_tracking_uri(saved_tracking)  # type: ignore[arg-type]  # None: MLflow's default
        registry_utils._registry_uri = saved_registry
        for var, value in saved_env.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
