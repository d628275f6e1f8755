"""``ltr cache`` (info / clear) through the real ``ltr`` entry point, on a real cache directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltr.cli.main import main
from ltr.data import cache
from ltr.data.formats.readers import read_ranking_file
from tests.data.conftest import WriteFile


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("LTR_CACHE_DIR", str(d))
    monkeypatch.delenv("LTR_CACHE_MAX_MB", raising=False)
    return d


def _fill(write: WriteFile, cache_dir: Path, n: int) -> None:
    for i in range(n):
        read_ranking_file(write(f"{i % 3} qid:{i} 1:0.5 2:{i}\n", name=f"f{i}.txt"), cache_dir=cache_dir)


def test_info_of_a_cache_that_does_not_exist_yet(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert f"cache dir: {cache_dir} (does not exist yet)" in out
    assert "entries:   0" in out
    assert "size:      0.0 MB" in out
    assert "limit:     2048 MB" in out


def test_info_shows_entries_size_and_limit(
    write: WriteFile, cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(write, cache_dir, 2)
    size = sum(e.size for e in cache.list_entries(cache_dir)[0])
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"cache dir: {cache_dir}\n" in out
    assert "entries:   2\n" in out
    assert f"size:      {cache.format_size(size)}\n" in out
    assert "limit:     2048 MB (default of data.cache_max_mb" in out
    monkeypatch.setenv("LTR_CACHE_MAX_MB", "5")
    assert main(["cache", "info", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "limit:     5 MB (from LTR_CACHE_MAX_MB)" in out
    assert str((cache_dir.parent / "f0.txt").resolve()) in out
    assert str((cache_dir.parent / "f1.txt").resolve()) in out
    monkeypatch.setenv("LTR_CACHE_MAX_MB", "none")
    assert main(["cache"]) == 0
    assert "limit:     none (from LTR_CACHE_MAX_MB)" in capsys.readouterr().out


def test_clear_removes_every_entry_and_nothing_else(
    write: WriteFile, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(write, cache_dir, 3)
    (cache_dir / "notes.txt").write_text("not the cache's")
    (cache_dir / ".tmp.0123.x").mkdir()  # the leftover of an interrupted write
    size = sum(e.size for e in cache.list_entries(cache_dir)[0])
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"cleared {cache_dir}: removed 3 entries, freed {cache.format_size(size)}")
    assert sorted(p.name for p in cache_dir.iterdir()) == ["notes.txt"]
    assert main(["cache", "info"]) == 0
    assert "entries:   0" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 0 entries, freed 0.0 MB" in capsys.readouterr().out


def test_a_bad_limit_in_the_environment_is_one_line(cache_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LTR_CACHE_MAX_MB", "-3")
    assert main(["cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ltr: error: LTR_CACHE_MAX_MB=-3 is negative")
    assert err.count("\n") == 1


def test_an_unknown_action_is_a_usage_error(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "purge"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ltr: error: ltr cache: ")
    assert "invalid choice: 'purge'" in line


def test_the_dir_option_points_elsewhere(write: WriteFile, tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other"
    _fill(write, other, 1)
    assert main(["cache", "info", "--dir", str(other)]) == 0
    assert "entries:   1" in capsys.readouterr().out
