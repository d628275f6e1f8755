"""The output layer of every ``ltr`` command: its standard streams for the command's duration,
and the exit code of a failed write to standard output.

:func:`output_layer` makes ``sys.stdout`` and ``sys.stderr`` :class:`ltr.runtime.terminal.OutputStream`s
(control characters of names, paths and values escaped, the first write error kept);
:func:`output_failed` is the exit code of standard output's failure (141 when its reader has
gone, as git and coreutils end; 1 with one line when the device is full).
"""

from __future__ import annotations

import logging
import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ltr.cli.support.verb import EXIT_BROKEN_PIPE, EXIT_FAILED, say
from ltr.errors import is_full
from ltr.runtime.terminal import OutputStream, guarded, printable

__all__ = ["drop_stdout", "output_failed", "output_layer", "stdout_closed", "stdout_is_devnull"]


def stdout_closed() -> bool:
    """True when standard output is a pipe whose reader has gone (``ltr ... | head -1``): a
    write to it would fail with ``EPIPE``."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file behind sys.stdout (a test's capture)
        return False


def drop_stdout() -> int:
    """Point standard output at the null device, so that nothing left in its buffer fails again
    when the process exits (the recipe of Python's ``signal`` docs, "Note on SIGPIPE"); returns
    :data:`EXIT_BROKEN_PIPE`."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real file behind sys.stdout (a test's capture)
        return EXIT_BROKEN_PIPE
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (AttributeError, OSError, ValueError):
        return False


@contextmanager
def output_layer() -> Iterator[tuple[OutputStream, OutputStream]]:
    """For the command's duration: ``sys.stdout`` and ``sys.stderr`` as :class:`OutputStream`s
    (control characters escaped, the first write error kept), and log handlers that fail on a
    closed or full stream quietly (no ``--- Logging error ---`` traceback: the command ends with
    that fault's exit code instead)."""
    saved, raise_exceptions = (sys.stdout, sys.stderr), logging.raiseExceptions
    out, err = guarded(sys.stdout), guarded(sys.stderr)
    sys.stdout, sys.stderr = out, err
    logging.raiseExceptions = False
    # MLflow logs each failed SQL statement with its traceback, then raises it: ltr says it in one line
    sql_log = logging.getLogger("mlflow.store.db.utils")
    sql_level = sql_log.level
    sql_log.setLevel(logging.CRITICAL)
    try:
        yield out, err
    finally:
        sql_log.setLevel(sql_level)
        logging.raiseExceptions = raise_exceptions
        if (sys.stdout, sys.stderr) == (out, err):
            sys.stdout, sys.stderr = saved


def output_failed(out: OutputStream, exc: OSError | None = None) -> int | None:
    """The exit code of a failed write to standard output: 141 when its reader has gone, 1 with
    one line when the device is full; None when ``exc`` is not standard output's failure."""
    failure = out.failure
    if failure is None or (exc is not None and not out.raised_by(exc)):
        return None
    if isinstance(failure, BrokenPipeError):
        return drop_stdout()
    reason = "the device is full" if is_full(failure) else (failure.strerror or type(failure).__name__)
    drop_stdout()
    say(f"ltr: error: cannot write to standard output: {reason} ({printable(str(failure))})")
    return EXIT_FAILED
