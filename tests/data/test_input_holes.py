"""Inputs an adversarial user tried: each stops with one `DataError` / `LtrUserError` line naming
the file and the line (or column and row), and ``ltr evaluate`` exits 2 without a traceback.

Real files in tmp dirs, no mocks: a header-only CSV and a 0-row Parquet file, a feature index
of 999999999 (which once asked for 3.97 TiB), infinite feature values in text, CSV and Parquet,
the numeric options of ``ltr evaluate``, and the pyarrow floor of ``pyproject.toml``.
"""

from __future__ import annotations

import json
import re
import time
import tomllib
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest

from ltr.cli.evaluate import main as evaluate
from ltr.cli.main import main
from ltr.data.formats.arrow_matrix import BLOCK_ROWS
from ltr.data.formats.read_text import MAX_FEATURE_INDEX, parse_svmlight
from ltr.data.formats.readers import read_ranking_file
from ltr.data.ranking_data import RankingData
from ltr.data.validate import check_ranking_data, first_infinite
from ltr.errors import DataError, LtrUserError
from tests.data.conftest import WriteFile

REPO = Path(__file__).resolve().parents[2]


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    """``ltr <argv>`` exits 2 with exactly one ``ltr: error:`` line holding every needle."""
    code, out, err = run_cli(capsys, argv)
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ltr: error: "), lines[0]
    assert "Traceback" not in out + err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    path = tmp_path / "scores.txt"
    path.write_text("0.5\n0.1\n0.3\n")
    return path


# -- 1. tables without rows -----------------------------------------------------------------------


