"""The binary cache: a hit is identical to a parse; a changed file is never served stale."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ltr.data import cache as data_cache
from ltr.data.formats import readers
from ltr.data.formats.readers import read_ranking_file
from ltr.errors import DataError
from tests.data.conftest import WriteFile


@pytest.fixture(autouse=True)
def _disk_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the disk: every read meets it, as a new process's would (no
    in-memory entries, see ``test_recent_entries.py``)."""
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)


def _no_parse(*args: object, **kwargs: object) -> None:
    raise AssertionError("parsed although the cache should have answered")


def test_second_read_comes_from_the_cache(write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write("2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2\n")
    cache = tmp_path / "cache"
    first = read_ranking_file(path, cache_dir=cache)
    monkeypatch.setattr(readers, "_parse", _no_parse)
    second = read_ranking_file(path, cache_dir=cache, name="renamed")
    for field in ("features", "labels", "qids", "offsets"):
        a, b = getattr(first, field), getattr(second, field)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert second.name == "renamed"


def test_a_background_store_writes_the_same_entry(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # written by the store thread (ltr train's reads): once waited for, the entry is there and
    # answers the next read with the same arrays; an unwritable cache still only warns
    path = write("2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2\n")
    cache = tmp_path / "cache"
    first = read_ranking_file(path, cache_dir=cache, cache_in_background=True)
    blocker = tmp_path / "file"
    blocker.write_text("")
    read_ranking_file(path, cache_dir=blocker / "sub", cache_in_background=True)
    data_cache.wait_for_stores()
    [entry] = list(cache.iterdir())  # one entry, no temporary directory left
    assert (entry / "meta.json").is_file()
    monkeypatch.setattr(readers, "_parse", _no_parse)
    second = read_ranking_file(path, cache_dir=cache)
    for field in ("features", "labels", "qids", "offsets"):
        a, b = getattr(first, field), getattr(second, field)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_a_changed_file_is_parsed_again(write: WriteFile, tmp_path: Path) -> None:
    path = write("2 qid:7 1:0.5\n")
    cache = tmp_path / "cache"
    assert read_ranking_file(path, cache_dir=cache).labels.tolist() == [2]
    stat = path.stat()
    path.write_text("3 qid:7 1:0.5\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    assert read_ranking_file(path, cache_dir=cache).labels.tolist() == [3]
    path.write_text("1 qid:7 1:0.5\n0 qid:7 1:1\n")
    assert read_ranking_file(path, cache_dir=cache).labels.tolist() == [1, 0]


def test_options_are_part_of_the_key(write: WriteFile, tmp_path: Path) -> None:
    path = write("31 qid:7 1:0.5\n")
    cache = tmp_path / "cache"
    assert read_ranking_file(path, cache_dir=cache, max_label=None).labels.tolist() == [31]
    with pytest.raises(DataError, match="above 30"):
        read_ranking_file(path, cache_dir=cache)


def test_a_broken_entry_is_ignored(write: WriteFile, tmp_path: Path) -> None:
    path = write("2 qid:7 1:0.5\n")
    cache = tmp_path / "cache"
    read_ranking_file(path, cache_dir=cache)
    [entry] = [p for p in cache.iterdir() if p.is_dir()]
    (entry / "features.npy").write_bytes(b"garbage")
    assert read_ranking_file(path, cache_dir=cache).labels.tolist() == [2]


def test_an_unwritable_cache_only_warns(write: WriteFile, tmp_path: Path) -> None:
    path = write("2 qid:7 1:0.5\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert read_ranking_file(path, cache_dir=blocker / "sub").labels.tolist() == [2]


def test_a_cache_hit_repeats_the_regrouping_warning(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write("0 qid:1 1:1\n0 qid:2 1:2\n1 qid:1 1:3\n")
    cache = tmp_path / "cache"
    read_ranking_file(path, cache_dir=cache)
    caplog.clear()
    with caplog.at_level("WARNING"):
        data = read_ranking_file(path, cache_dir=cache)
    assert data.features[:, 0].tolist() == [1, 3, 2]
    assert any("rows of 1 of 2 queries are not contiguous" in r.getMessage() for r in caplog.records)
