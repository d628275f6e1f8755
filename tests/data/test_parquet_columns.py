"""A Parquet file read a few columns at a time (`ltr.data.formats.parquet_columns`) gives what one read of
the whole table gives: the same float32 bits, the same first error, and never the whole decoded
table in memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ltr.data.formats.parquet_columns as parquet_columns
from ltr.data.formats.parquet_columns import ParquetColumns, columns_per_read
from ltr.data.formats.read_columns import read_table
from ltr.data.formats.table_features import RowNames, feature_matrix
from ltr.errors import DataError

F32_MAX = float(np.finfo(np.float32).max)


def _features(n: int) -> dict[str, pa.Array]:
    """Feature columns of every numeric type (nulls, NaN, -0.0, integers beyond 2**53, subnormals)."""
    rng = np.random.default_rng(3)
    nulls = np.arange(n) % 5 == 3
    f32 = rng.standard_normal(n).astype(np.float32)
    f32[:4] = [-0.0, 1e-45, np.nan, F32_MAX]
    f64 = rng.standard_normal(n) * 1e30
    f64[:3] = [5e-324, 3.4028235e38, -0.0]
    big = rng.integers(-(2**62), 2**62, n)
    big[:2] = [2**53 + 1, 2**53 + 3]
    return {
        "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8), mask=nulls),
        "i64": pa.array(big),
        "f32": pa.array(f32),
        "f32_nulls": pa.array(f32, mask=nulls),
        "f64": pa.array(f64, mask=np.arange(n) % 7 == 6),
        "flag": pa.array(np.arange(n) % 2 == 0, mask=nulls),
        "empty": pa.nulls(n, pa.float64()),
        "u64": pa.array(np.arange(n, dtype=np.uint64) * 2**40),
        "coarse": pa.array(np.round(rng.standard_normal(n) * 4).astype(np.float32)).dictionary_encode(),
    }


def _write(path: Path, n: int, features: dict[str, pa.Array], *, row_group: int = 37) -> Path:
    qids = np.repeat(np.arange(n // 10 + 1), 10)[:n]
    table = pa.table({"qid": qids, **features, "label": np.arange(n) % 5})
    pq.write_table(table, path, row_group_size=row_group)  # several row groups: chunked columns
    return path


@pytest.fixture(params=[1, 2, 4, 100], ids=lambda k: f"{k}-columns-a-read")
def few_at_a_time(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Reads of ``k`` columns of the tests' 200-row files."""
    k = int(request.param)
    monkeypatch.setattr(parquet_columns, "READ_BYTES", 8 * 200 * k)
    assert columns_per_read(200) == k
    return k


def test_read_a_few_columns_at_a_time_the_matrix_is_the_whole_tables(tmp_path: Path, few_at_a_time: int) -> None:
    path = _write(tmp_path / "t.parquet", 200, _features(200))
    names = list(_features(200))
    whole = feature_matrix(pq.read_table(path), names, qid_column="qid", rows=RowNames.of_file(path))
    with ParquetColumns(path) as table:
        assert table.num_rows == 200
        assert table.column_names == ["qid", *names, "label"]
        assert pq.ParquetFile(path).metadata.num_row_groups == 6  # 37-row groups
        read = feature_matrix(table, names, qid_column="qid", rows=RowNames.of_file(path))
    assert read.tobytes() == whole.tobytes()  # NaN payloads and -0.0 included
    assert read.flags.c_contiguous
    raw = read_table(path, kind="parquet")  # what `ltr train` reads
    assert raw.features.tobytes() == whole.tobytes()
    assert raw.feature_names == tuple(names)
    assert raw.row_qids.tolist() == (np.arange(200) // 10).tolist()
    assert raw.labels.tolist() == (np.arange(200) % 5).tolist()


def _message(call: object) -> str:
    with pytest.raises(DataError) as raised:
        call()  # type: ignore[operator]
    return str(raised.value)


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ({"c3": (5, np.inf), "c1": (150, -1e39)}, "feature column 'c1' of {path} has infinite value -1e+39 (beyond float32's +-3.4e38) at row 151 (qid 15)"),
        ({"c4": (0, -np.inf)}, "feature column 'c4' of {path} has infinite value -inf at row 1 (qid 0)"),
        ({"c0": (199, np.inf), "c4": (0, np.inf)}, "feature column 'c0' of {path} has infinite value inf at row 200 (qid 19)"),
    ],
)
def test_the_first_infinite_column_is_reported_whichever_read_it_is_in(
    tmp_path: Path, few_at_a_time: int, cells: dict[str, tuple[int, float]], expected: str
) -> None:
    """An infinity in a later column but an earlier row, or in a later read, loses to the first
    column holding one: the message of one read of the whole table, word for word."""
    values = {f"c{j}": np.linspace(-1, 1, 200) for j in range(5)}
    for name, (row, value) in cells.items():
        values[name][row] = value
    path = _write(tmp_path / "t.parquet", 200, {name: pa.array(v) for name, v in values.items()})
    names = list(values)
    whole = _message(lambda: feature_matrix(pq.read_table(path), names, qid_column="qid", rows=RowNames.of_file(path)))
    assert whole.startswith(expected.format(path=path))
    with ParquetColumns(path) as table:
        assert _message(lambda: feature_matrix(table, names, qid_column="qid", rows=RowNames.of_file(path))) == whole
    assert _message(lambda: read_table(path, kind="parquet")) == whole


