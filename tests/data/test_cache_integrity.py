"""The cache never serves what a parse would not give: checksums, validation, replacement of bad
entries, atomic and concurrent writes, and the LRU size limit. Real files in tmp dirs, no mocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ltr.data import cache
from ltr.data.formats.readers import read_ranking_file
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError
from tests.data.conftest import WriteFile


@pytest.fixture(autouse=True)
def _disk_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the disk: every read meets it, as a new process's would (no
    in-memory entries, see ``test_recent_entries.py``)."""
    monkeypatch.setattr(cache, "RECENT_ENTRIES", 0)


REPO = Path(__file__).resolve().parents[2]
TEXT = "2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2 2:0.25\n0 qid:9 3:4\n0 qid:11 1:1\n"
FIELDS = ("features", "labels", "qids", "offsets")


def _assert_same(a: RankingData, b: RankingData) -> None:
    for field in FIELDS:
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype, field
        np.testing.assert_array_equal(x, y, err_msg=field)


def _only_entry(cache_dir: Path) -> Path:
    entries, leftovers = cache.list_entries(cache_dir)
    assert len(entries) == 1, entries
    assert not leftovers, leftovers
    return entries[0].path


def _cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == cache.__name__ and r.levelname == "WARNING"]


def _read_with_one_warning(path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture, **kw: object) -> RankingData:
    """Read ``path`` expecting exactly one one-line warning about a bad entry; returns the data."""
    caplog.clear()
    with caplog.at_level("WARNING"):
        data = read_ranking_file(path, cache_dir=cache_dir, **kw)  # type: ignore[arg-type]
    [message] = _cache_warnings(caplog)
    assert "removed bad cache entry" in message
    assert "parsing" in message
    assert "\n" not in message
    return data


def _read_without_warning(path: Path, cache_dir: Path, caplog: pytest.LogCaptureFixture, **kw: object) -> RankingData:
    caplog.clear()
    with caplog.at_level("WARNING"):
        data = read_ranking_file(path, cache_dir=cache_dir, **kw)  # type: ignore[arg-type]
    assert _cache_warnings(caplog) == []
    return data


def _forge(entry: Path, **arrays: np.ndarray) -> None:
    """Rewrite arrays of an entry *with* matching checksums, as a deliberate forger would."""
    meta = json.loads((entry / "meta.json").read_text())
    for name, arr in arrays.items():
        np.save(entry / f"{name}.npy", arr, allow_pickle=False)
        meta["arrays"][name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "sha256": cache.array_digest(arr)}
    meta["digest"] = cache.meta_digest(meta)
    (entry / "meta.json").write_text(json.dumps(meta))


# -- checksums ----------------------------------------------------------------------------------


