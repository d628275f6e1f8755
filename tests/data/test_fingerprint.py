"""Fingerprints: deterministic, content-sensitive, with shape, label histogram and strata."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from ltr.data.fingerprint import fingerprint, strata_counts
from ltr.data.ranking_data import RankingData
from ltr.data.splits import split_queries
from ltr.metrics import Strata


def _data(seed: int = 0) -> RankingData:
    rng = np.random.default_rng(seed)
    sizes = np.array([1, 10, 11, 50, 51, 120, 3])
    n = int(sizes.sum())
    return RankingData.from_group_sizes(
        rng.random((n, 4)), rng.integers(0, 5, n), np.arange(100, 107), sizes, name="toy"
    )


def test_fingerprint_fields_and_strata_edges() -> None:
    data = _data()
    fp = fingerprint(data)
    assert fp["n_rows"] == 246
    assert fp["n_queries"] == 7
    assert fp["n_features"] == 4
    assert fp["strata"] == {"1-10": 3, "11-50": 2, "51+": 2}
    assert sum(fp["labels"].values()) == 246
    assert len(fp["sha256"]) == 16
    assert json.loads(json.dumps(fp)) == fp
    assert strata_counts(data, Strata((1, 6))) == {"1-5": 2, "6+": 5}


def test_fingerprint_is_deterministic_and_content_sensitive() -> None:
    a, b = _data(), _data()
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(dataclasses.replace(a, name="other"))["sha256"] == fingerprint(a)["sha256"]
    labels = a.labels.copy()
    labels[5] += 1
    assert fingerprint(dataclasses.replace(a, labels=labels))["sha256"] != fingerprint(a)["sha256"]
    features = a.features.copy()
    features[0, 0] = np.nextafter(features[0, 0], np.float32(2))
    assert fingerprint(dataclasses.replace(a, features=features))["sha256"] != fingerprint(a)["sha256"]
    moved = a.offsets.copy()
    moved[1] += 1  # one row moves to the previous query
    assert fingerprint(dataclasses.replace(a, offsets=moved))["sha256"] != fingerprint(a)["sha256"]


def test_fingerprint_of_splits_adds_up() -> None:
    splits = split_queries(_data(), valid_fraction=0.3, test_fraction=0.3, seed=1)
    fp = fingerprint(splits)
    assert fp["n_rows"] == 246
    assert fp["n_queries"] == 7
    assert fp["strata"] == {"1-10": 3, "11-50": 2, "51+": 2}
    assert {"train", "valid", "test"} <= fp.keys()
    assert fp == fingerprint(split_queries(_data(), valid_fraction=0.3, test_fraction=0.3, seed=1))
    assert fp["sha256"] != fingerprint(split_queries(_data(), valid_fraction=0.3, test_fraction=0.3, seed=2))["sha256"]
