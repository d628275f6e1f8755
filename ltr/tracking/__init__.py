"""Run tracking. Only :mod:`ltr.tracking.mlflow_tracker` imports mlflow.

:func:`make_tracker` returns a :class:`Tracker`: the MLflow one, or a :class:`NullTracker` that
logs nothing (``tracking=none``, unit tests).
"""

from __future__ import annotations

from ltr.tracking.base import NullTracker, RunStatus, Tracker
from ltr.tracking.uri import default_tracking_uri, resolve_tracking_uri

__all__ = [
    "NullTracker",
    "RunStatus",
    "Tracker",
    "default_tracking_uri",
    "make_tracker",
    "resolve_tracking_uri",
]


def make_tracker(enabled: bool, uri: str | None, experiment: str) -> Tracker:
    """The tracker a ``tracking`` config asks for; mlflow is imported only when enabled."""
    if not enabled:
        return NullTracker()
    from ltr.tracking.mlflow_tracker import MlflowTracker

    return MlflowTracker(resolve_tracking_uri(uri), experiment)
