"""ltr's Optuna sweeper end to end: the ltr command (in this process, and in a real subprocess
where the process is the point: Ctrl-C), real sqlite stores and studies, the real dashboard.

Small on purpose: debug-sized data, a few rounds, 1-4 trials; the persistent study is searched
once for the module and only read by its tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.storages.journal import JournalFileBackend

from ltr.cli.main import main
from ltr.tracking.mlflow_tracker import MlflowTracker
from tests.processes import free_port, stop_process_group, wait_for_http

pytestmark = pytest.mark.slow

SMALL = ["debug=default", "fit.num_boost_round=5", "fit.show_progress=false"]


def _ltr(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> pytest.CaptureResult[str]:
    """``ltr train ARGS`` in this process (in the test's working directory): what it printed,
    once its exit code is checked."""
    capsys.readouterr()
    returned = main(["train", *args])
    printed = capsys.readouterr()
    assert returned == code, printed.err[-3000:]
    return printed


def _sweeps(db: Path) -> list[tuple[Any, list[Any]]]:
    """(parent, children) of every sweep in the store, oldest first."""
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000, order_by=["attributes.start_time ASC"])
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    return [(p, [r for r in runs if r.data.tags.get("mlflow.parentRunId") == p.info.run_id]) for p in parents]


def _journal_study(cwd: Path) -> optuna.Study:
    """The study of the only sweep under ``cwd`` that kept its study in the sweep's journal file."""
    (journal,) = cwd.glob("multirun/*/*/optuna_journal.log")
    storage = optuna.storages.JournalStorage(JournalFileBackend(str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage)


def _significant_digits(number: str) -> int:
    mantissa = number.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    return len(mantissa)


#: The trials of each of the persistent study's two invocations (one is enough: the second
#: invocation's trial is the study's second, drawn at a new point).
TRIALS = 1


@dataclass(frozen=True)
class PersistentStudy:
    """``hparams_search=optuna`` run twice (:data:`TRIALS` trials each) on one sqlite storage,
    launched in ``cwd``; ``args`` are the invocations' overrides."""

    cwd: Path
    study_db: Path
    db: Path
    args: list[str]


@pytest.fixture(scope="module")
def persistent_study(tmp_path_factory: pytest.TempPathFactory) -> PersistentStudy:
    """The searches, once for the module: its tests only read the study and the store."""
    cwd = tmp_path_factory.mktemp("persistent")
    study_db, db = cwd / "study.db", cwd / "mlflow.db"
    args = ["hparams_search=optuna", f"hydra.sweeper.n_trials={TRIALS}", f"hydra.sweeper.storage=sqlite:///{study_db}",
            *SMALL, f"tracking.uri=sqlite:///{db}"]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        for _ in range(2):
            assert main(["train", *args]) == 0
    return PersistentStudy(cwd, study_db, db, args)


def test_a_persistent_study_resumes_across_invocations_and_maximises(
    persistent_study: PersistentStudy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``hparams_search=optuna`` twice on one sqlite storage, :data:`TRIALS` trials each: one
    study of both invocations' trials."""
    study_db, db, args = persistent_study.study_db, persistent_study.db, persistent_study.args
    study = optuna.load_study(study_name="ltr_lambdarank", storage=f"sqlite:///{study_db}")
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE]
    assert len(study.trials) == 2 * TRIALS
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    points = [tuple(sorted(t.params.items())) for t in study.trials]
    assert len(set(points)) == 2 * TRIALS, "the second invocation drew new points, not the first's again"
    assert study.user_attrs["ltr.config"]["data.n_queries"] == "200"  # debug=default's
    sweeps = _sweeps(db)
    assert len(sweeps) == 2
    for n, (parent, children) in enumerate(sweeps, start=1):
        assert parent.data.params["optuna.study_name"] == "ltr_lambdarank"
        assert parent.data.params["optuna.storage"] == f"sqlite:///{study_db}"
        assert parent.data.metrics["sweep/optuna/n_trials"] == TRIALS * n
        assert len(children) == TRIALS
        trial_numbers = {int(c.data.tags["ltr.optuna.trial"]) for c in children}
        assert trial_numbers == set(range(TRIALS * (n - 1), TRIALS * n)), "the second invocation adds the next trials"
        for child in children:
            trial = study.trials[int(child.data.tags["ltr.optuna.trial"])]
            assert trial.value == child.data.metrics["valid/ndcg_at_10"], "Optuna was told what the run logged"
            for number in re.findall(r"=([-0-9.e]+)", child.info.run_name):
                assert _significant_digits(number) <= 4, child.info.run_name
            assert float(child.data.params["model.learning_rate"]) == pytest.approx(
                trial.params["model.learning_rate"], rel=5e-4
            )  # the job ran the trial's value to 4 significant digits
    # the second parent's best is the study's best trial, of both invocations (Optuna's best_value)
    parent, _ = sweeps[1]
    best = max((c for _, children in sweeps for c in children), key=lambda c: c.data.metrics["valid/ndcg_at_10"])
    assert parent.data.tags["ltr.sweep.best_run_id"] == best.info.run_id
    assert parent.data.tags["ltr.sweep.best_of"] == "study"
    assert parent.data.metrics["sweep/optuna/best_value"] == max(t.value for t in study.trials)
    assert parent.data.metrics["sweep/best/valid/ndcg_at_10"] == max(t.value for t in study.trials)
    # other data on the same study: refused in one line before any run, the study untouched
    monkeypatch.chdir(persistent_study.cwd)
    refused = _ltr(capsys, *args, "data.n_queries=150", code=2)
    assert refused.err.strip().splitlines() == [
        f"ltr: error: Optuna study 'ltr_lambdarank' in sqlite:///{study_db} was built on another config "
        "(data.n_queries=200 (this sweep: 150)): its trials' values would not be comparable with this sweep's; "
        "start a new study with hydra.sweeper.study_name=ltr_lambdarank_2 (or another hydra.sweeper.storage), "
        "or run with the study's config"
    ]
    assert len(_sweeps(db)) == 2, "no parent run for the refused sweep"
    assert len(optuna.load_study(study_name="ltr_lambdarank", storage=f"sqlite:///{study_db}").trials) == 2 * TRIALS


def test_a_resumed_study_s_parent_holds_and_promotes_the_study_s_best_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A study searched twice, its best trial in the first invocation: the second invocation's
    parent holds that trial's run (another parent's child), says so, and ``ltr promote PARENT``
    registers it with the study's best value.

    The second invocation runs one trial enqueued at the space's worst corner for debug data (the
    fewest leaves, the smallest learning rate, the most samples per leaf, half the features: 5
    rounds of steps of 0.01), so the study's best is one of the first invocation's two trials;
    the test checks that premise before it relies on it."""
    monkeypatch.chdir(tmp_path)
    study_db, db = tmp_path / "study.db", tmp_path / "mlflow.db"
    base = ["hparams_search=optuna", f"hydra.sweeper.storage=sqlite:///{study_db}", *SMALL, f"tracking.uri=sqlite:///{db}"]
    _ltr(capsys, *base, "hydra.sweeper.n_trials=2")
    study = optuna.load_study(study_name="ltr_lambdarank", storage=f"sqlite:///{study_db}")
    study.enqueue_trial({
        "model.num_leaves": 7, "model.learning_rate": 0.01, "model.min_child_samples": 100, "model.colsample_bytree": 0.5,
    })  # fmt: skip
    second = _ltr(capsys, *base, "hydra.sweeper.n_trials=1")
    study = optuna.load_study(study_name="ltr_lambdarank", storage=f"sqlite:///{study_db}")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    assert study.trials[2].params["model.num_leaves"] == 7, "the second invocation ran the enqueued trial"
    values = [t.value for t in study.trials]
    assert study.best_value == max(values)
    assert study.best_trial.number in (0, 1), f"premise: the enqueued trial is the worst ({values})"
    assert values[2] < study.best_value

    (first, first_children), (parent, children) = _sweeps(db)
    (best,) = [c for c in first_children if c.data.tags["ltr.optuna.trial"] == str(study.best_trial.number)]
    assert study.best_trial.user_attrs["ltr.run_id"] == best.info.run_id, "the trial keeps its job's run id"
    assert best.data.metrics["valid/ndcg_at_10"] == study.best_value
    assert [c.info.run_id for c in children] != [best.info.run_id]
    # the second parent holds the study's best (trial 0 or 1, the first invocation's), not its own job's
    assert parent.data.tags["ltr.sweep.best_run_id"] == best.info.run_id
    assert parent.data.tags["ltr.sweep.best_of"] == "study"
    assert parent.data.metrics["sweep/best/valid/ndcg_at_10"] == study.best_value
    assert parent.data.metrics["valid/ndcg_at_10"] == study.best_value  # the parent's headline is that run's
    assert parent.data.metrics["sweep/optuna/best_value"] == study.best_value
    own = children[0].data.metrics["valid/ndcg_at_10"]
    assert own == values[2]
    assert (
        f"sweep: the study's best trial {study.best_trial.number} (Optuna study 'ltr_lambdarank', all invocations) is run "
        f"{best.info.run_id[:8]} ({best.info.run_name}) of an earlier invocation: valid/ndcg_at_10 = {study.best_value:.4f}; "
        f"this invocation's best: valid/ndcg_at_10 = {own:.4f}"
    ) in second.out
    assert parent.data.tags["mlflow.note.content"].startswith("**Best of the study** (Optuna study `ltr_lambdarank`")
    # the first parent's best is its own best job, which is the study's best then too
    assert first.data.tags["ltr.sweep.best_run_id"] == best.info.run_id

    capsys.readouterr()
    assert main(["promote", parent.info.run_id, "--name", "ranker", "--n-resamples", "200", "--tracking-uri", f"sqlite:///{db}"]) == 0
    printed = capsys.readouterr().out
    assert f"its Optuna study's best trial (all invocations) is run {best.info.run_id[:8]}" in printed
    version = MlflowClient(f"sqlite:///{db}").get_model_version_by_alias("ranker", "champion")
    assert version.run_id == best.info.run_id
    assert version.tags["ltr.metric"] == "valid/ndcg_at_10"
    assert float(version.tags["ltr.metric.value"]) == study.best_value


def test_an_interrupted_search_leaves_no_trial_running(tmp_path: Path) -> None:
    """Ctrl-C while a trial's job trains: the job's run ends KILLED, its trial FAIL (never
    RUNNING for ever), the command exits 130."""
    study_db, db = tmp_path / "study.db", tmp_path / "mlflow.db"
    MlflowTracker(f"sqlite:///{db}", "ltr")  # the store first, so polling it never races its creation
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "train", "hparams_search=optuna", "hydra.sweeper.n_trials=4",
         f"hydra.sweeper.storage=sqlite:///{study_db}", "debug=default", "fit.num_threads=1",
         "fit.num_boost_round=100000", "fit.early_stopping_rounds=null", "hydra.sweeper.pruner=null",
         "fit.show_progress=false", f"tracking.uri=sqlite:///{db}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600  # generous: only a broken start waits it out
        while not any(c.info.status == "RUNNING" for _, children in _sweeps(db) for c in children):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no job started: {proc.communicate()[1][-2000:]}")
            time.sleep(0.5)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=300)
    finally:  # nothing of the group outlives the test (a launcher's workers neither)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 130, stderr[-2000:]
    study = optuna.load_study(study_name="ltr_lambdarank", storage=f"sqlite:///{study_db}")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.FAIL]
    ((parent, (child,)),) = _sweeps(db)
    assert (parent.info.status, child.info.status) == ("KILLED", "KILLED")
    assert f"run {child.info.run_id} is marked KILLED" in stderr


def test_no_trials_or_an_unknown_baseline_is_refused_in_one_line_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}"
    for n in ("0", "-2"):
        proc = _ltr(capsys, "hparams_search=optuna", f"hydra.sweeper.n_trials={n}", *SMALL, uri, code=2)
        assert proc.err.strip().splitlines() == [f"ltr: error: hydra.sweeper.n_trials={n} must be a whole number >= 1 (the trials to run)"]
    proc = _ltr(capsys, "-m", "model.num_leaves=3,7", "sweep.constraints=['valid/ndcg_at_10 >= baseline']",
                "sweep.baseline=no_such_run", *SMALL, uri, code=2)  # fmt: skip
    (line,) = proc.err.strip().splitlines()
    assert line.startswith("ltr: error: sweep.baseline='no_such_run': ")
    assert not (tmp_path / "mlflow.db").exists() or not _sweeps(tmp_path / "mlflow.db")


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and a != b


def test_a_two_objective_search_marks_its_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """nDCG@10 and ILD@10 (both maximised) under rerank=diversify, rerank.alpha in the space."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mlflow.db"
    _ltr(capsys, "hparams_search=optuna", "hydra.sweeper.n_trials=4", "rerank=diversify",
         "optimized_metric=[valid/ndcg_at_10,valid/ild_at_10]", "rerank.alpha=interval(0.0, 1.0)", *SMALL,
         f"tracking.uri=sqlite:///{db}")  # fmt: skip
    ((parent, children),) = _sweeps(db)
    study = _journal_study(tmp_path)
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE] * 2
    assert len(children) == 4
    points = {c.info.run_id: (c.data.metrics["valid/ndcg_at_10"], c.data.metrics["valid/ild_at_10"]) for c in children}
    assert len({float(c.data.params["rerank.alpha"]) for c in children}) == 4, "alpha was searched"
    marked = {c.info.run_id for c in children if c.data.tags["ltr.pareto"] == "true"}
    assert marked
    for run_id, point in points.items():
        dominated = any(_dominates(other, point) for other in points.values())
        assert dominated is (run_id not in marked), f"{run_id} {point}: marked {run_id in marked}, dominated {dominated}"
    assert parent.data.metrics["sweep/pareto/n_front"] == len(marked)
    client = MlflowClient(f"sqlite:///{db}")
    shown = json.loads(Path(client.download_artifacts(parent.info.run_id, "report/pareto_front.json", str(tmp_path))).read_text())
    assert {row["run_id"] for row in shown} == set(points), "the figure's data holds every trial"
    for trial in study.trials:
        assert tuple(trial.values) in set(points.values())


