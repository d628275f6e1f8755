"""The feature columns of an Arrow table as a checked float32 matrix, or one line saying what is wrong.

The one conversion of every reader of tables, so a file gives the same features bit for bit
wherever it is read: :func:`ltr.data.formats.read_columns.read_table` (``ltr train``, Parquet and CSV),
the Dask partition reader (:func:`ltr.dask.parquet.read_part`) and ``ltr predict``'s Parquet
input (:mod:`ltr.models.inputs`). Values are those of
:func:`ltr.data.formats.arrow_matrix.float32_matrix` (integers beyond 2**53 rounded, nulls NaN). Refused,
as a :class:`ltr.errors.DataError` naming the file and the column: an infinite value (``inf``,
``-inf``, or beyond float32's +-3.4e38; with its row or line and qid), a column that is not
numeric (integer, floating, decimal, boolean or null-typed; a decimal is the correctly rounded
float64 of its value, then float32), a column Arrow cannot cast (with its row or
line and qid when Arrow refuses a value). Checked in column order: the first column found wrong
is reported. The columns come from a table in memory, or from a Parquet file, read and converted
a few at a time (:class:`ltr.data.formats.parquet_columns.ParquetColumns`): the same bits and the same
first error either way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ltr.data.formats.arrow_matrix import CastError, float32_matrix
from ltr.data.formats.parquet_columns import ParquetColumns, columns_per_read
from ltr.errors import DataError

#: The end of a message on a column that is not numeric, when the reader has no better advice.
NOT_NUMERIC_HINT = "convert it, or leave it out of data.feature_columns"


#: What the feature matrix is made from: a table in memory, or a Parquet file's columns read as needed.
ColumnSource: TypeAlias = "pa.Table | ParquetColumns"


@dataclass(frozen=True, slots=True)
class RowNames:
    """How messages name the rows of a table: row ``i`` (0-based) lies in one of ``pieces``,
    ``(file, number of the piece's first row, rows)`` in order, and is ``{where} {number}`` of it
    (Parquet: "row", 1-based; CSV: "line", the header being line 1). A table read from one file
    has one piece (:meth:`of_file`); a batch of ``ltr predict`` may join the end of one file to
    the start of the next."""

    pieces: tuple[tuple[str, int, int], ...]
    where: str = "row"

    @classmethod
    def of_file(cls, path: object, *, where: str = "row", first: int = 1) -> RowNames:
        """Rows of one file, the first numbered ``first``."""
        return cls(((str(path), first, sys.maxsize),), where)

    @property
    def source(self) -> str:
        """The file a message about a whole column names: the first piece's."""
        return self.pieces[0][0]

    def at(self, i: int) -> tuple[str, str]:
        """The file of row ``i`` and its name there (``"row 7"``, ``"line 8"``)."""
        for path, first, n in self.pieces:
            if i < n:
                return path, f"{self.where} {first + i}"
            i -= n
        raise IndexError(f"row {i} is beyond the pieces {self.pieces}")


def is_numeric(arrow_type: pa.DataType) -> bool:
    """Whether a feature column of ``arrow_type`` converts to float32 (booleans 0 / 1, a null-typed
    column NaN, a decimal its correctly rounded float64)."""
    return bool(
        pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)
        or pa.types.is_boolean(arrow_type) or pa.types.is_null(arrow_type)
    )


