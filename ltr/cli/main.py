"""The ``ltr`` command: a verb, its arguments, one exit-code policy.

Each verb lives in its own module (:data:`VERB_MODULES`), imported only when that verb runs so
``ltr --help`` stays fast; each runs through the one skeleton of :mod:`ltr.cli.support.verb`.
"""

from __future__ import annotations

import difflib
import importlib
import os
import signal
import sys
from types import FrameType
from typing import ClassVar, NoReturn

from ltr.cli.support import output_layer as layer
from ltr.cli.support.gc_policy import collect_rarely
from ltr.cli.support.quick_exit import exit_now
from ltr.cli.support.verb import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_USER_ERROR, failure_code, say
from ltr.errors import Terminated
from ltr.runtime.stops import quiet_unraisable, stop_signals_recorded
from ltr.runtime.terminal import OutputStream, printable

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_FAILED", "EXIT_USER_ERROR", "VERBS", "main", "printable", "run"]

VERBS = ("train", "rerun", "predict", "explain", "promote", "evaluate", "compare", "abtest", "ope", "calibrate", "exposure", "labels", "cache", "partition", "data", "ui", "completion")
#: Each verb's module, imported only when it runs; the before-traffic verbs live in :mod:`ltr.cli.online`.
VERB_MODULES = {v: f"ltr.cli.online.{v}" if v in {"abtest", "ope", "calibrate", "exposure"} else f"ltr.cli.{v}" for v in VERBS}

#: Verbs run with SIGINT / SIGTERM recorded (:func:`ltr.runtime.stops.stop_signals_recorded`): the first
#: stops the verb (exit 130 / 143, one line) even where its exception was swallowed; ``train`` (before
#: Hydra, for a launcher) and ``partition`` install the same handlers themselves, ``ui`` stops its server.
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
    with layer.output_layer() as (out, _err):
        code = _guarded_main(args, out)
    return code


def _guarded_main(args: list[str], out: OutputStream) -> int:
    """:func:`main` inside the output layer: the verb, then its output flushed, every failure
    one line and its exit code."""
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # a full device or a gone reader shows at the flush: here, not at exit
    except OSError as exc:
        failed = layer.output_failed(out, exc)
        if failed is None:
            raise
        return failed
    failed = layer.output_failed(out)  # a write error that a log handler swallowed
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
    module = importlib.import_module(VERB_MODULES[verb])
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
    except BrokenPipeError:
        if not layer.stdout_closed():  # another pipe (a child process, a socket): not the reader of our output
            raise
        return layer.drop_stdout()
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError) and layer.stdout_is_devnull():
            return EXIT_BROKEN_PIPE  # rich's Console.on_broken_pipe: the same recipe, then SystemExit(1)
        raise
    except BaseException as exc:  # the skeleton's one policy (ltr.cli.support.verb): a user error, a stop, a full device
        failed = failure_code(exc)
        if failed is None:
            raise
        return failed
    close = difflib.get_close_matches(verb, VERBS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    say(f"ltr: error: unknown command {printable(repr(verb))}; {hint}commands: {', '.join(VERBS)} (ltr --help)")
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
        code = layer.drop_stdout()
    except OSError as exc:
        layer.drop_stdout()
        say(f"ltr: error: cannot write to standard output: {printable(str(exc))}")
        code = EXIT_FAILED
    exit_now(code)


if __name__ == "__main__":
    run()
