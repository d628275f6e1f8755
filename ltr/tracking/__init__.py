"""Run tracking. mlflow is imported only when a store is used (not by this package's import).

:func:`make_tracker` returns a :class:`Tracker`: the MLflow one, or a :class:`NullTracker` that
logs nothing (``tracking=none``, unit tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ltr.tracking.base import NullTracker, RunStatus, Tracker
from ltr.tracking.uri import default_tracking_uri, find_tracking_uri, resolve_tracking_uri

if TYPE_CHECKING:
    from ltr.tracking.liveness.heartbeat import Liveness
    from ltr.tracking.store import check_tracking_uri

__all__ = [
    "NullTracker",
    "RunStatus",
    "Tracker",
    "check_tracking_uri",
    "default_tracking_uri",
    "find_tracking_uri",
    "make_tracker",
    "open_tracker",
    "resolve_tracking_uri",
]


def make_tracker(enabled: bool, uri: str | None, experiment: str, *, liveness: Liveness | None = None) -> Tracker:
    """The tracker a ``tracking`` config asks for; mlflow is imported only when enabled.

    The URI is checked first (`check_tracking_uri`): a bad one fails in seconds with one line.
    ``liveness``: the runs' heartbeat (:mod:`ltr.tracking.liveness.heartbeat`; None: the defaults).
    """
    from ltr.tracking.store import check_tracking_uri

    return open_tracker(check_tracking_uri(uri) if enabled else None, experiment, liveness=liveness)


def open_tracker(checked_uri: str | None, experiment: str, *, liveness: Liveness | None = None) -> Tracker:
    """The MLflow tracker of a URI `check_tracking_uri` returned, or a `NullTracker` for None."""
    if checked_uri is None:
        return NullTracker()
    from ltr.tracking.mlflow_tracker import MlflowTracker

    return MlflowTracker(checked_uri, experiment, liveness=liveness)


def __getattr__(name: str) -> Any:
    """``ltr.tracking.check_tracking_uri`` from :mod:`ltr.tracking.store` on first use (PEP 562):
    the store's network and database modules (ssl, urllib, sqlite3) are not for importing this
    package (:mod:`ltr.tracking.lifecycle`, which ``ltr train --help`` needs)."""
    if name == "check_tracking_uri":
        from ltr.tracking.store import check_tracking_uri

        return check_tracking_uri
    raise AttributeError(f"module 'ltr.tracking' has no attribute {name!r}")
