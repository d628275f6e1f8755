"""Stop signals (SIGINT, SIGTERM) as a command meets them: recorded, raised at safe points, held
back while something must be done whole, and final once the command's work is done.

:func:`stop_signals_recorded` is the block a verb runs in; :func:`raise_if_stop_requested` the
safe points; :func:`signals_deferred` holds them back (a rename of several files, a run's end);
:func:`committing` is the block that makes a command's work final. The run lifecycle
(:mod:`ltr.tracking.lifecycle`) ends runs with them; the writers of files (``ltr.data``,
``ltr.models``, ``ltr.dask``) commit with them.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ltr.errors import Terminated

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


