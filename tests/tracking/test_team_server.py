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
import logging
import os
import re
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr import api
from ltr.cli.main import main
from ltr.errors import ServerFault
from ltr.tracking.base import RunStatus
from ltr.tracking.lifecycle import tracked_run
from ltr.tracking.liveness.heartbeat import Liveness
from ltr.tracking.mlflow_tracker import MlflowTracker
from ltr.tracking.store import CHECK_TIMEOUT_S, DB_CONNECT_TIMEOUT_S, check_tracking_uri
from tests.postgres import database_url, running_postgres
from tests.processes import free_port, run_ltr, start_mlflow_server, stop_process_group

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
    """``ltr ARGS`` in a process of its own, forked from the tests' fork server
    (:func:`tests.processes.run_ltr`: what these tests check is what the command says and returns,
    not its process); no tracking URI from the environment; ``extra_env`` added."""
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}} | extra_env
    return run_ltr(args, cwd=cwd, env=env, timeout=timeout)


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
    every param, tag and metric it had logged before the restart is in the database after. (The
    run's own process is not the point: it is forked from the tests' fork server, in a thread.)"""
    store = MlflowClient(team.store)  # the database itself: what the server wrote, not what it answers
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            ltr, tmp_path, "train", "debug=default", "fit.num_boost_round=400", "fit.early_stopping_rounds=null",
            "fit.num_threads=1", "fit.show_progress=false", "tracking.log_model=false", "tracking.experiment=team-restart",
            f"tracking.uri={team.url}", timeout=600,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while True:
            experiment = store.get_experiment_by_name("team-restart")
            found = store.search_runs([experiment.experiment_id]) if experiment is not None else []
            if found and found[0].info.status == "RUNNING" and found[0].data.params:
                break
            if running.done() or time.monotonic() > deadline:
                pytest.fail(f"the run did not start: {running.result().stderr[-2000:] if running.done() else 'timed out'}")
            time.sleep(0.2)
        (before,) = found
        assert not running.done(), "the run was still going when its server stopped"
        team.stop()
        team.start()
        proc = running.result()
    stderr = proc.stderr
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


def kill(team: Team) -> None:
    """The server killed outright (SIGKILL to its whole group): no goodbye to its clients."""
    assert team.proc is not None
    os.killpg(team.proc.pid, signal.SIGKILL)
    team.proc.wait()
    team.proc = None


@pytest.mark.parametrize("through", ["server", "database"])
def test_two_jobs_logging_one_dataset_into_a_new_experiment_at_once_both_succeed(
    team: Team, through: str
) -> None:
    """Two runs of a new experiment log the same dataset at the same moment: both looked for the
    dataset and found none before either wrote it (the test holds the dataset table locked until
    both are blocked writing it), so the second write meets the first's row (``dataset_pk``). It
    takes the dataset the first made: both calls return, each run holds the one dataset."""
    import psycopg

    uri = check_tracking_uri(team.url) if through == "server" else team.store
    experiment = f"team-race-{through}"
    trackers = [MlflowTracker(uri, experiment) for _ in range(2)]
    for i, tracker in enumerate(trackers):
        tracker.start_run(f"job-{i}", {})
    features, labels = np.arange(6.0).reshape(3, 2), np.array([0.0, 1.0, 2.0])
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def log(tracker: MlflowTracker) -> None:
        barrier.wait()
        try:
            tracker.log_dataset("train", "0123abcd", features, labels, context="train")
        except BaseException as exc:
            errors.append(exc)

    conninfo = f"host=127.0.0.1 port={team.db_port} user=ltr dbname=mlflow"
    with psycopg.connect(conninfo) as holder, psycopg.connect(conninfo, autocommit=True) as watch:
        holder.execute("LOCK TABLE datasets IN SHARE MODE")  # reads go on, writes wait
        threads = [threading.Thread(target=log, args=(tracker,)) for tracker in trackers]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while watch.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'INSERT INTO datasets%'"
        ).fetchone() != (2,):
            assert time.monotonic() < deadline, "the two writes of the dataset did not both wait"
            time.sleep(0.05)
        holder.commit()  # both go on: one writes the dataset first, the other meets its row
        for thread in threads:
            thread.join(timeout=120)
    assert errors == []
    store = MlflowClient(team.store)
    for tracker in trackers:
        tracker.end_run(RunStatus.FINISHED)
        inputs = store.get_run(tracker._require_run()).inputs
        assert inputs is not None
        (logged,) = inputs.dataset_inputs
        assert (logged.dataset.name, logged.dataset.digest) == ("train", "0123abcd")
        assert {tag.key: tag.value for tag in logged.tags} == {"mlflow.data.context": "train"}
    with psycopg.connect(conninfo) as con:
        assert con.execute(
            "SELECT count(*) FROM datasets WHERE experiment_id = %s", (int(trackers[0].experiment_id),)
        ).fetchone() == (1,)


def test_a_killed_server_back_8_s_later_is_waited_for_and_a_shorter_wait_ends_in_one_line(
    team: Team, caplog: pytest.LogCaptureFixture
) -> None:
    """The server is killed while two runs log, and is back 8 s later. The run that waits up to
    60 s (``tracking.server_wait_s``) waits, a line every few seconds, and its request is written
    once the server is back: it logs on and ends FINISHED. The run that waits 3 s ends its wait
    with one line naming the server, the request and the setting; ending that run is tried once,
    not waited for again."""
    uri = check_tracking_uri(team.url)
    patient = MlflowTracker(uri, "team-wait", liveness=Liveness(server_wait_s=60))
    brief = MlflowTracker(uri, "team-wait", liveness=Liveness(server_wait_s=3))
    patient_run = patient.start_run("waits", {})
    patient.log_metrics({"before": 1.0})
    seen: dict[str, Any] = {}

    def wait_for_the_server() -> None:
        patient.log_metrics({"during": 2.0})
        seen["back"] = time.monotonic()

    def brief_job() -> None:
        with tracked_run(brief, "gives up", {}) as run_id:
            seen["run_id"] = run_id
            kill(team)
            seen["killed"] = time.monotonic()
            waiting = threading.Thread(target=wait_for_the_server)
            waiting.start()
            seen["waiting"] = waiting
            threading.Timer(8, team.start).start()
            brief.log_metrics({"lost": 1.0})

    try:
        with caplog.at_level(logging.WARNING, logger="ltr.tracking.server_wait"), pytest.raises(ServerFault) as raised:
            brief_job()
        gave_up = time.monotonic() - seen["killed"]
        seen["waiting"].join(timeout=120)
    finally:
        deadline = time.monotonic() + 60
        while team.proc is None and time.monotonic() < deadline:  # the timer's start, under way
            time.sleep(0.2)
    store = MlflowClient(team.store)

    # the patient run: waited, written, FINISHED
    assert seen["back"] - seen["killed"] >= 8
    patient.end_run(RunStatus.FINISHED)
    run = store.get_run(patient_run)
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"before": 1.0, "during": 2.0}
    lines = [r.getMessage() for r in caplog.records if "waiting for the tracking server" in r.getMessage()]
    waited = [line for line in lines if " s of 60 s; " in line]
    assert re.fullmatch(rf"ltr: waiting for the tracking server {re.escape(team.url)} \(\d+ s of 60 s; connection refused\)", waited[0])
    assert 2 <= len(waited) <= (seen["back"] - seen["killed"]) / 5 + 1, waited  # a line every 5 s
    assert not [r for r in caplog.records if r.getMessage().startswith("Retrying (")], "no line per retry of MLflow's"

    # the brief run: one line when its 3 s ended
    assert len([line for line in lines if " s of 3 s; " in line]) == 1, lines
    line, run_id = str(raised.value), seen["run_id"]
    assert "\n" not in line
    assert line.startswith(f"the MLflow server at {team.url} did not answer for ")
    assert f" s (/api/2.0/mlflow/runs/log-batch: connection refused); tracking.server_wait_s=3 is how long a run waits for it; run {run_id} " in line
    assert 3 <= gave_up < 3 + 15, "the window, a last try of the request, one try to end the run"
    status = store.get_run(run_id).info.status
    if line.endswith("could not be marked FAILED (the server did not answer)"):
        assert status == "RUNNING"  # nobody could write its end: the next command that opens the store reaps it
    else:  # a slow machine: the server was back before the run's end was tried
        assert line.endswith("is marked FAILED")
        assert status == "FAILED"
