"""Query-level hold-out and k-fold: seeded, and a query never lands in two splits."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.data.ranking_data import RankingData
from ltr.data.splits import holdout_queries, kfold_query_folds, kfold_split
from ltr.errors import DataError


def _data(n_queries: int = 23) -> RankingData:
    sizes = np.arange(n_queries) % 4 + 1
    n = int(sizes.sum())
    return RankingData.from_group_sizes(
        np.arange(n, dtype=np.float32)[:, None], np.zeros(n, np.int64), np.arange(1000, 1000 + n_queries), sizes
    )


def test_kfold_tests_every_query_exactly_once() -> None:
    data = _data()
    tested = []
    for fold in range(1, 6):
        s = kfold_split(data, n_folds=5, fold=fold, valid_fraction=0.25, seed=7)
        ids = [set(s.train.qids), set(s.valid.qids), set(s.test.qids)]
        assert not (ids[0] & ids[1])
        assert not (ids[0] & ids[2])
        assert not (ids[1] & ids[2])
        assert set().union(*ids) == set(data.qids)
        assert sum(d.n_rows for _, d in s.items()) == data.n_rows
        tested.extend(s.test.qids.tolist())
    assert sorted(tested) == data.qids.tolist()


def test_kfold_is_seeded() -> None:
    a = kfold_query_folds(23, n_folds=4, seed=1)
    b = kfold_query_folds(23, n_folds=4, seed=1)
    c = kfold_query_folds(23, n_folds=4, seed=2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    assert sorted(len(f) for f in a) == [5, 6, 6, 6]


def test_holdout_keeps_whole_queries() -> None:
    data = _data()
    rest, held = holdout_queries(data, fraction=0.3, seed=0)
    assert held.n_queries == 7
    assert rest.n_queries == 16
    assert not set(rest.qids) & set(held.qids)
    # rows travel with their query
    for part in (rest, held):
        np.testing.assert_array_equal(part.row_qids(), data.row_qids()[part.features[:, 0].astype(int)])


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"n_folds": 1, "fold": 1}, r"k-fold needs split.n_folds >= 2"),
     ({"n_folds": 5, "fold": 6}, r"split.fold=6 must lie in 1..5"),
     ({"n_folds": 30, "fold": 1}, r"23 queries are too few for 30 folds")],
)
def test_kfold_errors(kwargs: dict[str, int], pattern: str) -> None:
    with pytest.raises(DataError, match=pattern):
        kfold_split(_data(), valid_fraction=0.2, seed=0, **kwargs)