def test_header_only_csv_names_the_file_and_the_header_line(write: WriteFile, scores: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("qid,label,f1,f2\n", name="header_only.csv")
    with pytest.raises(DataError, match=rf"{re.escape(str(path))} has a header at line 1 \(qid, label, f1, f2\) but no data rows"):
        read_ranking_file(path)
    assert_one_line_exit_2(
        capsys, ["evaluate", "--data", str(path), "--scores", str(scores)], str(path), "line 1", "no data rows"
    )


def test_header_only_tsv_with_named_feature_columns(write: WriteFile) -> None:
    path = write("qid\tlabel\tf1\n", name="header_only.tsv")
    with pytest.raises(DataError, match=r"has a header at line 1 .* but no data rows from line 2 on"):
        read_ranking_file(path, feature_columns=["f1"])


@pytest.mark.parametrize("label_type", [pa.int64(), pa.string(), pa.null()])
def test_parquet_with_zero_rows(tmp_path: Path, label_type: pa.DataType, scores: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.parquet"
    schema = pa.schema([("qid", pa.int64()), ("label", label_type), ("f1", pa.float64())])
    pq.write_table(schema.empty_table(), path)
    with pytest.raises(DataError, match=rf"{re.escape(str(path))} has 0 rows \(columns: qid, label, f1\)"):
        read_ranking_file(path)
    assert_one_line_exit_2(capsys, ["evaluate", "--data", str(path), "--scores", str(scores)], str(path), "0 rows")


# -- 2. a feature index too wide for a dense matrix ------------------------------------------------


def test_huge_feature_index_is_refused_before_allocating(write: WriteFile, scores: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("1 qid:1 1:0.5 3:1\n0 qid:1 2:1 999999999:1\n1 qid:2 1:1\n")
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as info:
            read_ranking_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 << 20, f"peak {peak / 2**20:.0f} MiB"  # once: 3.97 TiB
    message = str(info.value)
    assert f"feature index 999999999 at line 2 of {path} is above 1,000,000" in message
    assert "data.n_features" in message
    assert "\n" not in message
    assert_one_line_exit_2(
        capsys, ["evaluate", "--data", str(path), "--scores", str(scores)],
        str(path), "line 2", "999999999", "1,000,000", "data.n_features",
    )


def test_huge_index_in_the_first_line_a_later_line_and_a_large_file(write: WriteFile) -> None:
    # line 1 (seen by the head scan), line 3001 (past the 2000 scanned lines: the width grows),
    # and the last line of a ~2 MiB file (parsed on threads, then again on one to find the line)
    with pytest.raises(DataError, match=r"feature index 999999999 at line 1 of "):
        parse_svmlight(write("0 qid:1 999999999:1\n", name="first.txt"))
    rows = "".join(f"{i % 3} qid:{i // 10} 1:0.{i % 7} 2:{i % 5} 3:1.25\n" for i in range(3000))
    with pytest.raises(DataError, match=r"feature index 5000000 at line 3001 of "):
        parse_svmlight(write(rows + "1 qid:9999 5000000:1\n", name="later.txt"))
    n = 2 << 20
    big = (rows * (n // len(rows) + 1))[: n - n % len(rows)]
    n_lines = big.count("\n")
    path = write(big + "1 qid:99999 4:1 1000001:2\n", name="large.txt")
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=rf"feature index 1000001 at line {n_lines + 1} of "):
        parse_svmlight(path)
    assert time.perf_counter() - t0 < 10  # the kernel's NEED_WIDTH status, no per-row Python loop


def test_the_limit_itself_is_accepted_and_n_features_fixes_the_width(write: WriteFile) -> None:
    path = write(f"1 qid:1 1:0.5 {MAX_FEATURE_INDEX}:2\n0 qid:1 2:1\n")
    data = read_ranking_file(path)
    assert data.features.shape == (2, MAX_FEATURE_INDEX)
    assert data.features[0, MAX_FEATURE_INDEX - 1] == 2
    wide = write("1 qid:1 1:0.5 999999999:1\n", name="wide.txt")
    with pytest.raises(DataError, match=r"feature index 999999999 at line 1 of .* is above n_features=136"):
        read_ranking_file(wide, n_features=136)


def test_a_width_that_cannot_be_allocated_is_one_line(write: WriteFile) -> None:
    path = write("1 qid:1 1:0.5\n")
    with pytest.raises(DataError, match=rf"the feature matrix of {re.escape(str(path))} needs .* more than this machine can allocate"):
        read_ranking_file(path, n_features=10**15)


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_n_features_must_be_a_positive_integer(write: WriteFile, bad: object) -> None:
    with pytest.raises(DataError, match=r"data.n_features=.* is not a positive integer"):
        read_ranking_file(write("1 qid:1 1:0.5\n"), n_features=bad)  # type: ignore[arg-type]


# -- 3. infinite feature values -------------------------------------------------------------------


@pytest.mark.parametrize("token", ["inf", "-inf", "+INF", "Infinity", "-infinity", "1e39", "-3.5e38", "1e400"])
def test_infinite_text_values_name_the_file_line_and_feature(write: WriteFile, token: str) -> None:
    path = write(f"1 qid:1 1:0.5 2:1\n0 qid:1 1:nan 3:{token}\n")
    with pytest.raises(DataError) as info:
        read_ranking_file(path)
    message = str(info.value)
    assert f"feature 3 has infinite value {token!r}" in message
    assert f"at line 2 of {path}" in message
    assert ("beyond float32" in message) == (not token.lstrip("+-").lower().startswith("inf"))


def test_nan_and_the_largest_float32_stay_allowed(write: WriteFile) -> None:
    data = read_ranking_file(write("1 qid:1 1:nan 2:3.4028234e38 3:-3.4028234e38\n0 qid:1 1:NaN\n"))
    assert np.isnan(data.features[:, 0]).all()
    assert np.isfinite(data.features[:, 1:]).all()


def test_infinite_csv_value_names_column_line_and_qid(write: WriteFile, scores: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("qid,label,f1,f2\n1,1,0.5,1\n1,0,,2\n2,2,0.1,-inf\n", name="inf.csv")
    with pytest.raises(DataError, match=rf"feature column 'f2' of {re.escape(str(path))} has infinite value -inf at line 4 \(qid 2\)"):
        read_ranking_file(path)
    # ltr evaluate reads a table's qid and label columns only: its features are no business of an evaluation
    assert main(["evaluate", "--data", str(path), "--scores", str(scores), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_queries"] == 2


@pytest.mark.parametrize(("value", "shown"), [(float("inf"), "inf"), (-1e39, "-1e+39 (beyond float32")])
def test_infinite_parquet_value_names_column_and_row(tmp_path: Path, value: float, shown: str) -> None:
    path = tmp_path / "inf.parquet"
    pq.write_table(pa.table({"qid": [1, 1, 2], "label": [1, 0, 2], "f1": [0.5, float("nan"), 1.0], "f2": [1.0, value, 3.0]}), path)
    with pytest.raises(DataError, match=rf"feature column 'f2' of {re.escape(str(path))} has infinite value {re.escape(shown)}.* at row 2 \(qid 1\)"):
        read_ranking_file(path)


@pytest.mark.parametrize(("value", "shown"), [(float("inf"), "inf"), (1e39, "1e+39 (beyond float32")])
def test_an_infinity_in_a_later_block_of_rows_names_its_column_row_and_qid(tmp_path: Path, value: float, shown: str) -> None:
    n = 2 * BLOCK_ROWS + 100  # the feature matrix is converted BLOCK_ROWS rows at a time
    bad = BLOCK_ROWS + 500  # 0-based: row bad + 1, line bad + 2 of a CSV
    f2 = np.linspace(-1.0, 1.0, n)
    f2[bad] = value
    f3 = np.zeros(n, np.float32)
    f3[3] = -np.inf  # an earlier row of a later column: the first column holding an infinity wins
    columns = {
        "qid": np.arange(n) // 10 + 1, "label": np.arange(n) % 3, "f1": np.ones(n, np.float32),
        "f2": f2, "f3": f3, "f4": np.arange(n, dtype=np.int32), "url": ["u"] * n,
    }
    path = tmp_path / "later.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(DataError, match=rf"feature column 'f2' of {re.escape(str(path))} has infinite value {re.escape(shown)}.* at row {bad + 1} \(qid {bad // 10 + 1}\)"):
        read_ranking_file(path)  # url (not numeric) comes after f2: the infinity is reported
    csv = tmp_path / "later.csv"
    pa.csv.write_csv(pa.table(columns), csv)
    with pytest.raises(DataError, match=rf"feature column 'f2' of {re.escape(str(csv))} has infinite value {re.escape(shown)}.* at line {bad + 2} \(qid {bad // 10 + 1}\)"):
        read_ranking_file(csv)
    with pytest.raises(DataError, match=r"feature column 'url' of .* is not numeric \(type string\)"):
        read_ranking_file(path, feature_columns=["f1", "url", "f2"])
    f2[bad] = 0.5
    f3[3] = 0.0
    pq.write_table(pa.table({**columns, "f2": f2, "f3": f3}).drop_columns(["url"]), path)
    data = read_ranking_file(path)
    assert data.features.shape == (n, 4)
    assert data.features.dtype == np.float32
    np.testing.assert_array_equal(data.features, np.column_stack([columns["f1"], f2.astype(np.float32), f3, columns["f4"].astype(np.float32)]))


# -- integers beyond 2**53: a nanosecond timestamp, a 64-bit hash --------------------------------

#: Arrow's safe cast to float64 refused the first five (a traceback); the last two it converted
_HUGE = {
    "int64": [2**63 - 1, -(2**63), 1_733_139_200_123_456_789, 2**53 + 1, 2**53 + 3, 2**24 + 1, 7],
    "uint64": [2**64 - 1, 2**63 - 1, 2**63 + 3 * 2**10, 2**53 + 1, 2**60 + 2**36 + 1, 2**24 + 3, 7],
}
#: their float32 features, by hand: float64 rounds to even (2**53 + 3 to 2**53 + 4, 2**63 + 3 * 2**10
#: to 2**63 + 2**12, 2**60 + 2**36 + 1 to the float32 tie 2**60 + 2**36), then float32 does (the
#: timestamp, 12_610_247 * 2**37 + 49_420_029_205, to the float32 below it: 2**37 apart from 2**60 on)
_HUGE_F32 = {
    "int64": [2.0**63, -(2.0**63), 12_610_247.0 * 2**37, 2.0**53, 2.0**53, 2.0**24, 7.0],
    "uint64": [2.0**64, 2.0**63, 2.0**63, 2.0**53, 2.0**60, 2.0**24 + 4, 7.0],
}


@pytest.mark.parametrize("kind", sorted(_HUGE))
def test_integers_beyond_2_53_load_as_numpy_rounds_them(tmp_path: Path, kind: str) -> None:
    values = _HUGE[kind]
    n = len(values)
    expected = np.array(values, dtype=kind).astype(np.float64).astype(np.float32)
    assert expected.tolist() == _HUGE_F32[kind]
    columns = {"qid": [1, 1, 1, 2, 2, 2, 2], "label": [0, 1, 2, 0, 1, 0, 1], "ts": pa.array(values, getattr(pa, kind)()),
               "f": np.linspace(0.0, 1.0, n)}
    path = tmp_path / "huge.parquet"
    pq.write_table(pa.table(columns), path)
    data = read_ranking_file(path)
    assert data.features[:, 0].tobytes() == expected.tobytes()
    assert data.features[:, 1].tobytes() == columns["f"].astype(np.float32).tobytes()
    assert data.qids.tolist() == [1, 2]
    # the same numbers as CSV text: int64 ones are read as int64, a column with one beyond int64 as
    # double (the decimal string rounded to the nearest float64: the same float64 as from the integer)
    csv = tmp_path / "huge.csv"
    csv.write_text("qid,label,ts,f\n" + "".join(f"{q},{y},{v},{f!r}\n" for q, y, v, f in zip(columns["qid"], columns["label"], values, columns["f"].tolist(), strict=True)))
    assert pyarrow.csv.read_csv(csv).schema.field("ts").type == (pa.int64() if kind == "int64" else pa.float64())
    assert read_ranking_file(csv).features.tobytes() == data.features.tobytes()


def test_a_csv_column_that_outgrows_int64_in_a_later_block_loads_as_double(tmp_path: Path) -> None:
    n = 150_000  # 1.3 MB: beyond the CSV reader's first 1 MB block, whose integers it reads as int64
    values = np.arange(n, dtype=np.uint64) * np.uint64(2**45)
    values[-1] = np.uint64(2**64 - 1)
    text = "qid,label,big,digits\n" + "".join(f"{i // 10},{i % 3},{v},{d}\n" for i, (v, d) in enumerate(zip(values.tolist(), ["99999999999999999999999"] * n, strict=True)))
    path = tmp_path / "later.csv"
    path.write_text(text)
    data = read_ranking_file(path)
    assert data.features[:, 0].tobytes() == values.astype(np.float64).astype(np.float32).tobytes()
    assert data.features[-1, 0] == np.float32(2.0**64)
    assert (data.features[:, 1] == np.float32(1e23)).all()  # beyond uint64: a double from the start


def test_a_label_beyond_2_53_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "label.parquet"
    pq.write_table(pa.table({"qid": [1, 1], "label": pa.array([0, 2**60], pa.int64()), "f": [0.5, 1.0]}), path)
    with pytest.raises(DataError, match=rf"^label 1\.15292e\+18 at row 2 of {re.escape(str(path))} is above 30"):
        read_ranking_file(path)


def test_uint64_qids_beyond_int64_are_numbered_as_strings_are(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "hashes.parquet"
    qids = pa.array([2**64 - 1, 2**64 - 1, 2**63, 5, 5], pa.uint64())  # a 64-bit hash
    pq.write_table(pa.table({"qid": qids, "label": [0, 1, 1, 0, 2], "f": [0.1, 0.2, 0.3, 0.4, 0.5]}), path)
    with caplog.at_level("INFO", logger="ltr.data.formats.read_columns"):
        data = read_ranking_file(path)
    assert data.qids.tolist() == [0, 1, 2]
    assert data.group_sizes.tolist() == [2, 1, 2]
    assert "3 uint64 (beyond int64) qids numbered 0.. in order of first appearance" in caplog.text
    pq.write_table(pa.table({"qid": pa.array([2**63 - 1, 3], pa.uint64()), "label": [0, 1], "f": [0.1, 0.2]}), path)
    assert read_ranking_file(path).qids.tolist() == [2**63 - 1, 3]  # within int64: kept
    pq.write_table(pa.table({"qid": [3.0, 1e300], "label": [0, 1], "f": [0.1, 0.2]}), path)
    with pytest.raises(DataError, match=r"^qid 1e\+300 at row 2 of .* is not within int64's range$"):
        read_ranking_file(path)


def test_infinite_text_value_through_the_cli(write: WriteFile, scores: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("1 qid:1 1:0.5\n0 qid:1 1:inf\n1 qid:2 1:1\n")
    assert_one_line_exit_2(
        capsys, ["evaluate", "--data", str(path), "--scores", str(scores)], str(path), "line 2", "infinite value 'inf'"
    )


def test_a_cached_matrix_with_an_infinity_is_refused() -> None:
    features = np.zeros((3, 4), np.float32)
    features[0, 1] = np.nan
    data = RankingData(
        features=features, labels=np.array([1, 0, 2], np.int32), qids=np.array([1, 2], np.int64),
        offsets=np.array([0, 2, 3], np.int64),
    )
    check_ranking_data(data, source="cache entry x")  # NaN is fine
    features[2, 3] = -np.inf
    with pytest.raises(DataError, match=r"feature 4 at row 3 of cache entry x is -inf"):
        check_ranking_data(data, source="cache entry x")


def test_first_infinite_scans_in_blocks() -> None:
    features = np.zeros((1000, 3), np.float32)
    assert first_infinite(features, block_bytes=64) is None
    features[777, 2] = np.inf
    features[900, 0] = -np.inf
    assert first_infinite(features, block_bytes=64) == (777, 2)
    assert first_infinite(np.zeros((0, 3), np.float32)) is None


# -- 4. numeric options of ltr evaluate -----------------------------------------------------------


@pytest.fixture
def trec(tmp_path: Path) -> list[str]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n")
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d1 1 0.9 t\n1 Q0 d2 2 0.5 t\n2 Q0 d3 1 0.3 t\n")
    return ["evaluate", "--qrels", str(qrels), "--run", str(run), "--json"]


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--rel-threshold", "-5"], ["--rel-threshold -5 is negative", ">= 0"]),
        (["--rel-threshold", "x"], ["--rel-threshold", "invalid int value: 'x'"]),
        (["--k", "0"], ["--k values must be", "from 1 to 1,000,000", "[0]"]),
        (["--k", "-3"], ["--k values must be", "[-3]"]),
        (["--k", "10", "--k", "10"], ["--k values must be distinct"]),
        (["--k", "1000000000000"], ["--k values must be", "[1000000000000]"]),
        (["--k", "1e3"], ["--k", "invalid int value: '1e3'"]),
        (["--strata", "0,5"], ["--strata '0,5'", "first lower edge must be 1"]),
        (["--strata", "2,10"], ["--strata '2,10'", "first lower edge must be 1"]),
        (["--strata", "1,11,11"], ["--strata '1,11,11'", "strictly increasing"]),
        (["--strata", "1,,5"], ["--strata '1,,5'", "'' is not an integer", "1,11,51"]),
        (["--strata", "1,x"], ["--strata '1,x'", "'x' is not an integer"]),
        (["--label-gain", "nan,1"], ["--label-gain 'nan,1'", "finite number >= 0"]),
        (["--label-gain", "0,-1"], ["--label-gain '0,-1'", "finite number >= 0"]),
        (["--label-gain", "0,inf"], ["--label-gain '0,inf'", "finite number >= 0"]),
    ],
)
def test_evaluate_numeric_options_are_one_line(capsys: pytest.CaptureFixture[str], trec: list[str], extra: list[str], needles: list[str]) -> None:
    assert_one_line_exit_2(capsys, [*trec, *extra], *needles)


def test_rel_threshold_zero_counts_every_judged_document(capsys: pytest.CaptureFixture[str], trec: list[str]) -> None:
    code, out, err = run_cli(capsys, [*trec, "--rel-threshold", "0", "--k", "1000000"])
    assert code == 0, err
    assert '"rr": 1.0' in out


# -- 5. dependency floor --------------------------------------------------------------------------


def test_pyarrow_floor_excludes_the_cve_2023_47248_release() -> None:
    from packaging.requirements import Requirement

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [Requirement(d).specifier for d in deps if Requirement(d).name == "pyarrow"]
    assert "14.0.0" not in spec
    assert "14.0.1" in spec


def test_a_stray_text_cell_in_a_column_of_numbers_is_named_by_its_line(tmp_path: Path) -> None:
    """One text cell makes Arrow read a CSV column as strings: the message names that cell's
    line, value and qid (numbers, blanks, signs, exponents, inf and nan read as numbers); a
    column of text (an id) is named as a column."""
    csv = tmp_path / "t.csv"
    csv.write_text("qid,label,f1,f2\n1,1,0.5,a\n1,0,-1e3,b\n2,1, ,c\n2,0,abc,d\n3,1,inf,e\n")
    with pytest.raises(DataError) as info:
        read_ranking_file(csv, feature_columns=["f1"])
    assert str(info.value) == (
        f"feature column 'f1' of {csv} is not numeric (type string): 'abc' at line 5 (qid 2); "
        "convert it, or leave it out of data.feature_columns"
    )
    with pytest.raises(DataError) as info:
        read_ranking_file(csv, feature_columns=["f2"])
    assert str(info.value) == (
        f"feature column 'f2' of {csv} is not numeric (type string); if it names each row's document, set "
        "data.doc_id_column=f2 (a document id is never a feature); else leave it out of data.feature_columns"
    )


def test_a_column_of_text_among_the_features_is_named_as_a_possible_doc_id(tmp_path: Path) -> None:
    """A column of text (document ids) where every other column is a feature: the message names
    data.doc_id_column with the column's name, and the advice fits whether data.feature_columns
    was set (leave it out) or not (list the features); read as a doc id, the file trains."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"qid": [1, 1, 2, 2], "label": [1, 0, 0, 2], "docno": ["a", "b", "c", "d"], "f1": [0.5, 0.1, 0.2, 0.3]}), path)
    with pytest.raises(DataError) as info:
        read_ranking_file(path)
    assert str(info.value) == (
        f"feature column 'docno' of {path} is not numeric (type string); if it names each row's document, set "
        "data.doc_id_column=docno (a document id is never a feature); else list the feature columns in data.feature_columns"
    )
    with pytest.raises(DataError) as info:
        read_ranking_file(path, feature_columns=["f1", "docno"])
    assert str(info.value).endswith("set data.doc_id_column=docno (a document id is never a feature); else leave it out of data.feature_columns")
    data = read_ranking_file(path, doc_id_column="docno")
    assert data.features.tolist() == [[0.5], [0.10000000149011612], [0.20000000298023224], [0.30000001192092896]]


def test_a_parquet_table_without_the_qid_column_names_the_columns_it_has(tmp_path: Path) -> None:
    """``ltr evaluate`` reads only a Parquet table's qid and label columns; a missing one is
    named with every column of the file (not only those read)."""
    table = tmp_path / "export.parquet"
    pq.write_table(pa.table({"query_id": [1, 1, 2, 2], "grade": [1, 0, 0, 2], "docno": ["a", "b", "c", "d"]}), table)
    scores = tmp_path / "s.txt"
    scores.write_text("1\n0\n0\n1\n")
    with pytest.raises(LtrUserError) as info:
        evaluate(["--data", str(table), "--scores", str(scores), "--label-column", "grade"])
    assert str(info.value) == f"{table} has no qid column 'qid' (columns: query_id, grade, docno); set --qid-column <name>"
    with pytest.raises(LtrUserError) as info:
        evaluate(["--data", str(table), "--scores", str(scores), "--qid-column", "query_id"])
    assert str(info.value) == f"{table} has no label column 'label' (columns: query_id, grade, docno); set --label-column <name>"


def test_evaluate_reads_a_tables_queries_and_labels_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ltr evaluate --data`` never reads a table's other columns (a text doc id, a URL: what a
    real export holds), takes its qid and label columns by name, and names its flags, not
    training's config keys, in its advice."""
    table = tmp_path / "export.csv"
    table.write_text("query_id,grade,docno,url\n1,1,a,http://x\n1,0,b,http://y\n2,0,c,http://z\n2,2,d,http://w\n")
    scores = tmp_path / "s.txt"
    scores.write_text("1\n0\n0\n1\n")  # query 1: the relevant first; query 2: the grade-2 first
    base = ["--data", str(table), "--scores", str(scores), "--json", "--measure", "ndcg"]
    assert evaluate([*base, "--qid-column", "query_id", "--label-column", "grade"]) == 0
    assert json.loads(capsys.readouterr().out)["ndcg_at_10"] == 1.0
    with pytest.raises(LtrUserError) as info:
        evaluate([*base, "--label-column", "grade"])
    assert str(info.value) == (
        f"{table} has no qid column 'qid' (columns: query_id, grade, docno, url); set --qid-column <name>"
    )
    with pytest.raises(LtrUserError, match=r"--n-features is the width of a text file; .* is a table"):
        evaluate([*base, "--qid-column", "query_id", "--label-column", "grade", "--n-features", "3"])
    wide = tmp_path / "wide.txt"
    wide.write_text("1 qid:1 2000000:1\n0 qid:1 5:1\n")
    two = tmp_path / "two.txt"
    two.write_text("0\n1\n")
    with pytest.raises(LtrUserError, match=r"fix the width with --n-features N"):
        evaluate(["--data", str(wide), "--scores", str(two), "--json"])
    assert evaluate(["--data", str(wide), "--scores", str(two), "--json", "--n-features", "2000000", "--measure", "ndcg"]) == 0
    assert json.loads(capsys.readouterr().out)["ndcg_at_10"] == pytest.approx(1 / np.log2(3))
