"""A click-log run logs where its exposure ends (``data/exposure_k*``), the figure and the JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.data.feedback.clicks import examination_curve
from ltr.data.load import load_click_splits
from ltr.experiment import run as pipeline
from ltr.metrics.clicks.exposure import exposure_report
from tests.processes import run_ltr


def test_click_run_logs_exposure_keys_and_figure(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, tmp_path: Path
) -> None:
    cfg = small_cfg("data=synthetic_clicks", "fit.num_boost_round=5", "tracking.log_model=false", "eval.k=[3,10]")
    outcome = pipeline.run(cfg)
    assert outcome.run_id is not None
    client = MlflowClient(tracking_uri)
    metrics = client.get_run(outcome.run_id).data.metrics
    # the report of the training log under the configured examination curve, rebuilt here
    clicks = load_click_splits(cfg.data, cfg.split, seed=cfg.seed).clicks.train
    assert clicks.positions is not None
    curve = examination_curve(int(clicks.positions.max()) + 1, eta=float(cfg.data.examination_eta))
    curve = np.maximum(curve, float(cfg.eval.clicks.min_propensity))  # the floor of eval.clicks
    exams = np.bincount(clicks.positions) * curve
    share = np.cumsum(exams) / exams.sum()
    for pct in (50, 80, 95):
        assert metrics[f"data/exposure_k{pct}"] == int(np.flatnonzero(share >= pct / 100 - 1e-12)[0]) + 1
        assert f"data/click_k{pct}" in metrics
    want = exposure_report(clicks.positions, clicks.labels, curve)
    assert metrics["data/exposure_k80"] == want.k_for("exam", 80)
    paths = {a.path for a in client.list_artifacts(outcome.run_id, "data")}
    assert {"data/exposure.png", "data/exposure.json"} <= paths
    got = json.loads(Path(client.download_artifacts(outcome.run_id, "data/exposure.json", str(tmp_path))).read_text())
    assert got["propensity_source"] == "configured"
    assert got["exposure_k80"] == metrics["data/exposure_k80"]
    # recall and AP are logged per stratum beside NDCG
    assert {"test/recall_at_10", "test/ap_at_10/len_11-50", "valid/ap"} <= set(metrics)


@pytest.mark.slow
def test_ltr_train_synthetic_clicks_subprocess(tmp_path: Path) -> None:
    """``ltr train data=synthetic_clicks`` through the real CLI: the exposure keys are logged."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = run_ltr(
        ["train", "data=synthetic_clicks", "data.n_queries=200", "fit.num_boost_round=3", "fit.show_progress=false",
         "tracking.log_model=false", f"tracking.uri={uri}", f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    assert {"data/exposure_k50", "data/exposure_k80", "data/exposure_k95"} <= set(run.data.metrics)
    assert "data/exposure.png" in {a.path for a in client.list_artifacts(run.info.run_id, "data")}
