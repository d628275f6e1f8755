"""What the MLflow UI shows, read through the REST API of a real ``ltr ui`` on 127.0.0.1.

A store with every kind of run: a two-job sweep and a two-fold cross-validation (two ``ltr
train -m`` processes at once, forked from the tests' fork server), a re-ranked run, a run on a
click log, and two plain runs last; ``ltr ui`` serves it. Everything is asked of the UI's own server, as the browser asks it: the experiment's
kind (the runs table, not the GenAI screens) and shared view (after the last, plain, run still
the headline columns of every kind), distinct readable run names, descriptions holding the
stratified table (the sweep's with a link to its best run, the CV's fold means, the re-ranked
run's before/after), the Source / Created by / Git commit tags, unset params not logged, every
``iter/<key>`` curve ending on ``<key>`` bit for bit, the CV parent's fold means and sds, and
the per-query tables the UI can show.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.processes import free_port, run_ltr, stop_process_group

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SMALL = ["debug=default", "fit.show_progress=false"]



def _api(base: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}/api/2.0/mlflow/{path}", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``mlflow.db`` holds a two-job sweep, a two-fold CV (two seeds' splits as
    folds), a re-ranked run, a click-log run and two plain runs, in that order."""
    root = tmp_path_factory.mktemp("ui")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with ThreadPoolExecutor(2) as pool:  # the two sweeps at once: one store, its lock serialises their writes
        sweeps = list(pool.map(
            lambda overrides: run_ltr(["train", "-m", *overrides, *SMALL, "tracking.log_model=false"], cwd=root, env=env, timeout=900),
            (["model.num_leaves=7,15"], ["seed=1,2", "cv.fold_key=seed"]),
        ))  # fmt: skip
    for sweep in sweeps:
        assert sweep.returncode == 0, sweep.stderr[-3000:]
    for overrides in (["rerank=diversify"], ["data=synthetic_clicks"], [], ["model=rank_xendcg"]):
        pipeline.run(compose_train([*SMALL, f"tracking.uri={uri}", *overrides]), overrides=overrides)
    return root


