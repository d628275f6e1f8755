"""Decimal feature columns (SQL and Spark exports) load as numbers in every table reader: each
value the correctly rounded float64 of the decimal (Python's ``float(Decimal(...))``; Arrow's
direct cast is not: 0.7 as decimal128(38, 9) becomes 0.7000000000000001), then float32, a null
NaN, as ``ltr train``, the Dask partition reader and ``ltr predict`` read any other column."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.dask.parquet import read_part
from ltr.data.formats.arrow_matrix import float32_matrix
from ltr.data.formats.readers import read_ranking_file
from ltr.errors import DataError
from ltr.models.inputs import read_whole_file

#: hand-picked: not binary fractions, 38 digits, the smallest and largest decimal(38, 9) / (38, 37)
SCALE_9 = ["0.1", "0.7", "-0.3", "1234567.891", "99999999999999999999999999999.999999999",
           "-12345678901234567890123456789.123456789", "0.000000001", None, "1.000000001"]
SCALE_37 = ["0.1", "0.7", "-0.3", "9.9999999999999999999999999999999999999",
            "-1.0000000000000000000000000000000000001", "0.0000000000000000000000000000000000001", "3.3333333333333333333333333333333333333",
            None, "0"]


def _write(path: Path) -> pa.Table:
    n = len(SCALE_9)
    table = pa.table({
        "qid": pa.array([1, 1, 1, 2, 2, 3, 3, 3, 3], pa.int64()),
        "label": pa.array([0, 1, 2, 0, 1, 0, 0, 1, 2], pa.int32()),
        "d9": pa.array([None if v is None else Decimal(v) for v in SCALE_9], pa.decimal128(38, 9)),
        "d37": pa.array([None if v is None else Decimal(v) for v in SCALE_37], pa.decimal256(40, 37)),
        "plain": pa.array(np.arange(n, dtype=np.float64)),
    })
    pq.write_table(table, path)
    return table


def _expected(values: list[str | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(Decimal(v)) for v in values]).astype(np.float32)


def test_decimal_columns_load_correctly_rounded_in_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "decimals.parquet"
    _write(path)
    want = np.column_stack([_expected(SCALE_9), _expected(SCALE_37), np.arange(9, dtype=np.float32)])
    assert pa.array([Decimal("0.7")], pa.decimal128(38, 9)).cast(pa.float64()).to_pylist() != [0.7]  # why not Arrow's cast
    trained = read_ranking_file(path).features
    assert trained.tobytes() == want.tobytes()
    assert trained[1, 0] == np.float32(0.7)
    assert trained[3, 1] == np.float32(10.0)
    part = read_part(str(path), "qid", "label", ["d9", "d37", "plain"])[0]
    assert part.tobytes() == want.tobytes()
    predicted = read_whole_file(path, ["qid", "label", "d9", "d37", "plain"], ["d9", "d37", "plain"], "qid", "label", None)
    assert predicted.features.tobytes() == want.tobytes()


def test_float64_of_every_decimal_is_pythons(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for precision, scale in [(38, 0), (38, 9), (38, 38), (18, 4), (76, 40)]:
        digits = ["".join(rng.choice(list("0123456789"), precision)) for _ in range(2000)]
        values = [Decimal(("-" if i % 3 == 0 else "") + d).scaleb(-scale) for i, d in enumerate(digits)]
        arrow_type = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        matrix, _ = float32_matrix([pa.chunked_array([pa.array(values, arrow_type)])], len(values), block_rows=700)
        assert matrix[:, 0].tobytes() == np.array([float(v) for v in values]).astype(np.float32).tobytes()


def test_a_decimal_beyond_float32_is_refused_as_infinite(tmp_path: Path) -> None:
    parquet = tmp_path / "huge.parquet"
    pq.write_table(pa.table({
        "qid": pa.array([1, 1]), "label": pa.array([0, 1]),
        "d": pa.array([Decimal("1"), Decimal("5" + "0" * 40)], pa.decimal256(45, 0)),
    }), parquet)
    with pytest.raises(DataError) as info:
        read_ranking_file(parquet)
    assert str(info.value).startswith(
        f"feature column 'd' of {parquet} has infinite value Decimal('{'5' + '0' * 40}') (beyond float32's +-3.4e38) at row 2 (qid 1)"
    )
