"""``ltr partition`` on files of string qids: the partition files keep the qids as written (a
string column of the same values, row for row), and the Dask reader gets from them the queries,
rows, order and metrics that reading the source files gives. Integer qids stay int64.

Real files in ``tmp_path``, the real ``ltr`` entry point (in process), a real in-process Dask
cluster (``client``, tests/dask/conftest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from ltr.cli.main import main
from ltr.dask.parquet import read_query_partitions
from ltr.dask.partitioned import partitioned_tables
from ltr.data.formats.readers import read_ranking_file
from ltr.data.ranking_data import RankingData
from ltr.data.splits import split_queries
from ltr.metrics import MetricConventions, Strata, per_query_table
from ltr.metrics.reports.gap import lightgbm_gap

# Train: "q-b" comes back after "q-a" (rows 1, 2, 5), "q-a" after "7" (rows 3, 7); "7" and "07"
# are two queries (a string column keeps both as written). Regrouped stably, in order of first
# appearance: q-b q-b q-b | q-a q-a | 7 | 07 | q-z.
TRAIN_QIDS = ["q-b", "q-b", "q-a", "7", "q-b", "07", "q-a", "q-z"]
TRAIN_GROUPED = ["q-b", "q-b", "q-b", "q-a", "q-a", "7", "07", "q-z"]
TRAIN_ROWS = [0, 1, 4, 2, 6, 3, 5, 7]  # the input row of every output row
VALID_QIDS = ["q-a", "q-a", "v 1", "v 1", "v 2"]  # numbered 0, 0, 1, 1, 2: as train's q-b, q-a, 7
TEST_QIDS = ["t-x", "t-y", "t-y", "t-x"]


def _table(qids: list[str], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(qids)
    return pa.table({
        "qid": pa.array(qids, pa.string()),
        "label": pa.array(rng.integers(0, 4, n), pa.int64()),
        "f1": pa.array(np.arange(n, dtype=np.float64) + 0.5),  # the input row, plus a half
        "f2": pa.array(rng.standard_normal(n)),
    })


def _write(path: Path, table: pa.Table) -> Path:
    if path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
    return path


def _partition(*args: str | Path) -> None:
    assert main(["partition", *(str(a) for a in args)]) == 0


def _written(directory: Path) -> pa.Table:
    """The split's partition files, concatenated in file (query) order, read with pyarrow."""
    return pa.concat_tables([pq.read_table(p) for p in sorted(directory.glob("part-*.parquet"))])


def _read_back(client: Any, directory: Path) -> RankingData:
    """A split as ``data=parquet_partitions`` reads it (``read_query_partitions``), gathered here."""
    split = read_query_partitions(client, directory)
    features, labels, sizes, qids = client.compute([split.features, split.labels, split.group_sizes, split.qids], sync=True)
    return RankingData.from_group_sizes(features, labels, qids, sizes, feature_names=split.feature_names)


def _labels_per_query(data: RankingData) -> list[list[int]]:
    return [data.labels[a:b].tolist() for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True)]


def _assert_same_queries(read_back: RankingData, source: RankingData) -> None:
    """The same queries in the same order, the same rows in each, bit for bit."""
    assert _labels_per_query(read_back) == _labels_per_query(source)
    assert read_back.offsets.tolist() == source.offsets.tolist()
    assert np.array_equal(read_back.features.view(np.uint32), source.features.view(np.uint32))
    assert read_back.feature_names == source.feature_names
    assert read_back.qids.tolist() == list(range(source.n_queries))  # numbered again over the files


