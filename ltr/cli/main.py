"""The ``ltr`` command: a verb, its arguments, one exit-code policy.

Each verb lives in its own module of :mod:`ltr.cli` (``train``, ``evaluate``, ``compare``,
``exposure``, ``labels``, ``abtest``, ``cache``, ``partition``, ``data``, ``ui``, ``completion``, ...), imported only when that verb runs so ``ltr --help`` stays fast.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import select
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import ClassVar, NoReturn

from ltr.cli.support.gc_policy import collect_rarely
from ltr.cli.support.quick_exit import exit_now
from ltr.errors import DeviceFull, LtrUserError, ServerFault, Terminated, is_full
from ltr.runtime.stops import quiet_unraisable, stop_signals_recorded
from ltr.runtime.terminal import OutputStream, guarded, printable

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "EXIT_USER_ERROR", "VERBS", "main", "printable", "run"]

VERBS = ("train", "rerun", "predict", "explain", "promote", "evaluate", "compare", "abtest", "ope", "calibrate", "exposure", "labels", "cache", "partition", "data", "ui", "completion")
EXIT_FAILED = 1  # the command could not do its work: a full device (its output, a run's store), a server down
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as git and coreutils end when their reader has gone

#: Verbs run with SIGINT / SIGTERM recorded (:func:`ltr.runtime.stops.stop_signals_recorded`):
#: the first one stops the verb (exit 130 / 143, one line) even where its exception was swallowed
#: (a thread, a garbage-collection callback); ``train`` installs the same handlers itself (before
#: Hydra, for a sweep's launcher), ``partition`` records them around its own work, ``ui`` stops
#: its server on them.
SIGNALS_RECORDED = frozenset(VERBS) - {"train", "partition", "ui", "completion"}

USAGE = """usage: ltr <command> [args...]   (ltr --version: the versions of ltr and its engines)

commands:
  train [overrides...]   train and evaluate one experiment (Hydra app; -m for multirun, --help for config)
  rerun RUN [overrides]  run a logged run again (its overrides, plus yours), say what differs, compare
  predict RUN --data F   score data with a run's model, ranked as the run ranked (scores, TREC run, table); --help
  explain RUN --split S  why a run's model ranks as it does: TreeSHAP per document, importance per stratum, one query; --help
  promote RUN --name N   register a run's (or a sweep's best) model in the MLflow Model Registry; --help
  evaluate ...           evaluate rankings made elsewhere (TREC run, or data + scores); --help for options
  compare RUN [RUN ...]  compare runs per query and per stratum with paired significance tests; --help
  abtest A B             simulate an A/B test and interleaving of two click-log runs before any traffic; --help
  ope RUN --log F        estimate a run's CTR, clicks@k, purchase rate from a logged click log (IPS, SNIPS, DR); --help
  calibrate TABLE        what +0.1 offline has been worth online in past A/B tests (line, interval, p); --help
  exposure LOG           where a click log's exposure ends: share of clicks/examinations at <= k, K advice
  labels A B             audit two label sets of the same documents: agreement, kappa, NDCG moved; --help
  cache [info|clear]     show (entries, size, limit) or clear the cache of parsed data files; --help
  partition ...          write data files as the whole-query Parquet partitions data=parquet_partitions reads; --help
  data write NAME --out D  write a built-in data set (synthetic, synthetic_clicks) as files to try every command on; --help
  ui [--port N]          open the MLflow UI on 127.0.0.1 against the default local store
  completion bash        print the bash completion script of ltr (verbs; ltr train's groups, options, keys)
"""


class _Process:
    """The ``ltr`` process's own handling of SIGINT / SIGTERM, outside a verb's (:func:`run`)."""

    #: The verb has returned (or failed): its work and its exit code are decided.
    done = False
    #: The stop signals that came once it was done.
    held: ClassVar[list[int]] = []


def _stop_outside_verbs(signum: int, frame: FrameType | None) -> None:
    """Before a verb's work: stop (the dispatcher's 130 / 143 and its line). Once its work is
    done (its output flushed, the exit handlers running): the command ends as it was ending,
    with its code and its whole output; a second signal ends the process at once (130 / 143)."""
    if not _Process.done:
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()
    if _Process.held:
        os._exit(128 + signum)
    _Process.held.append(signum)


def _handle_stops_outside_verbs() -> None:
    """The process's own SIGINT / SIGTERM handlers (:func:`_stop_outside_verbs`); a stop that lands
    where it cannot raise (a garbage-collection callback, a ``__del__``, a ctypes callback of
    numba's compiler) is not printed as an "Exception ignored" traceback (:func:`quiet_unraisable`)."""
    sys.unraisablehook = quiet_unraisable
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop_outside_verbs)


def _notes(exc: BaseException) -> str:
    """What was done about an interruption (``run ... is marked KILLED``), as ``; ...`` text."""
    notes = getattr(exc, "__notes__", None) or []
    return "".join(f"; {note}" for note in notes)


