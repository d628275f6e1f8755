"""`ltr.data.arrow_matrix.float32_matrix` against the column-by-column conversion it replaces.

The contract is the old loop of ``read_table``: column ``j`` is
``column.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float32)``, the first column
holding an infinity is reported with its first infinite row, and a cast that fails (an int64
beyond 2**53) raises unless an earlier column holds an infinity. Matrices are compared bit for bit
(``tobytes``), NaN payloads and -0.0 included, over mixed column types, Arrow chunks and blocks and
tiles of every size.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from ltr.data.arrow_matrix import BLOCK_ROWS, float32_matrix

F32_MAX = float(np.finfo(np.float32).max)


def _by_column(
    columns: Sequence[pa.ChunkedArray], n_rows: int
) -> tuple[NDArray[np.float32], tuple[int, int] | None, pa.ArrowException | None, int]:
    """The reference: the column-by-column loop, run over every column.

    Returns the matrix, the first infinity ``(column, row)`` among the columns before the first
    failed cast, that failure, and the number of columns before it (all: no failure).
    """
    matrix = np.zeros((n_rows, len(columns)), np.float32)
    for j, column in enumerate(columns):
        try:
            with np.errstate(over="ignore"):
                values = column.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float32)
        except pa.ArrowException as exc:
            return matrix, _first_infinite(matrix[:, :j]), exc, j
        matrix[:, j] = values
    return matrix, _first_infinite(matrix), None, len(columns)


def _first_infinite(matrix: NDArray[np.float32]) -> tuple[int, int] | None:
    for j in range(matrix.shape[1]):
        infinite = np.isinf(matrix[:, j])
        if infinite.any():
            return j, int(np.argmax(infinite))
    return None


def _check(columns: Sequence[pa.ChunkedArray], n_rows: int, **blocks: int) -> tuple[int, int] | None:
    """Assert float32_matrix(columns) is the reference's outcome; return its first infinity."""
    expected, first, failure, converted = _by_column(columns, n_rows)
    if failure is not None and first is None:
        with pytest.raises(type(failure)) as raised:
            float32_matrix(columns, n_rows, **blocks)
        assert str(raised.value) == str(failure)
        return None
    matrix, found = float32_matrix(columns, n_rows, **blocks)
    assert matrix.shape == (n_rows, len(columns))
    assert matrix.dtype == np.float32
    assert found == first
    assert matrix[:, :converted].tobytes() == expected[:, :converted].tobytes()
    return found


def _chunked(values: pa.Array, cuts: Sequence[int] = ()) -> pa.ChunkedArray:
    """``values`` as chunks split at ``cuts`` (slices: chunks with an offset, as a filter leaves)."""
    edges = [0, *sorted({min(max(c, 0), len(values)) for c in cuts}), len(values)]
    return pa.chunked_array([values.slice(a, b - a) for a, b in pairwise(edges)], type=values.type)


