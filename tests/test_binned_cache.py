"""LightGBM's binned data sets on disk (`ltr.training.binned_store`): bit-identical models, keys,
concurrent builders, eviction, corrupt entries, and a second ``ltr train`` that skips binning."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from ltr.data.cache import wait_for_stores
from ltr.data.load import load_splits
from ltr.data.splits import Splits
from ltr.experiment import run as pipeline
from ltr.training import binned
from ltr.training.binned_store import FILES, BinnedStore
from ltr.training.local import fit_ranker, lightgbm_params, train_params

from .conftest import compose_train
from .test_binned_reuse import SWEEP


def fit_kept(*args: Any, **kwargs: Any) -> Any:
    """:func:`fit_ranker`, then the background write of the sets it binned to its store waited for."""
    result = fit_ranker(*args, **kwargs)
    wait_for_stores()
    return result


@pytest.fixture(scope="module")
def splits() -> tuple[DictConfig, Splits]:
    """The config and splits of a small run (``small_cfg``'s, 25 rounds), made once: the tests
    only read them (each copies the model or fit config it changes)."""
    cfg = compose_train([
        "data.n_queries=300", "fit.num_boost_round=25", "fit.early_stopping_rounds=10", "fit.show_progress=false",
        "model.num_leaves=7", "tracking=none",
    ])  # fmt: skip
    return cfg, load_splits(cfg.data, cfg.split, seed=cfg.seed)


def _entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def test_models_from_disk_are_bit_identical_to_fresh_builds(
    splits: tuple[DictConfig, Splits], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg, data = splits
    store = BinnedStore(tmp_path / "binned")
    loaded = []
    for leaves, rate, min_child in SWEEP:
        model = cfg.model.copy()
        model.num_leaves, model.learning_rate, model.min_child_samples = leaves, rate, min_child
        binned._last.clear()  # a new process: nothing in memory
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ltr.training"):
            cached = fit_kept(data, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key="same data", binned_store=store)
        loaded.append(any("binned data: loaded from" in r.message for r in caplog.records))
        fresh = fit_ranker(data, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key=None)
        assert cached.booster.model_to_string() == fresh.booster.model_to_string(), (leaves, rate, min_child)
        assert cached.curves == fresh.curves
    # from disk whenever an earlier job stored the same binning key (min_child_samples keys it)
    assert loaded == [False, True, True, False, True, True]
    assert len(_entries(store.directory)) == 2


@pytest.mark.parametrize(
    "change",
    [{"max_bin": 63}, {"min_data_in_bin": 7}, {"bin_construct_sample_cnt": 1000}, {"feature_pre_filter": False},
     {"min_child_samples": 5}, {"categorical_feature": "0"}, {"use_missing": False}],
)
def test_every_binning_parameter_keys_the_entry(splits: tuple[DictConfig, Splits], change: dict[str, object]) -> None:
    cfg, _ = splits
    params = train_params(lightgbm_params(cfg.model, seed=cfg.seed, num_threads=1), eval_at=[10])
    key = binned.binning_key("d", params, position_bias=False)
    other = binned.binning_key("d", params | change, position_bias=False)
    assert key != other
    store = BinnedStore(Path("/nonexistent"))
    assert store.entry_name(key) != store.entry_name(other)
    # and the data: another fingerprint is another entry
    assert store.entry_name(binned.binning_key("e", params, position_bias=False)) != store.entry_name(key)


def test_a_forced_bins_file_edited_in_place_is_binned_again(
    splits: tuple[DictConfig, Splits], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``forcedbins_filename`` keys the binned data by the file's content, not only its path: the
    same path with other bounds is a new entry, whose model is a fresh build's (it loaded the old
    bins from disk, a model of bounds the config no longer names)."""
    cfg, data = splits
    store = BinnedStore(tmp_path / "binned")
    bins = tmp_path / "bins.json"
    models = []
    for bounds in ([-0.5, 0.0, 0.5], [-1.0, 1.0]):
        bins.write_text(json.dumps([{"feature": 0, "bin_upper_bound": bounds}]))
        model = cfg.model.copy()
        model.params = {**model.params, "forcedbins_filename": str(bins)}
        binned._last.clear()  # a new process: nothing in memory
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ltr.training"):
            cached = fit_kept(data, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key="same data", binned_store=store)
        assert not any("binned data: loaded from" in r.message for r in caplog.records)
        fresh = fit_ranker(data, model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key=None)
        assert cached.booster.model_to_string() == fresh.booster.model_to_string()
        models.append(fresh.booster.model_to_string())
    assert models[0] != models[1]  # the bounds shape the model: a stale entry would be seen
    assert len(_entries(store.directory)) == 2


def test_a_changed_data_file_is_binned_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "all.txt"

    def write(n_queries: int) -> None:
        lines = [f"{rng.integers(0, 3)} qid:{q} " + " ".join(f"{j + 1}:{rng.normal():.4f}" for j in range(5))
                 for q in range(n_queries) for _ in range(8)]  # fmt: skip
        path.write_text("\n".join(lines) + "\n")

    cache = tmp_path / "cache"
    overrides = ["data=svmlight", f"data.train={path}", f"data.cache_dir={cache}", "tracking=none",
                 "fit.num_boost_round=20", "fit.show_progress=false", "model.num_leaves=7"]
    messages = []
    for n in (120, 120, 121):
        if n != 120 or not path.exists():
            write(n)
        binned._last.clear()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ltr.training"):
            pipeline.run(compose_train(overrides))
        messages.append(next(r.message.split(":")[1].split()[0] for r in caplog.records if r.message.startswith("binned data")))
    assert messages == ["built", "loaded", "built"]
    assert len(_entries(cache / "binned")) == 2


def test_least_recently_used_entries_are_evicted(splits: tuple[DictConfig, Splits], tmp_path: Path) -> None:
    cfg, data = splits
    store = BinnedStore(tmp_path / "binned", max_mb=None)
    sizes = []
    for n in (20, 5, 2):  # three binning keys
        model = cfg.model.copy()
        model.min_child_samples = n
        binned._last.clear()
        fit_kept(data, model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
        sizes.append(sum(f.stat().st_size for e in (store.directory).iterdir() for f in e.iterdir()))
    names = _entries(store.directory)
    assert len(names) == 3
    entry_mb = sizes[0] / 2**20
    oldest = min(names, key=lambda n: (store.directory / n / "meta.json").stat().st_mtime)
    os.utime(store.directory / oldest / "meta.json", (1, 1))  # make it the least recently used
    small = BinnedStore(store.directory, max_mb=int(np.ceil(2.5 * entry_mb)) or 1)
    model = cfg.model.copy()
    model.min_child_samples = 3
    binned._last.clear()
    fit_kept(data, model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=small)
    left = _entries(store.directory)
    assert oldest not in left
    assert sum(f.stat().st_size for n in left for f in (store.directory / n).iterdir()) <= small.max_mb * 2**20  # type: ignore[operator]


def test_a_corrupt_entry_is_removed_and_binned_again(
    splits: tuple[DictConfig, Splits], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg, data = splits
    store = BinnedStore(tmp_path / "binned")
    binned._last.clear()
    first = fit_kept(data, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
    (entry,) = store.directory.iterdir()
    with (entry / FILES[0]).open("r+b") as f:  # flip a byte in the middle of train.bin
        f.seek(f.seek(0, 2) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    binned._last.clear()
    with caplog.at_level(logging.WARNING, logger="ltr.training"):
        again = fit_kept(data, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
    assert any("removed bad binned-data entry" in r.message and "checksum mismatch of train.bin" in r.message for r in caplog.records)
    assert again.booster.model_to_string() == first.booster.model_to_string()
    assert len(_entries(store.directory)) == 1  # stored again



def _flip_and_reseal(entry: Path, file: str, at: float, n_bytes: int) -> None:
    """Invert ``n_bytes`` bytes of ``file`` from ``at`` (a fraction of its size) on, then write
    the file's sha256 and meta.json's own checksum anew: an entry that passes verification."""
    from ltr.data.cache import meta_digest
    from ltr.training.binned_store import _file_digest

    path = entry / file
    blob = bytearray(path.read_bytes())
    start = int(at * len(blob))
    for i in range(start, start + n_bytes):
        blob[i] ^= 0xFF
    path.write_bytes(bytes(blob))
    meta = json.loads((entry / "meta.json").read_text())
    meta["files"][file]["sha256"] = _file_digest(path)
    del meta["digest"]
    meta["digest"] = meta_digest(meta)
    (entry / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("file", "at", "n_bytes", "reason"),
    [
        ("train.bin", 0.5, 16, "LightGBM failed on it: LightGBM rejected the training setup: Cannot add validation data"),
        ("test.bin", 0.3, 100, "LightGBM failed on it"),
        ("train.bin", 0.1, 64, "train's labels differ from the data's"),
    ],
    ids=["bin-mappers", "test-set", "labels"],
)
def test_an_altered_entry_with_matching_checksums_is_dropped_and_binned_again(
    splits: tuple[DictConfig, Splits], tmp_path: Path, caplog: pytest.LogCaptureFixture,
    file: str, at: float, n_bytes: int, reason: str,
) -> None:
    """Issue 30: flipped bytes *and* rewritten checksums made every later run fail with a
    LightGBM error that never named the cache. Now the entry is removed with one warning
    naming it, the data is binned again (and stored again), and the model is a fresh build's."""
    cfg, data = splits
    fit = cfg.fit.copy()
    fit.num_boost_round = 8
    store = BinnedStore(tmp_path / "binned")
    binned._last.clear()
    first = fit_kept(data, cfg.model, fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
    (entry,) = store.directory.iterdir()
    _flip_and_reseal(entry, file, at, n_bytes)
    assert store.load(binned.binning_key("d", first.params, position_bias=False), first.params) is not None  # passes verification
    binned._last.clear()
    with caplog.at_level(logging.WARNING, logger="ltr.training"):
        again = fit_kept(data, cfg.model, fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"removed the binned-data cache entry {entry} (")
    assert reason in warning
    assert warning.endswith("binning the data again (ltr cache clear removes every entry)")
    assert again.booster.model_to_string() == first.booster.model_to_string()
    assert again.curves == first.curves
    assert _entries(store.directory) == [entry.name]  # stored again, intact
    binned._last.clear()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ltr.training"):
        fit_kept(data, cfg.model, fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=store)
    assert any("binned data: loaded from" in r.getMessage() for r in caplog.records)

BUILD = """
import sys
from pathlib import Path
import lightgbm as lgb
import numpy as np
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.data.cache import wait_for_stores
from ltr.training.binned import binned_datasets, keep_built
from ltr.training.binned_store import BinnedStore
rng = np.random.default_rng(0)
def part(n_queries):
    sizes = np.full(n_queries, 20)
    x = rng.normal(size=(int(sizes.sum()), 8)).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)
    return RankingData.from_group_sizes(x, y, np.arange(n_queries), sizes)
splits = Splits(part(400), part(100), part(100))
params = {"objective": "lambdarank", "num_leaves": 7, "seed": 1, "num_threads": 1, "verbosity": -1, "deterministic": True}
train, evals, _ = binned_datasets(splits, params, position_bias=False, data_key="d", store=BinnedStore(Path(sys.argv[1])))
booster = lgb.train(params, train, 10, valid_sets=list(evals))
keep_built()
wait_for_stores()
open(sys.argv[2], "w").write(booster.model_to_string())
"""


def test_two_processes_building_the_same_entry(tmp_path: Path) -> None:
    directory = tmp_path / "binned"
    root = Path(__file__).resolve().parents[1]
    procs = [
        subprocess.Popen([sys.executable, "-c", BUILD, str(directory), str(tmp_path / f"model{i}.txt")], cwd=root,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    assert (tmp_path / "model0.txt").read_text() == (tmp_path / "model1.txt").read_text()
    assert len(_entries(directory)) == 1
    assert not [p for p in directory.iterdir() if p.name.startswith(".tmp.")]  # no half entry left
    store = BinnedStore(directory)
    (entry,) = directory.iterdir()
    assert sorted(f.name for f in entry.iterdir()) == sorted([*FILES, "meta.json"])
    assert store.entry_name(("x",)) != entry.name


def test_ltr_cache_lists_and_clears_binned_data(
    splits: tuple[DictConfig, Splits], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ltr.cli.main import main

    cfg, data = splits
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "cache"))
    binned._last.clear()
    fit_kept(data, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=BinnedStore(tmp_path / "cache" / "binned"))
    assert main(["cache"]) == 0
    assert f"binned:    1 LightGBM data sets in {tmp_path / 'cache' / 'binned'}" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 binned data sets" in capsys.readouterr().out
    assert _entries(tmp_path / "cache" / "binned") == []


def test_stored_data_sets_are_built_with_the_training_parameters(
    splits: tuple[DictConfig, Splits], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 30: ``experiment=letor_cv`` (min_child_samples=10) printed "[LightGBM] [Fatal]
    Reducing `min_data_in_leaf` ..." for data sets built with LightGBM's defaults to be stored."""
    cfg, data = splits
    model = cfg.model.copy()
    model.min_child_samples = 10
    binned._last.clear()
    stored = fit_kept(data, model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key="d", binned_store=BinnedStore(tmp_path / "b"))
    out, err = capfd.readouterr()
    assert "Fatal" not in out + err
    assert "min_data_in_leaf" not in out + err
    fresh = fit_ranker(data, model, cfg.fit, eval_at=[10], seed=cfg.seed, data_key=None)
    assert stored.booster.model_to_string() == fresh.booster.model_to_string()


def test_keeping_the_binned_data_prints_nothing_and_logs_lightgbms_lines_at_debug(
    splits: tuple[DictConfig, Splits], tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The store is written in a background thread, where LightGBM's C++ library printed
    ``[LightGBM] [Info] Saving data to binary file ...`` on stdout after the run's results: its
    lines go to the ``lightgbm`` logger at DEBUG, from that thread too, and nothing is printed."""
    cfg, data = splits
    store = BinnedStore(tmp_path / "binned")
    binned._last.clear()
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG, logger="lightgbm"):
        fit_kept(data, cfg.model, cfg.fit, eval_at=[5, 10], seed=cfg.seed, data_key="quiet", binned_store=store)
    printed = capfd.readouterr()
    assert "[LightGBM]" not in printed.out + printed.err
    saved = [r for r in caplog.records if r.name == "lightgbm" and "Saving data to binary file" in r.getMessage()]
    assert [r.levelno for r in saved] == [logging.DEBUG] * len(FILES)
    assert sorted(Path(r.getMessage().rsplit(" ", 1)[-1]).name for r in saved) == sorted(FILES)
    assert len(_entries(store.directory)) == 1