def test_a_text_column_is_reported_after_the_numeric_ones_before_it(tmp_path: Path, few_at_a_time: int) -> None:
    features = {"a": pa.array(np.ones(200)), "b": pa.array(["1.5"] * 199 + ["oops"]), "c": pa.array(np.ones(200))}
    path = _write(tmp_path / "t.parquet", 200, features)
    message = _message(lambda: read_table(path, kind="parquet"))
    assert message.startswith(f"feature column 'b' of {path} is not numeric (type string): 'oops' at row 200 (qid 19)")
    features["a"] = pa.array(np.r_[np.ones(199), np.inf])  # an infinity in an earlier column wins
    path = _write(tmp_path / "t.parquet", 200, features)
    assert _message(lambda: read_table(path, kind="parquet")).startswith(f"feature column 'a' of {path} has infinite value inf")


def test_a_file_arrow_cannot_read_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 not a parquet file at all PAR1")
    message = _message(lambda: ParquetColumns(path))
    assert message.startswith(f"cannot read {path} as parquet: ")
    assert "\n" not in message
    assert _message(lambda: read_table(path, kind="parquet")) == message


def test_the_columns_asked_for_in_that_order_and_missing_ones_left_out(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.parquet", 20, {"x": pa.array(np.arange(20.0)), "y": pa.array(np.ones(20))})
    with ParquetColumns(path, ["label", "y", "nope", "qid"]) as table:
        assert table.column_names == ["label", "y", "qid"]
        assert [c.to_pylist() for c in table.read(["y", "label"])] == [[1.0] * 20, [i % 5 for i in range(20)]]
        assert table.column("qid") is table.column("qid")  # kept
        table.require(["label", "y"], "never said")
        with pytest.raises(DataError, match=r"^.*t\.parquet has no column 'nope'; the hint$"):
            table.require(["label", "nope", "also_not"], "the hint")


#: In a fresh interpreter: read a file of 20,000 rows x 128 float64 features (20 MB decoded) and
#: report the peak of Arrow's memory pool, reading 1 MiB of columns at a time or the file whole.
PEAK = """
import json, sys
import pyarrow as pa
import ltr.data.formats.parquet_columns as parquet_columns
from ltr.data.formats.read_columns import read_table
if sys.argv[2] == "few":
    parquet_columns.READ_BYTES = 2**20
data = read_table(sys.argv[1], kind="parquet")
print(json.dumps({"peak": pa.default_memory_pool().max_memory(), "features": data.features.shape}))
"""


@pytest.mark.slow
def test_a_wide_file_is_never_decoded_whole(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 20_000
    features = {f"f{j}": pa.array(rng.standard_normal(n)) for j in range(128)}
    decoded = sum(a.nbytes for a in features.values())
    path = _write(tmp_path / "wide.parquet", n, features, row_group=n)
    peaks = {}
    for mode in ("few", "default"):
        out = subprocess.run([sys.executable, "-c", PEAK, str(path), mode], capture_output=True, text=True, check=True, timeout=120)
        got = json.loads(out.stdout)
        assert got["features"] == [n, 128]
        peaks[mode] = got["peak"]
    assert peaks["few"] < decoded / 3  # about 1 MiB of columns and its file bytes, the qid / label columns: 3-4 MB
    assert peaks["default"] > decoded  # 64 MiB reads take this file in one: the measure sees a whole read
