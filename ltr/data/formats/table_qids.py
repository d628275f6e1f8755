"""The qid column of an Arrow table as int64 row qids, or one line saying what is wrong.

Shared by every reader of tables: :func:`ltr.data.formats.read_columns.read_table` (``ltr train``), the
Dask partition reader (:func:`ltr.dask.parquet.read_part`) and ``ltr predict``'s Parquet input
(:mod:`ltr.models.inputs`). Integer qids are kept (uint64 up to int64's maximum), floating ones
must be whole numbers within int64's range; a null qid is refused naming its file and row.
String qids (and uint64 qids beyond int64: 64-bit hashes) are ids, not numbers:
:func:`numeric_qids` gives None for them, and ``read_table`` numbers them 0, 1, ... in order of
first appearance; the readers that cannot (:func:`refuse_string_qids`) refuse them in one line
naming the file and the column.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ltr.data.formats.table_features import RowNames
from ltr.errors import DataError

log = logging.getLogger(__name__)


def numeric_qids(column: pa.ChunkedArray, rows: RowNames) -> NDArray[np.int64] | None:
    """The int64 qid of every row of ``column``, or None when its qids are ids, not numbers
    (strings, uint64 beyond int64).

    Raises
    ------
    DataError
        a null qid, a floating qid that is not a whole number within int64's range (its file
        and row or line, as ``rows`` names them).
    """
    _refuse_null(column, rows)
    if pa.types.is_uint64(column.type) and len(column) and pc.max(column).as_py() > np.iinfo(np.int64).max:
        return None
    if pa.types.is_integer(column.type):
        return np.asarray(column.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_floating(column.type):
        values = column.to_numpy(zero_copy_only=False)
        bad = (values != np.floor(values)) | ~(np.abs(values) < 2.0**63)
        if bad.any():
            i = int(np.argmax(bad))
            what = "within int64's range" if values[i] == np.floor(values[i]) else "an integer"
            path, where = rows.at(i)
            raise DataError(f"qid {values[i]} at {where} of {path} is not {what}")
        return np.asarray(values, dtype=np.float64).astype(np.int64)
    return None


def refuse_string_qids(
    column: pa.ChunkedArray, qid_column: str, rows: RowNames, why: str
) -> NDArray[np.int64]:
    """The int64 qids of ``column`` (:func:`numeric_qids`); qids that are ids, not numbers, are a
    DataError naming the file, the column, its type and first value, and ``why`` this reader
    needs numbers."""
    qids = numeric_qids(column, rows)
    if qids is None:
        path, where = rows.at(0)
        kind = "uint64 (beyond int64)" if pa.types.is_uint64(column.type) else f"{column.type}"
        raise DataError(
            f"qid column {qid_column!r} of {path} holds {kind} qids ({column[0].as_py()!r} at {where}), "
            f"not integers: {why}"
        )
    return qids


def _refuse_null(column: pa.ChunkedArray, rows: RowNames) -> None:
    """A null qid is a DataError naming its file and row, as ``rows`` names them."""
    if column.null_count:
        path, where = rows.at(int(np.argmax(column.is_null().to_numpy(zero_copy_only=False))))
        raise DataError(f"qid missing at {where} of {path}; give every row a qid")


def query_numbers(column: pa.ChunkedArray, rows: RowNames) -> tuple[NDArray[np.int64], list[str]]:
    """The qids of ``column`` as ids: every row's number 0, 1, ... in order of first appearance
    (how every reader numbers string qids) and the ids in that order.

    Raises
    ------
    DataError
        a null qid (its file and row, as ``rows`` names them).
    """
    _refuse_null(column, rows)
    encoded = pc.dictionary_encode(column.cast(pa.string())).combine_chunks()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def qids_are_ids(paths: Sequence[Path], qid_column: str) -> bool:
    """Whether the qids of Parquet files ``paths`` are ids, not numbers: a column of another type
    than integer or floating in any file, or uint64 values beyond int64 (read only for uint64)."""
    for path in paths:
        arrow_type = pq.read_schema(path).field(qid_column).type
        if pa.types.is_uint64(arrow_type):
            column = pq.read_table(path, columns=[qid_column]).column(0)
            if len(column) and (pc.max(column).as_py() or 0) > np.iinfo(np.int64).max:
                return True
        elif not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)):
            return True
    return False


class QidNumbering(NamedTuple):
    """How :func:`number_qids` numbered the ids of several files: ``firsts[i]`` is the first number
    of file ``i``'s queries, ``names[n]`` the qid as written of number ``n`` (0, 1, ...)."""

    firsts: list[int]
    names: list[str]


def number_qids(paths: list[Path], qid_column: str) -> QidNumbering | None:
    """The numbering of the files' qids when they are ids (a string column, or uint64 beyond
    int64, in any file): numbered 0, 1, ... in order of first appearance over the files in order,
    as ``ltr train`` numbers them in one file (read on the client: the qid columns alone), with
    the first number of each file and every number's qid as written; None when every file's
    qids are integers.

    Raises
    ------
    DataError
        a null qid (its file and row), a query whose rows are not contiguous in its file or that
        is in two files (its qid as written and the files).
    """
    if not qids_are_ids(paths, qid_column):
        return None
    firsts: list[int] = []
    first_file: dict[str, Path] = {}
    for path in paths:
        column = pq.read_table(path, columns=[qid_column]).column(0)
        numbers, names = query_numbers(column, RowNames.of_file(path))
        if np.any(np.diff(numbers) < 0):
            qid = names[int(numbers[int(np.argmax(np.diff(numbers) < 0)) + 1])]
            raise DataError(f"the rows of qid {qid!r} in {path} are not contiguous; group each query's rows together")
        again = [q for q in names if q in first_file]
        if again:
            raise DataError(f"qid {again[0]!r} appears in several files: {first_file[again[0]]}, {path}; a query must stay in one file")
        firsts.append(len(first_file))
        first_file.update(dict.fromkeys(names, path))
    log.info("%s: %d string qids numbered 0.. in order of first appearance", paths[0].parent, len(first_file))
    return QidNumbering(firsts, list(first_file))
