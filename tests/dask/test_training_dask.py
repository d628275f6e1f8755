"""``trainer=dask`` end to end: a real 2-process LocalCluster, a real sqlite MLflow store."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from mlflow.tracking import MlflowClient

from ltr.config.schema import FitConfig
from ltr.dask.train import warn_no_early_stopping
from ltr.experiment import run as pipeline
from tests.conftest import compose_train

if TYPE_CHECKING:
    import psutil

# Test NDCG@10 of the Dask model may differ from the local model's by at most this much. Not
# identical because (1) data-parallel LightGBM builds feature bins from each worker's share of
# the rows and merges per-worker histograms, so split points (and float sums) differ slightly;
# (2) the local trainer stops early (patience 10 here) while DaskLGBMRanker trains all rounds
# and we pick the best valid round afterwards, so the two models can use different numbers of
# trees. On 80 test queries one query moves the mean by up to 1/80 = 0.0125; 0.03 allows a
# couple of queries ranked differently, and still catches a broken model (NDCG@10 of a random
# ranking on this data is ~0.3 lower).
TOLERANCE = 0.03

COMMON = [
    "data.n_queries=400",
    "fit.num_boost_round=40",
    "fit.early_stopping_rounds=10",
    "fit.show_progress=false",
    "model.num_leaves=7",
]


@dataclass(frozen=True)
class Runs:
    """The module's two runs of :data:`COMMON` in one store: ``local`` and ``dask`` (a LocalCluster
    of two worker processes, started by the run), what ``ltr.dask.train`` warned while the Dask
    run trained, and the processes the Dask run started that outlived it."""

    uri: str
    folder: Path
    local: pipeline.RunOutcome
    dask: pipeline.RunOutcome
    warnings: list[str]
    left: list[str]


class _Records(logging.Handler):
    """Keeps the records it is given."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _started_since(before: set[int]) -> list[psutil.Process]:
    """The processes below this one that are not in ``before`` and were started by this one or by
    one of them: not the children a process of ``before`` starts meanwhile (the autovacuum
    workers of a PostgreSQL server another module of this process runs for the session)."""
    import psutil

    me = os.getpid()
    new = {p.pid: p for p in psutil.Process().children(recursive=True) if p.pid not in before}
    parents: dict[int, int] = {}
    for pid, process in new.items():
        with contextlib.suppress(psutil.Error):  # gone since: left nothing
            parents[pid] = process.ppid()

    def started_here(pid: int) -> bool:
        up = parents[pid]
        while up in parents:  # climb through the new ones
            up = parents[up]
        return up == me

    return [new[pid] for pid in parents if started_here(pid)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from multiprocessing import resource_tracker

    import psutil

    folder = tmp_path_factory.mktemp("dask")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    local = pipeline.run(compose_train([*COMMON, f"tracking.uri={uri}", "tracking.run_name=local"]))
    handler = _Records(logging.WARNING)
    logger = logging.getLogger("ltr.dask.train")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        dask = pipeline.run(
            compose_train([*COMMON, f"tracking.uri={uri}", "tracking.run_name=dask", "trainer=dask", "trainer.n_workers=2"])
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    tracker = resource_tracker._resource_tracker
    if tracker._pid is not None and tracker._pid not in before:  # multiprocessing's, started for the cluster
        tracker._stop()
    left = _started_since(before)
    running = [" ".join(p.cmdline()) for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return Runs(uri, folder, local, dask, [r.getMessage() for r in handler.records], running)


@pytest.mark.slow
def test_dask_run_logs_everything_and_matches_local_ndcg(runs: Runs, tmp_path: Path) -> None:
    uri, local, dask = runs.uri, runs.local, runs.dask
    warnings = [message for message in runs.warnings if "no early stopping" in message]
    assert len(warnings) == 1
    assert "fit.early_stopping_rounds=10 is ignored and all fit.num_boost_round=40 rounds are trained" in warnings[0]

    assert dask.summaries["test"]["ndcg_at_10"] == pytest.approx(local.summaries["test"]["ndcg_at_10"], abs=TOLERANCE)

    client = MlflowClient(uri)
    by_name = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("ltr").experiment_id])}
    local_run, dask_run = by_name["local"], by_name["dask"]
    assert dask_run.info.status == "FINISHED"
    assert dask_run.data.params["trainer.kind"] == "dask"
    # Every metric key of the local run is logged by the Dask run too.
    assert set(local_run.data.metrics) <= set(dask_run.data.metrics)
    metrics = dask_run.data.metrics
    assert metrics["n_rounds"] == 40
    assert 1 <= metrics["best_iteration"] <= 40
    assert metrics["test/n_queries"] == 80
    # LightGBM's value at the best round is computed on the whole split, so it equals ours under
    # LightGBM's conventions plus the logged decomposition of the gap.
    gap = metrics["test/lightgbm_gap/ndcg_at_10/zero_idcg"] + metrics["test/lightgbm_gap/ndcg_at_10/ties"]
    assert metrics["test/lightgbm/ndcg_at_10"] == pytest.approx(metrics["test/ndcg_at_10"] + gap, abs=1e-9)
    # both curves end at the best round; ours there is the run's value (summed per partition)
    best = int(metrics["best_iteration"])
    history = client.get_metric_history(dask_run.info.run_id, "iter/valid/ndcg_at_10")
    assert [m.step for m in history] == list(range(1, best + 1))
    assert history[-1].value == metrics["valid/ndcg_at_10"]  # bit for bit
    assert max(m.value for m in history) == history[-1].value  # the best round was picked on ours
    lightgbm = client.get_metric_history(dask_run.info.run_id, "iter/valid/lightgbm/ndcg_at_10")
    assert [m.step for m in lightgbm] == list(range(1, best + 1))

    artifacts = {a.path for a in client.list_artifacts(dask_run.info.run_id, "per_query")}
    # Parquet always; small tables also as JSON tables the MLflow UI displays
    assert artifacts == {"per_query/valid.parquet", "per_query/test.parquet", "per_query/valid.json", "per_query/test.json"}
    table_path = client.download_artifacts(dask_run.info.run_id, "per_query/test.parquet", str(tmp_path))
    import pandas as pd

    table = pd.read_parquet(table_path)
    assert len(table) == 80
    assert table["ndcg_at_10"].mean() == pytest.approx(metrics["test/ndcg_at_10"], abs=1e-12)
    top = {a.path for a in client.list_artifacts(dask_run.info.run_id)}
    assert {"model_text", "report", "idcg", "config", "feature_importance.json"} <= top


