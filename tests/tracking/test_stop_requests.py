"""A stop signal whose exception is swallowed (a garbage-collection callback) still stops the run."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.errors import Terminated
from ltr.runtime.stops import (
    committing,
    on_stop_signal,
    raise_if_stop_requested,
    signals_deferred,
    stop_signal_wins,
    stop_signals,
    stop_signals_recorded,
)
from ltr.tracking import RunStatus
from ltr.tracking.lifecycle import tracked_run
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


def _swallowed_signal() -> None:
    owner = _Owner()
    ref = weakref.ref(owner, _on_collect)
    del owner  # the callback runs; its exception is swallowed, the block goes on
    assert ref() is None


def _error_in_a_run(tracker: MlflowTracker, started: list[str | None], error: Callable[[], None]) -> None:
    with tracked_run(tracker, "error-in-a-run", {}) as run_id:
        started.append(run_id)
        error()


def _run_end(tracker: MlflowTracker, started: list[str | None]) -> tuple[str, str]:
    """The status and ``ltr.error`` tag of the one run ``started`` holds, read from the store."""
    (run_id,) = started
    assert run_id is not None
    run = MlflowClient(tracker.uri).get_run(run_id)
    return run.info.status, run.data.tags["ltr.error"]


@pytest.mark.usefixtures("no_stop_requested")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_swallowed_sigterm_ends_the_run_killed_at_the_next_safe_point(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr")
    started: list[str | None] = []
    with pytest.raises(Terminated):
        _error_in_a_run(tracker, started, _swallowed_signal)
    assert _run_end(tracker, started) == (RunStatus.KILLED.value, "Terminated: interrupted")


@pytest.mark.usefixtures("no_stop_requested")
def test_stop_requests_raise_what_the_signal_means() -> None:
    raise_if_stop_requested()  # nothing received: nothing raised
    stop_signals.append(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        raise_if_stop_requested()
    stop_signals[:] = [signal.SIGTERM, signal.SIGINT]
    with pytest.raises(Terminated, match="signal 15"):
        raise_if_stop_requested()



def _a_signal_that_surfaces_as_another_error(sig: signal.Signals = signal.SIGTERM) -> None:
    """A real stop signal to this process while a C extension imports: the handler's exception
    is raised inside the import and CPython reports the import's failure instead (seen as
    ``ImportError: numba._devicearray failed to import`` under load)."""
    try:
        signal.raise_signal(sig)
    except (Terminated, KeyboardInterrupt) as exc:
        raise ImportError("numba._devicearray failed to import") from exc


def _plain_import_error() -> None:
    raise ImportError("no module named nowhere")


@pytest.fixture
def stop_handlers() -> Iterator[None]:
    """SIGINT/SIGTERM go to ``on_stop_signal`` as in ``ltr train``; restored after."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, on_stop_signal)
    stop_signals.clear()
    yield
    stop_signals.clear()
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("stop_handlers")
def test_a_stop_signal_wins_over_the_error_it_caused(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr")
    started: list[str | None] = []
    with pytest.raises(Terminated) as raised:
        _error_in_a_run(tracker, started, _a_signal_that_surfaces_as_another_error)
    assert isinstance(raised.value.__cause__, ImportError)  # the error it caused, kept as the cause
    assert f"run {started[0]} is marked KILLED" in (raised.value.__notes__ or [])
    assert _run_end(tracker, started) == (RunStatus.KILLED.value, "Terminated: interrupted")


@pytest.mark.usefixtures("stop_handlers")
def test_an_error_without_a_stop_signal_still_fails_the_run(tmp_path: Path) -> None:
    tracker = MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "ltr")
    started: list[str | None] = []
    with pytest.raises(ImportError, match="nowhere"):
        _error_in_a_run(tracker, started, _plain_import_error)
    assert _run_end(tracker, started) == (RunStatus.FAILED.value, "ImportError: no module named nowhere")


def _in_partitions_block() -> None:
    with stop_signals_recorded():
        _a_signal_that_surfaces_as_another_error(signal.SIGTERM)


def _in_trains_outer_block(error: Callable[[], None]) -> None:
    with stop_signal_wins():
        error()


