"""The ``ltr`` command: ``ltr train [hydra overrides...]``, ``ltr evaluate ...``, ``ltr ui``."""

from __future__ import annotations

import argparse
import os
import sys

from ltr.errors import LtrUserError

USAGE = """usage: ltr <command> [args...]

commands:
  train [overrides...]   train and evaluate one experiment (Hydra app; -m for multirun, --help for config)
  evaluate ...           evaluate rankings made elsewhere (TREC run, or data + scores); --help for options
  compare RUN [RUN ...]  compare runs per query and per stratum with paired significance tests; --help
  ui [--port N]          open the MLflow UI on 127.0.0.1 against the default local store
"""


def _ui(argv: list[str]) -> int:
    from ltr.tracking import resolve_tracking_uri

    parser = argparse.ArgumentParser(prog="ltr ui", description="MLflow UI on 127.0.0.1 for the local store")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--uri", default=None, help="tracking store (default: sqlite:///./mlflow.db)")
    args = parser.parse_args(argv)
    uri = resolve_tracking_uri(args.uri)
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(args.port)]
    print(f"MLflow UI for {uri} at http://127.0.0.1:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    os.execv(sys.executable, cmd)
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    """Dispatch a verb; user errors print one line (``ltr: error: ...``) and return 2."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    try:
        if verb == "train":
            from ltr import app

            sys.argv = ["ltr train", *rest]
            app.main()
            return 0
        if verb == "evaluate":
            from ltr.evaluate import main as evaluate_main

            return int(evaluate_main(rest))
        if verb == "compare":
            from ltr.compare_cli import main as compare_main

            return int(compare_main(rest))
        if verb == "ui":
            return _ui(rest)
    except LtrUserError as exc:
        print(f"ltr: error: {exc}", file=sys.stderr)
        return 2
    print(f"ltr: error: unknown command {verb!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
