"""Multirun sweeps, the joblib launcher and the Optuna sweeper, into real sqlite stores.

Most sweeps run in this process (:func:`train_in_process`: ``ltr.cli.main.main``, as the
``ltr`` command runs it, launched from the test's folder): they share this process's imports
of MLflow, LightGBM and Hydra instead of paying them in a new interpreter each. The test of two
sweeps started together needs two real processes and starts them. The sweeps
whose children's models no assertion reads log none (``tracking.log_model=false``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from mlflow.tracking import MlflowClient

from ltr.cli.main import main
from ltr.training import binned

pytestmark = pytest.mark.slow

#: Two jobs that differ in a training-only parameter: the basic launcher reuses the first job's
#: binned data for the second, each joblib worker bins its own; the runs must still be equal.
GRID = ["model.num_leaves=3,7"]


def train_in_process(cwd: Path, capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``ltr train ARGS`` launched from ``cwd`` in this process (``ltr.cli.main.main``, what the
    ``ltr`` command runs): its exit code and what it printed, as a finished process's. The
    current folder, ``sys.argv``, ``HYDRA_FULL_ERROR``, the SIGINT and SIGTERM handlers and
    ``sys.unraisablehook`` (which ``ltr train`` sets) are put back after it; it starts without
    the binned data a sweep before it kept in memory, as a new process would."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.setattr(sys, "argv", list(sys.argv))
        patch.setattr(sys, "unraisablehook", sys.unraisablehook)
        patch.delenv("HYDRA_FULL_ERROR", raising=False)
        binned._last.clear()
        capsys.readouterr()
        try:
            code = main(["train", *args])
        finally:
            for sig, handler in handlers.items():
                if handler is not None:  # None: a handler not set from Python, left as it is
                    signal.signal(sig, handler)
            _stop_joblib_workers()
        printed = capsys.readouterr()
    return subprocess.CompletedProcess(["ltr", "train", *args], code, printed.out, printed.err)


def _stop_joblib_workers() -> None:
    """Stop the worker processes of joblib's reusable executor (the joblib launcher's), which
    would otherwise idle on after the sweep (loky keeps them 300 s): a process ends them when it
    exits; a sweep run in this process must end them itself, or they outlive the test."""
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def _train(cwd: Path, capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """:func:`train_in_process`, which must exit 0."""
    proc = train_in_process(cwd, capsys, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _runs(db: Path) -> tuple[Any, list[Any]]:
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    assert len(parents) == 1
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(children) == len(runs) - 1, "every other run is a child of the sweep"
    return parents[0], children


def _by_job(children: list[Any]) -> dict[tuple[str, str], dict[str, float]]:
    return {
        (c.data.params["model.name"], c.data.params["model.num_leaves"]): {
            k: v for k, v in c.data.metrics.items() if not k.endswith("_seconds")
        }
        for c in children
    }


def test_grid_basic_and_joblib_launchers_give_identical_complete_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also: each job's config is composed by the start check and by the launcher, never a third
    time by the sweeper (ltr's basic sweeper skips Hydra's validation of the jobs the start check
    composed): 1 composition (job 0; job 1 differs in a value) + 2 launched in this process, and
    with the joblib launcher (whose workers compose their jobs) the start check's one alone."""
    composed: list[list[str]] = []
    load_sweep_config = ConfigLoaderImpl.load_sweep_config

    def counted(self: ConfigLoaderImpl, master_config: Any, sweep_overrides: list[str]) -> Any:
        composed.append(list(sweep_overrides))
        return load_sweep_config(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counted)  # calls through: counts Hydra's compositions
    basic_db, joblib_db = tmp_path / "basic.db", tmp_path / "joblib.db"
    _train(tmp_path, capsys, "-m", "debug=default", *GRID, "tracking.log_model=false", f"tracking.uri=sqlite:///{basic_db}")
    assert len(composed) == 3, composed
    composed.clear()
    _train(
        tmp_path, capsys, "-m", "debug=default", *GRID, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        "tracking.log_model=false", f"tracking.uri=sqlite:///{joblib_db}",
    )
    assert len(composed) == 1, composed
    basic_parent, basic_children = _runs(basic_db)
    joblib_parent, joblib_children = _runs(joblib_db)
    assert len(basic_children) == len(joblib_children) == 2
    for run in [basic_parent, joblib_parent, *basic_children, *joblib_children]:
        assert run.info.status == "FINISHED"
    basic, parallel = _by_job(basic_children), _by_job(joblib_children)
    assert set(basic) == {("lambdarank", "3"), ("lambdarank", "7")}
    for job, metrics in basic.items():
        assert len(metrics) > 100
        assert parallel[job] == metrics, f"job {job}: joblib and basic launchers differ"  # bit for bit
    best = max(m["valid/ndcg_at_10"] for m in basic.values())
    assert basic_parent.data.metrics["sweep/best/valid/ndcg_at_10"] == best


