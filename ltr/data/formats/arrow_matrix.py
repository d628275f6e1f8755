"""Numeric Arrow columns as one row-major float32 matrix, converted a block of rows at a time.

Every value is the one the column-by-column conversion gives,
``to_float64(column).to_numpy(zero_copy_only=False).astype(np.float32)`` (:func:`to_float64`:
Arrow's unsafe cast to float64; a decimal through its text, correctly rounded): an integer is rounded to the nearest float64 (ties to even, numpy's ``astype(np.float64)``: exact
up to 2**53, so an int64 nanosecond timestamp or a uint64 hash loads like any number; Arrow's
default "safe" cast would refuse it), then to float32; a null becomes NaN, a value beyond
float32's range becomes +-inf (found and reported, never silently kept). Only the order of the
work differs. Writing one whole column into a row-major matrix stores 4 bytes per row, a cache
line apart, once for every column; here Arrow converts a block of rows of every column into a
column-major buffer, and numpy copies the buffer into the matrix in tiles small enough for the
cache, so each row of the matrix is written whole. A float32 block without nulls or NaN is
copied as it is: float32 -> float64 -> float32 gives back every non-NaN float32 exactly (-0.0,
subnormals and +-inf included), whereas it may set a NaN's quiet bit, so a block holding a NaN
takes the float64 road.

Extra memory: the block buffer (:data:`BLOCK_ROWS` rows of every column, float32) and one block
of one column in float64, however many rows the table has.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

#: Rows converted per Arrow call: enough to make a call's fixed cost (~10 us) small next to its work.
BLOCK_ROWS = 16384

#: Bytes of the block buffer one tile of the copy into the matrix reads: about an L2 cache.
TILE_BYTES = 1 << 18

class CastError(ValueError):
    """Arrow could not cast column ``column`` to float64: ``row`` is the first row it refuses
    (None: it refuses the column's type, whatever the values); the message is Arrow's, on one line."""

    def __init__(self, column: int, row: int | None, detail: str) -> None:
        super().__init__(detail)
        self.column = column
        self.row = row


#: float32 slots after each column of the block buffer: with a power-of-two stride the columns of a
#: tile would share cache sets and evict each other (measured: the copy 4x slower).
_PAD = 16


def float32_matrix(
    columns: Sequence[pa.ChunkedArray],
    n_rows: int,
    *,
    block_rows: int = BLOCK_ROWS,
    tile_bytes: int = TILE_BYTES,
    out: NDArray[np.float32] | None = None,
) -> tuple[NDArray[np.float32], tuple[int, int] | None]:
    """The ``(n_rows, len(columns))`` float32 matrix of ``columns``, and where its first infinity is.

    Parameters
    ----------
    columns : numeric (integer, floating, decimal, boolean or null-typed) columns of ``n_rows`` values each
    n_rows : the number of rows
    block_rows, tile_bytes : rows converted at a time, bytes of a tile (tests make them small to
        cross their boundaries)
    out : where to write: a float32 ``(n_rows, len(columns))`` array, or a view of one (columns
        of a wider matrix); None: a new matrix

    Returns
    -------
    matrix : ``out`` when given; column ``j`` equals ``to_float64(columns[j]).to_numpy(zero_copy_only=False)
        .astype(np.float32)`` bit for bit
    first_infinite : ``(column, row)`` of the first column holding +-inf and its first +-inf row
        (column-major order: the column the column-by-column conversion stops at), or None

    Raises
    ------
    CastError
        for the first column ``j`` whose cast to float64 raises, when no column before ``j``
        holds an infinity (the column the column-by-column conversion stops at), with the first
        row it refuses. No integer, floating, decimal, boolean or null column raises: the cast is unsafe
        (rounding), so this is for a column of another type (a string that is not a number).
    """
    n_cols = len(columns)
    matrix = np.empty((n_rows, n_cols), dtype=np.float32) if out is None else out
    if matrix.shape != (n_rows, n_cols) or matrix.dtype != np.float32:
        raise ValueError(f"out is {matrix.dtype} {matrix.shape}, not float32 {(n_rows, n_cols)}")
    block = np.empty((n_cols, min(block_rows, n_rows) + _PAD), dtype=np.float32)
    tile = max(1, tile_bytes // (4 * max(n_cols, 1)))
    infinite = np.zeros(n_cols, dtype=bool)
    converted = n_cols  # columns 0..converted-1 are converted; a failed cast stops the rest
    failure: CastError | None = None
    with np.errstate(over="ignore"):  # beyond float32 becomes inf, reported to the caller
        for start in range(0, n_rows, block_rows):
            size = min(block_rows, n_rows - start)
            for j in range(converted):
                piece = columns[j].slice(start, size)
                if pa.types.is_float32(piece.type) and piece.null_count == 0:
                    row = block[j, :size]
                    row[...] = piece.to_numpy(zero_copy_only=False)
                    if not np.isnan(row).any():  # else through float64, which may change a NaN's bits
                        continue
                try:
                    values = to_float64(piece).to_numpy(zero_copy_only=False)
                except pa.ArrowException as exc:
                    converted, failure = j, CastError(j, _first_refused(piece, start), " ".join(str(exc).split()))
                    break
                block[j, :size] = values
            part = block[:converted, :size]
            infinite[:converted] |= np.isinf(part).any(axis=1)
            for t in range(0, size, tile):
                matrix[start + t : start + min(size, t + tile), :converted] = part[:, t : t + tile].T
    if infinite[:converted].any():
        j = int(np.argmax(infinite[:converted]))
        return matrix, (j, int(np.argmax(np.isinf(matrix[:, j]))))
    if failure is not None:
        raise failure
    return matrix, None


def to_float64(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """``values`` as float64 the way every feature is converted: ``cast(pa.float64(), safe=False)``
    (integers beyond 2**53 rounded, nulls kept), except a decimal, which goes through its text so
    each value is the correctly rounded ``float(Decimal(...))`` (Arrow's direct decimal cast is
    not: 0.7 as decimal128(38, 9) becomes 0.7000000000000001)."""
    if pa.types.is_decimal(values.type):
        return values.cast(pa.string()).cast(pa.float64())
    return values.cast(pa.float64(), safe=False)


def _first_refused(piece: pa.ChunkedArray, start: int) -> int | None:
    """The first row of ``piece`` (rows ``start ..`` of its column) whose cast to float64 fails,
    found by bisecting on the length of a failing prefix; None when even no rows fail (the type)."""

    def fails(length: int) -> bool:
        try:
            to_float64(piece.slice(0, length))
        except pa.ArrowException:
            return True
        return False

    if fails(0):
        return None
    low, high = 0, len(piece)  # the first `low` rows cast, the first `high` rows fail
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fails(middle) else (middle, high)
    return start + low
