"""A run as read from a store (:class:`RunRecord`), and what its status says: no MLflow import,
so readers that do not need MLflow (:mod:`ltr.tracking.sqlite.local_runs`) share them with
:mod:`ltr.tracking.runs`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as read from the store: identity, status and tags."""

    run_id: str
    run_name: str
    experiment_id: str
    status: str
    tags: Mapping[str, str]

    @property
    def short_id(self) -> str:
        return self.run_id[:8]


def unfinished(status: str) -> str:
    """What a run's status says about how it ended, for a run that did not finish."""
    return {
        "KILLED": "was killed (status KILLED: interrupted before it finished)",
        "FAILED": "failed (status FAILED)",
        "RUNNING": "is still running, or its process died (status RUNNING)",
    }.get(status, f"did not finish (status {status})")
