"""The data a process read last stays in memory (a sweep's next job reads nothing), read-only,
and its checksums serve the fingerprint (one hash pass per array, not three)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ltr.data import cache, digest, readers
from ltr.data.fingerprint import content_hash, fingerprint
from ltr.data.ranking_data import RankingData
from ltr.data.readers import read_ranking_file
from ltr.data.splits import Splits
from tests.data.conftest import WriteFile

TEXT = "2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2 2:0.25\n0 qid:9 3:4\n"
FIELDS = ("features", "labels", "qids", "offsets")


def _fail(*args: object, **kwargs: object) -> None:
    raise AssertionError("the disk (or the parser) was read although memory holds the data")


def _writable_copy(data: RankingData) -> RankingData:
    return RankingData(
        data.features.copy(), data.labels.copy(), data.qids.copy(), data.offsets.copy(),
        data.feature_names, data.name,
    )  # fmt: skip


def test_second_read_in_a_process_shares_the_arrays_without_the_disk(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    first = read_ranking_file(path, cache_dir=cache_dir)
    monkeypatch.setattr(readers, "load_cached", _fail)
    monkeypatch.setattr(readers, "_parse", _fail)
    second = read_ranking_file(path, cache_dir=cache_dir, name="again")
    assert second.name == "again"
    for field in FIELDS:
        assert getattr(second, field) is getattr(first, field)
    assert second.labels.tolist() == [2, 0, 1, 0]
    with pytest.raises(ValueError, match="read-only"):
        second.features[0, 0] = 99.0  # shared between jobs: nobody may write into it


def test_a_hit_from_disk_is_kept_too(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    cache.forget_recent()  # as a new process
    from_disk = read_ranking_file(path, cache_dir=cache_dir)
    assert from_disk.features is not parsed.features
    monkeypatch.setattr(readers, "load_cached", _fail)
    assert read_ranking_file(path, cache_dir=cache_dir).features is from_disk.features


def test_a_changed_file_or_other_options_are_read_again(write: WriteFile, tmp_path: Path) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    first = read_ranking_file(path, cache_dir=cache_dir)
    other = read_ranking_file(path, cache_dir=cache_dir, n_features=5)  # another key
    assert other.features.shape == (4, 5)
    assert first.features.shape == (4, 3)
    path.write_text(TEXT.replace("2 qid:7", "1 qid:7"))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    changed = read_ranking_file(path, cache_dir=cache_dir)
    assert changed.labels.tolist() == [1, 0, 1, 0]
    assert first.labels.tolist() == [2, 0, 1, 0]  # the old arrays are untouched


def test_memory_keeps_the_last_entries_only(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "RECENT_ENTRIES", 2)
    cache_dir = tmp_path / "cache"
    paths = [write(TEXT.replace("qid:9", f"qid:{9 + i}"), f"{i}.txt") for i in range(3)]
    data = [read_ranking_file(p, cache_dir=cache_dir) for p in paths]
    disk_reads: list[Path] = []
    load = readers.load_cached

    def counting(cache_dir: Path, sources: list[Path], options: dict[str, object]) -> object:
        disk_reads.append(sources[0])
        return load(cache_dir, sources, options)

    monkeypatch.setattr(readers, "load_cached", counting)
    assert read_ranking_file(paths[2], cache_dir=cache_dir).features is data[2].features
    assert read_ranking_file(paths[1], cache_dir=cache_dir).features is data[1].features
    assert disk_reads == []
    again = read_ranking_file(paths[0], cache_dir=cache_dir)  # the oldest was dropped: from disk
    assert disk_reads == [paths[0]]
    np.testing.assert_array_equal(again.features, data[0].features)


def test_without_a_cache_nothing_is_kept_or_frozen(write: WriteFile) -> None:
    path = write(TEXT)
    first, second = read_ranking_file(path), read_ranking_file(path)
    assert first.features is not second.features
    first.features[0, 0] = 5.0  # the caller's own arrays


def test_the_fingerprint_reuses_the_cache_checksums(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    expected = content_hash(_writable_copy(parsed))  # hashed from the bytes
    cache.forget_recent()
    from_disk = read_ranking_file(path, cache_dir=cache_dir)
    monkeypatch.setattr(digest, "array_digest", _fail)  # any hashing of bytes now fails
    assert content_hash(parsed) == expected  # digests kept when the entry was written
    assert content_hash(from_disk) == expected  # digests kept when the entry was verified
    fp = fingerprint(Splits(from_disk, parsed, from_disk))  # the split set's hash: lines only
    monkeypatch.undo()
    assert fp == fingerprint(Splits(*[_writable_copy(parsed)] * 3))


def test_only_arrays_that_cannot_change_keep_a_digest() -> None:
    base = np.arange(6, dtype=np.int64)
    view = base[:3]
    view.flags.writeable = False  # read-only, but its memory is writeable through base
    assert not digest.is_frozen(view)
    before = digest.digest(view)
    base[0] = 100
    assert digest.digest(view) != before  # recomputed, never stale
    assert digest.known_digest(view) is None
    owned = digest.freeze(np.arange(4, dtype=np.int64))
    assert digest.is_frozen(owned)
    value = digest.digest(owned)
    assert digest.known_digest(owned) == value == digest.array_digest(owned.copy())
    sliced = digest.freeze(np.arange(8, dtype=np.int64))[2:5]  # a view of a frozen owner
    assert digest.is_frozen(sliced)
    assert not digest.is_frozen(
        np.frombuffer(bytearray(8), dtype=np.int64)
    )  # a foreign, writeable buffer
    assert digest.is_frozen(np.frombuffer(b"\x00" * 8, dtype=np.int64))  # immutable bytes


def test_a_freed_array_leaves_no_entry() -> None:
    arr = digest.freeze(np.arange(5, dtype=np.int64))
    digest.digest(arr)
    key = id(arr)
    assert key in digest._KNOWN
    del arr
    assert key not in digest._KNOWN
