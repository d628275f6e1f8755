"""The run lifecycle: every run that starts ends FINISHED, FAILED or KILLED, whatever interrupts it.

:func:`tracked_run` is the one way a job's run is started and ended; :func:`end_run` is the one
way any run (a sweep's parent too) is ended. Ending a run holds SIGINT and SIGTERM back (they are
delivered once the run's terminal state is written), so a second Ctrl-C or ``kill`` cannot leave
it RUNNING. A process killed outright (SIGKILL, the OOM killer) cannot end its run; its run is
found and marked KILLED the next time the store is opened (``ltr.tracking.store``).
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ltr.errors import DeviceFull, ServerFault, Terminated, full_device
from ltr.tracking.base import RunStatus, Tracker

_DEFERRED = {signal.SIGINT, signal.SIGTERM}
#: How often :func:`signals_deferred` tries to put a handler back while handlers raise.
_RESTORE_ATTEMPTS = 100


#: Stop signals received (SIGINT / SIGTERM), in order. A signal handler's exception can be
#: swallowed when it lands in a garbage-collection callback ("Exception ignored in ..."); the
#: signal is still recorded here, and :func:`raise_if_stop_requested` acts on it at the next
#: safe point (a boosting round, the start or end of a run, the end of the command).
stop_signals: list[int] = []


class _Work:
    """Whether the command's work is final (:func:`committing` ended inside a
    :func:`stop_signals_recorded` block, which clears it as it ends)."""

    recording = 0  # stop_signals_recorded blocks open (main thread)
    final = False


def stop_requested() -> KeyboardInterrupt | Terminated | None:
    """The exception of the first stop signal received: ``KeyboardInterrupt`` (SIGINT) or
    :class:`Terminated` (SIGTERM); None if none was, or once the command's work is final
    (:func:`committing`): a signal then stops nothing."""
    if not stop_signals or _Work.final:
        return None
    if stop_signals[0] == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"signal {stop_signals[0]}")


def raise_if_stop_requested() -> None:
    """Raise ``KeyboardInterrupt`` (SIGINT) or :class:`Terminated` (SIGTERM) if one was received."""
    stop = stop_requested()
    if stop is not None:
        raise stop


def as_stop(exc: BaseException) -> BaseException:
    """``exc``, or the recorded stop signal's exception when one was received (the caller raises
    it ``from exc``): a stop signal wins over the exception its handler caused. A handler's
    exception raised inside a C extension's import or callback comes out as another type
    (``ImportError: numba... failed to import``); the signal was recorded before, so the job
    still ends as interrupted."""
    stop = stop_requested()
    return exc if stop is None or isinstance(exc, KeyboardInterrupt | Terminated) else stop


def on_stop_signal(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT / SIGTERM stops the job (KeyboardInterrupt / Terminated); later ones are
    ignored, so a second Ctrl-C or ``kill`` cannot interrupt the clean-up. Every one is recorded
    in :data:`stop_signals` first, so an exception swallowed where it lands still stops."""
    stop_signals.append(signum)
    if len(stop_signals) > 1:
        return
    raise_if_stop_requested()  # nothing once the work is final


def quiet_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A stop signal that lands in a garbage-collection callback or ``__del__`` cannot raise
    there: say nothing (it is recorded and acted on at the next safe point); anything else as
    Python would."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt | Terminated):
        return
    sys.__unraisablehook__(unraisable)


@contextmanager
def stop_signal_wins() -> Iterator[None]:
    """An exception leaving the block once a stop signal was recorded becomes the stop's
    (:func:`as_stop`), so the command exits 130 / 143, not as the error the signal caused."""
    try:
        yield
    except BaseException as raised:
        exc = as_stop(raised)
        if exc is raised:
            raise
        raise exc from raised


