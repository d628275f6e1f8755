"""A bad data file stops ``ltr train`` with one line on stderr, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.processes import run_ltr

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bad_file_gives_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:1 1:x\n")
    proc = run_ltr(
        ["train", "data=svmlight", f"data.train={bad}", "tracking=none", f"data.cache_dir={tmp_path / 'cache'}",
         f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"ltr: error: feature 1 has non-numeric value 'x' at line 2 of {bad}; write a number (nan for a missing value)"]
    assert "Traceback" not in proc.stdout + proc.stderr
