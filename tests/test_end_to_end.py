"""The default experiment end to end: real configs, real LightGBM, a real sqlite MLflow store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.data.load import load_splits
from ltr.experiment import run as pipeline
from tests.conftest import FORCED_SPLIT_NO_ROW_TAKES
from tests.processes import run_ltr
from tests.reference import ndcg_at_k

STRATA = {"len_1-10": (1, 10), "len_11-50": (11, 50), "len_51_plus": (51, 10**9)}


def _only_run(uri: str) -> tuple[MlflowClient, object]:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    return client, runs[0]


def test_logged_metrics_equal_an_independent_recomputation(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, tmp_path: Path
) -> None:
    cfg = small_cfg()
    outcome = pipeline.run(cfg, overrides=["data.n_queries=300"])
    client, run = _only_run(tracking_uri)
    assert run.info.status == "FINISHED"
    assert run.info.run_id == outcome.run_id
    metrics = run.data.metrics

    # Re-create the data and score it with the model the run logged, then recompute NDCG with
    # the plain reference implementation, query by query.
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    model_file = client.download_artifacts(run.info.run_id, "model_text/model.txt", str(tmp_path))
    booster = lgb.Booster(model_file=model_file)
    for split in ("valid", "test"):
        data = getattr(splits, split)
        scores = booster.predict(data.features)
        lengths = data.group_sizes
        for k in (5, 10):
            per_query = np.array(
                [
                    ndcg_at_k(data.labels[a:b].tolist(), scores[a:b].tolist(), k)
                    for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True)
                ]
            )
            assert metrics[f"{split}/ndcg_at_{k}"] == pytest.approx(per_query.mean(), abs=1e-12)
            for key, (low, high) in STRATA.items():
                in_stratum = (lengths >= low) & (lengths <= high)
                assert metrics[f"{split}/n_queries/{key}"] == in_stratum.sum()
                assert metrics[f"{split}/ndcg_at_{k}/{key}"] == pytest.approx(
                    per_query[in_stratum].mean(), abs=1e-12
                )
        assert metrics[f"{split}/n_queries"] == data.n_queries

    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "idcg/test")}
    assert {"idcg/test/hist_at_10.png", "idcg/test/hist_at_10.json"} <= artifacts
    assert {a.path for a in client.list_artifacts(run.info.run_id, "config")} == {"config/config.yaml", "config/overrides.yaml"}
    assert run.data.params["model.num_leaves"] == "7"
    assert run.data.tags["ltr.eval.ties"] == "average"
    assert run.data.tags["ltr.objective"] == "lambdarank"
    # iteration curves: one point per boosting round up to the best round, where the model ends
    for split in ("valid", "test"):
        history = client.get_metric_history(run.info.run_id, f"iter/{split}/ndcg_at_10")
        assert [m.step for m in history] == list(range(1, outcome.best_iteration + 1))
        # the curve is our nDCG (the run's conventions): at the best round it IS the run's metric,
        # bit for bit, and the runs table (last value) shows it; early stopping picked its maximum
        assert history[-1].value == metrics[f"{split}/ndcg_at_10"]
        assert run.data.metrics[f"iter/{split}/ndcg_at_10"] == metrics[f"{split}/ndcg_at_10"]
        # LightGBM's own curve is beside it, under a name that says so
        lightgbm = client.get_metric_history(run.info.run_id, f"iter/{split}/lightgbm/ndcg_at_10")
        assert [m.step for m in lightgbm] == list(range(1, outcome.best_iteration + 1))
        assert lightgbm[-1].value == metrics[f"{split}/lightgbm/ndcg_at_10"]
    valid_curve = [m.value for m in client.get_metric_history(run.info.run_id, "iter/valid/ndcg_at_10")]
    assert valid_curve.index(max(valid_curve)) == len(valid_curve) - 1  # the first maximum ends it


def test_same_config_twice_gives_bit_identical_metrics(small_cfg: Callable[..., DictConfig]) -> None:
    first = pipeline.run(small_cfg("tracking=none"))
    second = pipeline.run(small_cfg("tracking=none"))
    def results(metrics: dict[str, float]) -> dict[str, float]:  # every metric but wall-clock times
        return {k: v for k, v in metrics.items() if not k.endswith("_seconds")}

    assert results(first.metrics) == results(second.metrics)  # exact float equality, every key
    assert len(results(first.metrics)) > 100
    assert first.run_id is None


def test_failure_after_run_start_marks_run_failed(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, tmp_path: Path
) -> None:
    from ltr.errors import LtrUserError

    # a forced split no row can take: every check passes (the file is LightGBM's format, its features
    # exist), and LightGBM stops inside training, on the data, after the run started
    splits = tmp_path / "forced.json"
    splits.write_text(json.dumps(FORCED_SPLIT_NO_ROW_TAKES))
    cfg = small_cfg(f"+model.params.forcedsplits_filename={splits}")
    with pytest.raises(LtrUserError, match="LightGBM rejected the training setup: Check failed"):
        pipeline.run(cfg)
    _, run = _only_run(tracking_uri)
    assert run.info.status == "FAILED"
    assert "right_count" in run.data.tags["ltr.error"]
    assert " at /" not in run.data.tags["ltr.error"]  # LightGBM's source path is not shown
    # what it was asked to do is logged as it started: the config and the overrides
    client = MlflowClient(tracking_uri)
    config = Path(client.download_artifacts(run.info.run_id, "config/config.yaml")).read_text()
    assert f"forcedsplits_filename: {splits}" in config
    assert [f.path for f in client.list_artifacts(run.info.run_id, "config")] == ["config/config.yaml", "config/overrides.yaml"]


@pytest.mark.slow
def test_cli_typo_fails_clearly_and_logs_nothing(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    proc = run_ltr(["train", "model.num_leafs=7", f"tracking.uri=sqlite:///{db}"], cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert "num_leafs" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not db.exists(), "no MLflow store (so no run) may be created"


@pytest.mark.slow
def test_cli_debug_run_prints_table_and_run_id(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    proc = run_ltr(["train", "debug=default", f"tracking.uri=sqlite:///{db}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "nDCG@10" in proc.stdout
    assert "51+" in proc.stdout
    _, run = _only_run(f"sqlite:///{db}")
    assert run.info.run_id in proc.stdout
    assert run.info.status == "FINISHED"


def test_eval_lightgbm_preset_reproduces_lightgbm_own_metric(small_cfg: Callable[..., DictConfig]) -> None:
    """With LightGBM's conventions our value equals the one LightGBM recorded at the best round."""
    outcome = pipeline.run(small_cfg("eval=lightgbm", "tracking=none"))
    for split in ("valid", "test"):
        for k in (5, 10):
            ours = outcome.metrics[f"{split}/ndcg_at_{k}"]
            theirs = outcome.metrics[f"{split}/lightgbm/ndcg_at_{k}"]
            assert ours == pytest.approx(theirs, abs=1e-9)
    default = pipeline.run(small_cfg("tracking=none"))
    assert default.metrics["test/ndcg_at_10"] < outcome.metrics["test/ndcg_at_10"]
