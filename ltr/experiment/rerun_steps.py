"""Steps of ``ltr rerun`` around the run itself: the config folders it is composed from
(:func:`config_dirs`), the store it is logged in (:func:`target_store`), the opening of its
description (:func:`describe_rerun`) and a metric that moved (:func:`describe_difference`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ltr.config import search_path
from ltr.errors import LtrUserError
from ltr.experiment.rerun import rerun_note
from ltr.tracking import find_tracking_uri
from ltr.tracking.runs import RunRecord, RunStore
from ltr.tracking.sqlite.lock import sqlite_store_lock

__all__ = ["config_dirs", "describe_difference", "describe_rerun", "target_store"]


def describe_difference(old: float, new: float) -> str:
    """A metric key that moved: ``old -> new (+delta)``, or the one side that has it."""
    if math.isnan(old) != math.isnan(new):
        return f"only in the {'rerun' if math.isnan(old) else 'source run'} ({new if math.isnan(old) else old:.6g})"
    return f"{old:.6g} -> {new:.6g} ({new - old:+.6g})"


def target_store(store: RunStore, overrides: list[str]) -> RunStore:
    """The store the rerun is logged in: ``store`` (the one the source run was read from) unless
    a ``tracking.uri=`` override names another."""
    given = [o.split("=", 1)[1] for o in overrides if o.startswith("tracking.uri=")]
    if not given or find_tracking_uri(given[-1]) == store.uri:
        return store
    return RunStore(find_tracking_uri(given[-1]))


def config_dirs(given: Sequence[str] | None, overrides: Sequence[str], source: RunRecord, label: str) -> list[str]:
    """The config folders the rerun is composed with: ``given`` (``--config-dir``; none when the
    overrides give ``hydra.searchpath``), else those the source run (``label``) recorded, which
    must still exist."""
    if given or any(o.lstrip("+~").startswith("hydra.searchpath=") for o in overrides):
        return list(given or [])
    recorded = search_path.decode(source.tags.get(search_path.TAG))
    gone = search_path.missing(recorded)
    if gone:
        raise LtrUserError(
            f"run {label} was trained with the config folder {gone[0]}, which is gone "
            f"(tag {search_path.TAG}); pass --config-dir DIR with its options (model/..., local/...)"
        )
    return recorded


def describe_rerun(
    target: RunStore,
    rerun: RunRecord,
    source: RunRecord,
    differences: list[tuple[str, float, float]] | None,
    n_keys: int,
    changes: list[str],
    *,
    same_store: bool,
) -> None:
    """Open the rerun's description (``mlflow.note.content``) with :func:`ltr.experiment.rerun.rerun_note`."""
    note = rerun_note(source, differences, n_keys=n_keys, changes=changes, same_store=same_store)
    summary = rerun.tags.get("mlflow.note.content", "")
    with sqlite_store_lock(target.uri):
        target.client.set_tag(rerun.run_id, "mlflow.note.content", f"{note}\n\n{summary}" if summary else note)
