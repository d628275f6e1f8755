"""Real public files read exactly as ``../shared/data/stats.json`` counts them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from ltr.config.groups.data import LetorPartsDataConfig, SplitConfig
from ltr.data.fingerprint import fingerprint
from ltr.data.formats.readers import read_ranking_file, read_split_files
from ltr.data.load import load_splits
from ltr.data.ranking_data import RankingData
from tests.data.conftest import SHARED_DATA, needs_shared_data

pytestmark = needs_shared_data


def _stats() -> dict[str, dict[str, Any]]:
    if not (SHARED_DATA / "stats.json").is_file():
        return {}
    return {entry["name"]: entry for entry in json.loads((SHARED_DATA / "stats.json").read_text())}


def _assert_matches(data: RankingData, expected: dict[str, Any]) -> None:
    fp = fingerprint(data)
    assert fp["n_rows"] == expected["rows"]
    assert fp["n_queries"] == expected["queries"]
    assert fp["labels"] == expected["labels"]
    assert fp["strata"] == expected["list_len_buckets"]
    assert data.n_features == expected["features_max_index"]
    assert int((data.features != 0).any(axis=0).sum()) <= expected["features_distinct"]
    sizes = data.group_sizes
    assert (int(sizes.min()), int(sizes.max())) == (expected["list_len_min"], expected["list_len_max"])
    assert abs(float(np.median(sizes)) - expected["list_len_median"]) <= 0.5  # stats.json rounds
    assert round(float(sizes.mean()), 1) == expected["list_len_mean"]
    maxima = np.maximum.reduceat(data.labels, data.offsets[:-1])
    minima = np.minimum.reduceat(data.labels, data.offsets[:-1])
    assert int((maxima == 0).sum()) == expected["queries_all_label0"]
    assert int((maxima == minima).sum()) == expected["queries_constant_label"]


@pytest.mark.parametrize("name", [n for n in _stats() if n.endswith(".txt.gz")] or ["none"])
def test_file_matches_stats_json(name: str) -> None:
    _assert_matches(read_ranking_file(SHARED_DATA / name), _stats()[name])


@pytest.mark.parametrize("split", ["train", "test"])
def test_yahoo_sample_query_form_equals_qid_form(split: str) -> None:
    folder = SHARED_DATA / "lightgbm_yahoo_sample"
    by_query_file = read_ranking_file(folder / f"rank.{split}.gz")  # groups from rank.{split}.query
    by_qid = read_ranking_file(folder / f"{split}.qid.txt.gz")
    _assert_matches(by_query_file, _stats()[f"lightgbm_yahoo_sample/{split}.qid.txt.gz"])
    np.testing.assert_array_equal(by_query_file.features, by_qid.features)
    np.testing.assert_array_equal(by_query_file.labels, by_qid.labels)
    np.testing.assert_array_equal(by_query_file.offsets, by_qid.offsets)
    sizes = np.loadtxt(folder / f"rank.{split}.query", dtype=np.int64)
    np.testing.assert_array_equal(by_query_file.group_sizes, sizes)


def test_yahoo_sample_split_set_has_one_width() -> None:
    folder = SHARED_DATA / "lightgbm_yahoo_sample"
    splits = read_split_files({"train": folder / "train.qid.txt.gz", "test": folder / "test.qid.txt.gz"})
    assert splits["train"].n_features == splits["test"].n_features == 300


def test_mq2008_values_equal_sklearn() -> None:
    from sklearn.datasets import load_svmlight_file

    x, y, q = load_svmlight_file(str(SHARED_DATA / "mq2008" / "S4.txt.gz"), query_id=True)
    data = read_ranking_file(SHARED_DATA / "mq2008" / "S4.txt.gz")
    np.testing.assert_array_equal(data.features, x.toarray().astype(np.float32))
    np.testing.assert_array_equal(data.labels, y)
    np.testing.assert_array_equal(data.row_qids(), q)


@pytest.mark.parametrize(
    ("fold", "train", "valid", "test"),
    [(1, "S1 S2 S3", "S4", "S5"), (2, "S2 S3 S4", "S5", "S1"), (5, "S5 S1 S2", "S3", "S4")],
)
def test_mq2008_fold_rotation(fold: int, train: str, valid: str, test: str, tmp_path: Path) -> None:
    stats = _stats()

    def rows(parts: str) -> int:
        return sum(stats[f"mq2008/{p}.txt.gz"]["rows"] for p in parts.split())

    cfg = OmegaConf.structured(LetorPartsDataConfig(root=str(SHARED_DATA / "mq2008"), fold=fold))
    cfg.cache_dir = str(tmp_path)
    splits = load_splits(cfg, OmegaConf.structured(SplitConfig), seed=0)
    assert (splits.train.n_rows, splits.valid.n_rows, splits.test.n_rows) == (rows(train), rows(valid), rows(test))
    fp = fingerprint(splits)
    assert fp["n_queries"] == 784
    assert fp["labels"] == {"0": 12279, "1": 2001, "2": 931}
    assert fp["strata"] == {"1-10": 403, "11-50": 307, "51+": 74}


def test_yahoo_query_form_split_set_numbers_queries_on(caplog: pytest.LogCaptureFixture) -> None:
    from ltr.data.validate import check_split_set

    folder = SHARED_DATA / "lightgbm_yahoo_sample"
    splits = read_split_files({"train": folder / "rank.train.gz", "test": folder / "rank.test.gz"})
    assert splits["train"].qids.tolist() == list(range(201))
    assert splits["test"].qids.tolist() == list(range(201, 251))
    caplog.clear()  # the readers' INFO lines, if an earlier test left their logger at INFO
    with caplog.at_level("WARNING"):
        check_split_set(splits)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
