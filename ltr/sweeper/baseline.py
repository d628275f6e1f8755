"""The named baseline run of ``sweep.constraints`` (``sweep.baseline``), read from the store."""

from __future__ import annotations

from ltr.errors import LtrUserError
from ltr.experiment.spec import ExperimentSpec
from ltr.tracking.store import check_tracking_uri


def baseline_metrics(spec: ExperimentSpec) -> dict[str, float]:
    """The metrics of the run ``sweep.baseline`` names (a run id, name or id prefix in the
    experiment; see :mod:`ltr.tracking.runs`); a ``LtrUserError`` when there is no such run."""
    from ltr.tracking.runs import RunStore  # MLflow: only for a named baseline

    tracking = spec.config.tracking
    if not tracking.enabled:
        raise LtrUserError("sweep.baseline names a run, but tracking is off: turn it on, or drop sweep.baseline")
    ref = str(spec.config.sweep.baseline)
    try:
        store = RunStore(check_tracking_uri(tracking.uri, writable=False))
        run = store.resolve(ref, experiment=tracking.experiment)
    except LtrUserError as exc:
        raise LtrUserError(f"sweep.baseline={ref!r}: {exc}") from exc
    return store.metrics(run)
