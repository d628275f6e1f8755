"""``notebooks/compare_runs.ipynb`` runs as a user runs it: ``jupyter nbconvert --to html
--execute`` on the notebook where it is, parameters untouched; the store is found as ``ltr
compare`` finds it (here ``$LTR_TRACKING_URI``, the test's store of two sweep-like runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ltr.experiment import run as pipeline
from tests.conftest import compose_train

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "compare_runs.ipynb"
#: Run names as an Optuna sweep makes them (full-precision floats): the figures must stay legible.
NAMES = (
    "model.learning_rate=0.012345678901234567_model.num_leaves=7_model.min_child_samples=20",
    "model.learning_rate=0.18765432109876543_model.num_leaves=3_model.min_child_samples=20",
)
SMALL = ("data.n_queries=300", "fit.num_boost_round=20", "fit.show_progress=false", "fit.num_threads=1")


def test_notebook_outputs_are_stripped() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


@pytest.fixture(scope="module")
def sweep_like_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("notebook_store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    for name in NAMES:
        leaves = re.search(r"num_leaves=(\d+)", name)
        rate = re.search(r"learning_rate=([\d.]+)", name)
        assert leaves is not None
        assert rate is not None
        overrides = [*SMALL, f"model.num_leaves={leaves[1]}", f"model.learning_rate={rate[1]}",
                     f"tracking.uri={uri}", f"tracking.run_name='{name}'"]  # fmt: skip
        pipeline.run(compose_train(overrides), overrides=overrides, print_summary=False)
    return uri


def test_notebook_executes_in_place_with_nbconvert(sweep_like_store: str, tmp_path: Path) -> None:
    env = {**os.environ, "LTR_TRACKING_URI": sweep_like_store}
    env.pop("MLFLOW_TRACKING_URI", None)
    before = NOTEBOOK.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute", str(NOTEBOOK),
         "--output-dir", str(tmp_path), "--ExecutePreprocessor.timeout=300"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert NOTEBOOK.read_bytes() == before  # executed where it is, and left as it was
    assert "TqdmWarning" not in done.stderr
    html = (tmp_path / "compare_runs.html").read_text()
    assert "TqdmWarning" not in html
    assert "Traceback" not in html
    assert html.count('<img alt="No description') == 2  # per-stratum NDCG with CIs; the IDCG histograms
    # the table holds the runs' whole names; the two latest runs were compared, the older the baseline
    assert NAMES[0] in html
    assert NAMES[1] in html
    assert html.index(NAMES[0]) < html.index(NAMES[1])