def test_a_constraint_no_job_meets_says_so_and_names_no_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-m hydra/sweeper=optuna`` with the space on the command line; nothing reaches nDCG 1.5."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mlflow.db"
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        proc = _ltr(capsys, "-m", "hydra/sweeper=optuna", "model.num_leaves=int(interval(3, 15))",
                    "hydra.sweeper.n_trials=1", "sweep.constraints=['valid/ndcg_at_10 >= 1.5']", *SMALL,
                    f"tracking.uri=sqlite:///{db}")  # fmt: skip
    lines = [line for line in proc.out.splitlines() if "no job meets" in line]
    assert lines == ["sweep: no job meets the constraints (valid/ndcg_at_10 >= 1.5: 0 of 1); the sweep has no best run"]
    # Optuna 5 deprecates the samplers' constraints_func: the search tells constraints with set_constraint
    assert [str(w.message) for w in warned if "constraints_func" in str(w.message)] == []
    ((parent, children),) = _sweeps(db)
    assert parent.data.tags["ltr.sweep.best_run_id"] == ""
    assert parent.data.tags["ltr.sweep.best_feasible"] == "false"
    assert parent.data.metrics["sweep/n_feasible"] == 0
    assert "sweep/best/valid/ndcg_at_10" not in parent.data.metrics
    for child in children:
        assert child.data.tags["ltr.feasible"] == "false"
        assert child.data.tags["ltr.failed_constraints"] == "valid/ndcg_at_10 >= 1.5"
    study = _journal_study(tmp_path)
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE], "maximised without any direction setting"
    for trial in study.trials:  # what the sampler reads (Trial.set_constraint): 1.5 - nDCG > 0
        assert trial.user_attrs["ltr.constraints"] == [pytest.approx(1.5 - trial.value)]
        assert trial.constraints == {"0": trial.user_attrs["ltr.constraints"][0]}


