"""model=lambdarank / rank_xendcg / pointwise, and LightGBM parameters by override."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline


@pytest.mark.parametrize(("model", "objective"), [("lambdarank", "lambdarank"), ("rank_xendcg", "rank_xendcg"), ("pointwise", "regression")])
def test_each_model_option_trains_and_evaluates_the_same_way(
    small_cfg: Callable[..., DictConfig], model: str, objective: str
) -> None:
    outcome = pipeline.run(small_cfg(f"model={model}", "tracking=none"))
    assert outcome.metrics["test/n_queries"] == 60
    assert 0.3 < outcome.metrics["test/ndcg_at_10"] < 1.0
    # LightGBM reported NDCG on the evaluation sets for every objective, pointwise included
    assert "valid/lightgbm/ndcg_at_10" in outcome.metrics


def test_model_params_pass_through_to_lightgbm(small_cfg: Callable[..., DictConfig]) -> None:
    from ltr.training.local import lightgbm_params

    cfg = small_cfg("+model.params.path_smooth=0.5", "model.lambdarank_truncation_level=13", "model.label_gain=[0,1,3,7,15]")
    params = lightgbm_params(cfg.model, seed=1, num_threads=0)
    assert params["path_smooth"] == 0.5
    assert params["lambdarank_truncation_level"] == 13
    assert params["label_gain"] == [0, 1, 3, 7, 15]
    outcome = pipeline.run(cfg.copy(), overrides=[])  # LightGBM accepts them
    assert outcome.best_iteration >= 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+model.params.num_leafs=3", "model.params.num_leafs is not a LightGBM parameter; did you mean"),
        ("+model.params.seed=3", "set by ltr"),
        ("model.objective=regression", "not a ranking objective"),
        ("model.learning_rate=-1", "model.learning_rate=-1 is out of range: it must be > 0"),
        ("model.label_gain=[0,1]", "model.label_gain has 2 entries"),
        ("+model.params.min_data_in_bin=0", "LightGBM refuses the model settings"),
    ],
)
def test_bad_model_settings_fail_before_a_run_exists(
    small_cfg: Callable[..., DictConfig], unmade_store: str, tmp_path: Path, override: str, message: str
) -> None:
    with pytest.raises(LtrUserError, match=message):
        pipeline.run(small_cfg(override, unmade_store))
    assert not (tmp_path / "unmade" / "mlflow.db").exists()
