"""Parquet partitions of whole queries, read by the workers themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.dask.parquet import read_part, read_query_partitions, write_query_partitions
from ltr.data.formats.readers import read_ranking_file
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


#: int64 features where float32 rounds (2**24 + 1 ..): through float64 as the local reader goes;
#: 2**60 + 2**36 + 1 is where that differs from numpy's direct int64 -> float32 (the float64 is a
#: float32 tie, to even, 2**60; directly it rounds up), what the Dask reader did before
_INTS = [2**24 + k for k in range(1, 8)] + [2**53 + 3, 2**60 + 2**36 + 1, -(2**63), 2**63 - 1, 0]


def _mixed_file(path: Path, *, infinity_at: int | None = None) -> pa.Table:
    """One query per 4 rows; int64 above 2**24 and 2**53, float64 (tiny, huge, NaN), float32 with
    a NaN, int32 with nulls, booleans: the columns of a partition file others than ltr write."""
    n = len(_INTS)
    rng = np.random.default_rng(3)
    f64 = rng.standard_normal(n) * 1e30
    f64[:4] = [1e-40, 3.4028235e38, np.nan, -0.0]
    if infinity_at is not None:
        f64[infinity_at] = -np.inf
    f32 = rng.standard_normal(n).astype(np.float32)
    f32[2] = np.nan
    table = pa.table({
        "qid": pa.array(np.arange(n) // 4 + 10, pa.int64()), "label": pa.array(np.arange(n) % 3, pa.int32()),
        "ints": pa.array(_INTS, pa.int64()), "f64": pa.array(f64), "f32": pa.array(f32),
        "nulls": pa.array(np.arange(n, dtype=np.int32), mask=np.arange(n) % 3 == 1), "flag": pa.array(np.arange(n) % 2 == 0),
    })
    pq.write_table(table, path)
    return table


def test_read_part_gives_the_local_readers_bits(tmp_path: Path) -> None:
    path = tmp_path / "part-00000.parquet"
    table = _mixed_file(path)
    names = ["ints", "f64", "f32", "nulls", "flag"]
    features, labels, group_sizes, qids, _ = read_part(str(path), "qid", "label", names)
    local = read_ranking_file(path)
    assert features.tobytes() == local.features.tobytes()
    assert features[:, 0].tobytes() == np.array(_INTS, np.int64).astype(np.float64).astype(np.float32).tobytes()
    assert features[:8, 0].tolist() == [2.0**24, 2.0**24 + 2, 2.0**24 + 4, 2.0**24 + 4, 2.0**24 + 4, 2.0**24 + 6, 2.0**24 + 8, 2.0**53]
    assert features[8, 0] == np.float32(2.0**60) != np.float32(np.int64(_INTS[8]))  # not the direct cast
    assert np.isnan([features[2, 1], features[2, 2], features[1, 3]]).all()
    assert features[:, 4].tolist() == [1.0, 0.0] * 6
    np.testing.assert_array_equal(labels, table.column("label").to_numpy())
    assert group_sizes.tolist() == [4, 4, 4]
    assert qids.tolist() == [10, 11, 12]


def test_an_infinity_in_a_partition_is_the_local_readers_one_line(client: Any, tmp_path: Path) -> None:
    path = tmp_path / "part-00000.parquet"
    _mixed_file(path, infinity_at=9)
    with pytest.raises(DataError) as local:
        read_ranking_file(path)
    with pytest.raises(DataError) as on_worker:
        read_part(str(path), "qid", "label", ["ints", "f64", "f32", "nulls", "flag"])
    message = str(on_worker.value)
    assert message == str(local.value)
    assert message.startswith(f"feature column 'f64' of {path} has infinite value -inf at row 10 (qid 12); ")
    assert "\n" not in message
    with pytest.raises(DataError) as through_the_cluster:
        read_query_partitions(client, tmp_path)
    assert str(through_the_cluster.value) == message


def test_a_text_column_in_a_partition_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "part-00000.parquet"
    pq.write_table(pa.table({"qid": [1, 1], "label": pa.array([0, 1], pa.int32()), "f0": [0.5, 1.5], "url": ["a", "b"]}), path)
    with pytest.raises(DataError, match=r"^feature column 'url' of .*part-00000\.parquet is not numeric \(type string\); convert it: every column"):
        read_part(str(path), "qid", "label", ["f0", "url"])


def test_files_are_read_in_the_order_of_their_numbers(client: Any, tmp_path: Path) -> None:
    """Files named ``part-0.parquet`` .. ``part-11.parquet`` (numbers of one and two digits, as
    ``part-99999`` and ``part-100000`` are past 99,999 partitions): read in the written order, not
    as text sorts the names (``part-10`` before ``part-2``)."""
    data = random_ranking_data(8, n_queries=40)
    written = write_query_partitions(data, tmp_path / "padded", n_partitions=12)
    widths = tmp_path / "widths"
    widths.mkdir()
    for i, path in enumerate(written):
        path.rename(widths / f"part-{i}.parquet")
    assert sorted(p.name for p in widths.iterdir())[2] == "part-10.parquet"
    split = read_query_partitions(client, widths)
    np.testing.assert_array_equal(split.qids.compute(), data.qids)
    np.testing.assert_array_equal(split.group_sizes.compute(), data.group_sizes)
    np.testing.assert_array_equal(split.features.compute(), data.features)
