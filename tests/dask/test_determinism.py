"""The same config and seed give the same Dask model and metrics, bit for bit (``ltr.dask.network``).

``lightgbm.dask`` ranked its machines in the order of a ``set`` of task keys, so two fits of one
config gave different models about half the time (two ranks: two orders). These tests fit twice
with what changes between runs changed on purpose (a new cluster, new worker addresses, the
partitions on other workers, the keys) and compare everything. The two real ``ltr train
data=parquet_partitions trainer=dask`` runs (2 worker processes each) also show that the workers
read, train, predict and tabulate the whole split's table: one pair of runs for both facts
(that test was in ``test_partitioned_pipeline.py``, with a third run of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.config.groups.data import SyntheticDataConfig
from ltr.config.schema import FitConfig, ModelConfig
from ltr.dask.network import plan_machines, without_network
from ltr.dask.parquet import write_query_partitions
from ltr.dask.partitions import scatter_ranking_data, sorted_workers
from ltr.dask.train import SCHEDULER_KWARGS, fit_partitioned
from ltr.data.ranking_data import RankingData
from ltr.data.splits import split_queries
from ltr.data.synthetic import generate_synthetic
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.experiment.checks import check_config
from ltr.metrics import Strata, per_query_table
from ltr.metrics.reports.gap import lightgbm_gap
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


@dataclass(frozen=True)
class PartitionedRuns:
    """Two ``ltr train data=parquet_partitions trainer=dask`` runs of one config (2 worker
    processes each, a LocalCluster of their own), in one sqlite store."""

    root: Path  # the split directories, partitions without doc ids (the report's case)
    uri: str
    cfg: Any  # the first run's composed config
    run_ids: tuple[str, str]
    downloads: Path  # where tests download artifacts


@pytest.fixture(scope="module")
def partitioned_runs(tmp_path_factory: pytest.TempPathFactory) -> PartitionedRuns:
    """The runs every slow test here reads (none changes them): two real runs are the costly
    part, and what the tests assert differs (the same metrics; the whole split's table)."""
    tmp = tmp_path_factory.mktemp("partitioned_runs")
    data = generate_synthetic(SyntheticDataConfig(n_queries=150), seed=3)
    for name, split in split_queries(data, valid_fraction=0.2, test_fraction=0.2, seed=3).items():
        write_query_partitions(split, tmp / "data" / name, n_partitions=4)
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    configs, ids = [], []
    for name in ("first", "second"):
        cfg = compose_train([
            "data=parquet_partitions", f"data.root={tmp / 'data'}", "trainer=dask",
            "fit.num_boost_round=15", "fit.early_stopping_rounds=null", "fit.show_progress=false",
            "model.num_leaves=7", f"tracking.uri={uri}", f"tracking.run_name={name}",
        ])
        outcome = pipeline.run(cfg)
        assert outcome.run_id is not None
        configs.append(cfg)
        ids.append(outcome.run_id)
    return PartitionedRuns(tmp / "data", uri, configs[0], (ids[0], ids[1]), tmp / "downloads")


@pytest.mark.slow
def test_two_partitioned_runs_log_the_same_metrics_and_model(partitioned_runs: PartitionedRuns) -> None:
    """``ltr train data=parquet_partitions trainer=dask`` twice: 2 worker processes, partitions
    without doc ids (the report's case), every logged metric and the model text equal."""
    uri, runs = partitioned_runs.uri, partitioned_runs.run_ids
    client = MlflowClient(uri)
    first, second = ({k: v for k, v in client.get_run(r).data.metrics.items() if not k.endswith("_seconds")} for r in runs)
    assert len(first) > 100  # every metric, curves included; not the timings (train_seconds)
    assert first == second
    for key in ("iter/valid/ndcg_at_10", "iter/test/lightgbm/ndcg_at_10"):
        histories = [[(m.step, m.value) for m in client.get_metric_history(r, key)] for r in runs]
        assert histories[0] == histories[1]
    texts = [
        Path(client.download_artifacts(r, "model_text/model.txt", str(partitioned_runs.downloads / r))).read_text()
        for r in runs
    ]
    assert texts[0] == texts[1]


def _read_split(directory: Path) -> RankingData:
    """The whole split, in file order, in this process (what the workers never do together)."""
    frame = pd.concat([pd.read_parquet(p) for p in sorted(directory.glob("*.parquet"))], ignore_index=True)
    qid = frame["qid"].to_numpy()
    starts = np.flatnonzero(np.concatenate([[True], qid[1:] != qid[:-1]]))
    sizes = np.diff(np.concatenate([starts, [len(qid)]]))
    features = frame.drop(columns=["qid", "label"]).to_numpy(dtype=np.float32)
    return RankingData.from_group_sizes(features, frame["label"].to_numpy(), qid[starts], sizes)


@pytest.mark.slow
def test_partitioned_run_logs_the_whole_split_table(partitioned_runs: PartitionedRuns) -> None:
    """The workers read, train, predict and tabulate: the logged per-query table of the test
    split is the one computed here from the whole split and the logged model."""
    uri, cfg, root = partitioned_runs.uri, partitioned_runs.cfg, partitioned_runs.root
    downloads = partitioned_runs.downloads / "table"
    client = MlflowClient(uri)
    run = client.get_run(partitioned_runs.run_ids[0])
    assert run.info.status == "FINISHED"
    assert run.data.tags["ltr.data.fingerprint"]
    table = pd.read_parquet(client.download_artifacts(run.info.run_id, "per_query/test.parquet", str(downloads)))
    booster = lgb.Booster(model_file=client.download_artifacts(run.info.run_id, "model_text/model.txt", str(downloads)))

    test = _read_split(root / "test")
    scores = np.asarray(booster.predict(test.features), dtype=np.float64)
    conventions = check_config(cfg).conventions
    strata = Strata(tuple(int(e) for e in cfg.eval.strata))
    expected = per_query_table(
        test.labels, scores, test.offsets, test.qids,
        ks=[int(k) for k in cfg.eval.k], conventions=conventions, strata=strata,
    )
    pd.testing.assert_frame_equal(table, expected)

    metrics = run.data.metrics
    assert metrics["test/n_queries"] == test.n_queries
    assert metrics["n_rounds"] == 15
    gap = lightgbm_gap(test.labels, scores, test.offsets, test.qids, max(cfg.eval.k), conventions)
    assert metrics["test/lightgbm_gap/ndcg_at_10/ties"] == gap.from_ties
    assert metrics["test/lightgbm_gap/ndcg_at_10/zero_idcg"] == gap.from_zero_idcg
    top = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"model_text", "report", "idcg", "config", "per_query", "data"} <= top
