"""Issue 48 in a training run: position weights logged and followed by the curves, the K note in
the run's advice, the parts of the data fingerprinted apart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.experiment import run as pipeline


def test_position_weights_and_the_k_note_in_a_run(small_cfg: Callable[..., DictConfig], tracking_uri: str) -> None:
    cfg = small_cfg("eval.position_weights=[1.0,0.7,0.5]", "eval.k=[5,100000]", "fit.num_boost_round=8", "tracking.log_model=false")
    outcome = pipeline.run(cfg)
    assert outcome.run_id is not None
    client = MlflowClient(tracking_uri)
    run = client.get_run(outcome.run_id)
    assert run.data.tags["ltr.eval.discount"] == "weights 1,0.7,0.5"
    assert run.data.params["eval.discount"] == "weights 1,0.7,0.5"
    assert {"ltr.data.eval_fingerprint", "ltr.data.eval_fingerprint.test", "ltr.data.train_fingerprint"} <= set(run.data.tags)
    # positions 4 and 5 weigh 0: nDCG@5 is nDCG@3 under these weights
    table = outcome.tables["test"]
    assert (table["dcg_at_5"] == table["dcg_at_100000"]).all()
    history = client.get_metric_history(outcome.run_id, "iter/valid/ndcg_at_100000")
    assert max(history, key=lambda m: m.step).value == run.data.metrics["valid/ndcg_at_100000"]
    summary = client.download_artifacts(outcome.run_id, "report/summary.md")
    text = Path(summary).read_text(encoding="utf-8")
    assert "K=100000 exceeds the longest list" in text
