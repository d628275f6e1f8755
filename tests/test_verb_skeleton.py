"""Thin verbs (issue 57): every verb runs through the one skeleton (:mod:`ltr.cli.support.verb`), every
module of ``ltr/cli/`` is at most 200 lines, and the skeleton parses, runs and maps failures to
exit codes as the dispatcher always has."""

from __future__ import annotations

import argparse
import ast
import logging
import sys
from pathlib import Path

import pytest

from ltr.cli.main import VERB_MODULES, VERBS
from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USER_ERROR,
    failure_code,
    run_verb,
)
from ltr.errors import DataError, DeviceFull, LtrUserError, ServerFault, Terminated

CLI = Path(__file__).resolve().parents[1] / "ltr" / "cli"
MAX_LINES = 200



def _main_calls_the_skeleton(tree: ast.Module) -> bool:
    """``main``'s body is ``return run_verb(...)`` (after its docstring), with ``run_verb``
    imported from :mod:`ltr.cli.support.verb`."""
    imported = any(
        isinstance(node, ast.ImportFrom) and node.module == "ltr.cli.support.verb" and any(a.name == "run_verb" for a in node.names)
        for node in tree.body
    )
    mains = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"]
    if not imported or len(mains) != 1:
        return False
    body = mains[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(call := body[0].value, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "run_verb"
    )


def _verb_file(verb: str) -> Path:
    """The source file of ``verb``'s module (:data:`ltr.cli.main.VERB_MODULES`)."""
    return CLI.parent.parent.joinpath(*VERB_MODULES[verb].split(".")).with_suffix(".py")


def test_every_verb_runs_through_the_skeleton() -> None:
    off = sorted(verb for verb in VERBS if not _main_calls_the_skeleton(ast.parse(_verb_file(verb).read_text())))
    assert not off, f"verbs whose main is not `return run_verb(...)`: {off}"


def test_the_check_tells_a_skeleton_main_from_a_hand_made_one() -> None:
    thin = "from ltr.cli.support.verb import run_verb\ndef main(argv=None):\n    '''doc'''\n    return run_verb(argv, build_parser(), _run)\n"
    thick = "from ltr.cli.support.verb import run_verb\ndef main(argv=None):\n    args = build_parser().parse_args(argv)\n    return _run(args)\n"
    assert _main_calls_the_skeleton(ast.parse(thin))
    assert not _main_calls_the_skeleton(ast.parse(thick))
    assert not _main_calls_the_skeleton(ast.parse(thin.replace("from ltr.cli.support.verb import run_verb\n", "")))


def test_no_module_of_the_cli_is_longer_than_200_lines() -> None:
    lengths = {str(path.relative_to(CLI)): len(path.read_text().splitlines()) for path in sorted(CLI.rglob("*.py"))}
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not long, f"modules of ltr/cli/ over {MAX_LINES} lines (a verb parses and prints; its work lives below cli/): {long}"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ltr demo", description="a verb of the test")
    parser.add_argument("n", type=int)
    parser.add_argument("--twice", action="store_true")
    return parser


def test_help_returns_0_and_runs_no_work(capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[argparse.Namespace] = []

    def work(args: argparse.Namespace) -> int:
        ran.append(args)
        return 7

    assert run_verb(["--help"], _parser(), work) == 0
    assert capsys.readouterr().out.startswith("usage: ltr demo [-h] [--twice] n")
    assert ran == []


def test_the_work_gets_the_parsed_arguments_and_gives_the_exit_code() -> None:
    assert run_verb(["3", "--twice"], _parser(), lambda args: args.n * (2 if args.twice else 1)) == 6
    intermixed = _parser()
    intermixed.add_argument("rest", nargs="*")
    assert run_verb(["1", "--twice", "x", "y"], intermixed, lambda args: len(args.rest) + args.twice, intermixed=True) == 3


def test_argv_none_reads_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["ltr-demo", "5"])
    assert run_verb(None, _parser(), lambda args: args.n) == 5


def test_a_parse_function_takes_the_argument_list() -> None:
    seen: list[list[str]] = []

    def parse(argv: list[str]) -> int:
        seen.append(argv)
        return len(argv)

    assert run_verb(("a", "b"), parse, lambda n: n + 40) == 42
    assert seen == [["a", "b"]]


def test_an_argument_mistake_is_a_user_error_and_runs_no_work() -> None:
    with pytest.raises(LtrUserError, match=r"^ltr demo: argument n: invalid int value: 'x' \(ltr demo --help lists the options\)$"):
        run_verb(["x"], _parser(), lambda args: 0)


def test_the_work_logs_on_stderr_at_the_level_asked_and_only_then(capsys: pytest.CaptureFixture[str]) -> None:
    def work(args: argparse.Namespace) -> int:
        logging.getLogger("ltr.demo").info("working on %d", args.n)
        logging.getLogger("ltr.demo").debug("not shown")
        return 0

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    assert run_verb(["4"], _parser(), work, log_level=logging.INFO) == 0
    err = capsys.readouterr().err
    assert "[ltr.demo][INFO] - working on 4" in err
    assert "not shown" not in err
    assert (list(root.handlers), root.level) == before


def test_the_work_raises_for_an_in_process_caller() -> None:
    def work(args: argparse.Namespace) -> int:
        raise DataError(f"row {args.n} of f.txt: label -1 is negative")

    with pytest.raises(DataError, match=r"row 2 of f\.txt"):
        run_verb(["2"], _parser(), work)


def _interrupted() -> KeyboardInterrupt:
    exc = KeyboardInterrupt()
    exc.add_note("run abc is marked KILLED")
    return exc


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (LtrUserError("--k 0: give a cut-off >= 1"), EXIT_USER_ERROR, "ltr: error: --k 0: give a cut-off >= 1"),
        (DataError("f.txt, line 3: no qid"), EXIT_USER_ERROR, "ltr: error: f.txt, line 3: no qid"),
        (ServerFault("the tracking server is down"), EXIT_FAILED, "ltr: error: the tracking server is down"),
        (DeviceFull("out.csv: the device is full"), EXIT_FAILED, "ltr: error: out.csv: the device is full"),
        (_interrupted(), EXIT_INTERRUPTED, "ltr: interrupted; run abc is marked KILLED"),
        (Terminated(), EXIT_TERMINATED, "ltr: terminated (SIGTERM)"),
        (LtrUserError("name \x1b[31mred"), EXIT_USER_ERROR, "ltr: error: name \\x1b[31mred"),
    ],
)
def test_failures_are_one_line_and_their_exit_code(
    exc: BaseException, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert failure_code(exc) == code
    assert capsys.readouterr().err.splitlines() == [line]


def test_other_exceptions_are_not_the_skeletons_to_map(capsys: pytest.CaptureFixture[str]) -> None:
    for exc in (ValueError("a bug"), SystemExit(3), OSError("disk")):
        assert failure_code(exc) is None
    assert capsys.readouterr().err == ""


#: What the skeleton and the output layer may import: what ``ltr --help`` loads anyway.
LIGHT = {"__future__", "argparse", "collections.abc", "contextlib", "logging", "os", "select", "sys", "typing",
         "ltr.cli.support.console_log", "ltr.cli.support.verb", "ltr.errors", "ltr.runtime.terminal"}  # fmt: skip


@pytest.mark.parametrize("module", ["support/verb.py", "support/output_layer.py"])
def test_the_skeleton_imports_nothing_heavy(module: str) -> None:
    imported = set()
    for node in ast.walk(ast.parse((CLI / module).read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= LIGHT, f"{module} imports {sorted(imported - LIGHT)}"
