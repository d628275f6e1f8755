"""``ltr --help``'s command list: every verb of the dispatcher, once, in the dispatcher's order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ltr.cli.main import USAGE, VERBS, main


def test_the_usage_lists_every_verb_once_in_the_dispatchers_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == USAGE.strip()
    listed = [line.split()[0] for line in USAGE.split("commands:", 1)[1].splitlines() if line.startswith("  ")]
    assert listed == list(VERBS)


#: Every verb's help, and the sub-commands' with a help of their own.
HELPS = [[verb] for verb in VERBS if verb != "train"] + [["data", "write"]]


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_no_help_shows_a_doubled_percent_sign(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats an option's help with ``%`` (``%%`` prints ``%``) but a description as it
    is unless it holds ``%(prog)``: a ``%%`` written there is shown doubled."""
    try:
        code = main([*argv, "--help"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr().out
    assert code == 0
    assert f"usage: ltr {' '.join(argv)}" in out
    assert "%%" not in out, [line for line in out.splitlines() if "%%" in line]


@pytest.mark.slow
def test_train_help_lists_your_config_folders_options_and_no_doubled_percent(tmp_path: Path) -> None:
    """``ltr train --config-dir conf --help``: a group's options of your folder after the
    shipped ones (``data: ...; from conf: mine``), a group of its own on a line of its own."""
    (tmp_path / "conf" / "data").mkdir(parents=True)
    (tmp_path / "conf" / "data" / "mine.yaml").write_text("# @package data\ndefaults:\n  - parquet_schema\nname: mine\n")
    (tmp_path / "conf" / "team").mkdir()
    (tmp_path / "conf" / "team" / "search.yaml").write_text("# @package _global_\n")
    (tmp_path / "conf" / "model").mkdir()
    (tmp_path / "conf" / "model" / "lambdarank.yaml").write_text("defaults:\n  - /model/lambdarank\n")  # shadows a shipped one
    ltr = Path(sys.executable).parent / "ltr"
    done = subprocess.run([str(ltr), "train", "--config-dir", "conf", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    groups = dict(line.split(": ", 1) for line in done.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0].splitlines() if ": " in line and not line.startswith("Compose"))
    assert groups["data"] == "letor, mq2008, parquet, parquet_partitions, svmlight, synthetic, synthetic_clicks; from conf: mine"
    assert groups["team"] == "from conf: search"
    assert groups["model"] == "catboost, lambdarank, pointwise, rank_xendcg, xgboost"
    assert "%%" not in done.stdout
    plain = subprocess.run([str(ltr), "train", "--help"], cwd=tmp_path / "conf", capture_output=True, text=True, timeout=300)
    assert "; from " not in plain.stdout
    assert ": from " not in plain.stdout
