"""Whole-query partitions: no query is ever split, every row lands in exactly one partition."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.dask.partitions import query_partition_bounds, scatter_ranking_data, sorted_workers
from tests.conftest import examples
from tests.dask.conftest import random_ranking_data


@settings(max_examples=examples(300), deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=60),
    n_partitions=st.integers(min_value=1, max_value=80),
)
def test_bounds_cut_only_between_queries(sizes: list[int], n_partitions: int) -> None:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    bounds = query_partition_bounds(offsets, n_partitions)
    n_queries = len(sizes)
    assert len(bounds) == min(n_partitions, n_queries) + 1
    assert bounds[0] == 0
    assert bounds[-1] == n_queries
    assert np.all(np.diff(bounds) >= 1)  # every partition holds at least one whole query
    # Row boundaries of the partitions are query boundaries: no query straddles two partitions.
    assert set(offsets[bounds].tolist()) <= set(offsets.tolist())


def test_bounds_balance_rows_to_the_nearest_query_boundary() -> None:
    # 4 queries of 5, 1, 1, 5 rows; halves at 6 rows: after query 2 exactly.
    assert query_partition_bounds(np.array([0, 5, 6, 7, 12]), 2).tolist() == [0, 2, 4]
    # 10 equal queries into 3: cuts at 3.33 and 6.67 queries -> 3 and 7.
    assert query_partition_bounds(np.arange(11) * 4, 3).tolist() == [0, 3, 7, 10]


def test_bounds_reject_zero_partitions() -> None:
    with pytest.raises(ValueError, match="n_partitions must be >= 1, got 0"):
        query_partition_bounds(np.array([0, 3]), 0)


def test_scattered_partitions_hold_whole_queries(client: Any) -> None:
    data = random_ranking_data(3, n_queries=50)
    split = scatter_ranking_data(client, data, n_partitions=4)
    assert split.n_partitions == 4
    assert (split.n_rows, split.n_queries, split.n_features) == (data.n_rows, data.n_queries, data.n_features)
    rows_per_part = np.array(split.labels.chunks[0])
    queries_per_part = np.array(split.group_sizes.chunks[0])
    group_sizes = split.group_sizes.compute()
    np.testing.assert_array_equal(group_sizes, data.group_sizes)
    # Each partition's rows are exactly the rows of its queries.
    query_ends = np.cumsum(queries_per_part)
    np.testing.assert_array_equal(np.cumsum(rows_per_part), data.offsets[query_ends])
    np.testing.assert_array_equal(split.features.compute(), data.features)
    np.testing.assert_array_equal(split.labels.compute(), data.labels)
    np.testing.assert_array_equal(split.qids.compute(), data.qids)


def test_sorted_workers_lists_every_worker_while_the_client_refreshes_its_cache(client: Any) -> None:
    # A client whose periodic refresh of its cached scheduler identity (which lists no workers)
    # runs every millisecond: the worker list must come from the scheduler, not that cache (read
    # from the cache, 135 of 500 calls found no worker here).
    import dask
    from distributed import Client

    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}), Client(client.cluster) as busy:
        seen = {tuple(sorted_workers(busy)) for _ in range(300)}
    assert seen == {tuple(sorted(client.nthreads()))}
    assert len(next(iter(seen))) == 2