@pytest.mark.slow
def test_dask_curves_end_on_their_headline_bit_for_bit(runs: Runs) -> None:
    """The last point of ``iter/{split}/ndcg_at_k`` is ``{split}/ndcg_at_k`` (``==``) for valid
    and test, k = 5 and 10 (the default ``eval.k``): both are one
    :func:`ltr.metrics.summary.mean_of_known` of the split's per-query values (summing
    per-partition sums instead left them 1 ulp apart). The run's LocalCluster (two worker
    processes) is closed by the run: no process it started outlives it."""
    assert not runs.left, runs.left

    client = MlflowClient(runs.uri)
    run = client.get_run(str(runs.dask.run_id))
    metrics = run.data.metrics
    best = int(metrics["best_iteration"])
    for split in ("valid", "test"):
        for k in (5, 10):
            history = client.get_metric_history(run.info.run_id, f"iter/{split}/ndcg_at_{k}")
            assert [m.step for m in history] == list(range(1, best + 1))
            assert history[-1].value == metrics[f"{split}/ndcg_at_{k}"], (split, k)


def test_early_stopping_request_logs_one_clear_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ltr.dask.train"):
        warn_no_early_stopping(FitConfig(num_boost_round=300, early_stopping_rounds=20))
        warn_no_early_stopping(FitConfig(num_boost_round=300, early_stopping_rounds=None))
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "trainer=dask has no early stopping" in message
    assert "fit.early_stopping_rounds=20 is ignored and all fit.num_boost_round=300 rounds are trained" in message


@pytest.mark.slow
def test_processes_left_are_the_ones_this_process_started_since() -> None:
    """:func:`_started_since` counts a process this one started, and its children, but not a
    child that a process already running starts meanwhile."""
    import subprocess
    import time

    import psutil

    def end(proc: subprocess.Popen[bytes]) -> None:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()

    older = subprocess.Popen(["sh", "-c", "sleep 0.5; sleep 30; true"])
    try:
        time.sleep(0.1)
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        ours = subprocess.Popen(["sh", "-c", "sleep 30 & wait; true"])
        try:
            time.sleep(1.0)  # `older`'s second child and `ours`'s child have started
            theirs = {p.pid for p in psutil.Process(older.pid).children()}
            assert theirs
            assert not theirs & before
            found = {p.pid for p in _started_since(before)}
            assert ours.pid in found
            assert len(found) == 2  # ours and its child
            assert not found & theirs
        finally:
            end(ours)
    finally:
        end(older)
