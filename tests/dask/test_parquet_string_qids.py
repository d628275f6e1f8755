"""String qids in a directory of partition files (the Dask reader): numbered 0, 1, ... in order
of first appearance over the files, as ``ltr train`` numbers them in one file, so a split reads
as its integer-qid twin; a query in two files or split in its file is one line naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.dask.parquet import read_part, read_query_partitions
from ltr.data.formats.readers import read_ranking_file
from ltr.data.formats.table_qids import number_qids
from ltr.errors import DataError


def _write(path: Path, qids: list[object], seed: int) -> None:
    n = len(qids)
    rng = np.random.default_rng(seed)
    pq.write_table(pa.table({
        "qid": pa.array(qids), "label": pa.array(rng.integers(0, 3, n), pa.int32()),
        "f0": pa.array(rng.standard_normal(n)), "f1": pa.array(rng.integers(0, 9, n)),
    }), path)


def _files(directory: Path, qids_a: list[object], qids_b: list[object]) -> list[Path]:
    directory.mkdir()
    paths = [directory / "part-00000.parquet", directory / "part-00001.parquet"]
    _write(paths[0], qids_a, seed=1)
    _write(paths[1], qids_b, seed=2)
    return paths


A = ["q-b", "q-b", "q-a", "q-z", "q-z", "q-z"]
B = ["7", "7", "q-c"]


def test_string_qids_read_as_ltr_train_numbers_them(client: Any, tmp_path: Path) -> None:
    paths = _files(tmp_path / "ids", A, B)
    # the integer-qid twin: the same rows, the qids ltr train gives the strings of the two files
    # written as one file (order of first appearance: q-b 0, q-a 1, q-z 2, 7 3, q-c 4)
    twin = _files(tmp_path / "ints", [0, 0, 1, 2, 2, 2], [3, 3, 4])
    whole = tmp_path / "whole.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(p) for p in paths]), whole)
    assert read_ranking_file(whole).qids.tolist() == [0, 1, 2, 3, 4]

    assert number_qids(paths, "qid") == ([0, 3], ["q-b", "q-a", "q-z", "7", "q-c"])  # firsts, names by number
    assert number_qids(twin, "qid") is None
    for path, int_path, first in zip(paths, twin, [0, 3], strict=True):
        features, labels, sizes, qids, _ = read_part(str(path), "qid", "label", ["f0", "f1"], first_qid=first)
        want = read_part(str(int_path), "qid", "label", ["f0", "f1"])
        assert features.tobytes() == want[0].tobytes()
        assert labels.tolist() == want[1].tolist()
        assert sizes.tolist() == want[2].tolist()
        assert qids.tolist() == want[3].tolist()
    split = read_query_partitions(client, tmp_path / "ids")
    assert split.qids.compute().tolist() == [0, 1, 2, 3, 4]
    assert split.qid_names is not None
    assert split.qid_names.tolist() == ["q-b", "q-a", "q-z", "7", "q-c"]  # the name of each number
    assert read_query_partitions(client, twin[0].parent).qid_names is None
    np.testing.assert_array_equal(split.features.compute(), read_ranking_file(whole).features)


def test_read_part_alone_refuses_string_qids_in_one_line(tmp_path: Path) -> None:
    path = _files(tmp_path / "ids", A, B)[0]
    with pytest.raises(DataError) as info:
        read_part(str(path), "qid", "label", ["f0", "f1"])
    assert str(info.value) == (
        f"qid column 'qid' of {path} holds string qids ('q-b' at row 1), not integers: read the directory "
        "with read_query_partitions, which numbers string qids over all its files"
    )


@pytest.mark.parametrize(("qids_a", "qids_b", "message"), [
    (A, ["q-z", "q-d"], "qid 'q-z' appears in several files: {a}, {b}; a query must stay in one file"),
    (["q-a", "q-b", "q-a"], B, "the rows of qid 'q-a' in {a} are not contiguous; group each query's rows together"),
    (["q-a", None], B, "qid missing at row 2 of {a}; give every row a qid"),
])
def test_bad_string_qids_are_one_line(tmp_path: Path, qids_a: list[object], qids_b: list[object], message: str) -> None:
    a, b = _files(tmp_path / "ids", qids_a, qids_b)
    with pytest.raises(DataError) as info:
        number_qids([a, b], "qid")
    assert str(info.value) == message.format(a=a, b=b)
