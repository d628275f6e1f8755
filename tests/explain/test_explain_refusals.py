"""``ltr explain``'s refusals come before any run, input or store is read: one line
``ltr: error: ...``, exit 2, nothing written. The run named here does not exist."""

from __future__ import annotations

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
    path = tmp_path / "data.parquet"
    path.write_bytes(b"PAR1 not read: the checks come first")
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pair", "d1", "d2"], "--pair D1 D2 names two documents of one query: give the query with --query Q"),
        (["--centred"], "--centred is a form of the --out file: give --out FILE.parquet"),
        (["--top", "0"], "--top=0 must be >= 1"),
        (["--batch-rows", "0"], "--batch-rows=0 must be >= 1"),
        (["--out", "contributions.csv"], "is named as CSV, but ltr explain writes Parquet"),
    ],
)
def test_bad_options_are_one_line(
    data: Path, tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'none' / 'mlflow.db'}"
    assert ltr_main(["explain", RUN, "--data", str(data), *extra, "--tracking-uri", uri]) == 2
    assert message in _one_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.parquet"]


def test_an_out_naming_the_input_or_the_store_is_refused(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = data.read_bytes()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # not made: its paths are the store's all the same
    assert ltr_main(["explain", RUN, "--data", str(data), "--out", str(data), "--tracking-uri", uri]) == 2
    assert f"--out {data} is the input" in _one_error(capsys)
    assert data.read_bytes() == before
    assert ltr_main(["explain", RUN, "--data", str(data), "--out", str(tmp_path / "mlflow.db"), "--tracking-uri", uri]) == 2
    assert "is the tracking store's database" in _one_error(capsys)
    (tmp_path / "mlartifacts").mkdir()
    assert ltr_main(["explain", RUN, "--data", str(data), "--out", str(tmp_path / "mlartifacts" / "x.parquet"), "--tracking-uri", uri]) == 2
    assert "the artifact folder of the tracking store" in _one_error(capsys)
    assert not (tmp_path / "mlflow.db").exists()


def test_split_or_data_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert ltr_main(["explain", RUN]) == 2
    assert "one of the arguments --split --data is required" in _one_error(capsys)
