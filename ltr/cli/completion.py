"""``ltr completion bash``: the bash completion script of ``ltr``; ``ltr completion query LINE``:
the candidates for a line (what the script asks). The work is :mod:`ltr.config.completion`."""

from __future__ import annotations

import argparse
from functools import partial

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.config.completion import bash_script, train_completions


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="ltr completion",
        description="Shell completion of ltr: verbs, and ltr train's config groups, options and keys.",
        epilog="enable it: ltr completion bash > ~/.ltr-completion.bash && echo 'source ~/.ltr-completion.bash' >> ~/.bashrc",
    )
    parser.add_argument("shell", choices=["bash", "query"], help="bash: print the script; query: the candidates of LINE")
    parser.add_argument("line", nargs="?", default="", help="with query: the command line up to the cursor")
    return parser


def main(argv: list[str], verbs: tuple[str, ...]) -> int:
    return run_verb(argv, build_parser(), partial(_run, verbs=verbs))


def _run(args: argparse.Namespace, *, verbs: tuple[str, ...]) -> int:
    if args.shell == "bash":
        print(bash_script(verbs), end="")
        return 0
    for candidate in train_completions(args.line):
        print(candidate)
    return 0
