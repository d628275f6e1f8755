"""The ``ltr`` command: a verb, its arguments, one exit-code policy.

Each verb lives in its own module of :mod:`ltr.cli` (``train``, ``evaluate``, ``compare``,
``exposure``, ``labels``, ``abtest``, ``cache``, ``partition``, ``data``, ``ui``, ``completion``, ...), imported only when that verb runs so ``ltr --help`` stays fast.
"""

from __future__ import annotations

import difflib
import os
import select
import sys
import unicodedata
from typing import NoReturn

from ltr.cli.gc_policy import collect_rarely
from ltr.cli.quick_exit import exit_now
from ltr.errors import LtrUserError, Terminated

VERBS = ("train", "rerun", "predict", "promote", "evaluate", "compare", "abtest", "ope", "calibrate", "exposure", "labels", "cache", "partition", "data", "ui", "completion")
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as git and coreutils end when their reader has gone

USAGE = """usage: ltr <command> [args...]   (ltr --version: the versions of ltr and its engines)

commands:
  train [overrides...]   train and evaluate one experiment (Hydra app; -m for multirun, --help for config)
  rerun RUN [overrides]  run a logged run again (its overrides, plus yours), say what differs, compare
  predict RUN --data F   score data with a run's model, ranked as the run ranked (scores, TREC run, table); --help
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


def printable(text: str) -> str:
    """``text`` with its control characters (ESC, BEL, CR, newlines, ...) written as escapes
    (``\\x1b``): a message quoting a file's content (a TREC topic id) can never drive the
    terminal (set its title, clear it) or break the one line an error is."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) == "Cc" else ch for ch in text)


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
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (AttributeError, OSError, ValueError):
        return False


def main(argv: list[str] | None = None) -> int:
    """Dispatch a verb; the one exit-code policy of every ``ltr`` command.

    0 done; 1 some jobs of a sweep failed (listed above it); 2 a user error, printed as one
    line ``ltr: error: ...`` without a traceback; 130 interrupted (Ctrl-C); 143 terminated
    (SIGTERM); 141 its standard output was closed (a pipe whose reader ended early, ``ltr
    evaluate ... --json | head -1``): the command stops quietly, as git and coreutils do. An
    interrupted run says which run it marked KILLED.
    """
    args = sys.argv[1:] if argv is None else argv
    verb, rest = (args[0], args[1:]) if args else ("", [])
    try:
        if not args or verb in {"-h", "--help", "help"}:
            print(USAGE)
            return 0 if args else EXIT_USER_ERROR
        if verb in {"-V", "--version"}:
            from ltr.cli.version import version_line

            print(version_line())
            return 0
        if verb == "train":
            from ltr.cli.train import main as train_main

            return train_main(rest)
        if verb == "evaluate":
            from ltr.cli.evaluate import main as evaluate_main

            return int(evaluate_main(rest))
        if verb == "cache":
            from ltr.cli.cache import main as cache_main

            return int(cache_main(rest))
        if verb == "partition":
            from ltr.cli.partition import main as partition_main

            return partition_main(rest)
        if verb == "data":
            from ltr.cli.data import main as data_main

            return data_main(rest)
        if verb == "compare":
            from ltr.cli.compare import main as compare_main

            return int(compare_main(rest))
        if verb == "exposure":
            from ltr.cli.exposure import main as exposure_main

            return int(exposure_main(rest))
        if verb == "labels":
            from ltr.cli.labels import main as labels_main

            return int(labels_main(rest))
        if verb == "abtest":
            from ltr.cli.abtest import main as abtest_main

            return abtest_main(rest)
        if verb == "ope":
            from ltr.cli.ope import main as ope_main

            return ope_main(rest)
        if verb == "calibrate":
            from ltr.cli.calibrate import main as calibrate_main

            return calibrate_main(rest)
        if verb == "rerun":
            from ltr.cli.rerun import main as rerun_main

            return rerun_main(rest)
        if verb == "predict":
            from ltr.cli.predict import main as predict_main

            return predict_main(rest)
        if verb == "promote":
            from ltr.cli.promote import main as promote_main

            return promote_main(rest)
        if verb == "ui":
            from ltr.cli.ui import main as ui_main

            return ui_main(rest)
        if verb == "completion":
            from ltr.cli.completion import main as completion_main

            return completion_main(rest, VERBS)
    except LtrUserError as exc:
        print(f"ltr: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        print(f"ltr: interrupted{_notes(exc)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as exc:
        print(f"ltr: terminated (SIGTERM){_notes(exc)}", file=sys.stderr)
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
    print(f"ltr: error: unknown command {verb!r}; {hint}commands: {', '.join(VERBS)} (ltr --help)", file=sys.stderr)
    return EXIT_USER_ERROR


def run() -> NoReturn:
    """The ``ltr`` command (console script and ``python -m ltr``): :func:`main` with the command
    line's arguments, then the process exits with its code (141 when the reader of its output
    has gone before the last of it was written), without the interpreter's module
    teardown when nothing can be lost by skipping it (:mod:`ltr.cli.quick_exit`). Its garbage
    collector runs full collections rarely (:mod:`ltr.cli.gc_policy`)."""
    collect_rarely()
    code = main()
    try:
        sys.stdout.flush()  # what is still buffered: its reader may have gone too
    except BrokenPipeError:
        code = _drop_stdout()
    exit_now(code)


if __name__ == "__main__":
    run()
