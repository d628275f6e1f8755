"""What the MLflow UI shows, read through the REST API of a real ``ltr ui`` on 127.0.0.1.

A store with a two-job sweep (a real ``ltr train -m`` process) and two single runs; ``ltr ui``
serves it. Everything is asked of the UI's own server, as the browser asks it: the experiment's
kind (the runs table, not the GenAI screens) and shared view, distinct readable run names,
descriptions holding the stratified table (the sweep's with a link to its best run), the
Source / Created by / Git commit tags, unset params not logged, and the per-round curve at the
best round equal to the run's metric, bit for bit.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.processes import stop_process_group

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SMALL = ["debug=default", "fit.show_progress=false"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(base: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}/api/2.0/mlflow/{path}", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``mlflow.db`` holds a two-job sweep and two single runs."""
    root = tmp_path_factory.mktemp("ui")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    sweep = subprocess.run(
        [sys.executable, "-m", "ltr", "train", "-m", "model.num_leaves=7,15", *SMALL],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    for overrides in ([], ["model=rank_xendcg"]):
        pipeline.run(compose_train([*SMALL, f"tracking.uri={uri}", *overrides]), overrides=overrides)
    return root


@pytest.fixture(scope="module")
def served(store: Path) -> Iterator[tuple[str, list[str], subprocess.Popen[str]]]:
    """``ltr ui`` serving ``store``: (base URL, what it printed up to its links, the process)."""
    port = _free_port()
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


@pytest.fixture
def ui(served: tuple[str, list[str], subprocess.Popen[str]]) -> tuple[str, list[str]]:
    if served[2].poll() is not None:
        pytest.skip("the UI was stopped by an earlier test of this module")
    return served[0], served[1]


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
    assert view["selectedColumns"][:3] == ["metrics.`valid/ndcg_at_10`", "metrics.`test/ndcg_at_10`", "metrics.`test/ndcg_at_10/len_1-10`"]
    assert view["columnOrder"] == view["selectedColumns"]
    # ltr ui prints the link that opens that view in model-training mode
    link = f"{base}/#/experiments/{experiment['experiment_id']}/runs?viewStateShareKey=ltr&workflowType=machine_learning"
    assert f"  ltr: {link}\n" in lines
    with urllib.request.urlopen(base, timeout=30) as page:  # the UI itself is served
        assert page.status == 200


def test_runs_have_distinct_readable_names_and_descriptions(ui: tuple[str, list[str]]) -> None:
    base, _ = ui
    _, runs = _runs(base)
    names = sorted(r["info"]["run_name"] for r in runs)
    assert len(set(names)) == len(names) == 5
    # what varies leads; a sweep's jobs say only what their sweep varies
    assert "lambdarank" in names
    assert "model=rank_xendcg" in names
    assert {"num_leaves=7", "num_leaves=15"} <= set(names)
    assert "num_leaves=7,15 debug=default show_progress=false" in names  # the parent: what varies first
    for run in runs:
        tags = _tags(run)
        assert tags["mlflow.source.name"] in {"ltr train", "ltr train -m"}
        assert tags["mlflow.user"]
        assert len(tags["mlflow.source.git.commit"]) == 40
        params = {p["key"]: p["value"] for p in run["data"].get("params", [])}
        assert "None" not in params.values()
        description = tags["mlflow.note.content"]
        if tags.get("ltr.role") == "sweep":
            best_id = tags["ltr.sweep.best_run_id"]
            assert f"(#/experiments/{run['info']['experiment_id']}/runs/{best_id}?workflowType=machine_learning)" in description
            assert description.startswith("**Best run**: [num_leaves=")
        else:
            assert description.startswith("### ")
            assert "| 51+ |" in description  # the stratified table
            assert "Beside LightGBM's own metric" in description


def test_curves_end_at_the_best_round_on_the_runs_value(ui: tuple[str, list[str]]) -> None:
    base, _ = ui
    _, runs = _runs(base)
    trained = [r for r in runs if _tags(r).get("ltr.role") != "sweep"]
    assert len(trained) == 4
    for run in trained:
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        history = _api(base, f"metrics/get-history?run_id={run['info']['run_id']}&metric_key=iter/valid/ndcg_at_10")["metrics"]
        steps = sorted(history, key=lambda m: m["step"])
        assert [m["step"] for m in steps] == list(range(1, int(metrics["best_iteration"]) + 1))
        assert steps[-1]["value"] == metrics["valid/ndcg_at_10"]  # exactly, through the REST API
        assert metrics["iter/valid/ndcg_at_10"] == metrics["valid/ndcg_at_10"]  # the table's value
        assert max(m["value"] for m in steps) == metrics["valid/ndcg_at_10"]  # early stopping's pick


def test_sigterm_stops_the_ui_and_its_server(served: tuple[str, list[str], subprocess.Popen[str]]) -> None:
    """Last in this module: it stops the module's UI."""
    base, _, proc = served
    assert proc.stderr is not None
    proc.send_signal(15)  # SIGTERM to ltr ui alone, as `kill PID` does
    assert proc.wait(timeout=30) == 143
    assert "ltr: terminated (SIGTERM)" in proc.stderr.read()
    with pytest.raises(urllib.error.URLError, match="Connection refused"):  # the server went with it
        urllib.request.urlopen(f"{base}/health", timeout=5)
