"""The one skeleton of every ``ltr`` verb: parse, run its work, the exit code of what went wrong.

A verb module of :mod:`ltr.cli` parses its arguments and prints; its work is one call into the
library below ``cli/``. Its ``main`` is one line::

    def main(argv: list[str] | None = None) -> int:
        return run_verb(argv, build_parser(), _run)

:func:`run_verb` parses ``argv`` (``sys.argv[1:]`` when None); ``--help`` (argparse's
``SystemExit``) returns its code, 0, without running the work nor importing it. Then the work
runs (``work(args)``, its exit code), with the root logger on the terminal when ``log_level`` is
given. A user error, a stop or a full device propagates: an in-process caller (a test, a script)
sees the exception; the dispatcher (:mod:`ltr.cli.main`) turns it into one line and its exit code
with :func:`failure_code`, the one exit-code policy of every verb. What a verb prints goes to
``sys.stdout`` / ``sys.stderr``, which the dispatcher has made the output layer
(:mod:`ltr.cli.support.output_layer`: control characters escaped, write errors kept).

This module imports no more than argparse and logging: ``ltr --help`` and a verb's ``--help``
stay fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TypeVar, overload

from ltr.cli.support.console_log import console_logging
from ltr.errors import DeviceFull, LtrUserError, ServerFault, Terminated
from ltr.runtime.terminal import printable

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "EXIT_USER_ERROR",
    "failure_code",
    "run_verb",
    "say",
]

EXIT_FAILED = 1  # the command could not do its work: a full device (its output, a run's store), a server down
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as git and coreutils end when their reader has gone

A = TypeVar("A")


@overload
def run_verb(
    argv: Sequence[str] | None,
    parse: argparse.ArgumentParser,
    work: Callable[[argparse.Namespace], int],
    *,
    intermixed: bool = False,
    log_level: int | None = None,
) -> int: ...


@overload
def run_verb(
    argv: Sequence[str] | None,
    parse: Callable[[list[str]], A],
    work: Callable[[A], int],
    *,
    intermixed: bool = False,
    log_level: int | None = None,
) -> int: ...


def run_verb(
    argv: Sequence[str] | None,
    parse: argparse.ArgumentParser | Callable[[list[str]], object],
    work: Callable[..., int],
    *,
    intermixed: bool = False,
    log_level: int | None = None,
) -> int:
    """Run a verb: ``work(parse(argv))``, its exit code.

    ``parse`` is the verb's argument parser (``parse_intermixed_args`` when ``intermixed``: options
    and positionals in any order) or a function of the argument list (``ltr train``'s checks
    before Hydra). A ``SystemExit`` while parsing (``--help``, or a plain argparse error) returns
    its code. ``log_level``: the root logger writes records of that level and above to stderr for
    the work's duration (:func:`ltr.cli.support.console_log.console_logging`).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        if isinstance(parse, argparse.ArgumentParser):
            args: object = parse.parse_intermixed_args(args_list) if intermixed else parse.parse_args(args_list)
        else:
            args = parse(args_list)
    except SystemExit as exc:  # --help: printed, nothing to run
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if log_level is None:
        return int(work(args))  # the overloads pair parse's result with work's argument
    with console_logging(log_level):
        return int(work(args))


def say(line: str) -> None:
    """One line on stderr; nothing when stderr itself cannot take it."""
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _notes(exc: BaseException) -> str:
    """What was done about an interruption (``run ... is marked KILLED``), as ``; ...`` text."""
    notes = getattr(exc, "__notes__", None) or []
    return "".join(f"; {note}" for note in notes)


def failure_code(exc: BaseException) -> int | None:
    """The exit code of a verb that raised ``exc``, its one line said on stderr; None when
    ``exc`` is not a verb's expected failure (the caller re-raises it).

    A user error (:class:`LtrUserError`, :class:`DataError`): ``ltr: error: ...``, 2 (1 for a
    server that failed, :class:`ServerFault`); a full device: 1; Ctrl-C: ``ltr: interrupted``,
    130; SIGTERM: ``ltr: terminated (SIGTERM)``, 143 (with what was done about it, e.g. the run
    marked KILLED)."""
    if isinstance(exc, LtrUserError):
        say(f"ltr: error: {printable(str(exc))}")
        return EXIT_FAILED if isinstance(exc, ServerFault) else EXIT_USER_ERROR
    if isinstance(exc, DeviceFull):
        say(f"ltr: error: {printable(str(exc))}")
        return EXIT_FAILED
    if isinstance(exc, KeyboardInterrupt):
        say(f"ltr: interrupted{printable(_notes(exc))}")
        return EXIT_INTERRUPTED
    if isinstance(exc, Terminated):
        say(f"ltr: terminated (SIGTERM){printable(_notes(exc))}")
        return EXIT_TERMINATED
    return None
