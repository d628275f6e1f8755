"""Document ids of the rows of a data set: an object array of ``str``, one per row, or None.

Where they come from: the ``docid = X`` of a LETOR / SVMlight line's ``#`` comment
(:mod:`ltr.data.formats.read_text`) or a Parquet / CSV column named by ``data.doc_id_column``
(:mod:`ltr.data.formats.read_columns`). Where they go: every subset, reorder and concatenation of
`RankingData`, the parse cache (as UTF-8 bytes plus offsets, no pickle: :func:`encode` /
:func:`decode`) and the per-query tables (the top-ranked document of each query). They are
never a feature and never part of the data fingerprint.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ltr.data.formats.table_features import RowNames
from ltr.errors import DataError

logger = logging.getLogger(__name__)


def column_of_files(
    column: str | None, schemas: Sequence[tuple[str | Path, Collection[str]]], *, asked_by: str | None = None
) -> str | None:
    """The document id column that Parquet / CSV files are read with: one rule for ``ltr train``'s
    partition reader and ``ltr predict``.

    Parameters
    ----------
    column : the column named for document ids, or None (no doc ids)
    schemas : every file and its column names, in reading order
    asked_by : who named ``column`` when a user asked for it by name (``"--doc-id-column"``):
        then every file must have it. None: ``column`` is a default (``data.doc_id_column`` of
        ``data=parquet_partitions``, a run's logged setting), which a file may lack.

    Returns
    -------
    str or None
        ``column`` when every file has it; None when ``column`` is None, or is a default that a
        file lacks: the files are then read without doc ids (one warning naming a file without
        and one with, when only some have it, as :func:`concat` stacks parts).

    Raises
    ------
    DataError
        ``asked_by`` given and a file without ``column`` (one line naming the file and the option).

    Examples
    --------
    >>> column_of_files("doc_id", [("part-0.parquet", ["qid", "label", "f1"])])
    >>> column_of_files("doc_id", [("part-0.parquet", ["qid", "label", "doc_id", "f1"])])
    'doc_id'
    """
    if column is None:
        return None
    missing = [path for path, names in schemas if column not in names]
    if not missing:
        return column
    if asked_by is not None:
        raise DataError(f"{missing[0]} has no document id column {column!r} ({asked_by})")
    if len(missing) < len(schemas):
        having = next(path for path, names in schemas if column in names)
        logger.warning("%s has no document id column %r but %s has; no file's doc ids are read", missing[0], column, having)
    return None


def not_a_table(asked: str, path: str | Path, fix: str) -> DataError:
    """The one-line refusal of a document id column named for sparse text (LETOR / SVMlight /
    LightGBM), which has no columns: its lines name their documents in ``# docid = X``
    comments, read without any option. ``asked`` is what named the column as the user wrote it
    (``data.doc_id_column='url'``, ``--doc-id-column url``), ``fix`` how to go on.

    >>> str(not_a_table("--doc-id-column url", "a.txt", "leave out --doc-id-column"))
    "--doc-id-column url names a column of a Parquet / CSV table, but a.txt is sparse text, whose lines name their documents in '# docid = X' comments; leave out --doc-id-column"
    """
    return DataError(
        f"{asked} names a column of a Parquet / CSV table, but {path} is sparse text, whose lines "
        f"name their documents in '# docid = X' comments; {fix}"
    )


def from_arrow(
    column: pa.Array | pa.ChunkedArray, *, name: str, rows: RowNames, hint: str = ""
) -> NDArray[np.object_]:
    """The values of a document id column as an object array of ``str``: the one conversion of
    every reader of doc id columns (``ltr train``'s table reader, the Dask partition reader,
    ``ltr predict``'s Parquet input), so a file gives the same doc ids wherever it is read.
    Text stays as it is; numbers are written as Arrow casts them to text (``7`` for an int,
    ``1`` for the float 1.0, ``1.5``, ``1e+20``), booleans ``true`` / ``false``.

    Parameters
    ----------
    column : the column's values, one per row of ``rows``
    name : the column's name (in messages)
    rows : how messages name the rows (file and row or line)
    hint : what a message advises after ``;`` (e.g. how to read the file without doc ids)

    Raises
    ------
    DataError
        one line naming the column, the file and the row: a null, a float NaN or an empty text
        (no document id), or a type that does not cast to text.

    Examples
    --------
    >>> from_arrow(pa.array([7, 12]), name="doc", rows=RowNames.of_file("a.parquet")).tolist()
    ['7', '12']
    >>> from_arrow(pa.array([1.0, 2.5]), name="doc", rows=RowNames.of_file("a.parquet")).tolist()
    ['1', '2.5']
    >>> from_arrow(pa.array(["a", None]), name="doc", rows=RowNames.of_file("a.parquet"))
    Traceback (most recent call last):
    ...
    ltr.errors.DataError: doc id column 'doc' of a.parquet: row 2 has no document id (null)
    """

    def refuse(mask: pa.Array | pa.ChunkedArray, what: str) -> None:
        missing = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
        if missing.any():
            path, row = rows.at(int(np.argmax(missing)))
            end = f"; {hint}" if hint else ""
            raise DataError(f"doc id column {name!r} of {path}: {row} has no document id ({what}){end}")

    if column.null_count:
        refuse(column.is_null(), "null")
    if pa.types.is_floating(column.type):
        refuse(pc.is_nan(column), "NaN")
    try:
        strings = column.cast(pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(
            f"doc id column {name!r} of {rows.source}: a column of type {column.type} does not convert to text: {exc}"
        ) from None
    refuse(pc.equal(pc.binary_length(strings), 0), "an empty string")
    out: NDArray[np.object_] = np.asarray(strings.to_numpy(zero_copy_only=False), dtype=object)
    return out


def encode(doc_ids: NDArray[np.object_]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """``(utf8, offsets)``: the UTF-8 bytes of all ids back to back, and int64 offsets of shape
    (n + 1,) where id ``i`` is ``utf8[offsets[i]:offsets[i + 1]]`` (any text, newlines included).

    Examples
    --------
    >>> data, offsets = encode(np.array(["a", "bé"], dtype=object))
    >>> bytes(data), offsets.tolist()
    (b'ab\\xc3\\xa9', [0, 1, 4])
    """
    arr = pa.array(doc_ids, type=pa.large_string())
    n = len(arr)
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64, count=n + 1, offset=arr.offset * 8).copy()
    data = np.frombuffer(data_buf, dtype=np.uint8).copy() if data_buf is not None else np.zeros(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    return np.ascontiguousarray(data), offsets - offsets[0]


def decode(data: NDArray[np.uint8], offsets: NDArray[np.int64]) -> NDArray[np.object_]:
    """The inverse of :func:`encode`.

    Raises
    ------
    ValueError
        offsets that are not non-decreasing from 0 to ``len(data)``, or bytes that are not UTF-8.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] != 0 or offsets[-1] != data.shape[0]:
        raise ValueError(f"doc id offsets must run from 0 to {data.shape[0]}")
    if np.any(np.diff(offsets) < 0):
        raise ValueError("doc id offsets decrease")
    arr = pa.LargeStringArray.from_buffers(
        offsets.shape[0] - 1, pa.py_buffer(np.ascontiguousarray(offsets)), pa.py_buffer(np.ascontiguousarray(data))
    )
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ValueError(f"doc ids are not valid UTF-8: {exc}") from None
    out: NDArray[np.object_] = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
    return out


def concat(parts: Sequence[NDArray[np.object_] | None], names: Sequence[str]) -> NDArray[np.object_] | None:
    """The doc ids of stacked parts: their concatenation when every part has them, else None
    (with one warning naming a part without, when some have them)."""
    if all(p is None for p in parts):
        return None
    missing = [n for p, n in zip(parts, names, strict=True) if p is None]
    if missing:
        having = next(n for p, n in zip(parts, names, strict=True) if p is not None)
        logger.warning("%s has no doc ids but %s has; the stacked rows get no doc ids", missing[0], having)
        return None
    return np.concatenate([p for p in parts if p is not None])

