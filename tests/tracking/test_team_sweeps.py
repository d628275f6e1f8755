"""A team's server: one PostgreSQL (an MLflow store and an Optuna study) and one ``mlflow server
--serve-artifacts`` on it, searched by sweeps from several "hosts" at once and loaded by 8 jobs.

Each host is a working folder with its own environment (``HOME``, ``LTR_CACHE_DIR``, no shared
file): what the hosts share is what a team's hosts share, the two URLs. The server and the
database are started once for the module (:mod:`tests.postgres`). The sweeps started together
are real ``python -m ltr`` processes; a sweep that runs alone (whose process is not the point)
is forked from the tests' fork server (:func:`tests.processes.run_ltr`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pytest
from mlflow.tracking import MlflowClient

from tests.docs.examples import DOCS, blocks, commands
from tests.postgres import database_url, running_postgres
from tests.processes import run_ltr, running_mlflow_server

pytestmark = pytest.mark.slow

#: Tiny training: debug data, a few rounds, the valid split only, no model artifact (the sweep is
#: the point here).
SMALL = ["debug=default", "fit.num_boost_round=4", "fit.show_progress=false", "fit.num_threads=1",
         "eval.splits=[valid]", "tracking.log_model=false"]  # fmt: skip


@dataclass(frozen=True)
class Team:
    """The team's server: ``tracking_uri`` (the MLflow server), ``storage`` (the Optuna
    database's URL) and a folder for the hosts."""

    tracking_uri: str
    storage: str
    root: Path


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The server, and an empty database for the study: the two hosts' searches create Optuna's
    tables in it at the same moment (:func:`ltr.sweeper.search.open_study` makes that safe)."""
    root = tmp_path_factory.mktemp("team")
    with running_postgres("mlflow", "optuna") as port, running_mlflow_server(
        database_url(port, "mlflow"), root / "artifacts", root / "server.log"
    ) as (url, _):
        yield Team(url, database_url(port, "optuna"), root)


def host(team: Team, name: str) -> tuple[Path, dict[str, str]]:
    """A host's working folder and environment: its own home and cache, no store of its own."""
    folder = team.root / name
    (folder / "home").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    return folder, env | {"HOME": str(folder / "home"), "LTR_CACHE_DIR": str(folder / "cache")}


