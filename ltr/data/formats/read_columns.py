"""Read Parquet and CSV / TSV tables with a qid column, a label column and feature columns.

Columns are chosen by name: ``qid_column`` and ``label_column`` (required), and
``feature_columns`` (None: every other column, which must then all be numeric). Nulls in a
feature column become NaN (LightGBM's "missing"), integers become the nearest float32 of their
nearest float64 (:mod:`ltr.data.formats.table_features`: the Dask partition reader and ``ltr predict``
convert the same way); a null label is reported as an error. An
infinite feature (``inf``, ``-inf``, or beyond float32's +-3.4e38) is an error naming the column
and row: an infinity has no place in a tree's bins. A table without rows (a CSV with only its
header, a Parquet file of 0 rows) is an error too.
String qids (and uint64 qids beyond int64: 64-bit hashes) are accepted and numbered 0, 1, ... in
order of first appearance (logged).
An optional ``position_column`` holds the logged 0-based position of every row (checked by
:func:`ltr.data.feedback.positions.check_positions`); it is never a feature. An optional
``doc_id_column`` names every row's document (any type, kept as ``str``: an int 7 becomes
``"7"``; a null is an error naming the row); it is never a feature either. Optional
``behaviour_columns`` (clicks, dwell seconds, add-to-cart, purchases: what label recipes grade,
:mod:`ltr.data.feedback.recipes`) are kept as float64, never features; each must exist and be numeric
(booleans are 0 / 1), and a null is an error naming the row.
A Parquet file's columns are read from the file as they are needed, the features a few at a
time (:mod:`ltr.data.formats.parquet_columns`), so its matrix never sits beside the whole decoded table.
CSV is read whole with pyarrow (multithreaded); ``.gz`` / ``.bz2`` / ``.zst`` compression follows the
file name. Messages name CSV rows by their line in the file (the header is line 1) and Parquet
rows by their 1-based row number.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from ltr.data.feedback.positions import check_positions
from ltr.data.formats import doc_ids as doc_id_arrays
from ltr.data.formats.parquet_columns import ParquetColumns, cannot_read
from ltr.data.formats.table_features import ColumnSource, RowNames, feature_matrix
from ltr.data.formats.table_qids import numeric_qids, query_numbers
from ltr.data.validate import RawTable
from ltr.errors import DataError

logger = logging.getLogger(__name__)


def read_table(
    path: str | Path,
    *,
    kind: str,
    qid_column: str = "qid",
    label_column: str = "label",
    feature_columns: Sequence[str] | None = None,
    delimiter: str | None = None,
    n_features: int | None = None,
    position_column: str | None = None,
    doc_id_column: str | None = None,
    behaviour_columns: Sequence[str] = (),
) -> RawTable:
    """Read a Parquet (``kind="parquet"``) or CSV (``kind="csv"``) file into a `RawTable`.

    Parameters
    ----------
    path : the file
    kind : ``"parquet"`` or ``"csv"``
    qid_column, label_column : names of the query id and graded label columns
    feature_columns : feature column names in order; None: all other columns; empty: none (a
        table read for its labels and queries only, e.g. to evaluate scores given beside it)
    delimiter : CSV field separator; None: tab for ``.tsv`` files, else comma
    n_features : if given, the number of feature columns must equal it
    position_column : name of a column of logged 0-based positions (never a feature); None: the
        table has no positions
    doc_id_column : name of a column of document ids (never a feature); None: no doc ids
    behaviour_columns : names of behaviour columns kept for label recipes (never features)

    Raises
    ------
    DataError
        a missing file or column, no data rows, a non-numeric feature column or label, an
        infinite feature value, a bad qid column, a missing, negative or non-integer position,
        a missing document id.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {path} does not exist; check the path")
    extra = [c for c in (position_column, doc_id_column) if c is not None] + list(behaviour_columns)
    with _open_table(path, kind, delimiter, qid_column, label_column, feature_columns, extra) as table:
        return _raw_table(
            table, path, kind=kind, qid_column=qid_column, label_column=label_column,
            feature_columns=feature_columns, n_features=n_features, position_column=position_column,
            doc_id_column=doc_id_column, behaviour_columns=behaviour_columns,
        )  # fmt: skip


