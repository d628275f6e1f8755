"""Whole-query partitions of a split: where to cut, and the Parquet files the Dask path reads.

Layout (what `write_query_partitions` writes and :func:`ltr.dask.parquet.read_query_partitions`
reads): one file per partition, ``part-00000.parquet``, ``part-00001.parquet``, ... in query
order, taken by number (:func:`partition_files`: ``part-100000.parquet`` after
``part-99999.parquet``); columns ``qid`` (int64; string when the data's qids are ids,
``RankingData.qid_names``: the qids as written), ``label`` (int32), ``doc_id`` (string; only when
the data has doc ids) and the feature columns (float32, in order).
Every file holds whole queries. This module needs neither Dask nor LightGBM (``ltr partition``
uses it); pyarrow is imported when a file is written.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.data.ranking_data import RankingData, text_feature_names
from ltr.errors import DataError

log = logging.getLogger(__name__)

#: A run of digits in a file name (compared as a number by :func:`partition_key`).
_DIGITS = re.compile(r"(\d+)")

#: Called after each file is written: (partition index, number of partitions, path, first query,
#: end query, first row, end row).
OnFile = Callable[[int, int, Path, int, int, int, int], None]


def partition_key(name: str) -> tuple[tuple[tuple[str, int], ...], str]:
    """The sort key of a partition file's name: its runs of digits compared as numbers, so
    ``part-9.parquet`` < ``part-10.parquet`` and ``part-99999.parquet`` < ``part-100000.parquet``
    (the order :func:`write_query_partitions` writes in, at any count and digit width); names
    equal but for leading zeros are ordered as text.

    Examples
    --------
    >>> sorted(["part-100000.parquet", "part-10001.parquet", "part-9.parquet"], key=partition_key)
    ['part-9.parquet', 'part-10001.parquet', 'part-100000.parquet']
    """
    pieces = _DIGITS.split(name)  # text, digits, text, ..., text
    numbers = [int(d) for d in pieces[1::2]] + [-1]
    return tuple(zip(pieces[::2], numbers, strict=True)), name


def partition_files(directory: Path) -> list[Path]:
    """The ``*.parquet`` files of ``directory`` in partition order (by :func:`partition_key` of
    their names): the order every reader of a directory of partitions (``ltr train
    data=parquet_partitions``, ``ltr predict --data DIR``, with or without ``--dask``) takes its
    files and queries in; empty when it holds none."""
    return sorted(directory.glob("*.parquet"), key=lambda p: partition_key(p.name))


def query_partition_bounds(offsets: NDArray[np.int64], n_partitions: int) -> NDArray[np.int64]:
    """Query-index boundaries of ``n_partitions`` row-balanced partitions of whole queries.

    Parameters
    ----------
    offsets : int64 array, shape (n_queries + 1,)
        Query boundaries (see :class:`ltr.data.ranking_data.RankingData`), strictly increasing.
    n_partitions : int
        Wanted number of partitions (>= 1); fewer are made when there are fewer queries.

    Returns
    -------
    int64 array, shape (min(n_partitions, n_queries) + 1,)
        Strictly increasing, from 0 to ``n_queries``: partition ``i`` holds queries
        ``bounds[i]:bounds[i + 1]`` and rows ``offsets[bounds[i]]:offsets[bounds[i + 1]]``.
        Each cut is the query boundary nearest to an equal share of rows, so partitions differ
        in rows by at most about one query's length (unless a cut must move to keep every
        partition non-empty).

    Examples
    --------
    >>> query_partition_bounds(np.array([0, 5, 6, 7, 12]), 2).tolist()
    [0, 2, 4]
    """
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be >= 1, got {n_partitions}")
    offsets = np.asarray(offsets, dtype=np.int64)
    n_queries = len(offsets) - 1
    n_parts = min(n_partitions, n_queries)
    targets = offsets[-1] * np.arange(1, n_parts, dtype=np.float64) / n_parts
    right = np.searchsorted(offsets, targets, side="left").clip(1, n_queries)
    left = right - 1
    nearer_left = (targets - offsets[left]) <= (offsets[right] - targets)
    cuts = np.where(nearer_left, left, right)
    # Every partition keeps at least one query: shifting cut j by j turns "strictly increasing
    # within [1, n_queries - 1]" into "non-decreasing within [0, n_queries - n_parts]".
    j = np.arange(1, n_parts, dtype=np.int64)
    shifted = np.maximum.accumulate(np.clip(cuts - j, 0, n_queries - n_parts))
    cuts = shifted + j
    return np.concatenate([[0], cuts, [n_queries]]).astype(np.int64)


def feature_names(data: RankingData) -> list[str]:
    """The feature column names: ``data.feature_names``, or ``f1``, ``f2``, ... (LETOR's feature
    numbers, as the logged models name them) if it has none."""
    return list(data.feature_names) or text_feature_names(data.n_features)


def write_query_partitions(
    data: RankingData,
    directory: str | Path,
    *,
    n_partitions: int,
    qid_column: str = "qid",
    label_column: str = "label",
    doc_id_column: str = "doc_id",
    on_file: OnFile | None = None,
) -> list[Path]:
    """Write ``data`` as ``n_partitions`` Parquet files of whole queries, balanced by rows.

    ``qid_column`` holds every row's qid: int64 ``data.qids``, or, when ``data`` has
    ``qid_names`` (string qids numbered 0, 1, ... by the readers), the qids as written, a string
    column, which :func:`ltr.dask.parquet.read_query_partitions` numbers again over the files in
    query order: the same queries, the same rows, the same order. Feature columns are named by
    `feature_names`; ``doc_id_column`` holds the doc ids when ``data`` has them (else it is not
    written). Returns the paths written, in partition order; ``on_file`` is called after each
    (progress, fsync). The directory must not hold other ``part-*.parquet``.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> d = RankingData.from_group_sizes(np.zeros((3, 1)), np.array([1, 0, 2]), np.array([0, 1]), np.array([2, 1]))
    >>> d = RankingData(d.features, d.labels, d.qids, d.offsets, qid_names=np.array(["q-b", "q-a"], dtype=object))
    >>> [path] = write_query_partitions(d, tempfile.mkdtemp(), n_partitions=1)
    >>> pq.read_table(path).column("qid").to_pylist()
    ['q-b', 'q-b', 'q-a']
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.glob("part-*.parquet")):
        raise DataError(f"{directory} already holds part-*.parquet files; use an empty directory")
    names = feature_names(data)
    if {qid_column, label_column} & set(names):
        raise DataError(f"a feature is named like the qid or label column: {qid_column!r}, {label_column!r}")
    if data.doc_ids is not None and doc_id_column in {qid_column, label_column, *names}:
        raise DataError(f"a column is named like the doc id column {doc_id_column!r}; rename the feature")
    bounds = query_partition_bounds(data.offsets, n_partitions)
    row_qids = np.repeat(data.written_qids(), data.group_sizes)
    qid_type = pa.int64() if data.qid_names is None else pa.string()
    paths = []
    for i, (q0, q1) in enumerate(itertools.pairwise(bounds)):
        r0, r1 = int(data.offsets[q0]), int(data.offsets[q1])
        columns: dict[str, Any] = {
            qid_column: pa.array(row_qids[r0:r1], type=qid_type),
            label_column: pa.array(data.labels[r0:r1], type=pa.int32()),
        }
        if data.doc_ids is not None:
            columns[doc_id_column] = pa.array(data.doc_ids[r0:r1], type=pa.string())
        block = data.features[r0:r1]
        for j, name in enumerate(names):
            columns[name] = pa.array(block[:, j], type=pa.float32())
        path = directory / f"part-{i:05d}.parquet"
        pq.write_table(pa.table(columns), path)
        paths.append(path)
        if on_file is not None:
            on_file(i, len(bounds) - 1, path, int(q0), int(q1), r0, r1)
    log.info("wrote %d queries / %d rows to %d files in %s", data.n_queries, data.n_rows, len(paths), directory)
    return paths
