"""``ltr predict``'s outputs are checked before any run or input is read: an output naming an
input (by path, link or folder) would destroy the data; one that cannot be written (``/proc/x``,
a pipe, a missing folder) printed a traceback after scoring; ``--batch-rows 0`` was taken as the
default. Each is one line ``ltr: error: ...``, exit 2, and
the input is left as it was. The run named here does not exist: the checks come first."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ltr.cli.main import main as ltr_main

RUN = "no-such-run"


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: ")
    return err[0]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "copy.parquet"
    path.write_bytes(b"PAR1 not read: the checks come first")
    return path


@pytest.mark.parametrize("option", ["--out", "--trec-run", "--per-query"])
def test_an_output_naming_the_input_is_refused_and_the_input_kept(
    data: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = data.read_bytes()
    assert ltr_main(["predict", RUN, "--data", str(data), option, str(data)]) == 2
    assert f"{option} {data} is the input" in _one_error(capsys)
    assert data.read_bytes() == before


def test_an_output_reaching_the_input_by_another_path_is_refused(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A relative path, a symlink, a hard link: the same file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sym.parquet").symlink_to(data)
    os.link(data, tmp_path / "hard.parquet")
    for out in ("copy.parquet", "./copy.parquet", "sym.parquet", "hard.parquet"):
        assert ltr_main(["predict", RUN, "--data", str(data), "--out", out]) == 2
        assert "is the input" in _one_error(capsys)


def test_an_output_inside_an_input_folder_or_a_side_file_is_refused(tmp_path: Path) -> None:
    from ltr.cli.support.output_guard import check_not_inputs
    from ltr.errors import LtrUserError

    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-0.parquet").write_bytes(b"x")
    with pytest.raises(LtrUserError, match="inside the input folder"):
        check_not_inputs({"--per-query": parts / "pq.parquet"}, [parts])
    text = tmp_path / "rank.train"
    text.write_text("0 qid:1 1:0.5\n")
    (tmp_path / "rank.train.query").write_text("1\n")
    with pytest.raises(LtrUserError, match="is the input"):
        check_not_inputs({"--out": tmp_path / "rank.train.query"}, [text])
    check_not_inputs({"--out": tmp_path / "scores.txt"}, [text, parts])  # elsewhere: fine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_an_output_in_proc_is_one_line(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ltr_main(["predict", RUN, "--data", str(data), "--out", "/proc/x"]) == 2
    assert "--out /proc/x: cannot write a file in /proc" in _one_error(capsys)


def test_an_output_that_is_a_pipe_a_folder_or_in_no_folder_is_one_line(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pipe (or a device: ``/dev/null``) would be replaced by the rename into place."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = {fifo: "is not a regular file", tmp_path: "is a directory", tmp_path / "no" / "x.txt": "does not exist"}
    for out, why in cases.items():
        assert ltr_main(["predict", RUN, "--data", str(data), "--trec-run", str(out)]) == 2
        assert why in _one_error(capsys)
    assert fifo.is_fifo()


@pytest.mark.parametrize("rows", ["0", "-5"])
def test_batch_rows_below_one_is_refused(data: Path, rows: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert ltr_main(["predict", RUN, "--data", str(data), "--batch-rows", rows]) == 2
    assert _one_error(capsys) == f"ltr: error: --batch-rows={rows} must be >= 1"