def test_a_grid_honours_constraints_against_its_first_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """More diverse than job 0 (alpha 0): the best feasible job is not the unconstrained best."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mlflow.db"
    proc = _ltr(capsys, "-m", "rerank=diversify", "rerank.alpha=0,0.5,0.9",
                "sweep.constraints=['valid/ild_at_10 > baseline']", *SMALL, f"tracking.uri=sqlite:///{db}")  # fmt: skip
    ((parent, children),) = _sweeps(db)
    by_job = {c.data.tags["ltr.job_num"]: c.data.metrics for c in children}
    feasible = [c for c in children if c.data.metrics["valid/ild_at_10"] > by_job["0"]["valid/ild_at_10"]]
    assert feasible
    best_feasible = max(feasible, key=lambda c: c.data.metrics["valid/ndcg_at_10"])
    best_overall = max(children, key=lambda c: c.data.metrics["valid/ndcg_at_10"])
    assert best_feasible.info.run_id != best_overall.info.run_id, "the setup must make the constraint matter"
    assert parent.data.tags["ltr.sweep.best_run_id"] == best_feasible.info.run_id
    assert parent.data.metrics["sweep/best/valid/ndcg_at_10"] == best_feasible.data.metrics["valid/ndcg_at_10"]
    assert parent.data.metrics["sweep/n_feasible"] == len(feasible)
    for child in children:
        assert child.data.tags["ltr.feasible"] == ("true" if child in feasible else "false")
    job = best_feasible.data.tags["ltr.job_num"]
    assert f"sweep: best feasible job {job} ({best_feasible.info.run_name}): valid/ndcg_at_10 = " in proc.out


def test_pruned_trials_finish_tagged_with_their_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A threshold no nDCG reaches prunes the trial at its 3rd round: FINISHED, never FAILED."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "mlflow.db"
    proc = _ltr(capsys, "hparams_search=optuna", "hydra.sweeper.n_trials=1", "hydra/sweeper/pruner=threshold",
                "hydra.sweeper.pruner.lower=1.0", "hydra.sweeper.pruner.n_warmup_steps=3", "fit.early_stopping_rounds=null",
                *SMALL, f"tracking.uri=sqlite:///{db}")  # fmt: skip
    ((parent, children),) = _sweeps(db)
    client = MlflowClient(f"sqlite:///{db}")
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags["ltr.optuna.state"] == "PRUNED"
        assert child.data.tags["ltr.pruned_at_round"] == "3"
        curve = client.get_metric_history(child.info.run_id, "iter/valid/ndcg_at_10")
        assert sorted(m.step for m in curve) == [1, 2, 3], "training stopped at the pruned round"
    assert len(children) == 1
    assert parent.data.metrics["sweep/optuna/n_pruned"] == 1
    assert parent.data.metrics["sweep/n_failed"] == 0
    assert parent.data.tags["ltr.sweep.best_run_id"] == ""
    assert "sweep: no job finished unpruned; the sweep has no best run" in proc.out
    study = _journal_study(tmp_path)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.PRUNED]


def test_optuna_dashboard_on_the_storage_shows_the_study(tmp_path: Path, persistent_study: PersistentStudy) -> None:
    """The real ``optuna-dashboard`` on a sweep's sqlite storage lists the study the parent logs."""
    pytest.importorskip("optuna_dashboard")  # the dev extra installs it
    study_db = persistent_study.study_db
    parent, _ = _sweeps(persistent_study.db)[-1]
    study_name = parent.data.params["optuna.study_name"]
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")  # a file, not a pipe nobody reads
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "optuna-dashboard"), f"sqlite:///{study_db}", "--host", "127.0.0.1",
         "--port", str(port)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},  # gunicorn's control socket: not in ~/.gunicorn
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        api = f"http://127.0.0.1:{port}/api/studies"
        wait_for_http(api, server, log=tmp_path / "dashboard.log", timeout=60)
        with urllib.request.urlopen(api, timeout=30) as response:
            studies = json.loads(response.read())["study_summaries"]
        (study,) = [s for s in studies if s["study_name"] == study_name]
        assert study["directions"] == ["maximize"]
        with urllib.request.urlopen(f"{api}/{study['study_id']}", timeout=30) as response:
            detail = json.loads(response.read())
        assert detail["name"] == study_name
        assert len(detail["trials"]) == 2 * TRIALS  # both invocations' trials
    finally:
        stop_process_group(server)
        log.close()