def test_optuna_maximises_the_optimized_metric_of_the_cutoffs_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With eval.k=[5,20] the objective is valid/ndcg_at_20 (no ndcg_at_10 is computed at all)."""
    db = tmp_path / "mlflow.db"
    _train(
        tmp_path, capsys, "hparams_search=optuna", "hydra.sweeper.n_trials=3", "debug=default", "eval.k=[5,20]",
        "tracking.log_model=false", f"tracking.uri=sqlite:///{db}",
    )
    parent, children = _runs(db)
    assert len(children) == 3
    assert all("valid/ndcg_at_10" not in c.data.metrics for c in children)
    values = [c.data.metrics["valid/ndcg_at_20"] for c in children]
    assert all(0 < v < 1 for v in values)
    best_child = max(children, key=lambda c: c.data.metrics["valid/ndcg_at_20"])
    assert parent.data.metrics["sweep/optuna/best_value"] == best_child.data.metrics["valid/ndcg_at_20"]
    assert parent.data.metrics["sweep/best/valid/ndcg_at_20"] == max(values)
    for name in ("model.num_leaves", "model.learning_rate", "model.min_child_samples"):
        assert parent.data.params[f"best.{name}"] == best_child.data.params[name]
    assert parent.data.tags["ltr.sweep.best_run_id"] == best_child.info.run_id
    # the parent is named by its search, not its space (which is in its params)
    assert parent.info.run_name == "optuna:ltr_lambdarank (3 trials, maximize valid/ndcg_at_20) k=[5,20] debug=default"
    assert parent.data.params["space.model.num_leaves"] == "int(interval(7, 127))"
    assert "interval" not in " ".join(c.info.run_name for c in children)  # a trial: its values (nl=...)


def test_a_grid_names_its_jobs_by_what_they_vary_within_15_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MLflow runs table shows about 15 characters of a name: the 4 jobs of a 2x2 grid
    differ there, and none names the settings every job shares (those lead nothing; the parent
    holds them, after what it varies)."""
    db = tmp_path / "mlflow.db"
    _train(
        tmp_path, capsys, "-m", "debug=default", "fit.num_boost_round=5", "model=lambdarank,rank_xendcg",
        "model.num_leaves=3,7", "tracking.log_model=false", f"tracking.uri=sqlite:///{db}",
    )
    parent, children = _runs(db)
    names = sorted(c.info.run_name for c in children)
    assert names == ["nl=3 lambdarank", "nl=3 rank_xendcg", "nl=7 lambdarank", "nl=7 rank_xendcg"]
    assert len({name[:15] for name in names}) == 4
    for name in names:
        assert not any(shared in name for shared in ("num_boost_round", "nbr", "debug", "default")), name
    assert parent.info.run_name == "nl=3,7 lambdarank,rank_xendcg nbr=5 debug=default"


