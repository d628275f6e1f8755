"""A team's MLflow server on PostgreSQL (``--serve-artifacts``): ``ltr predict``, ``promote``,
``compare``, ``rerun``, ``ui`` and the Python API against it as against a local store, and its
faults: the server restarted mid-run, the database down at start, a full artifact store.

One PostgreSQL and one server for the module (:mod:`tests.postgres`); the server's artifacts are
on a small tmpfs where one can be mounted (root), so the full store is a real full device; else
the server runs with a file size limit of one byte (every artifact write fails, ``EFBIG``).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr import api
from ltr.cli.main import main
from ltr.tracking.store import CHECK_TIMEOUT_S, DB_CONNECT_TIMEOUT_S
from tests.postgres import database_url, running_postgres
from tests.processes import free_port, start_mlflow_server, stop_process_group

pytestmark = pytest.mark.slow

SMALL = ["debug=default", "fit.num_boost_round=5", "fit.show_progress=false", "fit.num_threads=1"]


@dataclass
class Team:
    """The module's PostgreSQL (``db_port``) and MLflow server (``url``, restartable on its port)."""

    db_port: int
    root: Path
    artifacts: Path
    tmpfs: bool
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def store(self) -> str:
        """The server's database: what the runs really hold, read without the server."""
        return database_url(self.db_port, "mlflow")

    def start(self, **popen: Any) -> None:
        self.proc = start_mlflow_server(self.store, self.artifacts, self.root / "server.log", self.port, **popen)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)
            self.proc = None


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[bool]:
    """``folder`` as a tmpfs of ``size`` (True), unmounted after; False where mounting is not
    allowed (not root, no CAP_SYS_ADMIN): ``folder`` stays a plain folder."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    ).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    root = tmp_path_factory.mktemp("team")
    with running_postgres("mlflow") as db_port, small_tmpfs(root / "artifacts", "32m") as tmpfs:
        server = Team(db_port, root, root / "artifacts", tmpfs)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def runs(team: Team, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two finished runs on the server (lambdarank, then rank_xendcg), trained once for the module."""
    ids = []
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("host"))
        for model in ("lambdarank", "rank_xendcg"):
            assert main(["train", *SMALL, f"model={model}", f"tracking.uri={team.url}", "tracking.experiment=team"]) == 0
            client = MlflowClient(team.url)
            experiment = client.get_experiment_by_name("team")
            assert experiment is not None
            (latest,) = client.search_runs([experiment.experiment_id], max_results=1, order_by=["attributes.start_time DESC"])
            ids.append(latest.info.run_id)
    return ids[0], ids[1]