@pytest.mark.usefixtures("no_stop_requested")
def test_outside_a_run_the_command_exits_as_interrupted() -> None:
    """``stop_signals_recorded`` (``ltr partition``) and ``stop_signal_wins`` (``ltr train``'s
    outer block): an error caused by a recorded signal leaves as the signal's exception."""
    with pytest.raises(Terminated):
        _in_partitions_block()
    assert not stop_signals  # the block clears its record
    previous = signal.signal(signal.SIGINT, on_stop_signal)
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            _in_trains_outer_block(lambda: _a_signal_that_surfaces_as_another_error(signal.SIGINT))
        assert isinstance(raised.value.__cause__, ImportError)
    finally:
        signal.signal(signal.SIGINT, previous)
        stop_signals.clear()
    with pytest.raises(ImportError, match="nowhere"):  # no signal recorded: the error as it is
        _in_trains_outer_block(_plain_import_error)


def test_a_signal_another_thread_takes_still_waits_for_the_end_of_the_block() -> None:
    """The main thread blocks SIGINT in the block, so the kernel hands a SIGINT sent to the
    process to another thread, and Python runs the handler in the main thread at once, block or
    not: the block's own handler holds it (``ltr partition`` once left its temporary directory
    behind when a Ctrl-C landed this way, between ``mkdtemp`` and keeping its name)."""
    handled: list[int] = []

    def handler(signum: int, frame: object) -> None:
        handled.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    idle = threading.Event()
    other = threading.Thread(target=idle.wait)  # started before the block: it does not block SIGINT
    other.start()
    steps: list[str] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            _sigint_in_a_deferred_block(steps)
        assert steps == ["the block ended"]
        assert handled == [signal.SIGINT]  # once, by the process's handler, after the block
        assert signal.getsignal(signal.SIGINT) is handler
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        idle.set()
        other.join()
        signal.signal(signal.SIGINT, previous)


def _sigint_in_a_deferred_block(steps: list[str]) -> None:
    with signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler would run here
        steps.append("the block ended")


def test_signals_at_any_moment_never_leave_the_mask_or_a_handler_behind() -> None:
    """A thread sends SIGINT to the process at random moments while the main thread enters and
    leaves deferred blocks under a raising handler (a Ctrl-C's KeyboardInterrupt). Whatever the
    moment (before the block, inside it, in its exit), the main thread never stays with the
    signals blocked (a blocked mask is inherited by every child process: an ``ltr train`` the
    suite started then ignored SIGTERM) nor with the block's recording handler installed."""
    armed = [False]

    def handler(signum: int, frame: object) -> None:
        if armed[0]:  # raises once per arming: the checks between iterations run undisturbed
            armed[0] = False
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    stop = threading.Event()
    pid = os.getpid()

    def send() -> None:
        rng = random.Random(7)
        while not stop.is_set():
            time.sleep(rng.uniform(0, 0.0004))
            os.kill(pid, signal.SIGINT)

    sender = threading.Thread(target=send)
    interrupted = 0
    try:
        sender.start()
        for _ in range(20000):
            try:
                armed[0] = True
                with signals_deferred():
                    sum(range(50))
                armed[0] = False
            except KeyboardInterrupt:
                interrupted += 1
            assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
            assert signal.getsignal(signal.SIGINT) is handler
    finally:
        stop.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the sender's last signals land nowhere
        sender.join()
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    assert interrupted > 20  # the signals did land, at many moments


def _rename_under_signal(tmp_path: Path, *, before: bool) -> tuple[BaseException | None, bool]:
    """In a recorded block, a SIGINT sent before :func:`committing` (or inside it, after the
    rename), then the block's end: (what left the block, whether the file was renamed)."""
    part, final = tmp_path / "out.partial", tmp_path / "out"
    part.write_text("done\n")
    try:
        with stop_signals_recorded():
            if before:
                with pytest.raises(KeyboardInterrupt):  # the exception swallowed, the signal recorded
                    signal.raise_signal(signal.SIGINT)
            with committing():
                os.replace(part, final)
                signal.raise_signal(signal.SIGINT)  # held to the block's end
            signal.raise_signal(signal.SIGINT)  # the work is final: recorded, stops nothing
        left: BaseException | None = None
    except BaseException as exc:
        left = exc
    return left, final.exists()


def test_a_stop_before_the_commit_renames_nothing_and_one_after_it_stops_nothing(tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    left, renamed = _rename_under_signal(tmp_path / "before", before=True)
    assert isinstance(left, KeyboardInterrupt)  # the swallowed first signal stops the commit
    assert not renamed
    left, renamed = _rename_under_signal(tmp_path / "after", before=False)
    assert left is None  # signals inside and after the commit: the command ends with its work done
    assert renamed
    assert not stop_signals  # the block clears its record ...
    with pytest.raises(KeyboardInterrupt), stop_signals_recorded():  # ... and the next block stops again
        signal.raise_signal(signal.SIGINT)
