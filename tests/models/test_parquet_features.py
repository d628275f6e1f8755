"""``ltr predict``'s Parquet input (:mod:`ltr.models.inputs`) converts features as ``ltr train``
reads them: the same float32 bits (integers beyond 2**24 and 2**53 included), and an infinite
value refused in one line naming the file, the column, its row in that file and its qid, also
when a streamed batch joins the end of one file to the start of the next."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.data.formats.readers import read_ranking_file
from ltr.errors import DataError
from ltr.models.inputs import _stream, read_whole_file

NAMES = ["ints", "f64", "f32", "flag"]
COLUMNS = ["qid", "label", *NAMES]


def _write(path: Path, qids: list[int], *, seed: int, infinity_at: int | None = None) -> None:
    """Rows of ``qids``: int64 features above 2**24 and 2**53 (2**60 + 2**36 + 1: where the direct
    int64 -> float32 cast, the one predict made before, rounds otherwise), float64, float32 with a
    NaN and nulls, booleans; ``infinity_at``: a row whose float64 feature is +inf."""
    n = len(qids)
    rng = np.random.default_rng(seed)
    ints = (rng.integers(1, 8, n) + 2**24).astype(np.int64)
    ints[0] = 2**60 + 2**36 + 1
    ints[-1] = 2**53 + 3
    f64 = rng.standard_normal(n) * 1e20
    if infinity_at is not None:
        f64[infinity_at] = np.inf
    f32 = rng.standard_normal(n).astype(np.float32)
    f32[1] = np.nan
    pq.write_table(pa.table({
        "qid": pa.array(qids, pa.int64()), "label": pa.array(rng.integers(0, 3, n), pa.int32()), "ints": pa.array(ints),
        "f64": pa.array(f64), "f32": pa.array(f32, mask=np.arange(n) % 4 == 3), "flag": pa.array(np.arange(n) % 3 == 0),
    }), path)


def test_a_whole_file_gives_what_ltr_train_reads(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    _write(path, [1, 1, 1, 2, 2, 3], seed=1)
    data = read_whole_file(path, COLUMNS, NAMES, "qid", "label", None)
    assert data.features.tobytes() == read_ranking_file(path).features.tobytes()
    assert data.features[0, 0] == np.float32(2.0**60) != np.float32(np.int64(2**60 + 2**36 + 1))
    assert data.features[-1, 0] == np.float32(2.0**53)


@pytest.mark.parametrize("batch_rows", [1, 4, 100])
def test_streamed_batches_give_what_ltr_train_reads(tmp_path: Path, batch_rows: int) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _write(a, [1, 1, 1, 2, 2], seed=1)
    _write(b, [3, 3, 3, 4, 4, 4], seed=2)
    batches = list(_stream([a, b], COLUMNS, NAMES, "qid", "label", None, batch_rows))
    streamed = np.vstack([batch.features for batch in batches])
    assert streamed.tobytes() == np.vstack([read_ranking_file(a).features, read_ranking_file(b).features]).tobytes()
    assert [q for batch in batches for q in batch.qids.tolist()] == [1, 2, 3, 4]


# batch_rows=4 over a (qids 1 1 1 2 2) and b (3 3 3 4 4 4): batches a1-3, then a4-5 + b1-3 (one
# batch over two files), then b4-6
@pytest.mark.parametrize(("file", "row", "qid"), [("a", 5, 2), ("b", 2, 3), ("b", 5, 4), ("a", 1, 1)])
def test_an_infinity_names_its_own_file_and_row_in_a_batch_over_two_files(tmp_path: Path, file: str, row: int, qid: int) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    _write(a, [1, 1, 1, 2, 2], seed=1, infinity_at=row - 1 if file == "a" else None)
    _write(b, [3, 3, 3, 4, 4, 4], seed=2, infinity_at=row - 1 if file == "b" else None)
    bad = a if file == "a" else b
    with pytest.raises(DataError) as raised:
        list(_stream([a, b], COLUMNS, NAMES, "qid", "label", None, 4))
    message = str(raised.value)
    assert re.match(rf"feature column 'f64' of {re.escape(str(bad))} has infinite value inf at row {row} \(qid {qid}\); ", message)
    with pytest.raises(DataError) as local:
        read_ranking_file(bad)
    assert message == str(local.value)  # what ltr train says of that file


def test_a_text_feature_column_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"qid": [1, 1], "label": [0, 1], "f1": ["0.5", "1.5"]}), path)
    with pytest.raises(DataError, match=rf"^feature column 'f1' of {re.escape(str(path))} is not numeric \(type string\); the model"):
        read_whole_file(path, ["qid", "label", "f1"], ["f1"], "qid", "label", None)
