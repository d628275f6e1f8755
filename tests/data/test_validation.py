"""Every bad input stops with ONE line that names the file and line and/or qid and what to do."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.data.formats.readers import read_ranking_file, read_split_files
from ltr.data.ranking_data import RankingData
from ltr.data.validate import RawTable, check_label_gain, check_split_set, to_ranking_data
from ltr.errors import DataError, LtrUserError
from tests.conftest import examples
from tests.data.conftest import WriteFile

GOOD = "1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0\n"

# (id, file content, regex the message must match; {f} is the file path)
TEXT_CASES = [
    ("malformed-token", GOOD + "2 qid:2 1:0.3 abc\n",
     r"malformed token 'abc' at line 3 of {f}: expected <index>:<value>"),
    ("malformed-index", GOOD + "2 qid:2 x1:0.3\n", r"malformed token 'x1:0.3' at line 3 of {f}"),
    ("missing-qid", GOOD + "2 1:0.3 2:1\n", r"line 3 of {f} has no qid:<id>; every line"),
    ("missing-qid-first-line", "# header\n2 1:0.3\n", r"line 2 of {f} has no qid:<id>; .*\.query"),
    ("bad-qid", GOOD + "2 qid:q7 1:0.3\n", r"'qid:q7' at line 3 of {f} is not an integer qid"),
    ("qid-too-long", GOOD + "2 qid:99999999999999999999 1:0.3\n",
     r"'qid:99999999999999999999' at line 3 of {f} is too long: qids have at most 18 digits"),
    ("two-qids", GOOD + "2 qid:2 qid:3 1:0.3\n", r"a second qid 'qid:3' at line 3 of {f}"),
    ("label-non-numeric", GOOD + "high qid:2 1:0.3\n", r"label 'high' at line 3 of {f} is not a number"),
    ("label-nan", GOOD + "nan qid:2 1:0.3\n", r"label nan at line 3 of {f} is not a number \(NaN\)"),
    ("label-inf", GOOD + "inf qid:2 1:0.3\n", r"label inf at line 3 of {f} is infinite"),
    ("label-negative", GOOD + "-1 qid:2 1:0.3\n", r"label -1 at line 3 of {f} is negative"),
    ("label-non-integer", GOOD + "1.5 qid:2 1:0.3\n",
     r"label 1.5 at line 3 of {f} is not an integer; .*data.integer_labels=false"),
    ("label-above-30", GOOD + "31 qid:2 1:0.3\n",
     r"label 31 at line 3 of {f} is above 30, .*model.label_gain=\[...\] with 32 gains and data.max_label=31"),
    ("feature-index-zero", GOOD + "1 qid:2 0:0.3\n", r"feature index 0 at line 3 of {f} is not positive; indices are 1-based"),
    ("feature-index-negative", GOOD + "1 qid:2 -4:0.3\n", r"feature index -4 at line 3 of {f} is not positive"),
    ("feature-index-duplicate", GOOD + "1 qid:2 2:0.3 1:1 2:0.4\n", r"feature index 2 appears twice at line 3 of {f}"),
    ("feature-value-non-numeric", GOOD + "1 qid:2 1:0.3 2:high\n",
     r"feature 2 has non-numeric value 'high' at line 3 of {f}"),
    ("feature-value-empty", GOOD + "1 qid:2 1:\n", r"feature 1 has non-numeric value '' at line 3 of {f}"),
    ("empty-file", "", r"{f} has no data rows"),
    ("only-comments", "# nothing\n\n   \n# here\n", r"{f} has no data rows"),
]


@pytest.mark.parametrize(("content", "pattern"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES])
@pytest.mark.parametrize("name", ["data.txt", "data.txt.gz"])
def test_bad_text_file_stops_with_one_clear_line(write: WriteFile, content: str, pattern: str, name: str) -> None:
    path = write(content, name)
    with pytest.raises(DataError) as info:
        read_ranking_file(path)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, LtrUserError)  # the CLI prints these as one line, exit 2
    assert re.search(pattern.format(f=re.escape(str(path))), message), message


def test_feature_index_above_n_features(write: WriteFile) -> None:
    path = write(GOOD + "1 qid:2 7:0.3\n")
    with pytest.raises(DataError, match=r"feature index 7 at line 3 of .* is above n_features=5"):
        read_ranking_file(path, n_features=5)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "train.txt"
    with pytest.raises(DataError, match=rf"data file {re.escape(str(path))} does not exist"):
        read_ranking_file(path)


def test_labels_above_30_pass_with_a_raised_max_label(write: WriteFile) -> None:
    data = read_ranking_file(write(GOOD + "31 qid:2 1:0.3\n"), max_label=31)
    assert data.labels.max() == 31
    with pytest.raises(DataError, match=r"largest label is 31 but label_gain has 31 entries .*model.label_gain"):
        check_label_gain([data], None)
    check_label_gain({"train": data}, [float(2**g - 1) for g in range(32)])


def test_non_integer_labels_pass_when_allowed(write: WriteFile) -> None:
    data = read_ranking_file(write("0.5 qid:1 1:1\n2.0 qid:1 1:2\n"), integer_labels=False)
    assert data.labels.tolist() == [0, 2]


def test_interleaved_queries_are_regrouped_stably_with_a_warning(
    write: WriteFile, caplog: pytest.LogCaptureFixture
) -> None:
    # qid 5 rows at lines 1, 3, 5; qid 3 at lines 2, 6; qid 9 at line 4
    text = "".join(
        f"{label} qid:{q} 1:{value}\n"
        for label, q, value in [(0, 5, 1), (1, 3, 2), (2, 5, 3), (0, 9, 4), (1, 5, 5), (2, 3, 6)]
    )
    with caplog.at_level(logging.WARNING):
        data = read_ranking_file(write(text))
    assert data.qids.tolist() == [5, 3, 9]
    assert data.offsets.tolist() == [0, 3, 5, 6]
    assert data.features[:, 0].tolist() == [1, 3, 5, 2, 6, 4]
    assert data.labels.tolist() == [0, 2, 1, 1, 2, 0]
    [record] = [r for r in caplog.records if "not contiguous" in r.getMessage()]
    assert "rows of 2 of 3 queries are not contiguous (qid 5 at line 1 comes back at line 3)" in record.getMessage()


def test_shuffled_rows_of_many_queries_are_never_misgrouped(write: WriteFile) -> None:
    rng = np.random.default_rng(3)
    qids = np.repeat(np.arange(200), 15)
    order = rng.permutation(qids.shape[0])
    text = "".join(f"0 qid:{qids[i]} 1:{i}\n" for i in order)
    data = read_ranking_file(write(text))
    assert data.n_queries == 200
    assert (data.group_sizes == 15).all()
    # every row keeps its query, and rows of a query keep file order
    original = data.features[:, 0].astype(np.int64)
    np.testing.assert_array_equal(qids[original], data.row_qids())
    line_of = np.argsort(order)  # line_of[i]: where the row with value i sits in the file
    for q in range(200):
        lines = line_of[original[data.offsets[q] : data.offsets[q + 1]]]
        assert (np.diff(lines) > 0).all()


def test_query_longer_than_lightgbm_limit(write: WriteFile) -> None:
    path = write("0 qid:1 1:1\n" + "0 qid:2 1:1\n" * 10_001)
    with pytest.raises(DataError) as info:
        read_ranking_file(path)
    assert str(info.value).startswith(f"qid 2 in {path} (first at line 2) has 10001 documents, more than 10000")
    assert read_ranking_file(path, max_list_len=None).group_sizes.tolist() == [1, 10_001]


def test_query_file_sizes_that_do_not_add_up(write: WriteFile) -> None:
    data = write("1 1:0.5\n0 1:0.1\n2 2:1\n1 2:3\n0 2:4\n", "rank.train")
    query = write("2\n2\n", "rank.train.query")
    with pytest.raises(DataError) as info:
        read_ranking_file(data)
    assert str(info.value) == (
        f"the 2 group sizes in {query} sum to 4 rows, but {data} has 5 data rows; the .query file "
        "must list the rows of each query, in file order, summing to the data rows"
    )


@pytest.mark.parametrize(
    ("sizes", "pattern"),
    [("2\n0\n3\n", r"group size 0 at line 2 of .*rank.train.query is not positive"),
     ("2\nthree\n", r"group size 'three' at line 2 of .*rank.train.query is not an integer")],
)
def test_bad_query_file_lines(write: WriteFile, sizes: str, pattern: str) -> None:
    data = write("1 1:0.5\n0 1:0.1\n2 2:1\n1 2:3\n0 2:4\n", "rank.train")
    write(sizes, "rank.train.query")
    with pytest.raises(DataError, match=pattern):
        read_ranking_file(data)


def test_qid_in_a_file_whose_groups_come_from_a_query_file(write: WriteFile) -> None:
    data = write("1 1:0.5\n0 qid:3 1:0.1\n", "rank.train")
    write("2\n", "rank.train.query")
    with pytest.raises(DataError, match=r"'qid:3' at line 2 of .*, but the groups come from a .query file"):
        read_ranking_file(data)


def test_same_qid_in_train_and_test_warns(write: WriteFile, caplog: pytest.LogCaptureFixture) -> None:
    train = write("1 qid:1 1:1\n0 qid:2 1:2\n", "train.txt")
    test = write("1 qid:2 1:1\n0 qid:3 1:2\n", "test.txt")
    splits = read_split_files({"train": train, "test": test})
    with caplog.at_level(logging.WARNING):
        check_split_set(splits)
    assert any("1 qids appear in both train and test (e.g. 2)" in r.getMessage() for r in caplog.records)


def test_empty_split_is_an_error() -> None:
    empty = RankingData(
        features=np.zeros((0, 2), np.float32), labels=np.zeros(0, np.int32),
        qids=np.zeros(0, np.int64), offsets=np.zeros(1, np.int64),
    )
    good = RankingData.from_group_sizes(np.ones((2, 2)), np.array([0, 1]), np.array([1]), np.array([2]))
    with pytest.raises(DataError, match=r"the valid split \(vali.txt\) has no queries"):
        check_split_set({"train": good, "valid": empty}, sources={"valid": "vali.txt"})


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=60))
def test_regrouping_property(row_qids: list[int]) -> None:
    n = len(row_qids)
    table = RawTable(
        features=np.arange(n, dtype=np.float32)[:, None],
        labels=np.zeros(n),
        row_qids=np.asarray(row_qids, dtype=np.int64),
        row_lines=np.arange(1, n + 1, dtype=np.int64),
        source="prop.txt",
    )
    data = to_ranking_data(table)
    original = data.features[:, 0].astype(np.int64)
    assert sorted(original.tolist()) == list(range(n))  # every row once
    np.testing.assert_array_equal(np.asarray(row_qids)[original], data.row_qids())  # right query
    assert len(set(data.qids.tolist())) == data.n_queries  # each query in one block
    first_seen = list(dict.fromkeys(row_qids))
    assert data.qids.tolist() == first_seen  # queries in order of first appearance
    for q in range(data.n_queries):  # rows of a query keep file order
        assert (np.diff(original[data.offsets[q] : data.offsets[q + 1]]) > 0).all()
