"""`row_queries`: the query of every row from query offsets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ltr.metrics.offsets import row_queries


def test_row_queries_by_hand() -> None:
    got = row_queries(np.array([0, 2, 2, 5]))
    assert got.dtype == np.int64
    assert got.tolist() == [0, 0, 2, 2, 2]  # query 1 is empty
    assert row_queries(np.array([0])).tolist() == []


@given(st.lists(st.integers(0, 6), max_size=30))
def test_row_queries_are_each_rows_query(sizes: list[int]) -> None:
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    got = row_queries(offsets)
    expected = [q for q, n in enumerate(sizes) for _ in range(n)]
    assert got.tolist() == expected
    assert np.all(np.searchsorted(offsets, np.arange(offsets[-1]), side="right") - 1 == got)