def stdout_closed() -> bool:
    """True when standard output is a pipe whose reader has gone (``ltr ... | head -1``): a
    write to it would fail with ``EPIPE``."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file behind sys.stdout (a test's capture)
        return False


def _drop_stdout() -> int:
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


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (AttributeError, OSError, ValueError):
        return False


def main(argv: list[str] | None = None) -> int:
    """Dispatch a verb; the one exit-code policy of every ``ltr`` command.

    0 done; 1 some jobs of a sweep failed (listed above it), or a device was full (its output,
    ``ltr evaluate ... > /dev/full``; a run's store), said in one line; 2 a user error, printed
    as one line ``ltr: error: ...`` without a traceback; 130 interrupted (Ctrl-C); 143 terminated
    (SIGTERM); 141 its standard output was closed (a pipe whose reader ended early, ``ltr
    evaluate ... --json | head -1``): the command stops quietly, as git and coreutils do. An
    interrupted run says which run it marked KILLED. Everything the command prints goes
    through one output layer (:mod:`ltr.runtime.terminal`): control characters of names, paths and
    values are escapes, never bytes that drive the terminal.
    """
    args = sys.argv[1:] if argv is None else argv
    with _output_layer() as (out, _err):
        code = _guarded_main(args, out)
    return code


@contextmanager
def _output_layer() -> Iterator[tuple[OutputStream, OutputStream]]:
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


def _say(line: str) -> None:
    """One line on stderr; nothing when stderr itself cannot take it."""
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _output_failed(out: OutputStream, exc: OSError | None = None) -> int | None:
    """The exit code of a failed write to standard output: 141 when its reader has gone, 1 with
    one line when the device is full; None when ``exc`` is not standard output's failure."""
    failure = out.failure
    if failure is None or (exc is not None and not out.raised_by(exc)):
        return None
    if isinstance(failure, BrokenPipeError):
        return _drop_stdout()
    reason = "the device is full" if is_full(failure) else (failure.strerror or type(failure).__name__)
    _drop_stdout()
    _say(f"ltr: error: cannot write to standard output: {reason} ({printable(str(failure))})")
    return EXIT_FAILED


def _guarded_main(args: list[str], out: OutputStream) -> int:
    """:func:`main` inside the output layer: the verb, then its output flushed, every failure
    one line and its exit code."""
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # a full device or a gone reader shows at the flush: here, not at exit
    except OSError as exc:
        failed = _output_failed(out, exc)
        if failed is None:
            raise
        return failed
    failed = _output_failed(out)  # a write error that a log handler swallowed
    return code if failed is None else failed


def _verb(verb: str, rest: list[str]) -> int | None:
    """Run ``verb`` with its arguments ``rest``: its exit code; None for an unknown verb."""
    if verb in {"-h", "--help", "help"}:
        print(USAGE)
        return 0
    if verb in {"-V", "--version"}:
        from ltr.cli.support.version import version_line

        print(version_line())
        return 0
    if verb not in VERBS:
        return None
    module = importlib.import_module(f"ltr.cli.{verb}")  # a verb's module, only when it runs
    if verb == "completion":
        return int(module.main(rest, VERBS))
    return int(module.main(rest))


def _dispatch(args: list[str]) -> int:
    """Run the verb of ``args``; user errors and stops become their line and exit code."""
    verb, rest = (args[0], args[1:]) if args else ("", [])
    _Process.done = False
    try:
        if not args:
            print(USAGE)
            return EXIT_USER_ERROR
        if verb in SIGNALS_RECORDED:
            with stop_signals_recorded():
                code = _verb(verb, rest)
                _Process.done = code is not None  # a signal from here on: the work is done
        else:
            code = _verb(verb, rest)
        if code is not None:
            _Process.done = True  # from here a signal no longer stops it: its work is done
            return code
    except LtrUserError as exc:
        _say(f"ltr: error: {printable(str(exc))}")
        return EXIT_FAILED if isinstance(exc, ServerFault) else EXIT_USER_ERROR
    except DeviceFull as exc:
        _say(f"ltr: error: {printable(str(exc))}")
        return EXIT_FAILED
    except KeyboardInterrupt as exc:
        _say(f"ltr: interrupted{printable(_notes(exc))}")
        return EXIT_INTERRUPTED
    except Terminated as exc:
        _say(f"ltr: terminated (SIGTERM){printable(_notes(exc))}")
        return EXIT_TERMINATED
    except BrokenPipeError:
        if not stdout_closed():  # another pipe (a child process, a socket): not the reader of our output
            raise
        return _drop_stdout()
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError) and _stdout_is_devnull():
            return EXIT_BROKEN_PIPE  # rich's Console.on_broken_pipe: the same recipe, then SystemExit(1)
        raise
    close = difflib.get_close_matches(verb, VERBS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    _say(f"ltr: error: unknown command {printable(repr(verb))}; {hint}commands: {', '.join(VERBS)} (ltr --help)")
    return EXIT_USER_ERROR


def run() -> NoReturn:
    """The ``ltr`` command (console script and ``python -m ltr``): :func:`main` with the command
    line's arguments, then the process exits with its code (141 when the reader of its output
    has gone before the last of it was written), without the interpreter's module
    teardown when nothing can be lost by skipping it (:mod:`ltr.cli.support.quick_exit`). Its garbage
    collector runs full collections rarely (:mod:`ltr.cli.support.gc_policy`). A SIGINT / SIGTERM that
    comes once the verb's work is done (while its output is flushed, its exit handlers run)
    leaves its exit code and output as they are; a second one ends the process at once."""
    collect_rarely()
    _handle_stops_outside_verbs()  # what a verb's own handlers give back when its block ends
    code = main()
    _Process.done = True
    _handle_stops_outside_verbs()  # a verb that kept its own (ltr train's) gives them up
    try:
        sys.stdout.flush()  # what is still buffered: its reader may have gone too
    except BrokenPipeError:
        code = _drop_stdout()
    except OSError as exc:
        _drop_stdout()
        _say(f"ltr: error: cannot write to standard output: {printable(str(exc))}")
        code = EXIT_FAILED
    exit_now(code)


if __name__ == "__main__":
    run()
