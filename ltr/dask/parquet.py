"""A split stored as a directory of Parquet files of whole queries, read by the Dask workers.

Layout (what :func:`write_query_partitions` writes and :func:`read_query_partitions` reads):
one file per partition, ``part-00000.parquet``, ``part-00001.parquet``, ... in query order (taken
by number: :func:`ltr.data.query_parts.partition_files`); columns ``qid`` (int64 as written;
strings are numbered over the files, see :func:`read_query_partitions`), ``label`` (int32),
optionally ``doc_id`` (text: the rows' document ids, never a feature) and the feature columns
(float32, in order). Every
file holds whole queries: the rows of a query are contiguous within one file, and no qid appears
in two files (both are checked when reading).

The client reads only file names and Parquet footers (schemas); each worker reads its own files,
so the rows never pass through the client. The directory must be readable by every worker
under the same path (a shared file system); this reader takes local paths only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ltr.dask.partitions import PartitionedSplit, PartTuple, from_part_futures, sorted_workers
from ltr.data.formats import doc_ids as doc_id_arrays
from ltr.data.formats.parquet_columns import ParquetColumns
from ltr.data.formats.table_features import RowNames, feature_matrix
from ltr.data.formats.table_qids import number_qids, query_numbers, refuse_string_qids
from ltr.data.query_parts import partition_files, write_query_partitions
from ltr.data.validate import run_starts
from ltr.errors import DataError

log = logging.getLogger(__name__)

__all__ = ["read_query_partitions", "write_query_partitions"]

#: Why read_part refuses qids that are ids when it is not told how to number them.
STRING_QIDS = "read the directory with read_query_partitions, which numbers string qids over all its files"

#: What a message on a column missing from a partition file advises.
PARTITION_COLUMNS = "every partition file needs the columns of the first"
#: What a message on a non-numeric column of a partition file advises.
NOT_NUMERIC_HINT = "convert it: every column of a partition file but the qid, label and doc id is a feature"


def read_part(
    path: str,
    qid_column: str,
    label_column: str,
    feature_columns: list[str],
    doc_id_column: str | None = None,
    first_qid: int | None = None,
) -> PartTuple:
    """Read one file of whole queries into ``(features, labels, group_sizes, qids, doc_ids)`` (on a
    worker); ``doc_ids`` is None without a ``doc_id_column``. Features are converted as
    ``ltr train`` converts a Parquet file (:func:`ltr.data.formats.table_features.feature_matrix`: the
    same float32 bits; an infinite or non-numeric feature is a DataError naming the file, the
    column and, for a value, its row and qid). ``first_qid``: the qids are ids (strings), numbered
    ``first_qid, first_qid + 1, ...`` in order of first appearance
    (:func:`ltr.data.formats.table_qids.number_qids`); None:
    they are integers (:func:`ltr.data.formats.table_qids.numeric_qids`; ids then are a DataError)."""
    wanted = [qid_column, label_column, *feature_columns, *([] if doc_id_column is None else [doc_id_column])]
    with ParquetColumns(path, wanted) as table:
        table.require(wanted, PARTITION_COLUMNS)
        return _part_of(table, path, qid_column, label_column, feature_columns, doc_id_column, first_qid)


def _part_of(
    table: ParquetColumns,
    path: str,
    qid_column: str,
    label_column: str,
    feature_columns: list[str],
    doc_id_column: str | None,
    first_qid: int | None,
) -> PartTuple:
    """What :func:`read_part` returns, from the columns of its file."""
    n_rows = table.num_rows
    if n_rows == 0:
        raise DataError(f"{path} holds no rows")
    features = feature_matrix(
        table, feature_columns, qid_column=qid_column, rows=RowNames.of_file(path), not_numeric_hint=NOT_NUMERIC_HINT
    )
    labels = np.ascontiguousarray(table.column(label_column).to_numpy(), dtype=np.int32)
    if first_qid is None:
        row_qids = refuse_string_qids(table.column(qid_column), qid_column, RowNames.of_file(path), STRING_QIDS)
    else:
        row_qids = first_qid + query_numbers(table.column(qid_column), RowNames.of_file(path))[0]
    starts = run_starts(row_qids)
    qids = row_qids[starts]
    unique, counts = np.unique(qids, return_counts=True)
    if np.any(counts > 1):
        qid = unique[np.argmax(counts > 1)]
        raise DataError(f"the rows of qid {qid} in {path} are not contiguous; group each query's rows together")
    group_sizes = np.diff(np.concatenate([starts, [n_rows]])).astype(np.int64)
    doc_ids = None
    if doc_id_column is not None:
        doc_ids = doc_id_arrays.from_arrow(table.column(doc_id_column), name=doc_id_column, rows=RowNames.of_file(path))
    return features, labels, group_sizes, qids, doc_ids


def _sizes(part: PartTuple) -> tuple[int, int]:
    return int(part[1].shape[0]), int(part[3].shape[0])


def _qids(part: PartTuple) -> Any:
    return part[3]


def read_query_partitions(
    client: Any,
    directory: str | Path,
    *,
    qid_column: str = "qid",
    label_column: str = "label",
    doc_id_column: str | None = "doc_id",
) -> PartitionedSplit:
    """Have the workers read ``directory/*.parquet`` as one partition per file, in the order of
    their numbers (:func:`ltr.data.query_parts.partition_files`: ``part-99999`` before
    ``part-100000``).

    Parameters
    ----------
    client : distributed.Client
    directory : a directory of Parquet files of whole queries (see the module docstring)
    qid_column, label_column : names of the qid and label columns; every other column is a
        feature, in the order of the first file's schema
    doc_id_column : the column of document ids, when the files have it (not a feature); the
        split then carries them. Files without it are read without doc ids
        (:func:`ltr.data.formats.doc_ids.column_of_files`, the rule ``ltr predict`` reads them by);
        None: no such column

    Returns
    -------
    PartitionedSplit
        Backed by data held on the workers (file ``i`` on worker ``i % n_workers``); the client
        has gathered only the partition sizes and the qids (one integer per query), to check that
        no qid appears in two files. String qids are numbered 0, 1, ... in order of first
        appearance over the files, as ``ltr train`` numbers them in one file (the client reads
        the qid columns for that: :func:`ltr.data.formats.table_qids.number_qids`), and kept as
        written in ``qid_names`` (the per-query tables name the queries by them).

    Raises
    ------
    DataError
        No files, files with different columns, missing qid / label columns, a query whose rows
        are not contiguous in its file, or a qid in two files.
    """
    directory = Path(directory)
    paths = partition_files(directory)
    if not paths:
        raise DataError(f"no *.parquet files in {directory}")
    schema = pq.read_schema(paths[0])
    for name in (qid_column, label_column):
        if name not in schema.names:
            raise DataError(f"{paths[0]} has no column {name!r}; columns: {', '.join(schema.names)}")
    for path in paths[1:]:
        if pq.read_schema(path).names != schema.names:
            raise DataError(f"{path} has other columns than {paths[0]}")
    doc_id_column = doc_id_arrays.column_of_files(doc_id_column, [(paths[0], schema.names)])  # None: no doc ids
    features = [n for n in schema.names if n not in (qid_column, label_column, doc_id_column)]
    numbering = number_qids(paths, qid_column)
    workers = sorted_workers(client)
    futures = [
        client.submit(
            read_part, str(path), qid_column, label_column, features, doc_id_column,
            None if numbering is None else numbering.firsts[i], workers=[workers[i % len(workers)]], pure=False,
        )
        for i, path in enumerate(paths)
    ]
    sizes = client.gather([client.submit(_sizes, f) for f in futures])
    qids = client.gather([client.submit(_qids, f) for f in futures])
    all_qids = np.concatenate(qids)
    unique, counts = np.unique(all_qids, return_counts=True)
    if np.any(counts > 1):
        qid = unique[np.argmax(counts > 1)]
        files = [str(p) for p, q in zip(paths, qids, strict=True) if qid in q]
        raise DataError(f"qid {qid} appears in several files: {', '.join(files)}; a query must stay in one file")
    log.info("%d files in %s: %d queries / %d rows", len(paths), directory, len(all_qids), sum(s[0] for s in sizes))
    return from_part_futures(
        futures,
        n_rows=[s[0] for s in sizes],
        n_queries=[s[1] for s in sizes],
        n_features=len(features),
        feature_names=tuple(features),
        has_doc_ids=doc_id_column is not None,
        qid_names=None if numbering is None else np.asarray(numbering.names, dtype=object),
    )
