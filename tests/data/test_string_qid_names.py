"""String qids read by ``ltr train``'s table reader keep their written form
(``RankingData.qid_names``, what ``ltr predict`` writes), through regrouping and the parse cache,
and every message about a query names it as written (``qid 'q-b'``), never by its number."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.data import cache as data_cache
from ltr.data.formats import readers
from ltr.data.formats.read_columns import read_table
from ltr.data.formats.readers import concat_ranking_data, read_ranking_file, read_split_files
from ltr.data.validate import check_split_set, to_ranking_data
from ltr.errors import DataError


def _never(*args: object, **kwargs: object) -> object:
    raise AssertionError("parsed again: the cache was not used")


def test_string_qids_keep_their_names_through_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)  # every read meets the disk
    path = tmp_path / "q.csv"
    # "b" is split in two runs: regrouped after its first run (a warning), numbered in order of first appearance
    path.write_text("qid,label,f1\nb,1,0.5\nb,0,0.25\nQ 7,2,1\nb,1,3\né,0,2\n")
    first = read_ranking_file(path, cache_dir=tmp_path / "cache")
    assert first.qids.tolist() == [0, 1, 2]
    assert first.qid_names is not None
    assert first.qid_names.tolist() == ["b", "Q 7", "é"]
    assert first.offsets.tolist() == [0, 3, 4, 5]
    assert first.features[:, 0].tolist() == [0.5, 0.25, 3.0, 1.0, 2.0]
    monkeypatch.setattr(readers, "_parse", _never)
    second = read_ranking_file(path, cache_dir=tmp_path / "cache")
    assert second.qid_names is not None
    assert second.qid_names.tolist() == ["b", "Q 7", "é"]
    assert second.qids.tolist() == first.qids.tolist()
    kept = first.take_queries(np.array([2, 0]))
    assert kept.qid_names is not None
    assert kept.qid_names.tolist() == ["é", "b"]


def test_files_of_string_qids_join_by_name(tmp_path: Path) -> None:
    """Each file numbers its string qids from 0; stacked, a qid is its written name: "c" of the
    second file is not "a" of the first, and "a" in both is one query (regrouped)."""
    (tmp_path / "x.csv").write_text("qid,label,f1\na,1,1\na,0,2\nb,2,3\n")
    (tmp_path / "y.csv").write_text("qid,label,f1\nc,1,4\na,0,5\n")
    (tmp_path / "z.csv").write_text("qid,label,f1\n7,1,6\n")
    parts = [read_ranking_file(tmp_path / f"{n}.csv") for n in "xyz"]
    data = concat_ranking_data(parts, name="xyz")
    assert data.qids.tolist() == [0, 1, 2, 3]
    assert data.qid_names is not None
    assert data.qid_names.tolist() == ["a", "b", "c", "7"]
    assert data.offsets.tolist() == [0, 3, 4, 5, 6]
    assert data.features[:, 0].tolist() == [1.0, 2.0, 5.0, 3.0, 4.0, 6.0]


def _regrouped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not contiguous" in r.getMessage()]


def test_the_regrouping_warning_names_a_string_qid_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)  # the second read meets the disk cache
    path = tmp_path / "q.csv"
    path.write_text("qid,label,f1\nq-c,1,1\nq-b,0,2\nq-c,2,3\nq-a,1,4\nq-b,0,5\n")
    notes: list[str] = []
    with caplog.at_level(logging.WARNING):
        data = to_ranking_data(read_table(path, kind="csv"), notes=notes)
    expected = (
        f"{path}: rows of 2 of 3 queries are not contiguous (qid 'q-c' at line 2 comes back at line 4); "
        "regrouped them stably by qid, in order of first appearance"
    )
    assert notes == [expected]  # q-c is number 0: the message says 'q-c', never "qid 0"
    assert _regrouped(caplog) == [expected]
    assert data.qid_names is not None
    assert data.qid_names.tolist() == ["q-c", "q-b", "q-a"]
    assert data.features[:, 0].tolist() == [1.0, 3.0, 2.0, 5.0, 4.0]
    # the parse cache stores the note and repeats it on a hit, name and all
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        read_ranking_file(path, cache_dir=tmp_path / "cache")
        monkeypatch.setattr(readers, "_parse", _never)
        read_ranking_file(path, cache_dir=tmp_path / "cache")
    assert _regrouped(caplog) == [expected, expected]


def test_a_parquet_table_of_string_qids_is_named_too_and_integers_as_before(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    strings, integers = tmp_path / "s.parquet", tmp_path / "i.parquet"
    features = pa.array([1.0, 2.0, 3.0, 4.0])
    pq.write_table(pa.table({"qid": ["x", "q-b", "x", "q-b"], "label": [1, 0, 2, 1], "f1": features}), strings)
    pq.write_table(pa.table({"qid": [70, 12, 70, 12], "label": [1, 0, 2, 1], "f1": features}), integers)
    with caplog.at_level(logging.WARNING):
        read_ranking_file(strings)
        read_ranking_file(integers)
    assert _regrouped(caplog) == [
        f"{strings}: rows of 2 of 2 queries are not contiguous (qid 'x' at row 1 comes back at row 3); "
        "regrouped them stably by qid, in order of first appearance",
        f"{integers}: rows of 2 of 2 queries are not contiguous (qid 70 at row 1 comes back at row 3); "
        "regrouped them stably by qid, in order of first appearance",
    ]


def test_files_joined_by_string_qid_warn_with_its_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """"q-b" is number 1 in x.csv, 0 in y.csv and 1 in z.csv; stacked, it is one query."""
    (tmp_path / "x.csv").write_text("qid,label,f1\nq-a,1,1\nq-b,0,2\n")
    (tmp_path / "y.csv").write_text("qid,label,f1\nq-b,2,3\nq-c,1,4\n")
    parts = [read_ranking_file(tmp_path / f"{n}.csv") for n in "xy"]
    with caplog.at_level(logging.WARNING):
        data = concat_ranking_data(parts, name="xy")
    assert _regrouped(caplog) == []  # q-b's two runs are adjacent: one run, nothing to regroup
    assert data.qid_names is not None
    assert data.qid_names.tolist() == ["q-a", "q-b", "q-c"]
    (tmp_path / "z.csv").write_text("qid,label,f1\nq-c,0,5\nq-b,2,6\n")  # q-b (number 1) comes back
    with caplog.at_level(logging.WARNING):
        data = read_split_files({"train": [tmp_path / f"{n}.csv" for n in "xyz"]})["train"]
    assert _regrouped(caplog) == [
        "x + y + z: rows of 1 of 3 queries are not contiguous (qid 'q-b' at row 2 comes back at row 6); "
        "regrouped them stably by qid, in order of first appearance"
    ]
    assert data.qid_names is not None
    assert data.qid_names.tolist() == ["q-a", "q-b", "q-c"]
    assert data.features[:, 0].tolist() == [1.0, 2.0, 3.0, 6.0, 4.0, 5.0]
    assert data.offsets.tolist() == [0, 1, 4, 6]


def test_a_too_long_string_query_is_named_as_written(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("qid,label,f1\nq-a,1,1\nq-b,0,2\nq-b,1,3\n")
    with pytest.raises(DataError, match=r"^qid 'q-b' in .*q\.csv \(first at line 3\) has 2 documents, more than 1 "):
        read_ranking_file(path, max_list_len=1)


def test_train_and_test_share_string_qids_by_name_not_by_number(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each file numbers its string qids from 0: train's q-a and test's q-c are both 0, and are
    not the same query; test's q-b is train's q-b."""
    (tmp_path / "train.csv").write_text("qid,label,f1\nq-a,1,1\nq-b,0,2\n")
    (tmp_path / "test.csv").write_text("qid,label,f1\nq-c,1,1\nq-d,0,2\n")
    (tmp_path / "again.csv").write_text("qid,label,f1\nq-c,1,1\nq-b,0,2\n")
    apart = read_split_files({"train": tmp_path / "train.csv", "test": tmp_path / "test.csv"})
    shared = read_split_files({"train": tmp_path / "train.csv", "test": tmp_path / "again.csv"})
    assert apart["train"].qids.tolist() == apart["test"].qids.tolist() == [0, 1]
    with caplog.at_level(logging.WARNING):
        check_split_set(apart)
    assert [r.getMessage() for r in caplog.records if "train and test" in r.getMessage()] == []
    with caplog.at_level(logging.WARNING):
        check_split_set(shared)
    assert [r.getMessage() for r in caplog.records if "train and test" in r.getMessage()] == [
        "1 qids appear in both train and test (e.g. 'q-b'); if they are the same queries, test scores "
        "are optimistic: split by query instead"
    ]


