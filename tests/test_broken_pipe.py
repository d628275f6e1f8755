"""``ltr ... | head -1``: a reader that closes the pipe early ends the command quietly with 141
(128 + SIGPIPE, as git and coreutils), whether the pipe broke mid-output, in rich's table
output, or at the last flush. Real processes and real pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _data(tmp_path: Path, *, k: bool = True) -> list[str]:
    (tmp_path / "low.txt").write_text("1 qid:1 1:0\n0 qid:1 1:0\n1 qid:2 1:0\n0 qid:2 1:0\n2 qid:3 1:0\n1 qid:3 1:0\n")
    (tmp_path / "low.s").write_text("1\n0\n0\n1\n1\n0\n")
    # --k 2: cut-offs within the lists, so that stderr holds no note on K (ltr.metrics.reports.k_check)
    return ["evaluate", "--data", str(tmp_path / "low.txt"), "--scores", str(tmp_path / "low.s"), *(["--k", "2"] if k else [])]


def _ltr(args: list[str], *, read_lines: int) -> tuple[int, str]:
    """Run ``ltr args`` with its output into a pipe whose reader reads ``read_lines`` lines and
    closes it; the exit code and what it wrote on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "ltr", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stderr is not None
    for _ in range(read_lines):
        assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=120), err


def test_a_reader_that_stops_after_one_line_of_large_output(tmp_path: Path) -> None:
    # 300 cut-offs x 8 measures x 4 strata: ~300 KB of JSON, more than a pipe holds: the write blocks, then breaks
    ks = [arg for k in range(1, 301) for arg in ("--k", str(k))]
    code, err = _ltr([*_data(tmp_path, k=False), *ks, "--json"], read_lines=1)
    assert (code, err) == (141, "")  # the note on K comes after the output, which the closed pipe ended


@pytest.mark.parametrize("json_output", [False, True], ids=["rich table", "json"])
def test_a_reader_gone_before_the_first_write(tmp_path: Path, json_output: bool) -> None:
    # the whole output fits the pipe's buffer: the write fails at once (the table through rich,
    # the small JSON at the final flush)
    code, err = _ltr([*_data(tmp_path), *(["--json"] if json_output else [])], read_lines=0)
    assert (code, err) == (141, "")


def test_a_reader_that_reads_everything_sees_exit_0(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ltr", *_data(tmp_path), "--json"], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("{")
