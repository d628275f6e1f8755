"""The ``ltr`` command: ``ltr train [hydra overrides...]``, ``ltr evaluate ...``, ``ltr ui``."""

from __future__ import annotations

import argparse
import os
import sys

from ltr.errors import LtrUserError
from ltr.tracking.lifecycle import Terminated

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

USAGE = """usage: ltr <command> [args...]

commands:
  train [overrides...]   train and evaluate one experiment (Hydra app; -m for multirun, --help for config)
  evaluate ...           evaluate rankings made elsewhere (TREC run, or data + scores); --help for options
  compare RUN [RUN ...]  compare runs per query and per stratum with paired significance tests; --help
  cache [info|clear]     show (entries, size, limit) or clear the cache of parsed data files; --help
  ui [--port N]          open the MLflow UI on 127.0.0.1 against the default local store
"""


def _ui(argv: list[str]) -> int:
    import socket

    from ltr.tracking import check_tracking_uri, resolve_tracking_uri
    from ltr.tracking.store_lock import sqlite_db_path

    parser = argparse.ArgumentParser(prog="ltr ui", description="MLflow UI on 127.0.0.1 for the local store")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--uri", default=None, help="tracking store (default: sqlite:///./mlflow.db)")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        raise LtrUserError(f"--port {args.port} is not a TCP port (1-65535)")
    # mlflow ui exits 0 when the port is taken: find out first.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError as exc:
            raise LtrUserError(f"port {args.port} is in use ({exc.strerror}); pass --port with a free one") from exc
    uri = resolve_tracking_uri(args.uri)
    db = sqlite_db_path(uri)
    if db is not None and not db.is_file():  # mlflow ui would create an empty store
        raise LtrUserError(f"no MLflow store at {db}; run `ltr train` first or pass --uri")
    uri = check_tracking_uri(uri, writable=False)
    if uri.startswith(("http://", "https://")):
        raise LtrUserError(f"{uri} is an MLflow server: browse it, it serves its own UI")
    from ltr.tracking.store import open_client

    open_client(uri, create=False)  # checked (rebuilt or refused) under the lock, dead runs reaped
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(args.port)]
    print(f"MLflow UI for {uri} at http://127.0.0.1:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    sys.stderr.flush()
    os.execv(sys.executable, cmd)
    return 0  # not reached


def _notes(exc: BaseException) -> str:
    """What was done about an interruption (``run ... is marked KILLED``), as ``; ...`` text."""
    notes = getattr(exc, "__notes__", None) or []
    return "".join(f"; {note}" for note in notes)


def main(argv: list[str] | None = None) -> int:
    """Dispatch a verb; the one exit-code policy of every ``ltr`` command.

    0 done; 1 some jobs of a sweep failed (listed above it); 2 a user error, printed as one
    line ``ltr: error: ...`` without a traceback; 130 interrupted (Ctrl-C); 143 terminated
    (SIGTERM). An interrupted run says which run it marked KILLED.
    """
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    try:
        if verb == "train":
            from ltr.cli.train import main as train_main

            return train_main(rest)
        if verb == "evaluate":
            from ltr.cli.evaluate import main as evaluate_main

            return int(evaluate_main(rest))
        if verb == "cache":
            from ltr.cli.cache import main as cache_main

            return int(cache_main(rest))
        if verb == "compare":
            from ltr.cli.compare import main as compare_main

            return int(compare_main(rest))
        if verb == "ui":
            return _ui(rest)
    except LtrUserError as exc:
        print(f"ltr: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:
        print(f"ltr: interrupted{_notes(exc)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as exc:
        print(f"ltr: terminated (SIGTERM){_notes(exc)}", file=sys.stderr)
        return EXIT_TERMINATED
    print(f"ltr: error: unknown command {verb!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
