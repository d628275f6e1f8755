"""The check of an Optuna search's pruner (``hydra.sweeper.pruner``), run before the sweep's parent run exists.

Called from the sweep's start checks (:mod:`ltr.cli.sweeps.checks`); imports Optuna (searches only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltr.errors import LtrUserError
from ltr.sweeper.link import make_pruner

#: The options of the ``hydra/sweeper/pruner`` group (:mod:`ltr.config.groups.sweeper`).
PRUNERS = ("median", "threshold")


def check_pruner(pruner: Any) -> None:
    """Refuse a pruner setting Optuna cannot build, in one line (``pruner``: the plain value of
    ``hydra.sweeper.pruner``: None, or a ``_target_`` mapping).

    >>> check_pruner(None)
    >>> check_pruner({"_target_": "optuna.pruners.MedianPruner", "n_startup_trials": 5})
    >>> check_pruner("median2")
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: hydra.sweeper.pruner='median2' is not a pruner: pick one with hydra/sweeper/pruner=median or threshold (or hydra.sweeper.pruner=null: no pruning)
    """
    how = f"hydra/sweeper/pruner={' or '.join(PRUNERS)} (or hydra.sweeper.pruner=null: no pruning)"
    if pruner is None:
        return
    if not isinstance(pruner, Mapping) or "_target_" not in pruner:
        raise LtrUserError(f"hydra.sweeper.pruner={pruner!r} is not a pruner: pick one with {how}")
    target = str(pruner["_target_"])
    try:
        make_pruner(pruner)
    except Exception as exc:
        cause: BaseException = exc
        while cause.__cause__ is not None:  # Hydra's instantiate wraps the pruner's own error
            cause = cause.__cause__
        detail = str(cause).strip().splitlines()[0].rstrip(".") if str(cause).strip() else type(cause).__name__
        hint = ""
        if target.endswith("ThresholdPruner") and pruner.get("lower") is None and pruner.get("upper") is None:
            hint = "; give hydra.sweeper.pruner.lower=<value> (or .upper=<value>)"
        raise LtrUserError(f"hydra.sweeper.pruner ({target}): {detail}{hint}") from exc