@contextmanager
def _serving(store: Path) -> Iterator[tuple[str, list[str], subprocess.Popen[str]]]:
    """``ltr ui`` serving ``store``: (base URL, what it printed up to its links, the process)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "ui", "--port", str(port)],
        cwd=store, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(line.startswith("  ltr: ") for line in lines):
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
        assert any(line.startswith(f"MLflow UI at http://127.0.0.1:{port}") for line in lines), lines
        yield f"http://127.0.0.1:{port}", lines, proc
    finally:
        if proc.poll() is None:
            stop_process_group(proc, timeout=30)


class _ModuleUI:
    """The module's ``ltr ui`` on ``store``: started when a test first asks for it, and again
    for a test that comes after one that stopped it (so any order of the tests works; in the
    file's order one UI serves them all, the SIGTERM test last)."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._stack = ExitStack()
        self._served: tuple[str, list[str], subprocess.Popen[str]] | None = None

    def serving(self) -> tuple[str, list[str], subprocess.Popen[str]]:
        """(base URL, what it printed up to its links, the process), started if not running."""
        if self._served is None or self._served[2].poll() is not None:
            self.close()
            self._served = self._stack.enter_context(_serving(self.store))
        return self._served

    def close(self) -> None:
        self._stack.close()
        self._served = None


@pytest.fixture(scope="module")
def module_ui(store: Path) -> Iterator[_ModuleUI]:
    holder = _ModuleUI(store)
    try:
        yield holder
    finally:
        holder.close()


@pytest.fixture
def ui(module_ui: _ModuleUI) -> tuple[str, list[str]]:
    """The module's ``ltr ui`` on ``store`` (base URL, its lines), for the tests that only read."""
    base, lines, _ = module_ui.serving()
    return base, lines


def _runs(base: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    experiment = _api(base, "experiments/get-by-name?experiment_name=ltr")["experiment"]
    found = _api(base, "runs/search", {"experiment_ids": [experiment["experiment_id"]], "max_results": 100})
    return experiment, found["runs"]


def _tags(run: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def test_the_ui_opens_on_the_runs_table_with_the_headline_columns(ui: tuple[str, list[str]]) -> None:
    base, lines = ui
    experiment, _ = _runs(base)
    tags = {t["key"]: t["value"] for t in experiment["tags"]}
    assert tags["mlflow.experimentKind"] == "custom_model_development"  # not the GenAI screens
    view = json.loads(tags["mlflow.sharedViewState.ltr"])
    columns = [c.removeprefix("metrics.`").removesuffix("`") for c in view["selectedColumns"]]
    assert columns[0] == "valid/ndcg_at_10"
    # the last run was a plain one: the columns of every kind of run are still there, in order
    for kind, keys in {
        "plain": ["valid/ndcg_at_10", "test/ndcg_at_10", "test/ndcg_at_10/len_1-10", "test/ndcg_at_10/len_51_plus", "best_iteration"],
        "re-ranked": ["valid/ndcg_at_10", "test/ndcg_at_10/len_51_plus", "valid/pre_rerank/ndcg_at_10", "valid/ild_at_10"],
        "click": ["test/ndcg_at_10/len_51_plus", "valid/online/ctr"],
        "cv": ["valid/ndcg_at_10", "test/ndcg_at_10", "valid/ndcg_at_10/sd", "test/ndcg_at_10/sd", "test/ndcg_at_10/len_1-10/sd"],
        "sweep": ["sweep/best/valid/ndcg_at_10", "best_iteration"],
    }.items():
        assert [c for c in columns if c in keys] == keys, kind
    # the headline and stratum columns come first, before any kind's own
    assert columns[:5] == ["valid/ndcg_at_10", "test/ndcg_at_10", *(f"test/ndcg_at_10/len_{s}" for s in ("1-10", "11-50", "51_plus"))]
    assert view["columnOrder"] == view["selectedColumns"]
    assert len(set(columns)) == len(columns)
    assert set(view["columnWidths"]) >= set(view["selectedColumns"])
    # the chart view: our curves first (valid, then test), LightGBM's own in a section saying so
    assert [s["uuid"] for s in view["compareRunSections"][:3]] == ["ltr-curves-valid", "ltr-curves-test", "ltr-curves-lightgbm"]
    assert "LightGBM's own" in view["compareRunSections"][2]["name"]
    charts = {c["metricKey"]: c for c in view["compareRunCharts"]}
    curves = {m["key"] for run in _runs(base)[1] for m in run["data"].get("metrics", []) if m["key"].startswith("iter/")}
    assert curves <= set(charts)  # every curve of every run has its chart, titled for what it is
    assert charts["iter/valid/ndcg_at_10"]["metricSectionId"] == "ltr-curves-valid"
    assert charts["iter/valid/pre_rerank/ndcg_at_10"]["displayName"] == "valid nDCG@10, model's order before re-ranking"
    assert charts["iter/test/lightgbm/ndcg_at_10"]["metricSectionId"] == "ltr-curves-lightgbm"
    # ltr ui prints the link that opens that view in model-training mode
    link = f"{base}/#/experiments/{experiment['experiment_id']}/runs?viewStateShareKey=ltr&workflowType=machine_learning"
    assert f"  ltr: {link}\n" in lines
    with urllib.request.urlopen(base, timeout=30) as page:  # the UI itself is served
        assert page.status == 200


def test_runs_have_distinct_readable_names_and_descriptions(ui: tuple[str, list[str]]) -> None:
    base, _ = ui
    _, runs = _runs(base)
    names = sorted(r["info"]["run_name"] for r in runs)
    assert len(set(names)) == len(names) == 10
    # what varies leads; a sweep's jobs say only what their sweep varies
    assert {"lambdarank", "rank_xendcg", "rerank=diversify (lambdarank)", "data=synthetic_clicks (lambdarank)"} <= set(names)
    assert {"nl=7", "nl=15", "seed=1", "seed=2"} <= set(names)
    assert "nl=7,15 debug=default" in names  # the parent: what varies first
    for run in runs:
        tags = _tags(run)
        assert tags["mlflow.source.name"] in {"ltr train", "ltr train -m"}
        assert tags["mlflow.user"]
        assert len(tags["mlflow.source.git.commit"]) == 40
        params = {p["key"]: p["value"] for p in run["data"].get("params", [])}
        assert "None" not in params.values()
        description = tags["mlflow.note.content"]
        if tags.get("ltr.cv.fold_key"):  # cross-validation: the fold means, no fold called best
            assert run["info"]["run_name"] == "debug=default (lambdarank, 2-fold CV)"  # not its fold list
            assert description.startswith("**test nDCG@10 ")  # the lead the page's box shows whole
            assert description.partition("\n\n")[2].startswith("### lambdarank on synthetic: mean ± sd over 2 folds (seed = 1, 2)")
            assert "best" not in description.lower()
            assert "ltr.sweep.best_run_id" not in tags
        elif tags.get("ltr.role") == "sweep":
            best_id = tags["ltr.sweep.best_run_id"]
            assert f"(#/experiments/{run['info']['experiment_id']}/runs/{best_id}?workflowType=machine_learning)" in description
            assert description.startswith("**Best run**: [nl=")
        else:
            assert description.startswith("**valid nDCG@10 ")  # the lead, then the summary
            assert description.partition("\n\n")[2].startswith("### ")
            assert "| 51+ |" in description  # the stratified table
            assert "Beside LightGBM's own metric" in description
            reranked = tags["mlflow.runName"] == "rerank=diversify (lambdarank)"
            assert ("re-ranked (rerank=diversify, alpha=0.3" in description.splitlines()[2]) == reranked
            assert ("#### Clicks" in description) == (tags["mlflow.runName"] == "data=synthetic_clicks (lambdarank)")
            if reranked:  # before -> after per stratum, from the run's own metrics
                metrics = _metrics(run)
                before, after = metrics["valid/pre_rerank/ndcg_at_10/len_11-50"], metrics["valid/ndcg_at_10/len_11-50"]
                assert f"| 11-50 | {before:.4f} → {after:.4f} ({after - before:+.4f}) |" in description


def _metrics(run: dict[str, Any]) -> dict[str, float]:
    return {m["key"]: m["value"] for m in run["data"]["metrics"]}


def test_every_curve_ends_on_the_value_of_its_key(ui: tuple[str, list[str]]) -> None:
    """For every run and every ``iter/<key>`` curve: its last point is ``<key>``, bit for bit."""
    base, _ = ui
    _, runs = _runs(base)
    n_curves = 0
    for run in runs:
        metrics = _metrics(run)
        for name in sorted(k for k in metrics if k.startswith("iter/")):
            history = _api(base, f"metrics/get-history?run_id={run['info']['run_id']}&metric_key={name}")["metrics"]
            steps = sorted(history, key=lambda m: m["step"])
            assert [m["step"] for m in steps] == list(range(1, int(metrics["best_iteration"]) + 1)), name
            assert steps[-1]["value"] == metrics[name.removeprefix("iter/")], (run["info"]["run_name"], name)
            n_curves += 1
        if _tags(run).get("ltr.role") != "sweep" and "valid/ild_at_10" not in metrics:
            # early stopping's pick: the best round of our curve of the model's order
            history = _api(base, f"metrics/get-history?run_id={run['info']['run_id']}&metric_key=iter/valid/ndcg_at_10")["metrics"]
            assert max(m["value"] for m in history) == metrics["valid/ndcg_at_10"]
    assert n_curves >= 8 * 8  # 8 trained runs, valid and test, ours and LightGBM's, k = 5 and 10
    (reranked,) = [r for r in runs if r["info"]["run_name"] == "rerank=diversify (lambdarank)"]
    curves = {k for k in _metrics(reranked) if k.startswith("iter/")}
    assert "iter/valid/pre_rerank/ndcg_at_10" in curves  # the model's order, named so
    assert "iter/valid/ndcg_at_10" not in curves  # the final order is not computed per round


def test_parents_show_their_result_in_the_headline_columns(ui: tuple[str, list[str]]) -> None:
    base, _ = ui
    _, runs = _runs(base)
    by_id = {r["info"]["run_id"]: r for r in runs}
    (cv,) = [r for r in runs if _tags(r).get("ltr.cv.fold_key") == "seed"]
    folds = [_metrics(r) for r in runs if _tags(r).get("mlflow.parentRunId") == cv["info"]["run_id"]]
    assert len(folds) == 2
    metrics = _metrics(cv)
    for key in ("test/ndcg_at_10", "valid/ndcg_at_10", "test/ndcg_at_10/len_11-50"):
        values = np.array([f[key] for f in folds])
        assert metrics[key] == pytest.approx(values.mean(), rel=1e-15, abs=1e-15)
        assert metrics[f"{key}/sd"] == pytest.approx(values.std(ddof=1), rel=1e-12, abs=1e-15)
    assert metrics["cv/n_folds"] == 2
    assert not any(key.startswith(("cv/test", "cv/valid", "sweep/best")) for key in metrics)  # no fold is "best"
    # every other key's mean and sd: one table artifact
    table = pd.read_json(_artifact(base, cv["info"]["run_id"], "report/cv_metrics.json"), orient="split")
    row = table.set_index("key").loc["test/err_at_10"]  # MLflow's JSON tables keep 10 digits
    assert row["mean"] == pytest.approx(np.mean([f["test/err_at_10"] for f in folds]), rel=0, abs=1e-10)
    assert (table["n_folds"] == 2).all()

    (sweep,) = [r for r in runs if _tags(r).get("ltr.role") == "sweep" and r is not cv]
    best = _metrics(by_id[_tags(sweep)["ltr.sweep.best_run_id"]])
    shown = _metrics(sweep)
    for key in ("valid/ndcg_at_10", "test/ndcg_at_10", "test/ndcg_at_10/len_1-10", "best_iteration"):
        assert shown[key] == best[key]  # the best child's values, in the same columns
    assert shown["sweep/best/valid/ndcg_at_10"] == best["valid/ndcg_at_10"]


def _artifact(base: str, run_id: str, path: str) -> io.BytesIO:
    with urllib.request.urlopen(f"{base}/get-artifact?path={path}&run_uuid={run_id}", timeout=30) as response:
        return io.BytesIO(response.read())


def test_per_query_tables_are_tables_the_ui_shows(ui: tuple[str, list[str]]) -> None:
    base, _ = ui
    _, runs = _runs(base)
    run = next(r for r in runs if r["info"]["run_name"] == "lambdarank")
    for split in ("valid", "test"):
        shown = pd.read_json(_artifact(base, run["info"]["run_id"], f"per_query/{split}.json"), orient="split")
        stored = pd.read_parquet(_artifact(base, run["info"]["run_id"], f"per_query/{split}.parquet"))
        assert list(shown.columns) == list(stored.columns)
        assert len(shown) == len(stored) == _metrics(run)[f"{split}/n_queries"]
        assert np.allclose(shown["ndcg_at_10"], stored["ndcg_at_10"], rtol=0, atol=1e-10)  # 10 digits in JSON
    logged = json.loads(_tags(run)["mlflow.loggedArtifacts"])  # what makes the UI show them as tables
    assert {"path": "per_query/test.json", "type": "table"} in logged


def test_sigterm_stops_the_ui_and_its_server(module_ui: _ModuleUI) -> None:
    """The module's UI, stopped (last in the file: the tests before it read it; a test run after
    it gets a new one)."""
    base, _, proc = module_ui.serving()
    assert proc.stderr is not None
    proc.send_signal(15)  # SIGTERM to ltr ui alone, as `kill PID` does
    assert proc.wait(timeout=120) == 143  # stopping the server's workers takes longer on a busy machine
    assert "ltr: terminated (SIGTERM)" in proc.stderr.read()
    with pytest.raises(urllib.error.URLError, match="Connection refused"):  # the server went with it
        urllib.request.urlopen(f"{base}/health", timeout=5)