def _raw_table(
    table: ColumnSource,
    path: Path,
    *,
    kind: str,
    qid_column: str,
    label_column: str,
    feature_columns: Sequence[str] | None,
    n_features: int | None,
    position_column: str | None,
    doc_id_column: str | None,
    behaviour_columns: Sequence[str],
) -> RawTable:
    """The `RawTable` of ``table``, read from ``path`` (see :func:`read_table`)."""
    names = list(table.column_names)
    # what a message on a missing column lists: every column of the file, not only those read
    in_file = table.file_column_names if isinstance(table, ParquetColumns) else names
    shown = ", ".join(in_file[:20]) + (f", ... ({len(in_file)} columns)" if len(in_file) > 20 else "")
    if table.num_rows == 0:
        if kind == "csv":
            raise DataError(
                f"{path} has a header at line 1 ({shown}) but no data rows from line 2 on; "
                "check the export (or the path): a ranking file needs at least one row"
            )
        raise DataError(
            f"{path} has 0 rows (columns: {shown}); check the export (or the path): a ranking "
            "file needs at least one row"
        )
    roles = [("qid", qid_column), ("label", label_column)]
    if position_column is not None:
        roles.append(("position", position_column))
    if doc_id_column is not None:
        roles.append(("doc_id", doc_id_column))
    for role, col in roles:
        if col not in names:
            raise DataError(
                f"{path} has no {role.replace('_', ' ')} column {col!r} (columns: {shown}); "
                f"set data.{role}_column=<name>"
            )
    for col in behaviour_columns:
        if col not in names:
            raise DataError(
                f"{path} has no behaviour column {col!r} (columns: {shown}); fix "
                "data.behaviour_columns, or the recipe in data.label_recipes that needs it"
            )
    no_features = feature_columns is not None and len(feature_columns) == 0  # asked for none (evaluation)
    auto_features = feature_columns is None  # every other column (data.feature_columns not set)
    if feature_columns is None:
        reserved = {qid_column, label_column, position_column, doc_id_column, *behaviour_columns}
        feature_columns = [c for c in names if c not in reserved]
    else:
        kept = [c for c in behaviour_columns if c in feature_columns]
        if kept:
            raise DataError(
                f"behaviour column {kept[0]!r} of {path} is also in data.feature_columns; what users "
                "did with a document is not a feature: leave it out of data.feature_columns"
            )
        missing = [c for c in feature_columns if c not in names]
        if missing:
            raise DataError(
                f"{path} has no feature column(s) {', '.join(map(repr, missing[:5]))}; "
                "fix data.feature_columns"
            )
        if position_column is not None and position_column in feature_columns:
            raise DataError(
                f"position column {position_column!r} of {path} is also in data.feature_columns; "
                "a logged position is not a feature: leave it out of data.feature_columns"
            )
        if doc_id_column is not None and doc_id_column in feature_columns:
            raise DataError(
                f"doc id column {doc_id_column!r} of {path} is also in data.feature_columns; "
                "a document id is not a feature: leave it out of data.feature_columns"
            )
    if not feature_columns and not no_features:
        raise DataError(f"{path} has no feature columns besides {qid_column!r} and {label_column!r}")
    if n_features is not None and len(feature_columns) != n_features:
        raise DataError(f"{path} has {len(feature_columns)} feature columns, expected n_features={n_features}")
    first_line = 2 if kind == "csv" else 1
    where = "line" if kind == "csv" else "row"
    # what a message on a column that is not numeric advises, besides converting it
    listed = "list the feature columns in data.feature_columns" if auto_features else "leave it out of data.feature_columns"
    n = table.num_rows
    row_lines = np.arange(first_line, first_line + n, dtype=np.int64)

    features = feature_matrix(
        table, feature_columns, qid_column=qid_column, rows=RowNames.of_file(path, where=where, first=first_line),
        not_numeric_hint=f"convert it, or {listed}",
        text_column_hint="if it names each row's document, set data.doc_id_column={column} (a document id is never a "
        f"feature); else {listed}",
    )

    label_arr = table.column(label_column)
    if not (pa.types.is_integer(label_arr.type) or pa.types.is_floating(label_arr.type)):
        bad = _first_non_numeric(label_arr)
        raise DataError(
            f"label {bad!r} at {where} {first_line + _index_of(label_arr, bad)} of {path} is not a "
            f"number (column {label_column!r} has type {label_arr.type}); labels must be grades 0, 1, 2, ..."
        )
    labels = label_arr.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # nulls become NaN; beyond 2**53 rounded (and refused as a grade)

    qid_arr = table.column(qid_column)
    qid_rows = RowNames.of_file(path, where=where, first=first_line)
    numbers = numeric_qids(qid_arr, qid_rows)
    numeric = numbers is not None  # string qids are renumbered: their numbers would mislead in messages
    qid_names = None
    if numbers is not None:
        row_qids = numbers
    else:
        row_qids, names = query_numbers(qid_arr, qid_rows)
        kind = "uint64 (beyond int64)" if pa.types.is_uint64(qid_arr.type) else "string"
        logger.info("%s: %d %s qids numbered 0.. in order of first appearance", path, len(names), kind)
        qid_names = tuple(names)
    positions = None
    if position_column is not None:
        positions = _positions(
            table.column(position_column), position_column, path=path, where=where,
            row_lines=row_lines, row_qids=np.asarray(row_qids, dtype=np.int64) if numeric else None,
        )
    doc_ids = None
    if doc_id_column is not None:
        doc_ids = doc_id_arrays.from_arrow(
            table.column(doc_id_column), name=doc_id_column, rows=qid_rows,
            hint="give every row a document id, or set data.doc_id_column=null",
        )  # fmt: skip
    behaviours = None
    if behaviour_columns:
        behaviours = {
            col: _behaviour(table.column(col), col, path=path, where=where, first_line=first_line)
            for col in behaviour_columns
        }
    return RawTable(
        features=features,
        labels=np.asarray(labels, dtype=np.float64),
        row_qids=np.asarray(row_qids, dtype=np.int64),
        row_lines=row_lines,
        source=str(path),
        where=where,
        feature_names=tuple(feature_columns),
        positions=positions,
        doc_ids=doc_ids,
        behaviours=behaviours,
        qid_names=qid_names,
    )


