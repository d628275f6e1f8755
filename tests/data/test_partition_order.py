"""Which files a directory of partitions is read in, and in what order; which doc id column is read.

:func:`ltr.data.query_parts.partition_files` is the order of every reader of a directory of
partitions (``ltr train data=parquet_partitions``, ``ltr predict --data DIR``, with or without
Dask); :func:`ltr.data.formats.doc_ids.column_of_files` is the one rule for the document id column.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ltr.data.formats.doc_ids import column_of_files
from ltr.data.query_parts import partition_files, partition_key
from ltr.errors import DataError


def test_part_names_are_ordered_by_their_number_past_99999() -> None:
    written = [f"part-{i:05d}.parquet" for i in (0, 1, 9, 10, 10001, 99999, 100000, 100001, 1000000)]
    assert sorted(written) != written  # as text, part-100000 comes before part-10001
    assert sorted(written)[4:7] == ["part-100000.parquet", "part-1000000.parquet", "part-100001.parquet"]
    assert sorted(sorted(written), key=partition_key) == written  # from the text order


def test_partition_order_is_text_order_for_names_of_one_width() -> None:
    """What ``ltr partition`` writes below 100,000 files is read in the order it always was (so
    the partition fingerprint of such a directory does not change)."""
    names = [f"part-{i:05d}.parquet" for i in range(0, 100_000, 7)]
    assert sorted(sorted(names, reverse=True), key=partition_key) == sorted(names) == names


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["part-10.parquet", "part-9.parquet", "part-0.parquet"], ["part-0.parquet", "part-9.parquet", "part-10.parquet"]),
        (["part-1.parquet", "part-01.parquet", "part-001.parquet"], ["part-001.parquet", "part-01.parquet", "part-1.parquet"]),
        (["b-2.parquet", "a-10.parquet", "a-9.parquet"], ["a-9.parquet", "a-10.parquet", "b-2.parquet"]),
        (
            ["part-00001-1a2b.snappy.parquet", "part-100000-1a2b.snappy.parquet", "part-99999-1a2b.snappy.parquet"],
            ["part-00001-1a2b.snappy.parquet", "part-99999-1a2b.snappy.parquet", "part-100000-1a2b.snappy.parquet"],
        ),
    ],
    ids=["unpadded", "zeros-then-text", "prefix-first", "spark-names"],
)
def test_partition_key_compares_digit_runs_as_numbers(names: list[str], expected: list[str]) -> None:
    assert sorted(names, key=partition_key) == expected


def test_partition_files_lists_the_parquet_files_by_number(tmp_path: Path) -> None:
    for name in ("part-10.parquet", "part-2.parquet", "part-100000.parquet", "part-99999.parquet", "notes.txt"):
        (tmp_path / name).touch()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "part-0.parquet").touch()
    assert [p.name for p in partition_files(tmp_path)] == [
        "part-2.parquet", "part-10.parquet", "part-99999.parquet", "part-100000.parquet",
    ]
    assert partition_files(tmp_path / "sub" / "none") == []


WITH = ["qid", "label", "doc_id", "f1"]
WITHOUT = ["qid", "label", "f1"]


@pytest.mark.parametrize(
    ("column", "schemas", "asked_by", "expected"),
    [
        (None, [("a", WITH)], None, None),
        (None, [("a", WITHOUT)], "--doc-id-column", None),
        ("doc_id", [("a", WITH), ("b", WITH)], None, "doc_id"),
        ("doc_id", [("a", WITH), ("b", WITH)], "--doc-id-column", "doc_id"),
        ("doc_id", [("a", WITHOUT), ("b", WITHOUT)], None, None),
    ],
    ids=["none", "none-asked", "every-file", "every-file-asked", "no-file-default"],
)
def test_the_doc_id_column_read(
    column: str | None, schemas: list[tuple[str, list[str]]], asked_by: str | None, expected: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert column_of_files(column, schemas, asked_by=asked_by) == expected
    assert not caplog.records


def test_a_doc_id_column_asked_for_and_missing_is_one_line_naming_the_file() -> None:
    with pytest.raises(DataError) as raised:
        column_of_files("docno", [("a.parquet", ["docno"]), ("b.parquet", WITHOUT)], asked_by="--doc-id-column")
    assert str(raised.value) == "b.parquet has no document id column 'docno' (--doc-id-column)"


def test_a_default_doc_id_column_in_some_files_only_is_read_in_none(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ltr.data.formats.doc_ids"):
        assert column_of_files("doc_id", [("a", WITH), ("b", WITHOUT), ("c", WITHOUT)]) is None
    assert [r.getMessage() for r in caplog.records] == [
        "b has no document id column 'doc_id' but a has; no file's doc ids are read"
    ]
