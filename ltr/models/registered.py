"""The run behind a registered model: ``models:/NAME@ALIAS``, ``models:/NAME/VERSION``, or a bare
registered model's name for its ``champion`` alias (:mod:`ltr.tracking.registered`, where run
references are resolved: every reader of a run takes them)."""

from __future__ import annotations

from ltr.tracking.registered import (
    CHAMPION,
    PREFIX,
    RUN_TAG,
    champion_run,
    is_registered,
    registered_run,
)

__all__ = ["CHAMPION", "PREFIX", "RUN_TAG", "champion_run", "is_registered", "registered_run"]