def _behaviour(arr: pa.ChunkedArray, column: str, *, path: Path, where: str, first_line: int) -> np.ndarray:
    """The float64 values of behaviour column ``column`` (numeric or boolean, no nulls)."""
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type)):
        raise DataError(
            f"behaviour column {column!r} of {path} is not numeric (type {arr.type}); label recipes "
            "compare numbers (a click 0/1, dwell seconds, ...)"
        )
    values = arr.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # nulls become NaN; beyond 2**53 rounded
    missing = np.isnan(values)
    if missing.any():
        i = int(np.argmax(missing))
        raise DataError(
            f"behaviour column {column!r} of {path} has no value at {where} {first_line + i}; "
            "write 0 where nothing happened"
        )
    return np.ascontiguousarray(values, dtype=np.float64)


def _positions(
    arr: pa.ChunkedArray,
    column: str,
    *,
    path: Path,
    where: str,
    row_lines: np.ndarray,
    row_qids: np.ndarray | None,
) -> np.ndarray:
    """The checked int32 positions of column ``column`` (nulls are reported as missing)."""
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_null(arr.type)):
        bad = _first_non_numeric(arr)
        i = _index_of(arr, bad)
        qid = f" (qid {int(row_qids[i])})" if row_qids is not None else ""
        raise DataError(
            f"position {bad!r} at {where} {int(row_lines[i])} of {path}{qid} is not a number "
            f"(column {column!r} has type {arr.type}); positions are 0 (shown first), 1, 2, ..."
        )
    values = arr.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # nulls become NaN; beyond 2**53 rounded
    return check_positions(values, source=str(path), where=where, row_lines=row_lines, row_qids=row_qids)


def _open_table(
    path: Path,
    kind: str,
    delimiter: str | None,
    qid_column: str,
    label_column: str,
    feature_columns: Sequence[str] | None,
    extra_columns: Sequence[str] = (),
) -> contextlib.AbstractContextManager[ColumnSource]:
    """The file's columns: a Parquet file's read when asked for (:class:`ParquetColumns`), a CSV
    file parsed whole (Arrow's reader is multithreaded over the text)."""
    columns = None if feature_columns is None else [qid_column, label_column, *feature_columns]
    if columns is not None:
        columns += [c for c in extra_columns if c not in columns]
    if kind == "parquet":
        return ParquetColumns(path, columns)  # missing columns left out: reported by name
    import pyarrow.csv as pcsv

    try:
        return contextlib.nullcontext(
            pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=_csv_delimiter(path, delimiter)))
        )
    except (pa.ArrowInvalid, OSError) as exc:
        raise cannot_read(path, kind, exc) from None


def table_columns(path: str | Path, *, kind: str, delimiter: str | None = None) -> list[str]:
    """The column names of a Parquet (its footer) or CSV (its header: the first block is read)
    file, as :func:`read_table` would find them.

    Raises
    ------
    DataError
        a file that cannot be read as ``kind`` (one line, as :func:`read_table` says it).
    """
    path = Path(path)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        import pyarrow.csv as pcsv

        with pcsv.open_csv(path, parse_options=pcsv.ParseOptions(delimiter=_csv_delimiter(path, delimiter))) as reader:
            return list(reader.schema.names)
    except (pa.ArrowInvalid, OSError) as exc:
        raise cannot_read(path, kind, exc) from None


def _csv_delimiter(path: Path, delimiter: str | None) -> str:
    """``delimiter``, else tab for a ``.tsv`` file (compressed or not), else comma."""
    if delimiter is not None:
        return delimiter
    stem = path.name.lower().removesuffix(".gz").removesuffix(".bz2").removesuffix(".zst")
    return "\t" if stem.endswith(".tsv") else ","


def _first_non_numeric(arr: pa.ChunkedArray) -> str:
    for v in arr.to_pylist():
        try:
            float(v)
        except (TypeError, ValueError):
            return str(v)
    return str(arr[0])


def _index_of(arr: pa.ChunkedArray, value: str) -> int:
    for i, v in enumerate(arr.to_pylist()):
        if str(v) == value:
            return i
    return 0
