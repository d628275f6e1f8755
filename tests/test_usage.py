"""``ltr --help``'s command list: every verb of the dispatcher, once, in the dispatcher's order."""

from __future__ import annotations

import pytest

from ltr.cli.main import USAGE, VERBS, main


def test_the_usage_lists_every_verb_once_in_the_dispatchers_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == USAGE.strip()
    listed = [line.split()[0] for line in USAGE.split("commands:", 1)[1].splitlines() if line.startswith("  ")]
    assert listed == list(VERBS)