def test_a_table_of_query_numbers_is_named_as_written_and_integer_tables_are_left_alone() -> None:
    """``with_written_qids``: what every per-query table ltr writes goes through."""
    import pandas as pd

    from ltr.data.ranking_data import with_written_qids, written_qids_of

    qids = np.array([4, 0, 9], dtype=np.int64)  # a split cut from one file keeps the file's numbers
    names = np.array(["q-e", "q-a", "Q 9"], dtype=object)
    table = pd.DataFrame({"qid": qids, "ndcg_at_10": [0.5, 1.0, 0.25]})
    named = with_written_qids(table, qids, names)
    assert named["qid"].tolist() == ["q-e", "q-a", "Q 9"]
    assert named["ndcg_at_10"].tolist() == [0.5, 1.0, 0.25]
    assert table["qid"].tolist() == [4, 0, 9]  # a new frame: the table given is not changed
    shuffled = table.iloc[[2, 0, 1]].reset_index(drop=True)  # rows in another order: each by its number
    assert with_written_qids(shuffled, qids, names)["qid"].tolist() == ["Q 9", "q-e", "q-a"]
    assert with_written_qids(table, qids, None) is table  # integer qids: the very frame
    with pytest.raises(ValueError, match=r"^query number 5 is not one of the data's 3 queries$"):
        written_qids_of(np.array([4, 5]), qids, names)
    assert written_qids_of(np.array([], dtype=np.int64), qids, names).tolist() == []