def start_ltr(team: Team, name: str, args: Sequence[str]) -> subprocess.Popen[str]:
    """``ltr ARGS`` on host ``name``, its output kept for the assertion messages."""
    folder, env = host(team, name)
    return subprocess.Popen(
        [sys.executable, "-m", "ltr", *args], cwd=folder, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def run_on_host(team: Team, name: str, args: Sequence[str]) -> str:
    """``ltr ARGS`` on host ``name``, run to its end alone (:func:`tests.processes.run_ltr`):
    its stderr, once its exit code is checked to be 0."""
    folder, env = host(team, name)
    proc = run_ltr(args, cwd=folder, env=env, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stderr


def finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    """Wait for ``proc``: its stderr, once its exit code is checked to be 0."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert proc.returncode == 0, (out + err)[-3000:]
    return err


def runs_of(client: MlflowClient, experiment: str) -> list[Any]:
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return list(client.search_runs([found.experiment_id], max_results=1000, order_by=["attributes.start_time ASC"]))


def documented_searches(team: Team) -> list[list[str]]:
    """The ``ltr train`` commands of the manual's searches from several hosts (Sweeps on a cluster), on
    this team's server: the manual's URLs replaced by the fixture's, the tiny training added."""
    page = DOCS / "guide" / "cluster-sweeps.md"
    (block,) = [b for b in blocks(page) if b.skip and "test_two_hosts_search_one_study" in b.skip]
    found = []
    for command in commands(block.code):
        command = command.replace("postgresql+psycopg://ltr@db/optuna", team.storage)
        command = command.replace("http://mlflow-host:5000", team.tracking_uri)
        argv = shlex.split(command)
        assert argv[:2] == ["ltr", "train"], command
        found.append([*argv[1:], "tracking.experiment=team-search", *SMALL])
    return found


def point(trial: optuna.trial.FrozenTrial) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(trial.params.items()))


def test_two_hosts_search_one_study_and_a_third_sweep_resumes_it(team: Team) -> None:
    """Two sweeps of 3 trials started at once from two hosts on one study: 6 trials with unique
    numbers and points, 6 trial runs each linked to its trial, both parents linked to the study,
    and the parent that ended last holds the study's best; a third sweep adds new points. The
    commands are the manual's (:func:`documented_searches`)."""
    search, resumed = documented_searches(team)
    assert "hydra.sweeper.n_trials=3" in search
    assert "hydra.sweeper.n_trials=2" in resumed
    for proc in [start_ltr(team, name, search) for name in ("host-a", "host-b")]:
        finish(proc)
    study = optuna.load_study(study_name="ltr_lambdarank", storage=team.storage)
    trials = study.get_trials(deepcopy=False)
    assert sorted(t.number for t in trials) == list(range(6))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert len({point(t) for t in trials}) == 6, "the hosts drew distinct points"

    client = MlflowClient(team.tracking_uri)
    runs = runs_of(client, "team-search")
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 2
    assert len(children) == 6
    assert all(r.info.status == "FINISHED" for r in runs)
    by_trial = {int(c.data.tags["ltr.optuna.trial"]): c for c in children}
    assert sorted(by_trial) == list(range(6)), "one run per trial"
    for trial in trials:
        run = by_trial[trial.number]
        assert trial.user_attrs["ltr.run_id"] == run.info.run_id
        assert trial.value == run.data.metrics["valid/ndcg_at_10"], "Optuna was told what the run logged"
    for parent in parents:
        assert parent.data.params["optuna.study_name"] == "ltr_lambdarank"
        assert parent.data.params["optuna.storage"] == team.storage
        assert sum(c.data.tags["mlflow.parentRunId"] == parent.info.run_id for c in children) == 3
    # the parent that ended last saw all 6 trials: it holds the study's best, the best of all runs
    best = max(children, key=lambda c: c.data.metrics["valid/ndcg_at_10"])
    assert study.best_trial.user_attrs["ltr.run_id"] == best.info.run_id
    last = max(parents, key=lambda p: p.info.end_time)
    assert last.data.metrics["sweep/optuna/n_trials"] == 6
    assert last.data.tags["ltr.sweep.best_run_id"] == best.info.run_id
    assert last.data.metrics["sweep/optuna/best_value"] == study.best_value == best.data.metrics["valid/ndcg_at_10"]
    for parent in parents:  # each parent holds the best of the trials it saw: never above the study's
        assert parent.data.metrics["sweep/optuna/best_value"] <= study.best_value
        held = client.get_run(parent.data.tags["ltr.sweep.best_run_id"])
        assert held.data.metrics["valid/ndcg_at_10"] == parent.data.metrics["sweep/optuna/best_value"]

    # a third sweep, from a third host, resumes the study: new trials, new points
    run_on_host(team, "host-c", resumed)
    study = optuna.load_study(study_name="ltr_lambdarank", storage=team.storage)
    trials = study.get_trials(deepcopy=False)
    assert sorted(t.number for t in trials) == list(range(8))
    assert len({point(t) for t in trials}) == 8, "the resumed sweep drew new points"
    runs = runs_of(client, "team-search")
    third = [r for r in runs if r.data.tags.get("ltr.role") == "sweep" and r.info.run_id not in {p.info.run_id for p in parents}]
    assert len(third) == 1
    assert third[0].data.metrics["sweep/optuna/n_trials"] == 8
    assert third[0].data.metrics["sweep/optuna/best_value"] == study.best_value


def test_eight_concurrent_jobs_log_every_round_to_one_server(team: Team) -> None:
    """A grid of 8 jobs in 8 joblib processes, every job logging every round to the server: all
    FINISHED, each with one value of each round's metric up to its best round (where every curve
    ends), that last value the run's own, and the parent's 8."""
    rounds = 4
    run_on_host(team, "host-load", [
        "train", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=8", "seed=1,2,3,4,5,6,7,8",
        "debug=default", f"fit.num_boost_round={rounds}", "fit.early_stopping_rounds=null", "fit.show_progress=false",
        "fit.num_threads=1", "eval.splits=[valid]", "tracking.log_model=false", "tracking.experiment=team-load",
        f"tracking.uri={team.tracking_uri}",
    ])  # fmt: skip
    client = MlflowClient(team.tracking_uri)
    runs = runs_of(client, "team-load")
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    jobs = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(jobs) == 8
    assert sorted(int(j.data.params["seed"]) for j in jobs) == list(range(1, 9))
    assert {r.info.status for r in runs} == {"FINISHED"}
    for job in jobs:
        history = client.get_metric_history(job.info.run_id, "iter/valid/ndcg_at_10")
        best = int(job.data.metrics["best_iteration"])  # every curve ends at the run's best round
        assert 1 <= best <= rounds
        assert sorted(m.step for m in history) == list(range(1, best + 1)), job.info.run_name
        by_step = {m.step: m.value for m in history}
        assert by_step[best] == job.data.metrics["valid/ndcg_at_10"], "the curve ends on the run's value"
