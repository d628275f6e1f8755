"""A small in-process Dask cluster for the unit tests (the end-to-end test starts real processes)."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ltr.data.ranking_data import RankingData

if importlib.util.find_spec("distributed") is None:  # found without importing it (-m unit loads this file)
    pytest.skip("Dask's distributed is not installed (the dask extra)", allow_module_level=True)


@contextlib.contextmanager
def _dask_logs_to_root() -> Iterator[None]:
    """Dask's loggers hand their records to the root logger (pytest's capture) for the block,
    instead of the stream handlers Dask set up at import: those hold whatever ``sys.stderr`` was
    then (a test's capture stream, closed since), and a record of a busy event loop ("Event loop
    was unresponsive") written there fails as "--- Logging error ---" in an unrelated test."""
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict) if name.split(".")[0] in {"distributed", "dask", "tornado"}]
    saved = [(lg, lg.handlers[:], lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers = [h for h in lg.handlers if not isinstance(h, logging.StreamHandler)]
        lg.propagate = True
    try:
        yield
    finally:
        for lg, handlers, propagate in saved:
            lg.handlers, lg.propagate = handlers, propagate


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two workers of one thread in this process: fast to start, same scheduling as processes.
    One per test module, closed when the module ends, so it never outlives it (nor do its
    threads and log records)."""
    import distributed  # noqa: F401  (sets up Dask's loggers, which the block below redirects)
    from distributed import Client, LocalCluster

    from ltr.dask.train import SCHEDULER_KWARGS

    with (
        _dask_logs_to_root(),
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
            scheduler_kwargs=SCHEDULER_KWARGS,  # the product's: no dashboard, no port 8787
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module", autouse=True)
def _nothing_outlives_the_module() -> Iterator[None]:
    """After each module of this folder: no Dask cluster or client it started is still open."""
    yield
    from distributed import Client
    from distributed.deploy.spec import SpecCluster

    open_clusters = [c for c in list(SpecCluster._instances) if c.status.name not in {"closed", "closing"}]
    open_clients = [c for c in list(Client._instances) if c.status not in {"closed", "closing"}]
    assert not open_clusters, f"Dask clusters outlive their module: {open_clusters}"
    assert not open_clients, f"Dask clients outlive their module: {open_clients}"


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
