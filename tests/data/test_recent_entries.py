"""The data a process read last stays in memory (a sweep's next job reads nothing), read-only,
and its checksums serve the fingerprint (one hash pass per array, not three)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ltr.data import cache, frozen
from ltr.data import fingerprint as fingerprint_module
from ltr.data.fingerprint import content_hash, fingerprint
from ltr.data.formats import readers
from ltr.data.formats.readers import read_ranking_file
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from tests.data.conftest import WriteFile

TEXT = "2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2 2:0.25\n0 qid:9 3:4\n"
FIELDS = ("features", "labels", "qids", "offsets")


def _fail(*args: object, **kwargs: object) -> None:
    raise AssertionError("read or hashed again although the process keeps it")


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


def test_the_fingerprint_of_shared_arrays_is_hashed_once(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's jobs get the same frozen arrays: the fingerprint hashes them once, and its
    value is the one computed from the bytes (a writeable copy is hashed every time)."""
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    copy = _writable_copy(parsed)
    first = fingerprint(Splits(parsed, parsed, parsed))
    assert first == fingerprint(Splits(copy, copy, copy))
    assert content_hash(parsed) == content_hash(copy)
    monkeypatch.setattr(fingerprint_module, "_update", _fail)  # hashing bytes now fails
    job2 = read_ranking_file(path, cache_dir=cache_dir)  # the next job: the same arrays
    assert fingerprint(Splits(job2, job2, job2)) == first
    assert content_hash(job2) == content_hash(parsed)
    with pytest.raises(AssertionError, match="hashed again"):
        content_hash(copy)  # may have changed: hashed again


def test_only_arrays_that_cannot_change_keep_a_hash() -> None:
    calls: list[int] = []

    def kept(arrays: list[np.ndarray]) -> str:
        def compute() -> str:
            calls.append(1)
            return cache.array_digest(np.concatenate([a.ravel() for a in arrays]))

        return frozen.remembered(arrays, "test", compute)

    base = np.arange(6, dtype=np.int64)
    view = base[:3]
    view.flags.writeable = False  # read-only, but its memory is writeable through base
    assert not frozen.is_frozen(view)
    before = kept([view])
    base[0] = 100
    assert kept([view]) != before  # computed again, never stale
    assert len(calls) == 2
    owned = frozen.freeze(np.arange(4, dtype=np.int64))
    other = frozen.freeze(np.arange(3, dtype=np.int64))
    assert frozen.is_frozen(owned)
    value = kept([owned, other])
    assert kept([owned, other]) == value == cache.array_digest(np.r_[owned, other])
    assert len(calls) == 3  # the second call was answered from memory
    kept([other, owned])  # other arrays (order matters): computed
    assert len(calls) == 4
    sliced = frozen.freeze(np.arange(8, dtype=np.int64))[2:5]  # a view of a frozen owner
    assert frozen.is_frozen(sliced)
    assert not frozen.is_frozen(np.frombuffer(bytearray(8), dtype=np.int64))  # a foreign, writeable buffer
    assert frozen.is_frozen(np.frombuffer(b"\x00" * 8, dtype=np.int64))  # immutable bytes


def test_a_freed_array_leaves_no_entry() -> None:
    arr = frozen.freeze(np.arange(5, dtype=np.int64))
    keep = frozen.freeze(np.arange(2, dtype=np.int64))
    frozen.remembered([keep, arr], "test", lambda: "value")
    key = ("test", (id(keep), id(arr)))
    assert frozen._KNOWN[key][1] == "value"
    del arr
    assert key not in frozen._KNOWN