def _assert_whole_queries(directory: Path) -> None:
    """Every query's rows contiguous in one file, no query in two files (by its written qid)."""
    seen: set[str] = set()
    for path in sorted(directory.glob("part-*.parquet")):
        rows = pq.read_table(path).column("qid").to_pylist()
        runs = [q for i, q in enumerate(rows) if i == 0 or rows[i - 1] != q]
        assert len(runs) == len(set(runs)), f"a query's rows are not contiguous in {path}"
        assert not seen & set(runs), f"a query of {path} is in an earlier file too"
        seen |= set(runs)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_partition_files_keep_string_qids_as_written(client: Any, tmp_path: Path, suffix: str) -> None:
    train = _write(tmp_path / f"train{suffix}", _table(TRAIN_QIDS, 1))
    valid = _write(tmp_path / f"valid{suffix}", _table(VALID_QIDS, 2))
    test = _write(tmp_path / f"test{suffix}", _table(TEST_QIDS, 3))
    out = tmp_path / "parts"
    _partition("--train", train, "--valid", valid, "--test", test, "--out", out, "--partitions", "3")

    written = _written(out / "train")
    assert written.schema.field("qid").type == pa.string()
    assert written.column("qid").to_pylist() == TRAIN_GROUPED
    assert written.column("f1").to_pylist() == [r + 0.5 for r in TRAIN_ROWS]  # each qid with its own row
    assert written.column("label").to_pylist() == [_table(TRAIN_QIDS, 1).column("label")[r].as_py() for r in TRAIN_ROWS]
    assert len(list((out / "train").glob("part-*.parquet"))) == 3
    assert _written(out / "valid").column("qid").to_pylist() == VALID_QIDS
    assert _written(out / "test").column("qid").to_pylist() == ["t-x", "t-x", "t-y", "t-y"]

    for split, path in (("train", train), ("valid", valid), ("test", test)):
        _assert_whole_queries(out / split)
        source = read_ranking_file(path)
        assert source.qid_names is not None
        back = _read_back(client, out / split)
        _assert_same_queries(back, source)
        first_rows = _written(out / split).column("qid").take(pa.array(back.offsets[:-1])).to_pylist()
        assert first_rows == source.qid_names.tolist()  # query i of the Dask read is query i as written


def test_cut_splits_keep_their_names_and_their_metrics(client: Any, tmp_path: Path) -> None:
    """One file of 30 string-qid queries, cut into train / valid / test by ltr partition (seed 42):
    each split's files hold its queries' names; the Dask reader numbers them 0, 1, ... afresh (the
    source split keeps the whole file's numbers), every query scores what it scores read from
    the source, ERR's split-wide largest gain included, and both tables name it as written."""
    rng = np.random.default_rng(7)
    names = [f"query-{rng.integers(1 << 40):x}" for _ in range(30)]
    qids = [q for q in names for _ in range(int(rng.integers(1, 9)))]
    n = len(qids)
    path = tmp_path / "all.parquet"
    pq.write_table(pa.table({
        "qid": qids, "label": rng.integers(0, 5, n), "f1": rng.standard_normal(n), "f2": rng.integers(0, 3, n),
    }), path)
    out = tmp_path / "parts"
    _partition("--train", path, "--out", out, "--partitions", "2")
    source = split_queries(read_ranking_file(path), valid_fraction=0.2, test_fraction=0.2, seed=42)
    assert source.train.qids.tolist() != list(range(source.train.n_queries))  # the whole file's numbers
    booster = lgb.train(
        {"objective": "lambdarank", "num_leaves": 4, "verbose": -1, "min_data_in_leaf": 3},
        lgb.Dataset(source.train.features, source.train.labels, group=source.train.group_sizes), num_boost_round=5,
    )
    conventions, strata = MetricConventions(), Strata()
    for split, data in source.items():
        assert data.qid_names is not None
        assert _written(out / split).column("qid").to_pylist() == np.repeat(data.qid_names, data.group_sizes).tolist()
        back = _read_back(client, out / split)
        _assert_same_queries(back, data)
        table, gap = partitioned_tables(
            client, booster, read_query_partitions(client, out / split), num_iteration=5, ks=[3, 10],
            conventions=conventions, strata=strata, gap_k=10,
        )
        scores = np.asarray(booster.predict(data.features, num_iteration=5), dtype=np.float64)
        expected = per_query_table(
            data.labels, scores, data.offsets, data.qids, ks=[3, 10], conventions=conventions, strata=strata
        )
        assert table["qid"].tolist() == data.qid_names.tolist()  # as written, not the numbers 0, 1, ...
        pd.testing.assert_frame_equal(table, data.with_written_qids(expected), check_exact=True)
        assert gap == lightgbm_gap(data.labels, scores, data.offsets, data.qids, 10, conventions)


def test_integer_qids_stay_int64_with_their_values(tmp_path: Path) -> None:
    path = _write(tmp_path / "ints.csv", pa.table({
        "qid": [30, 10, 30, 20], "label": [1, 0, 2, 1], "f1": [1.0, 2.0, 3.0, 4.0],
    }))
    out = tmp_path / "parts"
    _partition("--train", path, "--valid", path, "--test", path, "--out", out, "--partitions", "2")
    written = _written(out / "train")
    assert written.schema.field("qid").type == pa.int64()
    assert written.column("qid").to_pylist() == [30, 30, 10, 20]
    assert written.column("f1").to_pylist() == [1.0, 3.0, 2.0, 4.0]
