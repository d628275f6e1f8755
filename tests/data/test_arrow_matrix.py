"""`ltr.data.formats.arrow_matrix.float32_matrix` against the column-by-column conversion it replaces.

The contract is the column-by-column loop: column ``j`` is
``pc.cast(column, pa.float64(), safe=False).to_numpy(zero_copy_only=False).astype(np.float32)``
(wherever Arrow's default, safe cast converts a column, the very same bits: an integer beyond 2**53
is what it no longer refuses), the first column holding an infinity is reported with its first
infinite row, and a cast that fails (only a column of another type can: a string that is not a
number) raises :class:`CastError` with its first refused row unless an earlier column holds an
infinity. Matrices are compared bit for bit (``tobytes``), NaN payloads and -0.0 included, over
mixed column types, Arrow chunks and blocks and tiles of every size.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.typing import NDArray

from ltr.data.formats.arrow_matrix import BLOCK_ROWS, CastError, float32_matrix

F32_MAX = float(np.finfo(np.float32).max)


def _by_column(
    columns: Sequence[pa.ChunkedArray], n_rows: int
) -> tuple[NDArray[np.float32], tuple[int, int] | None, CastError | None, int]:
    """The reference: the column-by-column loop, run over every column.

    Returns the matrix, the first infinity ``(column, row)`` among the columns before the first
    failed cast, that failure (its first refused row found value by value), and the number of
    columns before it (all: no failure). Asserts that a column the safe cast converts has the
    same bits.
    """
    matrix = np.zeros((n_rows, len(columns)), np.float32)
    for j, column in enumerate(columns):
        try:
            with np.errstate(over="ignore"):
                values = pc.cast(column, pa.float64(), safe=False).to_numpy(zero_copy_only=False).astype(np.float32)
        except pa.ArrowException as exc:
            refused = [i for i in range(n_rows) if not _casts(column.slice(i, 1))]
            failure = CastError(j, refused[0] if refused else None, " ".join(str(exc).split()))
            return matrix, _first_infinite(matrix[:, :j]), failure, j
        if _casts(column):  # what converted before the unsafe cast converts to the same bits
            with np.errstate(over="ignore"):
                safe = column.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float32)
            assert safe.tobytes() == values.tobytes()
        matrix[:, j] = values
    return matrix, _first_infinite(matrix), None, len(columns)


def _casts(column: pa.ChunkedArray) -> bool:
    """Whether Arrow's default (safe) cast to float64 converts ``column``."""
    try:
        column.cast(pa.float64())
    except pa.ArrowException:
        return False
    return True


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
        with pytest.raises(CastError) as raised:
            float32_matrix(columns, n_rows, **blocks)
        assert (raised.value.column, raised.value.row, str(raised.value)) == (failure.column, failure.row, str(failure))
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


#: Integers where float64 rounds, and what numpy's ``astype(np.float64)`` makes of them (ties to even)
_BEYOND_2_53 = {
    "int64": ([2**53 + 1, 2**53 + 2, 2**53 + 3, 2**53 + 5, -(2**53 + 1), -(2**53 + 3), 2**63 - 1, -(2**63), -(2**63) + 1,
               2**62 + 2**9, 2**62 + 3 * 2**9, 2**60 + 2**36 + 1, 1_733_139_200_123_456_789],
              [2.0**53, 2.0**53 + 2, 2.0**53 + 4, 2.0**53 + 4, -(2.0**53), -(2.0**53 + 4), 2.0**63, -(2.0**63), -(2.0**63),
               2.0**62, 2.0**62 + 2**11, 2.0**60 + 2**36, 1_733_139_200_123_456_768.0]),
    "uint64": ([2**64 - 1, 2**63, 2**63 + 2**10, 2**63 + 3 * 2**10, 2**53 + 1, 2**64 - 2**11, 2**64 - 2**10 - 1],
               [2.0**64, 2.0**63, 2.0**63, 2.0**63 + 2**12, 2.0**53, 2.0**64 - 2**11, 2.0**64 - 2**11]),
}


@pytest.mark.parametrize("kind", sorted(_BEYOND_2_53))
@pytest.mark.parametrize("block_rows", [1, 4, BLOCK_ROWS])
def test_integers_beyond_2_53_round_as_numpy_does(kind: str, block_rows: int) -> None:
    ints, doubles = _BEYOND_2_53[kind]
    values = np.array(ints, dtype=kind)
    assert values.astype(np.float64).tolist() == doubles  # the hand-computed float64s are numpy's
    column = _chunked(pa.array(values), [3])
    with pytest.raises(pa.ArrowInvalid, match="not in range"):
        column.cast(pa.float64())  # what the safe cast made of them: a traceback in ltr train
    matrix, first = float32_matrix([column], len(values), block_rows=block_rows)
    assert first is None
    assert matrix[:, 0].tobytes() == values.astype(np.float64).astype(np.float32).tobytes()
    assert _check([column], len(values), block_rows=block_rows) is None
    if kind == "int64":  # 2**60 + 2**36 + 1 is past half-way between two float32s, its float64 a tie, to even
        assert matrix[11, 0] == np.float32(2.0**60) != np.float32(values[11])  # numpy's direct cast rounds up


@pytest.mark.parametrize("block_rows", [16, 1000])
def test_a_failing_cast_names_its_first_row_unless_an_earlier_column_is_infinite(block_rows: int) -> None:
    n = 100
    words = pa.array([str(i) for i in range(n)])  # numbers as text cast (a reader refuses them by type)
    bad = pc.if_else(pa.array(np.arange(n) >= 80), pa.scalar("8O"), words)  # an O for a 0 from row 80 on
    infinite = np.zeros(n, np.float32)
    infinite[10] = np.inf  # in a block before the failing one: the cast's error still wins
    bad_col, inf_col = _chunked(bad, [50, 85]), _chunked(pa.array(infinite))
    with pytest.raises(CastError, match="Failed to parse string: '8O'") as raised:
        float32_matrix([_chunked(words), bad_col, inf_col], n, block_rows=block_rows)
    assert (raised.value.column, raised.value.row) == (1, 80)
    assert _check([bad_col, inf_col], n, block_rows=block_rows) is None
    assert _check([inf_col, bad_col], n, block_rows=block_rows) == (0, 10)
    with pytest.raises(CastError) as raised:  # a type Arrow cannot cast at all: no row to name
        float32_matrix([_chunked(pa.array([[1.0]] * n))], n, block_rows=block_rows)
    assert (raised.value.column, raised.value.row) == (0, None)


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
