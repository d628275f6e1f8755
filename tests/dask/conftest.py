"""A small in-process Dask cluster for the unit tests (the end-to-end test starts real processes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ltr.data.ranking_data import RankingData

pytest.importorskip("distributed")


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    """Two workers of one thread in this process: fast to start, same scheduling as processes."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
        yield c


def random_ranking_data(seed: int, *, n_queries: int = 60, n_features: int = 5) -> RankingData:
    """Queries of 1-40 rows, labels 0-4 loosely following feature 0, scores with exact ties."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 41, n_queries)
    n = int(sizes.sum())
    features = rng.normal(size=(n, n_features)).astype(np.float32)
    features[:, -1] = np.round(features[:, -1])  # a coarse feature: many ties
    labels = np.clip(np.round(features[:, 0] + rng.normal(size=n)), 0, 4).astype(np.int32)
    qids = rng.permutation(10 * n_queries)[:n_queries] + 1
    return RankingData.from_group_sizes(
        features, labels, qids, sizes, feature_names=tuple(f"feat_{j}" for j in range(n_features))
    )
