"""The neutral fields of the config (:mod:`ltr.config.neutral`) change no result: a run with every
one of them set otherwise (no progress display, caches off, cache limits that refuse to store,
another cache folder, the binned data not reused) gives the same metrics, bit for bit, as the same
run with the defaults, first from the data files and again from the caches."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from ltr import api
from ltr.config.schema import neutral_keys
from ltr.data.cache import forget_recent
from ltr.training import binned


def _write_split(path: Path, rng: np.random.Generator, qids: range) -> None:
    lines = []
    for q in qids:
        for _ in range(int(rng.integers(2, 25))):
            x = rng.random(5)
            label = int(min(4, np.floor(x[0] * 4 + rng.random())))
            lines.append(f"{label} qid:{q} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x)))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(11)
    for split, qids in (("train", range(120)), ("valid", range(120, 160)), ("test", range(160, 200))):
        _write_split(tmp_path / f"{split}.txt", rng, qids)
    return ["data=svmlight", *(f"data.{s}={tmp_path / f'{s}.txt'}" for s in ("train", "valid", "test"))]


def _results(overrides: list[str]) -> tuple[dict[str, float], int]:
    out = api.train([*overrides, "tracking=none", "fit.num_boost_round=40", "fit.early_stopping_rounds=10",
                     "model.num_leaves=7", "model.min_child_samples=5"])  # fmt: skip
    return {k: v for k, v in out.metrics.items() if not k.endswith("_seconds")}, out.best_iteration


def test_every_neutral_field_set_otherwise_gives_the_same_metrics_bit_for_bit(
    files: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    default_cache = f"data.cache_dir={tmp_path / 'cache'}"
    first = _results([*files, default_cache])  # parses the files and bins the data: caches written
    assert len(first[0]) > 50
    settings = {
        "from the caches, progress shown": [default_cache, "data.progress=true", "fit.show_progress=false"],
        # the heartbeat beats only with a store (here tracking=none): tests/reliability/test_liveness.py
        # compares a beating run's metrics with a silent one's
        "no cache at all": ["data.cache=false", "data.binned_cache=false", "fit.reuse_binned_data=false",
                            "tracking.heartbeat_s=0.1", "tracking.stale_after=2", "tracking.server_wait_s=0"],
        "limits that store nothing": [f"data.cache_dir={tmp_path / 'other'}", "data.cache_max_mb=0",
                                      "data.binned_cache_max_mb=0", "fit.reuse_binned_data=false"],
    }  # fmt: skip
    covered = {override.split("=", 1)[0] for overrides in settings.values() for override in overrides}
    assert covered == set(neutral_keys())  # each neutral field is set otherwise at least once
    for name, overrides in settings.items():
        forget_recent()  # as a new process: nothing of the last read or binning in memory
        binned._last.clear()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ltr"):
            metrics, best = _results([*files, *overrides])
        if name == "from the caches, progress shown":  # the caches on disk were read, not the files
            assert caplog.text.count("from the cache in") == 3, caplog.text
            assert "binned data: loaded from" in caplog.text, caplog.text
        assert best == first[1], name
        assert metrics == first[0], name  # float equality: bit for bit