def feature_matrix(
    table: ColumnSource,
    feature_columns: Sequence[str],
    *,
    qid_column: str,
    rows: RowNames,
    not_numeric_hint: str = NOT_NUMERIC_HINT,
    text_column_hint: str | None = None,
) -> NDArray[np.float32]:
    """The ``(table.num_rows, len(feature_columns))`` float32 matrix of ``table``'s feature columns.

    Parameters
    ----------
    table : holds the feature columns and ``qid_column`` (named in messages)
    feature_columns : names of the feature columns, in the matrix's order
    qid_column : name of the qid column
    rows : how messages name the rows of ``table``
    not_numeric_hint : what a message on a non-numeric column advises
    text_column_hint : what it advises instead for a column of text (no value reads as a
        number: an id, a URL), where the column, not a cell, is the mistake (``{column}`` stands
        for the column's name); None: the same

    Raises
    ------
    DataError
        an infinite value (its column, file, value, row or line and qid), a column that is not
        numeric (its type), a column Arrow cannot cast to float64: the first of these, in column
        order (within a column, its first bad row).
    """
    # the columns before the first non-numeric one: an infinity among them is reported first
    names = list(feature_columns)
    checked = next((j for j, name in enumerate(names) if not is_numeric(table.schema.field(name).type)), len(names))
    try:
        features, first_infinite = _converted(table, names[:checked])
    except CastError as exc:  # no numeric column raises (see float32_matrix): kept as one line all the same
        name = names[exc.column]
        column_type = table.column(name).type
        if exc.row is None:
            raise DataError(
                f"feature column {name!r} of {rows.source} (type {column_type}) cannot be converted to "
                f"numbers: {exc}; {not_numeric_hint}"
            ) from None
        path, where = rows.at(exc.row)
        raise DataError(
            f"feature column {name!r} of {path} (type {column_type}) has value "
            f"{table.column(name)[exc.row].as_py()!r} at {where} (qid {_qid(table, qid_column, exc.row)}) "
            f"that cannot be converted to a number: {exc}"
        ) from None
    if first_infinite is not None:
        j, i = first_infinite
        name = names[j]
        raw = table.column(name)[i].as_py()
        beyond = "" if np.isinf(float(raw)) else " (beyond float32's +-3.4e38)"
        path, where = rows.at(i)
        raise DataError(
            f"feature column {name!r} of {path} has infinite value {raw!r}{beyond} at {where} "
            f"(qid {_qid(table, qid_column, i)}); an infinity has no place in a tree's bins and usually "
            "comes from a broken export: write a finite number, or leave the cell empty (NaN) for a "
            "missing value"
        )
    if checked < len(names):
        name = names[checked]
        column = table.column(name)
        first = _first_non_number(column)
        if first is None:
            text = _is_text(column.type) and text_column_hint is not None
            hint = text_column_hint.replace("{column}", name) if text and text_column_hint is not None else not_numeric_hint
            raise DataError(f"feature column {name!r} of {rows.source} is not numeric (type {column.type}); {hint}")
        path, where = rows.at(first)
        raise DataError(
            f"feature column {name!r} of {path} is not numeric (type {column.type}): {column[first].as_py()!r} at "
            f"{where} (qid {_qid(table, qid_column, first)}); {not_numeric_hint}"
        )
    return features


def _converted(table: ColumnSource, names: Sequence[str]) -> tuple[NDArray[np.float32], tuple[int, int] | None]:
    """:func:`ltr.data.formats.arrow_matrix.float32_matrix` of the columns ``names`` of ``table``; a file's
    columns are read and converted a few at a time (:func:`ltr.data.formats.parquet_columns.columns_per_read`),
    stopping at the first group that holds an infinity or a column Arrow cannot cast (so the
    first one in column order is what is reported, as for one conversion of them all)."""
    n_rows = table.num_rows
    if isinstance(table, pa.Table):
        return float32_matrix([table.column(name) for name in names], n_rows)
    features = np.empty((n_rows, len(names)), dtype=np.float32)
    step = columns_per_read(n_rows)
    for start in range(0, len(names), step):
        group = names[start : start + step]
        try:
            _, found = float32_matrix(table.read(group), n_rows, out=features[:, start : start + len(group)])
        except CastError as exc:
            exc.column += start
            raise
        if found is not None:
            return features, (start + found[0], found[1])
    return features, None


def _is_text(arrow_type: pa.DataType) -> bool:
    """Whether a column of ``arrow_type`` holds text (strings, or a categorical of strings)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _first_non_number(column: pa.ChunkedArray) -> int | None:
    """The first row of a text column whose value does not read as a number, when others do (a
    stray cell in a column of numbers); None for a column of text (an id, a URL: the column is
    the mistake, not a cell) or not of strings. The error path only: one vectorised pass."""
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return None
    text = pc.utf8_trim_whitespace(column.cast(pa.large_string()))
    blank = pc.fill_null(pc.equal(text, ""), True)
    number = pc.match_substring_regex(text, r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(?i:inf|infinity|nan)$")
    number = pc.fill_null(number, False)
    if not pc.any(number).as_py():
        return None
    bad = pc.and_(pc.invert(blank), pc.invert(number))
    hits = np.flatnonzero(bad.to_numpy(zero_copy_only=False))
    return int(hits[0]) if hits.size else None


def _qid(table: ColumnSource, qid_column: str, i: int) -> object:
    """Row ``i``'s qid as written (None when the table has no such column)."""
    if qid_column not in table.column_names:
        return None
    return table.column(qid_column)[i].as_py()