def test_objective_comparison_on_default_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the default data lambdarank beats the pointwise regressor on test nDCG@10 (20 rounds each)."""
    db = tmp_path / "mlflow.db"
    proc = _train(tmp_path, capsys, "experiment=objective_comparison", "fit.num_boost_round=20",
                  "fit.early_stopping_rounds=null", "fit.show_progress=false", "tracking.log_model=false",
                  f"tracking.uri=sqlite:///{db}")  # fmt: skip
    _, children = _runs(db)
    by_objective = {c.data.tags["ltr.objective"]: c.data.metrics for c in children}
    assert set(by_objective) == {"lambdarank", "rank_xendcg", "regression"}
    lambdarank = by_objective["lambdarank"]["test/ndcg_at_10"]
    pointwise = by_objective["regression"]["test/ndcg_at_10"]
    print(f"test nDCG@10: lambdarank {lambdarank:.4f}, rank_xendcg "
          f"{by_objective['rank_xendcg']['test/ndcg_at_10']:.4f}, pointwise {pointwise:.4f}")
    assert lambdarank > pointwise
    assert "sweep: 3 jobs: 3 finished, 0 failed" in proc.stdout


def test_two_sweeps_started_together_each_keep_their_own_children(tmp_path: Path) -> None:
    """Two sweeps in the same second and folder: own sweep folder, own parent, own children
    (two real processes; 5 rounds and no model logged: how good the children are is not the point)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [sys.executable, "-m", "ltr", "train", "-m", "debug=default", "fit.num_boost_round=5", "fit.show_progress=false",
            "tracking.log_model=false", f"tracking.uri={uri}"]  # fmt: skip
    procs = [
        subprocess.Popen([*args, f"model.num_leaves={a},{b}"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for a, b in ((3, 5), (7, 9))
    ]
    for proc in procs:
        _, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=100)
    parents = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    assert len(parents) == 2
    assert len({p.data.tags["ltr.sweep_id"] for p in parents}) == 2, "each sweep has its own folder"
    leaves = set()
    for parent in parents:
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert len(children) == 2
        assert parent.data.metrics["sweep/n_jobs"] == 2
        assert all(c.data.tags["ltr.sweep_id"] == parent.data.tags["ltr.sweep_id"] for c in children)
        assert all(r.info.status == "FINISHED" for r in [parent, *children])
        group = frozenset(c.data.params["model.num_leaves"] for c in children)
        assert group in ({"3", "5"}, {"7", "9"})
        leaves |= group
        best = max(c.data.metrics["valid/ndcg_at_10"] for c in children)
        assert parent.data.metrics["sweep/best/valid/ndcg_at_10"] == best
    assert leaves == {"3", "5", "7", "9"}
    assert len(list((tmp_path / "multirun").glob("*/*"))) == 2


def test_diversity_sweep_on_default_data_marks_an_undominated_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """experiment=diversity_tradeoff: nDCG@10 falls and ILD@10 rises with alpha; the front holds
    (10 rounds: the trade-off is the re-ranking's, whatever the model)."""
    db = tmp_path / "mlflow.db"
    _train(tmp_path, capsys, "experiment=diversity_tradeoff", "rerank.alpha=0,0.4,0.8", "fit.show_progress=false",
           "fit.num_boost_round=10", "fit.early_stopping_rounds=null", "tracking.log_model=false",
           f"tracking.uri=sqlite:///{db}")  # fmt: skip
    parent, children = _runs(db)
    by_alpha = sorted(children, key=lambda c: float(c.data.params["rerank.alpha"]))
    ndcg = [c.data.metrics["valid/ndcg_at_10"] for c in by_alpha]
    ild = [c.data.metrics["valid/ild_at_10"] for c in by_alpha]
    print("alpha 0, 0.4, 0.8: nDCG@10", ndcg, "ILD@10", ild)
    assert ndcg[0] > ndcg[1] > ndcg[2]
    assert ild[0] < ild[1] < ild[2]
    assert ndcg[0] == by_alpha[0].data.metrics["valid/pre_rerank/ndcg_at_10"]  # alpha 0: the model's order
    marked = [c for c in children if c.data.tags["ltr.pareto"] == "true"]
    assert parent.data.metrics["sweep/pareto/n_front"] == len(marked) >= 1
    for run in marked:  # no marked run is dominated by another run
        x, y = run.data.metrics["valid/ndcg_at_10"], run.data.metrics["valid/ild_at_10"]
        for other in children:
            ox, oy = other.data.metrics["valid/ndcg_at_10"], other.data.metrics["valid/ild_at_10"]
            assert not (ox >= x and oy >= y and (ox > x or oy > y))
    for run in children:  # every unmarked run is dominated
        if run.data.tags["ltr.pareto"] == "false":
            x, y = run.data.metrics["valid/ndcg_at_10"], run.data.metrics["valid/ild_at_10"]
            assert any(o.data.metrics["valid/ndcg_at_10"] >= x and o.data.metrics["valid/ild_at_10"] >= y
                       and o is not run for o in marked)  # fmt: skip
    assert "on the front" in parent.data.tags["mlflow.note.content"]
    client = MlflowClient(f"sqlite:///{db}")
    assert "figures/pareto_front.png" in [a.path for a in client.list_artifacts(parent.info.run_id, "figures")]


def test_click_sweep_logs_the_regression_of_online_ctr_on_ndcg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The parent's slope, intercept and R² reproduce numpy.polyfit on the children's values
    (whatever they are: 30 rounds, not up to 1,000, give three distinct points as well)."""
    db = tmp_path / "mlflow.db"
    _train(tmp_path, capsys, "-m", "data=synthetic_clicks", "data.n_queries=300", "rerank=diversify",
           "rerank.alpha=0,0.5,0.9", "fit.num_boost_round=30", "fit.show_progress=false", "tracking.log_model=false",
           f"tracking.uri=sqlite:///{db}")  # fmt: skip
    parent, children = _runs(db)
    x = np.array([c.data.metrics["valid/ndcg_at_10"] for c in children])
    y = np.array([c.data.metrics["valid/online/ctr"] for c in children])
    assert len(set(x)) == len(set(y)) == 3, "three distinct points: the fit is not degenerate"
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (slope * x + intercept)) ** 2) / np.sum((y - y.mean()) ** 2)
    m = parent.data.metrics
    assert m["sweep/online/slope"] == pytest.approx(slope, rel=1e-12, abs=1e-12)
    assert m["sweep/online/intercept"] == pytest.approx(intercept, rel=1e-12, abs=1e-12)
    assert m["sweep/online/r2"] == pytest.approx(r2, rel=1e-12, abs=1e-12)
    assert m["sweep/online/gain_per_tenth_ndcg"] == pytest.approx(slope / 10, rel=1e-12)
    assert "CTR per unit of nDCG@10" in parent.data.tags["mlflow.note.content"]


def _letor_fold(folder: Path, seed: int) -> None:
    """A tiny LETOR fold: 20 queries of 8 documents, 5 features, in train / vali / test."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for offset, name in enumerate(("train.txt", "vali.txt", "test.txt")):
        lines = []
        for q in range(20):
            for _ in range(8):
                features = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(rng.random(5)))
                lines.append(f"{rng.integers(0, 3)} qid:{offset * 100 + q} {features}")
        (folder / name).write_text("\n".join(lines) + "\n")


