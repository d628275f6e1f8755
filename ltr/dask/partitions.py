"""Whole-query partitions of a split as Dask arrays that live on the workers.

A partition is a contiguous range of queries, so its rows are a contiguous range of rows and no
query is ever split across partitions (LightGBM's lambdarank gradients need every row of a query
on the same machine). Chunk ``i`` of ``features`` and ``labels`` holds the rows of partition ``i``;
chunk ``i`` of ``group_sizes`` and ``qids`` holds its queries, which is the layout
:func:`ltr.dask.network.train_data_parallel` trains on (and ``lightgbm.dask``'s ``fit(X, y, group=...)``).

Partition ``i`` is pinned to worker ``i % n_workers`` (workers sorted by address), where training
rank ``i % n_machines`` runs (:mod:`ltr.dask.network`), so no row moves to train. Which worker
holds which rows decides only where they are read: the model is a function of the partitions
and their order.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
from dask.delayed import delayed
from numpy.typing import NDArray

from ltr.data.query_parts import query_partition_bounds
from ltr.data.ranking_data import RankingData

# One partition on a worker: (features, labels, group_sizes, qids, doc_ids or None).
PartTuple = tuple[
    NDArray[np.float32], NDArray[np.int32], NDArray[np.int64], NDArray[np.int64], NDArray[np.object_] | None
]


@dataclass(frozen=True, slots=True)
class PartitionedSplit:
    """One split as Dask arrays with one chunk per whole-query partition.

    ``features`` float32 (n_rows, n_features), ``labels`` int32 (n_rows,), ``group_sizes`` int64
    (n_queries,), ``qids`` int64 (n_queries,); chunk ``i`` of each belongs to partition ``i``.
    ``doc_ids`` (object, (n_rows,), chunked like ``labels``) when the partitions have doc ids.
    ``qid_names`` (object, on the client, not chunked) when the qids are ids (strings) numbered
    0, 1, ... over the split's files: ``qid_names[n]`` is the qid as written of number ``n``.
    """

    features: da.Array
    labels: da.Array
    group_sizes: da.Array
    qids: da.Array
    feature_names: tuple[str, ...] = ()
    doc_ids: da.Array | None = None
    qid_names: NDArray[np.object_] | None = None

    def __post_init__(self) -> None:
        rows, queries = self.labels.chunks[0], self.group_sizes.chunks[0]
        if self.features.chunks[0] != rows or len(self.features.chunks[1]) != 1:
            raise ValueError("features must be chunked by rows like labels, one chunk of columns")
        if self.qids.chunks[0] != queries or len(rows) != len(queries):
            raise ValueError("group_sizes and qids need one chunk per row partition")

    @property
    def n_partitions(self) -> int:
        return len(self.labels.chunks[0])

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.group_sizes.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    def doc_id_blocks(self) -> list[Any]:
        """Per partition the delayed block of doc ids, or None when the split has none."""
        if self.doc_ids is None:
            return [None] * self.n_partitions
        blocks: list[Any] = self.doc_ids.to_delayed().ravel().tolist()  # type: ignore[no-untyped-call]
        return blocks

    def partitions(self) -> list[tuple[Any, Any, Any, Any]]:
        """Per partition the delayed blocks ``(features, labels, group_sizes, qids)``."""
        return list(
            zip(
                self.features.to_delayed().ravel().tolist(),  # type: ignore[no-untyped-call]
                self.labels.to_delayed().ravel().tolist(),  # type: ignore[no-untyped-call]
                self.group_sizes.to_delayed().ravel().tolist(),  # type: ignore[no-untyped-call]
                self.qids.to_delayed().ravel().tolist(),  # type: ignore[no-untyped-call]
                strict=True,
            )
        )


def from_part_futures(
    futures: Sequence[Any],
    *,
    n_rows: Sequence[int],
    n_queries: Sequence[int],
    n_features: int,
    feature_names: tuple[str, ...] = (),
    has_doc_ids: bool = False,
    qid_names: NDArray[np.object_] | None = None,
) -> PartitionedSplit:
    """A :class:`PartitionedSplit` from futures of :data:`PartTuple`, one per partition.

    ``n_rows[i]`` and ``n_queries[i]`` must be the sizes of partition ``i`` (the arrays' chunk
    sizes); ``has_doc_ids``: every part's doc ids are an array (else None); ``qid_names``: the
    qid as written of every number 0, 1, ... when the qids are ids. Nothing is computed here.
    """
    getitem = delayed(operator.getitem, pure=True)

    def column(i: int, shape: tuple[int, ...], dtype: type[np.generic]) -> da.Array:
        blocks = [
            da.from_delayed(getitem(fut, i), shape=(n, *shape), dtype=dtype)  # type: ignore[no-untyped-call]
            for fut, n in zip(futures, n_rows if i in (0, 1, 4) else n_queries, strict=True)
        ]
        stacked: da.Array = da.concatenate(blocks, axis=0)  # type: ignore[no-untyped-call]
        return stacked

    return PartitionedSplit(
        features=column(0, (n_features,), np.float32),
        labels=column(1, (), np.int32),
        group_sizes=column(2, (), np.int64),
        qids=column(3, (), np.int64),
        feature_names=feature_names,
        doc_ids=column(4, (), np.object_) if has_doc_ids else None,
        qid_names=qid_names,
    )


def sorted_workers(client: Any) -> list[str]:
    """Worker addresses of the cluster, sorted (the order partitions are pinned in).

    Asks the scheduler each call (``Client.nthreads``): ``Client.scheduler_info`` returns the
    client's cached identity, which its periodic refresh (every
    ``distributed.client.scheduler-info-interval``) may overwrite with one listing no workers
    between the fetch and the read.
    """
    workers = sorted(client.nthreads())
    if not workers:
        raise RuntimeError("the Dask cluster has no workers")
    return workers


def scatter_ranking_data(
    client: Any, data: RankingData, *, n_partitions: int, workers: Sequence[str] | None = None
) -> PartitionedSplit:
    """Send ``data`` to the workers as ``n_partitions`` whole-query partitions.

    Partition ``i`` goes to worker ``i % n_workers`` of ``workers`` (None: the sorted addresses,
    the order training ranks follow, so no row moves; another order moves rows, never the
    model: :mod:`ltr.dask.network`). The client holds
    ``data`` already; this is the path for splits loaded by :func:`ltr.data.load.load_splits`.
    For data that does not fit the client use :func:`ltr.dask.parquet.read_query_partitions`.
    """
    workers = list(workers) if workers is not None else sorted_workers(client)
    bounds = query_partition_bounds(data.offsets, n_partitions)
    futures, n_rows, n_queries = [], [], []
    for i, (q0, q1) in enumerate(itertools.pairwise(bounds)):
        r0, r1 = int(data.offsets[q0]), int(data.offsets[q1])
        part: PartTuple = (
            np.ascontiguousarray(data.features[r0:r1]),
            np.ascontiguousarray(data.labels[r0:r1]),
            np.diff(data.offsets[q0 : q1 + 1]),
            np.ascontiguousarray(data.qids[q0:q1]),
            None,  # evaluation of in-memory splits is local: the workers need no doc ids
        )
        futures.append(client.scatter(part, workers=[workers[i % len(workers)]], hash=False))
        n_rows.append(r1 - r0)
        n_queries.append(int(q1 - q0))
    return from_part_futures(
        futures, n_rows=n_rows, n_queries=n_queries, n_features=data.n_features,
        feature_names=data.feature_names,
    )
