"""Format dispatch: LETOR text, LightGBM text + .query, Parquet and CSV with configurable columns."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.data.formats.readers import (
    concat_ranking_data,
    detect_format,
    read_ranking_file,
    read_split_files,
)
from ltr.errors import DataError
from tests.data.conftest import WriteFile


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": [10, 10, 10, 20, 20],
            "relevance": [2, 0, 1, 0, 3],
            "bm25": [1.5, 0.2, 0.7, 0.1, 2.0],
            "pagerank": [0.1, 0.2, 0.3, 0.4, 0.5],
            "clicks": [3, 0, 1, 0, 9],
        }
    )


@pytest.mark.parametrize("name", ["t.parquet", "t.csv", "t.csv.gz", "t.tsv"])
def test_tables_with_configurable_columns(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    frame = _frame()
    if name.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False, sep="\t" if ".tsv" in name else ",")
    data = read_ranking_file(path, qid_column="query_id", label_column="relevance", feature_columns=["pagerank", "bm25"])
    assert data.feature_names == ("pagerank", "bm25")
    assert data.qids.tolist() == [10, 20]
    assert data.offsets.tolist() == [0, 3, 5]
    assert data.labels.tolist() == [2, 0, 1, 0, 3]
    np.testing.assert_array_equal(data.features[:, 1], np.float32(frame["bm25"].to_numpy()))
    everything = read_ranking_file(path, qid_column="query_id", label_column="relevance")
    assert everything.feature_names == ("bm25", "pagerank", "clicks")


def test_table_errors_name_the_column_and_row(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _frame().to_parquet(path)
    with pytest.raises(DataError, match=r"has no qid column 'qid' \(columns: query_id, .*set data.qid_column"):
        read_ranking_file(path)
    with pytest.raises(DataError, match=r"has no feature column\(s\) 'ctr'; fix data.feature_columns"):
        read_ranking_file(path, qid_column="query_id", label_column="relevance", feature_columns=["ctr"])
    frame = _frame().assign(url=["a", "b", "c", "d", "e"])
    frame.to_parquet(path)
    with pytest.raises(DataError, match=r"feature column 'url' of .* is not numeric \(type"):
        read_ranking_file(path, qid_column="query_id", label_column="relevance")
    frame = _frame()
    frame.loc[3, "relevance"] = -2
    frame.to_parquet(path)
    with pytest.raises(DataError, match=r"label -2 at row 4 of .*t.parquet is negative"):
        read_ranking_file(path, qid_column="query_id", label_column="relevance")
    csv = tmp_path / "t.csv"
    frame = _frame().astype({"relevance": object})
    frame.loc[2, "relevance"] = "good"
    frame.to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"label 'good' at line 4 of .*t.csv is not a number"):
        read_ranking_file(csv, qid_column="query_id", label_column="relevance")


def test_string_qids_and_interleaved_table_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"qid": ["b", "a", "b"], "label": [1, 0, 2], "f": [1.0, 2.0, 3.0]}).to_csv(path, index=False)
    with caplog.at_level(logging.WARNING):
        data = read_ranking_file(path)
    assert data.qids.tolist() == [0, 1]  # numbered in order of first appearance
    assert data.features[:, 0].tolist() == [1.0, 3.0, 2.0]
    assert any("qid 'b' at line 2 comes back at line 4" in r.getMessage() for r in caplog.records)  # as written


def test_lightgbm_query_form(write: WriteFile) -> None:
    path = write("1 1:0.5 3:1\n0 2:0.1\n2 1:1\n", "rank.train.gz")
    write("2\n1\n", "rank.train.query")
    assert detect_format(path) == "lightgbm"
    data = read_ranking_file(path)
    assert data.offsets.tolist() == [0, 2, 3]
    assert data.qids.tolist() == [0, 1]
    assert data.features.shape == (3, 3)
    other = write("5\n", "custom.q")
    with pytest.raises(DataError, match=r"group sizes in .*custom.q sum to 5 rows, but .* has 3 data rows"):
        read_ranking_file(path, query_file=other)


def test_explicit_format_overrides_detection(write: WriteFile) -> None:
    path = write("1 1:0.5\n0 1:0.1\n", "rank.train")
    with pytest.raises(DataError, match=r"no group-size file for .*rank.train \(looked for rank.train.query\)"):
        read_ranking_file(path, format="lightgbm")
    with pytest.raises(DataError, match=r"line 1 of .* has no qid"):
        read_ranking_file(path, format="svmlight")
    with pytest.raises(DataError, match=r"unknown data format 'xml'"):
        read_ranking_file(path, format="xml")


def test_split_files_share_the_largest_width(write: WriteFile) -> None:
    train = write("1 qid:1 1:1 2:2\n", "train.txt")
    valid = write("1 qid:2 7:1\n", "vali.txt")
    test = write("1 qid:3 3:1\n", "test.txt")
    splits = read_split_files({"train": train, "valid": valid, "test": test})
    assert {s: d.n_features for s, d in splits.items()} == {"train": 7, "valid": 7, "test": 7}
    assert splits["train"].features.tolist() == [[1, 2, 0, 0, 0, 0, 0]]
    fixed = read_split_files({"train": train, "test": test}, n_features=10)
    assert fixed["test"].n_features == 10


def test_concatenating_parts_regroups_a_qid_found_in_two_parts(write: WriteFile) -> None:
    a = read_ranking_file(write("1 qid:1 1:1\n0 qid:2 1:2\n", "a.txt"))
    b = read_ranking_file(write("2 qid:1 1:3\n", "b.txt"))
    both = concat_ranking_data([a, b], name="ab")
    assert both.qids.tolist() == [1, 2]
    assert both.features[:, 0].tolist() == [1, 3, 2]
    assert both.name == "ab"