def test_a_cv_that_lacks_a_fold_is_marked_partial_and_has_no_sd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fold 2's train.txt is there (the start checks pass) but unreadable: its job is refused when
    it reads the data, and the CV over fold 1 alone is partial, with a mean and no sd."""
    _letor_fold(tmp_path / "data" / "Fold1", seed=1)
    (tmp_path / "data" / "Fold2").mkdir()
    (tmp_path / "data" / "Fold2" / "train.txt").write_text("not a ranking file\n")
    db = tmp_path / "mlflow.db"
    proc = train_in_process(
        tmp_path, capsys, "-m", "data=letor", f"data.root={tmp_path / 'data'}", "data.fold=1,2", "cv.fold_key=data.fold",
        "fit.num_boost_round=5", "fit.show_progress=false", "tracking.log_model=false", "tracking.run_name=cv7",
        f"tracking.uri=sqlite:///{db}",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    parent, children = _runs(db)
    assert [c.info.run_name for c in children] == ["fold=1 (cv7)"]  # what the job varies, then the name
    assert parent.info.run_name == "cv7 (1 of 2 folds)"
    assert parent.info.status == "FAILED"
    tags = parent.data.tags
    assert (tags["ltr.cv.partial"], tags["ltr.cv.folds"]) == ("true", "1 of 2 folds")
    metrics = parent.data.metrics
    assert metrics["cv/n_folds"] == 1
    assert metrics["test/ndcg_at_10"] == children[0].data.metrics["test/ndcg_at_10"]
    assert not [k for k in metrics if k.endswith("/sd")], "the sd of one fold is undefined"
    assert (metrics["sweep/n_finished"], metrics["sweep/n_refused"], metrics["sweep/n_failed"]) == (1, 1, 0)
    lead, _, body = tags["mlflow.note.content"].partition("\n\n")
    assert lead == f"**test nDCG@10 {metrics['test/ndcg_at_10']:.4f}** over 1 of 2 folds (data.fold = 1)"  # one fold: no sd
    assert body.startswith("### lambdarank on letor: mean over 1 of 2 folds, a partial CV (data.fold = 1)")
    assert f"| {children[0].data.metrics['test/ndcg_at_10']:.4f} |" in tags["mlflow.note.content"]
    assert "sweep: 2 jobs: 1 finished, 0 failed, 1 refused\n" in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ltr: sweep of 2 jobs: 1 finished, 0 failed, 1 refused; parent run http"), last
    assert last.endswith("(the mean over the folds)"), last
