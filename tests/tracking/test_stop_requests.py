"""A stop signal whose exception is swallowed (a garbage-collection callback) still stops the run."""

from __future__ import annotations

import signal
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.tracking import RunStatus
from ltr.tracking.lifecycle import Terminated, raise_if_stop_requested, stop_signals, tracked_run
from ltr.tracking.mlflow_tracker import MlflowTracker


@pytest.fixture
def no_stop_requested() -> Iterator[None]:
    stop_signals.clear()
    yield
    stop_signals.clear()


class _Owner:
    pass


def _on_collect(_: object) -> None:
    """What a signal handler raising inside a garbage-collection callback looks like."""
    stop_signals.append(signal.SIGTERM)
    raise Terminated("signal 15")  # Python reports it as "Exception ignored in ..." and goes on


def _swallowed_signal_inside_a_run(tracker: MlflowTracker, started: list[str | None]) -> None:
    with tracked_run(tracker, "swallowed", {}) as run_id:
        started.append(run_id)
        owner = _Owner()
        ref = weakref.ref(owner, _on_collect)
        del owner  # the callback runs; its exception is swallowed, the block goes on
        assert ref() is None


@pytest.mark.usefixtures("no_stop_requested")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_sigterm_ends_the_run_killed_at_the_next_safe_point(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr")
    started: list[str | None] = []
    with pytest.raises(Terminated):
        _swallowed_signal_inside_a_run(tracker, started)
    (run_id,) = started
    assert run_id is not None
    run = MlflowClient(tracker.uri).get_run(run_id)
    assert run.info.status == RunStatus.KILLED.value
    assert run.data.tags["ltr.error"] == "Terminated: interrupted"


@pytest.mark.usefixtures("no_stop_requested")
def test_stop_requests_raise_what_the_signal_means() -> None:
    raise_if_stop_requested()  # nothing received: nothing raised
    stop_signals.append(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        raise_if_stop_requested()
    stop_signals[:] = [signal.SIGTERM, signal.SIGINT]
    with pytest.raises(Terminated, match="signal 15"):
        raise_if_stop_requested()
