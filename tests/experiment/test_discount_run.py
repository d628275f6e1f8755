"""``eval.discount`` in a run: checked before any data, logged, and the curves follow it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.experiment.checks import check_config
from tests.conftest import compose_train


def test_discount_is_a_checked_convention() -> None:
    spec = check_config(compose_train(["eval.discount=jarvelin", "eval.discount_base=3"]))
    assert (spec.conventions.discount, spec.conventions.discount_base) == ("jarvelin", 3.0)
    assert spec.params()["eval.discount"] == "jarvelin"
    assert check_config(compose_train()).conventions.discount == "log2_rank_plus_1"
    with pytest.raises(LtrUserError, match=r"eval: discount_base=1\.0 must be a number > 1"):
        check_config(compose_train(["eval.discount=jarvelin", "eval.discount_base=1"]))


def test_curve_ends_at_the_headline_under_jarvelin(
    small_cfg: Callable[..., DictConfig], tracking_uri: str, tmp_path: Path
) -> None:
    cfg = small_cfg("eval.discount=jarvelin", "fit.num_boost_round=8", "tracking.log_model=false")
    outcome = pipeline.run(cfg)
    assert outcome.run_id is not None
    client = MlflowClient(tracking_uri)
    run = client.get_run(outcome.run_id)
    assert run.data.tags["ltr.eval.discount"] == "jarvelin (base 2)"
    assert run.data.params["eval.discount"] == "jarvelin"
    history = client.get_metric_history(outcome.run_id, "iter/valid/ndcg_at_10")
    best = max(history, key=lambda m: m.step)
    assert best.step == outcome.best_iteration
    assert best.value == run.data.metrics["valid/ndcg_at_10"]
    table = outcome.tables["valid"]
    assert "ap" in table.columns
    assert "recall_at_10" in table.columns
