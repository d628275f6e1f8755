"""``ltr data write``: write a built-in data set as the files a user would bring.

Synopsis
--------
::

    ltr data write NAME --out DIR [--format letor|parquet|csv] [--force] [overrides...]

``NAME`` is a built-in data set that needs no download (``synthetic``, ``synthetic_clicks``);
the overrides are ``ltr train``'s ``data.*``, ``split.*``, ``seed=`` and ``debug=`` (``debug=default``:
the smoke-run size), checked as ``ltr train`` checks them. The splits are cut as ``ltr train
data=NAME`` cuts them. Output: one line per file written on stdout, then the ``ltr train``
command that trains on them.

This module parses the arguments and prints; the work is :mod:`ltr.data.write`, imported once
the arguments are parsed (``--help`` and an argument error import neither numpy nor pyarrow).

Examples
--------
::

    ltr data write synthetic --out data debug=default
    ltr data write synthetic_clicks --out clicks --format parquet data.n_queries=500 data.seed=7
"""

from __future__ import annotations

import argparse
import difflib

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError

ACTIONS = ("write",)
#: What ``write`` takes (kept here so that ``--help`` imports none of the work).
NAMES = ("synthetic", "synthetic_clicks")
FORMATS = ("letor", "parquet", "csv")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr data",
        description="Work with data sets. `ltr data write NAME --out DIR`: write a built-in data set as files.",
        epilog="ltr data write --help lists its options",
    )
    p.add_argument("action", choices=ACTIONS, help="write: write a built-in data set's splits as files")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the action's arguments")
    return p


def build_write_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr data write",
        description=(
            "Write a built-in data set's train / valid / test splits (cut as `ltr train data=NAME` cuts "
            "them) as LETOR/SVMlight text or Parquet / CSV tables, plus the click log of synthetic_clicks; "
            "then print the `ltr train` command that trains on them. Files are written atomically; "
            "existing ones are refused unless --force."
        ),
        epilog=(
            "examples: ltr data write synthetic --out data debug=default | "
            "ltr data write synthetic_clicks --out clicks --format parquet data.n_queries=500 data.seed=7"
        ),
    )
    p.add_argument("name", metavar="NAME", help=f"the built-in data set: {', '.join(NAMES)}")
    p.add_argument(
        "overrides", nargs="*", metavar="OVERRIDE",
        help="ltr train's data.*, split.*, seed= and debug= overrides (data.n_queries=300 data.seed=7 debug=default)",
    )
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="the folder to write into (created if missing)")
    p.add_argument(
        "--format", choices=FORMATS, default="letor",
        help="letor (default): train.txt, valid.txt, test.txt; parquet / csv: train.parquet ... tables",
    )
    p.add_argument("--force", action="store_true", help="replace files of the same names in DIR")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr data``; returns the exit code (0). User errors raise `LtrUserError`."""
    return run_verb(argv, _parse, _run)


def _parse(argv: list[str]) -> argparse.Namespace:
    """The action's arguments (``ltr data write ...``): an unknown action is one line with a hint."""
    if argv and argv[0] not in ACTIONS and not argv[0].startswith("-"):
        close = difflib.get_close_matches(argv[0], ACTIONS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise LtrUserError(f"ltr data: unknown action {argv[0]!r}; {hint}actions: {', '.join(ACTIONS)}")
    top = build_parser().parse_args(argv)
    return build_write_parser().parse_intermixed_args(top.args)


def _run(args: argparse.Namespace) -> int:
    # the work, once the arguments are parsed: --help and an argument error import none of it
    from ltr.cli.support.output_guard import check_outputs
    from ltr.data.write import write_builtin

    check_outputs({"--out": args.out}, folders={"--out"})

    done = write_builtin(args.name, args.out, fmt=args.format, overrides=args.overrides, force=args.force)
    for f in done.files:
        print(f"wrote {f.path}: {f.what}, {f.n_queries:,} queries, {f.n_rows:,} rows, {f.n_bytes:,} bytes")
    print(f"train on them: {done.train_command}")
    return 0