def _mixed(n: int) -> list[pa.ChunkedArray]:
    """One column of every numeric type, ``n`` rows: the special values below, then random ones."""
    rng = np.random.default_rng(7)
    tail = max(0, n - 8)
    ints = np.concatenate([[2**24 + 1, 2**24 + 3, 2**53, -(2**53), 2**31 - 1, -(2**31), 0, 1], rng.integers(-(2**40), 2**40, tail)])[:n]
    f32 = np.concatenate([[-0.0, 1e-45, -1e-45, F32_MAX, np.nan, 1.1754942e-38, 1, 2], rng.standard_normal(tail)]).astype(np.float32)[:n]
    f64 = np.concatenate([[-0.0, 5e-324, 1.5e-45, 7.1e-46, F32_MAX, 3.4028235e38, np.nan, 1e-40], rng.standard_normal(tail) * 1e30])[:n]
    null_rows = np.arange(n) % 5 == 3
    return [
        _chunked(pa.array(ints.astype(np.int8), mask=null_rows), [n // 3]),
        _chunked(pa.array(ints.astype(np.int32))),
        _chunked(pa.array(ints.astype(np.int64)), [1, n // 2]),
        _chunked(pa.array(f32, mask=null_rows), [n - 1]),
        _chunked(pa.array(f32)),  # no nulls: copied as float32 in the blocks without a NaN
        _chunked(pa.array(f64, mask=np.arange(n) % 7 == 6), [2, 3]),
        _chunked(pa.array(np.arange(n) % 2 == 0, mask=null_rows)),
        _chunked(pa.nulls(n)),
        _chunked(pa.array(np.arange(n, dtype=np.uint64) * 2**40)),
    ]


@pytest.mark.parametrize("n", [1, 50, 64, 1000])
@pytest.mark.parametrize("block_rows", [1, 7, 16, 64, BLOCK_ROWS])
@pytest.mark.parametrize("tile_bytes", [1, 100, 1 << 18])
def test_mixed_types_across_blocks_and_tiles(n: int, block_rows: int, tile_bytes: int) -> None:
    columns = _mixed(n)
    assert _check(columns, n, block_rows=block_rows, tile_bytes=tile_bytes) is None
    if n < 8:
        return
    matrix, _ = float32_matrix(columns, n, block_rows=block_rows, tile_bytes=tile_bytes)
    # integers through float64: 2**24 + 3 is a tie, to even; 2**31 - 1 rounds up to 2**31
    assert matrix[:7, 2].tolist() == [2.0**24, 2.0**24 + 4, 2.0**53, -(2.0**53), 2.0**31, -(2.0**31), 0.0]
    assert matrix[:7, 1].tolist() == [2.0**24, 2.0**24 + 4, 0.0, 0.0, 2.0**31, -(2.0**31), 0.0]  # int32 wraps
    # float32 as it is: -0.0, the smallest subnormal, the largest float
    assert np.signbit(matrix[0, 4])
    assert matrix[0, 4] == 0
    assert matrix[1, 4] == -matrix[2, 4] == np.float32(1e-45) > 0
    assert matrix[3, 4] == F32_MAX
    # float64 rounded: -0.0 kept, 5e-324 to +0.0, 1.5e-45 and 7.1e-46 to the smallest subnormal,
    # 3.4028235e38 (within half an ulp of the largest float32) to it
    assert np.signbit(matrix[0, 5])
    assert matrix[1, 5] == 0
    assert not np.signbit(matrix[1, 5])
    assert matrix[2, 5] == matrix[3, 5] == np.float32(1e-45)
    assert matrix[4, 5] == matrix[5, 5] == F32_MAX
    assert np.isnan(matrix[3, 0])
    assert np.isnan(matrix[3, 3])
    assert np.isnan(matrix[6, 5])
    assert matrix[:3, 6].tolist() == [1.0, 0.0, 1.0]
    assert np.isnan(matrix[3, 6])
    assert np.isnan(matrix[:, 7]).all()


def test_empty_column_list_and_one_row() -> None:
    matrix, first = float32_matrix([], 5)
    assert matrix.shape == (5, 0)
    assert first is None
    assert _check([_chunked(pa.array([2**53], pa.int64()))], 1) is None


def test_a_signalling_nan_takes_the_float64_road() -> None:
    # float32 -> float64 -> float32 sets a signalling NaN's quiet bit: the block with it must too
    bits = [0x7F800001, 0x7FC00001, 0xFFC00000, 0x7FA00000, 0x3F800000, 0x80000000, 0x00000001]
    column = _chunked(pa.array(np.array(bits * 3, np.uint32).view(np.float32)), [4])
    expected = _by_column([column], 21)[0].view(np.uint32)[:7, 0]
    assert expected.tolist()[:4] == [0x7FC00001, 0x7FC00001, 0xFFC00000, 0x7FE00000]  # quieted
    assert expected.tolist()[4:] == bits[4:]
    for block_rows in (1, 5, 7, 64):
        _check([column], 21, block_rows=block_rows)


@pytest.mark.parametrize("block_rows", [16, 33, 1000])
def test_the_first_infinite_column_wins_even_in_a_later_block(block_rows: int) -> None:
    n = 100
    values = [np.linspace(-1, 1, n) for _ in range(4)]
    values[3][5] = np.inf  # an earlier row, in a later column
    values[2][70] = -1e39  # beyond float32 in the float64 column: -inf after the cast
    values[2][90] = np.inf
    columns = [_chunked(pa.array(values[0].astype(np.float32))), _chunked(pa.array(values[1], pa.float64())),
               _chunked(pa.array(values[2]), [69, 71]), _chunked(pa.array(values[3].astype(np.float32)))]
    assert _check(columns, n, block_rows=block_rows) == (2, 70)
    assert _check([columns[0], columns[1], columns[3]], n, block_rows=block_rows) == (2, 5)


@pytest.mark.parametrize("block_rows", [16, 1000])
def test_a_failing_cast_raises_unless_an_earlier_column_is_infinite(block_rows: int) -> None:
    n = 100
    wild = np.arange(n, dtype=np.int64)
    wild[80] = 2**60  # float64 cannot hold it exactly: Arrow's cast refuses
    infinite = np.zeros(n, np.float32)
    infinite[10] = np.inf  # in a block before the failing one: the cast's error still wins
    wild_col, inf_col = _chunked(pa.array(wild)), _chunked(pa.array(infinite))
    with pytest.raises(pa.ArrowInvalid, match="Integer value 1152921504606846976 not in range"):
        float32_matrix([wild_col, inf_col], n, block_rows=block_rows)
    assert _check([wild_col, inf_col], n, block_rows=block_rows) is None
    assert _check([inf_col, wild_col], n, block_rows=block_rows) == (0, 10)


_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(), pa.float64(), pa.bool_(), pa.null()]
_F32_SPECIAL = st.sampled_from([-0.0, 1e-45, F32_MAX, -F32_MAX, float("nan"), float("inf"), 1.1754942e-38])
_F64_SPECIAL = st.sampled_from([-0.0, 5e-324, 7e-46, 1.5e-45, F32_MAX, 3.4028235e38, 3.4028236e38, -1e39, float("nan"), float("inf")])


@st.composite
def _columns(draw: st.DrawFn) -> tuple[list[pa.ChunkedArray], int]:
    n = draw(st.integers(1, 40))
    out = []
    for _ in range(draw(st.integers(0, 5))):
        arrow_type = draw(st.sampled_from(_TYPES))
        nulls = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
        if pa.types.is_null(arrow_type):
            values = pa.nulls(n)
        elif pa.types.is_boolean(arrow_type):
            values = pa.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), mask=np.array(nulls))
        elif pa.types.is_integer(arrow_type):
            info = np.iinfo(arrow_type.to_pandas_dtype())
            choices = [st.integers(max(info.min, -(2**30)), min(info.max, 2**30))]
            if info.max > 2**24:
                choices.append(st.integers(2**24 - 4, 2**24 + 4))
            if info.max > 2**53 and draw(st.integers(0, 3)) == 0:  # now and then beyond 2**53
                choices += [st.integers(2**53 - 4, 2**53 + 4), st.integers(int(info.min), int(info.max))]
            ints = draw(st.lists(st.one_of(choices), min_size=n, max_size=n))
            values = pa.array(np.array(ints, dtype=arrow_type.to_pandas_dtype()), mask=np.array(nulls))
        elif pa.types.is_float32(arrow_type):
            if draw(st.booleans()):  # raw bit patterns: signalling NaNs, NaN payloads, subnormals
                patterns = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
                floats32 = np.array(patterns, np.uint32).view(np.float32)
            else:
                floats32 = np.array(draw(st.lists(st.one_of(st.floats(width=32), _F32_SPECIAL), min_size=n, max_size=n)), np.float32)
            values = pa.array(floats32, mask=np.array(nulls))
        else:
            floats = draw(st.lists(st.one_of(st.floats(), _F64_SPECIAL), min_size=n, max_size=n))
            values = pa.array(np.array(floats, np.float64), mask=np.array(nulls))
        cuts = draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3)) if n > 1 else []
        out.append(_chunked(values, cuts))
    return out, n


@given(_columns(), st.integers(1, 45), st.integers(1, 300))
def test_any_numeric_table_converts_as_column_by_column(table: tuple[list[pa.ChunkedArray], int], block_rows: int, tile_bytes: int) -> None:
    columns, n = table
    _check(columns, n, block_rows=block_rows, tile_bytes=tile_bytes)


def test_extra_memory_is_a_block_not_a_copy() -> None:
    n, n_cols = 200_000, 8  # the matrix: 6.4 MB; a float64 copy of the table would be 12.8 MB more
    columns = [_chunked(pa.array(np.arange(n, dtype=np.int32) + j)) for j in range(n_cols)]
    tracemalloc.start()
    try:
        matrix, _ = float32_matrix(columns, n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert matrix[12345].tolist() == [12345.0 + j for j in range(n_cols)]
    # numpy's allocations: the matrix, the block buffer (BLOCK_ROWS x 8 float32, 0.5 MB) and one
    # block of one column in float64 (Arrow's own buffers are not traced)
    assert peak < matrix.nbytes + BLOCK_ROWS * n_cols * 4 + (1 << 20)
