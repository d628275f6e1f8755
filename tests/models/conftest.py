"""One Dask cluster per test module of this folder, for the tests that score on Dask workers.

A cluster's cost is its worker processes: each imports ltr, LightGBM, pandas and Arrow for its
first task (seconds of CPU per worker). The tests of a module that score on Dask workers several
times start them once: the fixture's cluster is the one ``ltr`` starts itself
(:func:`ltr.dask.train.dask_client`, ``processes=True``: every task and result crosses a process
boundary, as with ``--dask --workers 2``), reached as a running scheduler (``--scheduler
ADDRESS``, ``TrainerConfig(scheduler_address=...)``). It starts when the first of them asks for
it and closes when the module ends: an idle cluster costs CPU too (its event loops tick), so the
runs a module trains on Dask keep their own short-lived LocalCluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[str]:
    """The address of a LocalCluster of 2 worker processes x 1 thread, closed when the module ends."""
    from ltr.config.choices import TrainerKind
    from ltr.config.schema import TrainerConfig
    from ltr.dask.train import dask_client

    with dask_client(TrainerConfig(kind=TrainerKind.dask, n_workers=2, threads_per_worker=1)) as client:
        yield str(client.scheduler.address)