def ltr(cwd: Path, *args: str, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """``ltr ARGS`` in a subprocess (no tracking URI from the environment; ``extra_env`` added)."""
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}} | extra_env
    return subprocess.run([sys.executable, "-m", "ltr", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ltr: error:")]


def test_predict_compare_promote_rerun_and_ui_against_the_server(
    team: Team, runs: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = runs
    client = MlflowClient(team.url)

    # predict: the CLI and the API score the run's test split as the run measured it
    capsys.readouterr()
    per_query = tmp_path / "per_query.parquet"
    assert main(["predict", first, "--split", "test", "--per-query", str(per_query), "--tracking-uri", team.url]) == 0
    prediction = api.predict(first, split="test", tracking_uri=team.url)
    logged = client.get_run(first).data.metrics
    assert prediction.summary["ndcg_at_10"] == logged["test/ndcg_at_10"]
    assert prediction.n_queries == logged["test/n_queries"]
    logged_table = pd.read_parquet(client.download_artifacts(first, "per_query/test.parquet", str(tmp_path)))
    np.testing.assert_array_equal(pd.read_parquet(per_query)["ndcg_at_10"], logged_table["ndcg_at_10"])

    # compare: the CLI's JSON and the API agree, on the per-query tables read through the server
    capsys.readouterr()
    assert main(["compare", first, second, "--json", "--n-resamples", "200", "--tracking-uri", team.url]) == 0
    printed = json.loads(capsys.readouterr().out)
    comparison = api.compare(first, second, tracking_uri=team.url, n_resamples=200)
    assert printed["rows"] == json.loads(json.dumps(comparison.to_dict()["rows"]))
    (row,) = [r for r in comparison.rows if r.metric == "ndcg_at_10" and r.stratum == "all" and r.is_baseline]
    assert row.n == len(logged_table)
    assert row.mean == pytest.approx(logged_table["ndcg_at_10"].mean(), abs=1e-12)

    # promote: the registry on the server holds the run, and the model predicts through it
    capsys.readouterr()
    assert main(["promote", first, "--name", "team-ranker", "--n-resamples", "200", "--tracking-uri", team.url]) == 0
    version = client.get_model_version_by_alias("team-ranker", "champion")
    assert version.run_id == first
    by_alias = api.predict("models:/team-ranker@champion", split="test", tracking_uri=team.url)
    assert by_alias.summary == prediction.summary

    # rerun: the same run again, through the server, gives bit-identical metrics
    capsys.readouterr()
    assert main(["rerun", first[:8], "--experiment", "team", "--tracking-uri", team.url]) == 0
    assert "identical metrics, bit for bit" in capsys.readouterr().out
    (rerun,) = client.search_runs([client.get_run(first).info.experiment_id], f"tags.`ltr.rerun_of` = '{first}'")
    old, new = client.get_run(first).data.metrics, rerun.data.metrics
    assert {k: v for k, v in old.items() if not k.endswith("_seconds")} == {k: v for k, v in new.items() if not k.endswith("_seconds")}

    # ui: the server serves its own UI; ltr ui names its runs tables and starts nothing
    shown = ltr(tmp_path, "ui", "--uri", team.url)
    assert shown.returncode == 0, shown.stderr[-2000:]
    experiment = client.get_experiment_by_name("team")
    assert experiment is not None
    assert f"MLflow UI at {team.url} (the tracking server serves it)" in shown.stderr
    assert f"team: {team.url}/#/experiments/{experiment.experiment_id}" in shown.stderr


def test_a_server_restarted_mid_run_loses_no_metric(team: Team, tmp_path: Path) -> None:
    """The server is stopped and started again while a run trains: the run ends FINISHED, and
    every param, tag and metric it had logged before the restart is in the database after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "debug=default", "fit.num_boost_round=400", "fit.early_stopping_rounds=null",
         "fit.num_threads=1", "fit.show_progress=false", "tracking.log_model=false", "tracking.experiment=team-restart",
         f"tracking.uri={team.url}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    store = MlflowClient(team.store)  # the database itself: what the server wrote, not what it answers
    try:
        deadline = time.monotonic() + 300
        while True:
            experiment = store.get_experiment_by_name("team-restart")
            found = store.search_runs([experiment.experiment_id]) if experiment is not None else []
            if found and found[0].info.status == "RUNNING" and found[0].data.params:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the run did not start: {proc.communicate()[1][-2000:]}")
            time.sleep(0.2)
        (before,) = found
        assert proc.poll() is None, "the run was still going when its server stopped"
        team.stop()
        team.start()
        _, stderr = proc.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    after = store.get_run(before.info.run_id)
    assert after.info.status == "FINISHED"
    assert before.data.params.items() <= after.data.params.items()
    assert before.data.metrics.items() <= after.data.metrics.items()
    assert before.data.tags.keys() <= after.data.tags.keys()
    history = store.get_metric_history(before.info.run_id, "iter/valid/ndcg_at_10")
    rounds = int(after.data.metrics["best_iteration"])  # the curves end at the best round
    assert rounds > 1
    assert sorted(m.step for m in history) == list(range(1, rounds + 1)), "every round's metric"


def test_a_database_down_at_start_is_one_line_exit_1_within_the_bound(tmp_path: Path) -> None:
    """A PostgreSQL tracking store or Optuna study on a port nothing answers: one line, exit 1
    (a server down, not a bad setting), nothing trained, within ltr's connect bound."""
    down = database_url(free_port(), "mlflow")
    for args, says in (
        ([f"tracking.uri={down}"], "does not answer"),
        (["hparams_search=optuna", "hydra.sweeper.n_trials=1", f"hydra.sweeper.storage={down}"], "hydra.sweeper.storage="),
    ):
        started = time.monotonic()
        proc = ltr(tmp_path, "train", *SMALL, *args)
        took = time.monotonic() - started
        assert proc.returncode == 1, proc.stderr[-3000:]
        (line,) = error_lines(proc.stderr)
        assert says in line
        assert "127.0.0.1" in line
        assert "Traceback" not in proc.stderr
        assert took < 60 + CHECK_TIMEOUT_S + DB_CONNECT_TIMEOUT_S  # the process's own start-up, then the bound
        assert not (tmp_path / "mlflow.db").exists()


def _fill(folder: Path) -> Path:
    """Fill the device of ``folder`` to the last byte; the filler file."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:  # unbuffered: closing it writes nothing more
        for chunk in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * chunk)
    return filler


@contextlib.contextmanager
def full_artifact_store(team: Team) -> Iterator[None]:
    """The server's artifact store full: its tmpfs filled, or the server restarted with a file
    size limit of one byte (where no tmpfs could be mounted); as it was after."""
    if team.tmpfs:
        filler = _fill(team.artifacts)
        try:
            yield
        finally:
            filler.unlink()
        return

    def one_byte_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1, 1))

    team.stop()
    team.start(preexec_fn=one_byte_files)
    try:
        yield
    finally:
        team.stop()
        team.start()


def test_a_full_artifact_store_fails_the_run_in_one_line(team: Team, tmp_path: Path) -> None:
    with full_artifact_store(team):
        # one retry, not ltr's five (about 30 s of a server answering 500): the same path, sooner
        proc = ltr(tmp_path, "train", *SMALL, "tracking.experiment=team-full", f"tracking.uri={team.url}",
                   MLFLOW_HTTP_REQUEST_MAX_RETRIES="1")  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    store = MlflowClient(team.store)
    experiment = store.get_experiment_by_name("team-full")
    assert experiment is not None
    (run,) = store.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"
    assert lines[0].startswith(f"ltr: error: the MLflow server at {team.url} could not store the artifact ")
    assert lines[0].endswith(f"its artifact store may be full; see the server's log; run {run.info.run_id} is marked FAILED")
    assert run.data.tags["ltr.error"].startswith("ServerFault: the MLflow server at ")
