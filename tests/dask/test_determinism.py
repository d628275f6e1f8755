"""The same config and seed give the same Dask model and metrics, bit for bit (``ltr.dask.network``).

``lightgbm.dask`` ranked its machines in the order of a ``set`` of task keys, so two fits of one
config gave different models about half the time (two ranks: two orders). These tests fit twice
with what changes between runs changed on purpose (a new cluster, new worker addresses, the
partitions on other workers, the keys) and compare everything.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from mlflow.tracking import MlflowClient

from ltr.config.data import SyntheticDataConfig
from ltr.config.schema import FitConfig, ModelConfig
from ltr.dask.network import plan_machines, without_network
from ltr.dask.parquet import write_query_partitions
from ltr.dask.partitions import scatter_ranking_data, sorted_workers
from ltr.dask.train import SCHEDULER_KWARGS, fit_partitioned
from ltr.data.splits import split_queries
from ltr.data.synthetic import generate_synthetic
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.training.local import TrainResult
from tests.conftest import compose_train
from tests.dask.conftest import random_ranking_data
from tests.processes import free_ports

FIT = FitConfig(num_boost_round=12, early_stopping_rounds=None, show_progress=False)


def _fit(client: Any, workers: list[str], *, n_partitions: int = 3, **params: Any) -> TrainResult:
    """``n_partitions`` on 2 workers (3: rank 0 holds two), placed on ``workers`` in that order."""
    data = random_ranking_data(5, n_queries=120)
    train = scatter_ranking_data(client, data, n_partitions=n_partitions, workers=workers)
    valid = scatter_ranking_data(client, random_ranking_data(6, n_queries=40), n_partitions=3, workers=workers)
    model = ModelConfig(num_leaves=7, params=params)
    return fit_partitioned(client, train, {"valid": valid}, model, FIT, eval_at=[5, 10], seed=1)


@pytest.fixture
def other_client() -> Iterator[Any]:
    """A second in-process cluster: other worker addresses, registered anew."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
            scheduler_kwargs=SCHEDULER_KWARGS,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def test_fit_is_a_function_of_the_partitions_not_of_the_cluster(client: Any, other_client: Any) -> None:
    first = _fit(client, sorted_workers(client))
    again = _fit(client, sorted_workers(client))  # new random keys: lightgbm.dask's rank order
    moved = _fit(other_client, sorted_workers(other_client)[::-1])  # new cluster, partitions swapped
    text = first.booster.model_to_string()
    assert "[num_machines: 2]" in text
    assert "[machines:" not in text  # this run's random ports
    assert "[local_listen_port:" not in text
    for other in (again, moved):
        assert other.booster.model_to_string() == text
        assert other.curves == first.curves
        assert other.evals_result == first.evals_result
        assert other.best_iteration == first.best_iteration


def test_given_machines_rank_as_listed_and_one_partition_trains_alone(client: Any) -> None:
    workers = sorted_workers(client)
    ports = free_ports(2)
    machines = ",".join(f"{urlparse(w).hostname}:{p}" for w, p in zip(workers, ports, strict=True))
    given = _fit(client, workers, machines=machines)
    text = given.booster.model_to_string()
    assert f"[machines: {machines}]" in text  # the config's, kept
    # the same ranks as with the ports ltr picks: the same trees
    assert without_network(text, ["machines", "local_listen_port"]) == _fit(client, workers).booster.model_to_string()
    alone = _fit(client, workers, n_partitions=1)  # one machine: no network
    assert "[num_machines: 1]" in alone.booster.model_to_string()
    assert alone.booster.model_to_string() == _fit(client, workers[::-1], n_partitions=1).booster.model_to_string()


def test_plan_ranks_follow_partitions_and_machines() -> None:
    workers = ["tcp://10.0.0.1:4001", "tcp://10.0.0.1:4002", "tcp://10.0.0.2:4001"]
    plan = plan_machines(workers, 7)
    assert [(m.rank, m.worker, m.port, m.partitions) for m in plan] == [
        (0, workers[0], 0, (0, 3, 6)), (1, workers[1], 0, (1, 4)), (2, workers[2], 0, (2, 5)),
    ]
    assert [m.worker for m in plan_machines(workers, 2)] == workers[:2]  # a machine per partition
    given = plan_machines(workers, 3, machines="10.0.0.2:12400,10.0.0.1:12400,10.0.0.1:12401")
    assert [(m.worker, m.host, m.port) for m in given] == [
        (workers[2], "10.0.0.2", 12400), (workers[0], "10.0.0.1", 12400), (workers[1], "10.0.0.1", 12401),
    ]
    with pytest.raises(LtrUserError, match="names 2 machines, but 3 train"):
        plan_machines(workers, 3, machines="10.0.0.1:1,10.0.0.2:1")
    with pytest.raises(LtrUserError, match=r"no free Dask worker on host '10\.0\.0\.2'"):
        plan_machines(workers, 3, machines="10.0.0.2:1,10.0.0.2:2,10.0.0.1:1")
    with pytest.raises(LtrUserError, match="local_listen_port=12400 needs one training worker per host"):
        plan_machines(workers, 3, port=12400)


@pytest.mark.slow
def test_two_partitioned_runs_log_the_same_metrics_and_model(tmp_path: Path) -> None:
    """``ltr train data=parquet_partitions trainer=dask`` twice: 2 worker processes, partitions
    without doc ids (the report's case), every logged metric and the model text equal."""
    data = generate_synthetic(SyntheticDataConfig(n_queries=150), seed=3)
    for name, split in split_queries(data, valid_fraction=0.2, test_fraction=0.2, seed=3).items():
        write_query_partitions(split, tmp_path / "data" / name, n_partitions=4)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    runs = []
    for name in ("first", "second"):
        outcome = pipeline.run(compose_train([
            "data=parquet_partitions", f"data.root={tmp_path / 'data'}", "trainer=dask",
            "fit.num_boost_round=15", "fit.early_stopping_rounds=null", "fit.show_progress=false",
            "model.num_leaves=7", f"tracking.uri={uri}", f"tracking.run_name={name}",
        ]))
        runs.append(outcome.run_id)
    client = MlflowClient(uri)
    first, second = ({k: v for k, v in client.get_run(r).data.metrics.items() if not k.endswith("_seconds")} for r in runs)
    assert len(first) > 100  # every metric, curves included; not the timings (train_seconds)
    assert first == second
    for key in ("iter/valid/ndcg_at_10", "iter/test/lightgbm/ndcg_at_10"):
        histories = [[(m.step, m.value) for m in client.get_metric_history(r, key)] for r in runs]
        assert histories[0] == histories[1]
    texts = [
        Path(client.download_artifacts(r, "model_text/model.txt", str(tmp_path / r))).read_text() for r in runs
    ]
    assert texts[0] == texts[1]
