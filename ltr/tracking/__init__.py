"""Run tracking. mlflow is imported only when a store is used (not by this package's import).

:func:`make_tracker` returns a :class:`Tracker`: the MLflow one, or a :class:`NullTracker` that
logs nothing (``tracking=none``, unit tests).
"""

from __future__ import annotations

from ltr.tracking.base import NullTracker, RunStatus, Tracker
from ltr.tracking.store import check_tracking_uri
from ltr.tracking.uri import default_tracking_uri, resolve_tracking_uri

__all__ = [
    "NullTracker",
    "RunStatus",
    "Tracker",
    "check_tracking_uri",
    "default_tracking_uri",
    "make_tracker",
    "resolve_tracking_uri",
]


def make_tracker(enabled: bool, uri: str | None, experiment: str) -> Tracker:
    """The tracker a ``tracking`` config asks for; mlflow is imported only when enabled.

    The URI is checked first (`check_tracking_uri`): a bad one fails in seconds with one line.
    """
    if not enabled:
        return NullTracker()
    checked = check_tracking_uri(uri)
    from ltr.tracking.mlflow_tracker import MlflowTracker

    return MlflowTracker(checked, experiment)