def test_features_overwritten_with_nan_keeping_the_shape_are_caught(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    entry = _only_entry(cache_dir)
    before = (entry / "features.npy").stat().st_size
    np.save(entry / "features.npy", np.full_like(parsed.features, np.nan), allow_pickle=False)
    assert (entry / "features.npy").stat().st_size == before  # same header, same shape: only the bytes differ
    again = _read_with_one_warning(path, cache_dir, caplog)
    assert "checksum mismatch of features.npy" in _cache_warnings(caplog)[0]
    _assert_same(again, parsed)
    assert not np.isnan(again.features).any()
    # the entry was rewritten and is served again, verified, without a warning
    entry = _only_entry(cache_dir)
    assert cache.load_cached(cache_dir, [path], _options()) is not None
    _assert_same(_read_without_warning(path, cache_dir, caplog), parsed)


def _options(**over: object) -> dict[str, object]:
    """The reader options ``read_ranking_file`` keys a LETOR text file with (defaults)."""
    opts: dict[str, object] = {
        "format": "letor", "n_features": None, "qid_column": "qid", "label_column": "label",
        "feature_columns": None, "delimiter": None, "position_column": None,
        "integer_labels": True, "max_label": 30, "max_list_len": 10000,
    }
    opts.update(over)
    return opts


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda e: (e / "labels.npy").unlink(), "missing labels.npy"),
        (lambda e: (e / "notes.txt").write_text("x"), "unexpected notes.txt"),
        (lambda e: (e / "features.npy").write_bytes((e / "features.npy").read_bytes()[:-3]), "data bytes"),
        (lambda e: (e / "features.npy").write_bytes(b"garbage"), "cannot read features.npy"),
        (lambda e: np.save(e / "features.npy", np.zeros((5, 3))), "features.npy holds float64"),
        (lambda e: np.save(e / "qids.npy", np.array([7, 9, 12])), "checksum mismatch of qids.npy"),
        (lambda e: (e / "meta.json").unlink(), "missing meta.json"),
    ],
    ids=["missing-file", "extra-file", "truncated", "garbage", "wrong-dtype", "same-shape-qids", "no-meta"],
)
def test_a_damaged_entry_is_removed_and_parsed_again(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: object, reason: str
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    entry = _only_entry(cache_dir)
    damage(entry)  # type: ignore[operator]
    again = _read_with_one_warning(path, cache_dir, caplog)
    assert reason in _cache_warnings(caplog)[0]
    _assert_same(again, parsed)
    _only_entry(cache_dir)
    _assert_same(_read_without_warning(path, cache_dir, caplog), parsed)


@pytest.mark.parametrize(
    "meta_text",
    ["[]", '"x"', "{", "null", "42", "true", "{}", "", "\xff\xfe", '{"version": 3}'],
    ids=["list", "string", "truncated", "null", "number", "bool", "empty-object", "empty-file", "not-utf8", "partial"],
)
def test_a_malformed_meta_json_is_removed_and_parsed_again(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture, meta_text: str
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    entry = _only_entry(cache_dir)
    (entry / "meta.json").write_bytes(meta_text.encode("latin-1"))
    _assert_same(_read_with_one_warning(path, cache_dir, caplog), parsed)
    meta = json.loads((_only_entry(cache_dir) / "meta.json").read_text())
    assert meta["digest"] == cache.meta_digest(meta)


def test_an_edited_meta_json_is_caught_by_its_own_checksum(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    read_ranking_file(path, cache_dir=cache_dir)
    entry = _only_entry(cache_dir)
    meta = json.loads((entry / "meta.json").read_text())
    meta["notes"] = ["a warning that the parse never gave"]
    (entry / "meta.json").write_text(json.dumps(meta))
    _read_with_one_warning(path, cache_dir, caplog)
    assert "checksum mismatch of meta.json" in _cache_warnings(caplog)[0]


# -- validation ---------------------------------------------------------------------------------


def test_a_forged_entry_with_labels_of_99_is_validated_and_replaced(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    entry = _only_entry(cache_dir)
    # control: a forged entry that passes validation is served (the checksums were made to match),
    # so what rejects the next one is the validation, not the checksum
    _forge(entry, labels=np.array([1, 0, 1, 0, 0], dtype=np.int32))
    assert _read_without_warning(path, cache_dir, caplog).labels.tolist() == [1, 0, 1, 0, 0]
    _forge(entry, labels=np.full(5, 99, dtype=np.int32))
    again = _read_with_one_warning(path, cache_dir, caplog)
    message = _cache_warnings(caplog)[0]
    assert "label 99 at row 1 of cache entry" in message
    assert "above 30" in message
    _assert_same(again, parsed)  # what the parse gives, as if there had been no cache
    _assert_same(_read_without_warning(path, cache_dir, caplog), parsed)


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        ({"labels": np.array([2, 0, -1, 0, 0], dtype=np.int32)}, "label -1 at row 3"),
        ({"qids": np.array([7, 9, 7], dtype=np.int64)}, "qid 7 has more than one group"),
        ({"labels": np.array([2, 0, 1, 0, 0], dtype=np.int64)}, "labels"),
        ({"offsets": np.array([0, 4, 4, 5], dtype=np.int64)}, "at least one row"),
    ],
    ids=["negative-label", "split-query", "label-dtype", "empty-query"],
)
def test_forged_entries_that_a_parse_would_refuse_are_replaced(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture, forged: dict[str, np.ndarray], reason: str
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir)
    _forge(_only_entry(cache_dir), **forged)
    _assert_same(_read_with_one_warning(path, cache_dir, caplog), parsed)
    assert reason in _cache_warnings(caplog)[0]


def test_a_forged_query_longer_than_max_list_len_is_replaced(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    parsed = read_ranking_file(path, cache_dir=cache_dir, max_list_len=2)
    _forge(_only_entry(cache_dir), qids=np.array([7, 9], dtype=np.int64), offsets=np.array([0, 2, 5], dtype=np.int64))
    _assert_same(_read_with_one_warning(path, cache_dir, caplog, max_list_len=2), parsed)
    assert "has 3 documents, more than 2" in _cache_warnings(caplog)[0]


def test_the_file_is_refused_after_a_bad_entry_when_the_parse_refuses_it(write: WriteFile, tmp_path: Path) -> None:
    """An entry stored under options that allowed a grade is never reused for options that do not."""
    path, cache_dir = write("31 qid:7 1:0.5\n"), tmp_path / "cache"
    assert read_ranking_file(path, cache_dir=cache_dir, max_label=None).labels.tolist() == [31]
    with pytest.raises(DataError, match="above 30"):
        read_ranking_file(path, cache_dir=cache_dir)


# -- atomic and concurrent writes ---------------------------------------------------------------

_LOADER = textwrap.dedent(
    """
    import logging, sys, time
    from pathlib import Path
    import numpy as np
    from ltr.data.formats.readers import read_ranking_file

    path, cache_dir, barrier, me, n, out = sys.argv[1:]
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    Path(barrier, me).touch()
    while len(list(Path(barrier).iterdir())) < int(n):  # start parsing together
        time.sleep(0.001)
    d = read_ranking_file(path, cache_dir=cache_dir)
    np.savez(out, features=d.features, labels=d.labels, qids=d.qids, offsets=d.offsets)
    """
)


def _big_letor(path: Path, n_rows: int, n_features: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, n_rows)
    qids = np.sort(rng.integers(0, n_rows // 20, n_rows))
    values = rng.random((n_rows, n_features)).round(4)
    cols = " ".join(f"{j + 1}:{{{j}}}" for j in range(n_features))
    lines = [f"{labels[i]} qid:{qids[i]} " + cols.format(*values[i]) for i in range(n_rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_processes_parsing_the_same_file_at_once_leave_one_valid_entry(tmp_path: Path) -> None:
    path = _big_letor(tmp_path / "big.txt", 20_000, 20)
    cache_dir, barrier = tmp_path / "cache", tmp_path / "barrier"
    barrier.mkdir()
    n = 3
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _LOADER, str(path), str(cache_dir), str(barrier), str(i), str(n), str(tmp_path / f"out{i}.npz")],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(n)
    ]
    n_parsed = 0
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        for bad in ("Traceback", "bad cache entry", "could not write"):
            assert bad not in err, err
        n_parsed += err.count("parsed ")
    assert n_parsed >= 1
    print(f"{n_parsed} of {n} processes parsed the file; the others read the entry")
    expected = read_ranking_file(path)  # no cache
    for i in range(n):
        with np.load(tmp_path / f"out{i}.npz") as got:
            for field in FIELDS:
                np.testing.assert_array_equal(got[field], getattr(expected, field))
                assert got[field].dtype == getattr(expected, field).dtype
    entry = _only_entry(cache_dir)  # one entry, no temporary directory left behind
    hit = cache.load_cached(cache_dir, [path], _options())
    assert hit is not None
    assert entry.exists()
    _assert_same(hit[0], expected)


_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import numpy as np
    from ltr.data.cache import store_cached
    from ltr.data.ranking_data import RankingData

    path, cache_dir, options = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    n = 2_000_000
    data = RankingData.from_group_sizes(
        np.ones((n, 8), np.float32), np.zeros(n, np.int32), np.arange(n // 10), np.full(n // 10, 10))
    print("ready", flush=True)
    store_cached(cache_dir, [Path(path)], options, data, max_mb=None)
    """
)


def test_a_writer_killed_mid_write_leaves_nothing_that_looks_valid(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    options = _options()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(cache_dir), json.dumps(options)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.name.startswith(".tmp.") for p in cache_dir.glob(".*")):
        time.sleep(0.0005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    entries, leftovers = cache.list_entries(cache_dir)
    if entries:  # pragma: no cover - the kill came after the rename (a very slow machine)
        hit = cache.load_cached(cache_dir, [path], options)
        assert hit is not None  # then the entry is complete and valid
        assert hit[0].n_rows == 2_000_000
        return
    # killed before the rename: only a temporary directory, never an entry under the key
    assert len(leftovers) == 1
    assert cache.load_cached(cache_dir, [path], options) is None
    parsed = _read_without_warning(path, cache_dir, caplog)
    assert parsed.labels.tolist() == [2, 0, 1, 0, 0]
    assert cache.load_cached(cache_dir, [path], options) is not None
    # the leftover of the killed writer is swept once it is old enough
    [left] = leftovers
    old = time.time() - cache.LEFTOVER_AGE_S - 10
    os.utime(left.path, (old, old))
    other = write(TEXT, name="other.txt")
    read_ranking_file(other, cache_dir=cache_dir)
    entries, leftovers = cache.list_entries(cache_dir)
    assert len(entries) == 2
    assert leftovers == []


# -- size limit ---------------------------------------------------------------------------------


def _wide_file(tmp_path: Path, name: str) -> Path:
    """A file whose entry takes about 0.4 MB (1000 rows x 100 features)."""
    rows = [f"{i % 3} qid:{i // 10} " + " ".join(f"{j + 1}:{(i + j) % 7}" for j in range(100)) for i in range(1000)]
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return path


def _entry_names(cache_dir: Path) -> set[str]:
    return {e.path.name for e in cache.list_entries(cache_dir)[0]}


def _key(path: Path) -> str:
    return cache.cache_key([path], _options())


def test_lru_eviction_keeps_the_most_recently_used_entries(tmp_path: Path) -> None:
    a, b, c = (_wide_file(tmp_path, f"{n}.txt") for n in "abc")
    cache_dir = tmp_path / "cache"
    for p in (a, b):
        read_ranking_file(p, cache_dir=cache_dir, cache_max_mb=1)
    assert _entry_names(cache_dir) == {_key(a), _key(b)}  # 0.8 MB: under 1 MB
    now = time.time()
    for p, age in ((a, 200), (b, 100)):  # a was used before b
        os.utime(cache_dir / _key(p) / "meta.json", (now - age, now - age))
    read_ranking_file(a, cache_dir=cache_dir, cache_max_mb=1)  # a cache hit makes a the most recent
    assert (cache_dir / _key(a) / "meta.json").stat().st_mtime > now - 10
    read_ranking_file(c, cache_dir=cache_dir, cache_max_mb=1)  # 1.2 MB: the least recently used goes
    assert _entry_names(cache_dir) == {_key(a), _key(c)}
    total = sum(e.size for e in cache.list_entries(cache_dir)[0])
    assert total <= 1 * cache.MB


def test_the_environment_overrides_the_configured_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LTR_CACHE_MAX_MB", "1")
    cache_dir = tmp_path / "cache"
    for n in "abc":
        read_ranking_file(_wide_file(tmp_path, f"{n}.txt"), cache_dir=cache_dir, cache_max_mb=None)
    assert len(_entry_names(cache_dir)) == 2
    monkeypatch.setenv("LTR_CACHE_MAX_MB", "lots")
    with pytest.raises(DataError, match="LTR_CACHE_MAX_MB='lots' is not an integer"):
        read_ranking_file(tmp_path / "a.txt", cache_dir=cache_dir)


def test_no_limit_keeps_everything(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    for n in "abc":
        read_ranking_file(_wide_file(tmp_path, f"{n}.txt"), cache_dir=cache_dir, cache_max_mb=None)
    assert len(_entry_names(cache_dir)) == 3


def test_an_entry_larger_than_the_limit_is_not_stored(
    write: WriteFile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, cache_dir = write(TEXT), tmp_path / "cache"
    with caplog.at_level("WARNING"):
        data = read_ranking_file(path, cache_dir=cache_dir, cache_max_mb=0)
    assert data.labels.tolist() == [2, 0, 1, 0, 0]
    assert any("more than the cache limit of 0 MB" in m for m in _cache_warnings(caplog))
    assert _entry_names(cache_dir) == set()
