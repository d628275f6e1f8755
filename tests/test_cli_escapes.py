"""Nothing a file holds reaches the terminal as a control sequence (issue 30: a TREC topic id
with ESC / BEL bytes could set the terminal's title or clear it through an error message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltr.cli.main import main, printable


def test_printable_escapes_every_control_character_and_keeps_the_rest() -> None:
    assert printable("topic 1\x1b]0;PWNED\x07\x1b[2J") == "topic 1\\x1b]0;PWNED\\x07\\x1b[2J"
    assert printable("a\nb\rc\td\x00") == "a\\nb\\rc\\td\\x00"
    assert printable("données café ÷ ✓") == "données café ÷ ✓"


def test_a_topic_id_with_escape_bytes_is_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.txt").write_bytes(b"1\x1b]0;PWNED\x07\x1b[2J Q0 D 1 abc sys\n")
    (tmp_path / "qrels.txt").write_text("1 0 D 1\n")
    assert main(["evaluate", "--run", str(tmp_path / "run.txt"), "--qrels", str(tmp_path / "qrels.txt")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "\x07" not in err
    (line,) = err.strip().splitlines()
    assert "1\\x1b]0;PWNED\\x07\\x1b[2J" in line
