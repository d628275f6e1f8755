"""Parquet partitions of whole queries, read by the workers themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.dask.parquet import read_query_partitions, write_query_partitions
from ltr.errors import DataError
from tests.dask.conftest import random_ranking_data


def test_round_trip_keeps_rows_queries_and_names(client: Any, tmp_path: Path) -> None:
    data = random_ranking_data(5, n_queries=40)
    paths = write_query_partitions(data, tmp_path, n_partitions=3)
    assert [p.name for p in paths] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    split = read_query_partitions(client, tmp_path)
    assert split.n_partitions == 3
    assert split.feature_names == data.feature_names
    np.testing.assert_array_equal(split.features.compute(), data.features)
    np.testing.assert_array_equal(split.labels.compute(), data.labels)
    np.testing.assert_array_equal(split.group_sizes.compute(), data.group_sizes)
    np.testing.assert_array_equal(split.qids.compute(), data.qids)


def _write(path: Path, qids: list[int]) -> None:
    n = len(qids)
    pq.write_table(
        pa.table({"qid": pa.array(qids, pa.int64()), "label": pa.array([0] * n, pa.int32()), "f0": pa.array([0.5] * n, pa.float32())}),
        path,
    )


def test_a_query_in_two_files_is_an_error_naming_both(client: Any, tmp_path: Path) -> None:
    _write(tmp_path / "part-00000.parquet", [1, 1, 2])
    _write(tmp_path / "part-00001.parquet", [2, 3])
    with pytest.raises(DataError, match=r"qid 2 appears in several files: .*part-00000.* .*part-00001"):
        read_query_partitions(client, tmp_path)


def test_interleaved_rows_of_a_query_are_an_error(client: Any, tmp_path: Path) -> None:
    _write(tmp_path / "part-00000.parquet", [1, 2, 1])
    with pytest.raises(DataError, match=r"rows of qid 1 in .*part-00000\.parquet are not contiguous"):
        read_query_partitions(client, tmp_path)