@contextmanager
def stop_signals_recorded() -> Iterator[None]:
    """In the block, SIGINT and SIGTERM go to :func:`on_stop_signal` (starting from no recorded
    signal) and swallowed stop exceptions are not printed; handlers and hook are restored after,
    and the record is cleared (a signal recorded but swallowed in a block that then ended
    normally raises on the way out; an exception leaving the block after a recorded signal
    becomes the stop's, :func:`stop_signal_wins`).
    Callers check :func:`raise_if_stop_requested` before anything they cannot take back. Main
    thread only (elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stop_signals.clear()
    hook = sys.unraisablehook
    previous: dict[int, Any] = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    sys.unraisablehook = quiet_unraisable
    for sig in previous:
        signal.signal(sig, on_stop_signal)
    _Work.recording += 1
    try:
        with stop_signal_wins():
            yield
    finally:
        _Work.recording -= 1
        pending = [] if _Work.final else stop_signals[:1]
        _Work.final = _Work.final and _Work.recording > 0
        stop_signals.clear()  # nothing recorded here outlives the block (an in-process caller goes on)
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        sys.unraisablehook = hook
    if pending:  # recorded, swallowed, and the block ended normally: stop now
        stop_signals.extend(pending)
        try:
            raise_if_stop_requested()
        finally:
            stop_signals.clear()


@contextmanager
def committing() -> Iterator[None]:
    """The block that makes a command's work final: it renames its outputs into place.

    A stop signal recorded before the block stops the command here, with nothing renamed. One
    that comes during the block waits for its end (:func:`signals_deferred`): every rename of the
    block is done, or none. Inside :func:`stop_signals_recorded`, once the block ends without an
    error, a stop signal stops nothing more: the command ends with its work done and its exit
    code, as one stopped after it returned does (the exit codes' rule, ``docs/guide/errors.md``).
    A block that raises (a full device) leaves the work not final, and a held signal stops the
    command as before."""
    raise_if_stop_requested()
    with signals_deferred():
        yield
        if _Work.recording and threading.current_thread() is threading.main_thread():
            _Work.final = True


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back inside the block; after it, each one received is handled by
    the handler the process had (main thread only; elsewhere a no-op).

    Two parts, for a process of several threads (pyarrow's, Dask's, MLflow's): a signal sent to
    the process goes to a thread that does not block it, and Python then runs the handler in the
    main thread at its next instruction, whether the main thread blocks the signal or not. So
    the block's handlers only record what arrives, and the main thread also blocks the signals
    (no system call of the block is interrupted). After the block: the mask first (what was
    pending for the main thread reaches the recording handler), then the handlers (each put back
    even when a handler put back before it raises meanwhile), then each recorded signal is raised
    again (``signal.raise_signal``), as if it had arrived just then.

    Python runs pending handlers inside ``signal.signal`` (before the change) and
    ``signal.pthread_sigmask`` (after it): with a raising handler installed there, a block could
    be left with the signals blocked for good (and every process started after inherits the
    mask: a child ``ltr train`` that ignored SIGTERM). Here no raising handler is installed at
    any of those calls but the restores, which retry.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    swapped: dict[int, Any] = {}
    mask: set[int | signal.Signals] | None = None
    try:
        for sig in _DEFERRED:
            swapped[sig] = signal.signal(sig, hold)  # a handler raising here: nothing swapped yet for sig
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
        yield
    finally:
        _restore(mask, swapped, held)


def _restore(mask: set[int | signal.Signals] | None, swapped: dict[int, Any], held: list[int]) -> None:
    """:func:`signals_deferred`'s exit: the mask, the handlers, then the held signals."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the recording handler still installed
    raised: BaseException | None = None
    for sig, handler in swapped.items():
        for attempt in range(_RESTORE_ATTEMPTS):
            try:
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
                break
            except BaseException as exc:  # a handler already put back ran and raised before the change
                raised = raised or exc
                if attempt == _RESTORE_ATTEMPTS - 1:  # not a handler's: signal.signal itself fails
                    raise
    for sig in held:
        signal.raise_signal(sig)
    if raised is not None:
        raise raised


#: MLflow's message for an HTTP request to a tracking server that failed for good (refused,
#: timed out, or 5xx answers after its retries): the URL and the reason.
_SERVER_REQUEST = re.compile(r"API request to (\S+) failed with exception (.*)", re.S)
#: What urllib3's retry errors say, as a line says it: (found in the message, said).
_REASONS = (
    ("500 error responses", "too many 500 error responses"),
    ("Connection reset by peer", "connection reset by peer"),
    ("Connection refused", "connection refused"),
    ("timed out", "timed out"),
)
#: Reasons that mean the server answered and failed the request itself.
_SERVER_SIDE = frozenset({"too many 500 error responses", "connection reset by peer"})
_ARTIFACTS_PATH = re.compile(r"/mlflow-artifacts/artifacts/(?:[^/]+/){2}artifacts/(\S+)")


def server_fault(exc: BaseException) -> str | None:
    """What ``exc`` (or what caused it) says of a tracking server that failed a request after
    MLflow's retries, as one line naming the server and what it failed; None for anything else."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        found = _SERVER_REQUEST.search(str(cause)) if type(cause).__name__ == "MlflowException" else None
        if found is not None:
            url, reason = found.groups()
            base = url.split("/api/", 1)[0] if "/api/" in url else url
            why = next((said for known, said in _REASONS if known in reason), reason.strip().splitlines()[0][-200:])
            artifact = _ARTIFACTS_PATH.search(url)
            if artifact is not None and why in _SERVER_SIDE:  # it answered, and failed the upload
                return f"the MLflow server at {base} could not store the artifact {artifact.group(1)} ({why}): its artifact store may be full; see the server's log"
            what = f"the artifact {artifact.group(1)}" if artifact is not None else url.removeprefix(base)
            return f"the MLflow server at {base} failed a request ({what}: {why})"
        cause = cause.__cause__ or cause.__context__
    return None


def _end_failed(tracker: Tracker, error: str) -> bool:
    """End the run FAILED with ``error`` where the store can still take it (True); a store too
    full to record it, or a server that does not answer, is left as it is (False: the run stays
    RUNNING until a command that can write the store reaps it)."""
    try:
        end_run(tracker, RunStatus.FAILED, error=error)
    except Exception as exc:
        if full_device(exc) is None and server_fault(exc) is None:
            raise
        return False
    return True


def end_run(tracker: Tracker, status: RunStatus, *, error: str | None = None) -> None:
    """End ``tracker``'s run with ``status`` (and the ``ltr.error`` tag), signals deferred."""
    with signals_deferred():
        tracker.end_run(status, error=error)


def _start_run(tracker: Tracker, run_name: str, tags: Mapping[str, str], parent_run_id: str | None) -> str | None:
    """The new run's id (None without tracking); a store too full to hold it: :class:`DeviceFull`."""
    try:
        return tracker.start_run(run_name, tags, parent_run_id=parent_run_id) or None
    except Exception as refused:
        full = full_device(refused, store=getattr(tracker, "store_path", None))
        if full is None:
            raise
        raise DeviceFull(f"{full}; no run was created") from refused


@contextmanager
def tracked_run(
    tracker: Tracker,
    run_name: str,
    tags: Mapping[str, str],
    *,
    parent_run_id: str | None = None,
) -> Iterator[str | None]:
    """Start a run, yield its id (None without tracking), end it by how the block ended.

    FINISHED when the block returns, KILLED on ``KeyboardInterrupt`` / :class:`Terminated`
    or on any exception raised once a stop signal was recorded (:func:`as_stop`: the stop's
    exception is raised instead), FAILED on any other exception (its type and message become the
    ``ltr.error`` tag); the exception is re-raised, but for a write to a full device
    (:func:`full_device`): :class:`DeviceFull`, one line naming what was full, and for a
    request a tracking server failed for good (:func:`server_fault`): :class:`ServerFault`, one
    line naming the server and the request.
    """
    raise_if_stop_requested()
    started, run_id = False, None
    try:
        with signals_deferred():  # a signal held here is raised as the block ends: the run exists then
            run_id = _start_run(tracker, run_name, tags, parent_run_id)
            started = True
        yield run_id
        raise_if_stop_requested()  # a signal whose exception was swallowed: the run is KILLED
    except BaseException as raised:
        if not started:
            raise
        exc = as_stop(raised)
        if not isinstance(exc, KeyboardInterrupt | Terminated):
            full = full_device(exc, store=getattr(tracker, "store_path", None))
            if full is not None:  # one line naming what was full, not MLflow's SQL
                ended = _end_failed(tracker, f"DeviceFull: {full}")
                if run_id is not None:
                    full += f"; run {run_id} is marked FAILED" if ended else f"; run {run_id} could not be marked FAILED (the store is full)"
                raise DeviceFull(full) from raised
            fault = server_fault(exc)
            if fault is not None:  # one line naming the server, not MLflow's retry trace
                ended = _end_failed(tracker, f"ServerFault: {fault}")
                if run_id is not None:
                    fault += f"; run {run_id} is marked FAILED" if ended else f"; run {run_id} could not be marked FAILED (the server did not answer)"
                raise ServerFault(fault) from raised
            end_run(tracker, RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
            raise
        end_run(tracker, RunStatus.KILLED, error=f"{type(exc).__name__}: interrupted")
        if run_id is not None:
            exc.add_note(f"run {run_id} is marked KILLED")
        if exc is raised:
            raise
        raise exc from raised
    end_run(tracker, RunStatus.FINISHED)
