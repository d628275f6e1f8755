"""The re-ranking step and the simulated online CTR in real runs (real LightGBM, real MLflow store)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.experiment.checks import check_config
from tests.conftest import compose_train

MEASURES = ("ndcg_at_10", "ndcg_at_5", "err_at_10", "p_at_10", "rr", "ild_at_10", "ild_at_5")


def test_alpha_zero_is_the_models_order_and_alpha_trades_ndcg_for_diversity(
    small_cfg: Callable[..., DictConfig], tracking_uri: str
) -> None:
    same = pipeline.run(small_cfg("rerank=diversify", "rerank.alpha=0"))
    m = same.metrics
    for split in ("valid", "test"):
        for key in MEASURES:  # alpha = 0 re-ranks to the order by score: every value unchanged
            assert m[f"{split}/{key}"] == m[f"{split}/pre_rerank/{key}"], (split, key)
    diverse = pipeline.run(small_cfg("rerank=diversify", "rerank.alpha=0.8")).metrics
    for split in ("valid", "test"):
        assert diverse[f"{split}/pre_rerank/ndcg_at_10"] == m[f"{split}/ndcg_at_10"]  # same model
        assert diverse[f"{split}/ild_at_10"] > diverse[f"{split}/pre_rerank/ild_at_10"]
        assert diverse[f"{split}/ndcg_at_10"] < diverse[f"{split}/pre_rerank/ndcg_at_10"]
        assert f"{split}/ild_at_10/len_51_plus" in diverse  # strata, like every measure
    params = MlflowClient(tracking_uri).get_run(str(same.run_id)).data.params
    assert (params["rerank.kind"], params["rerank.alpha"]) == ("diversify", "0.0")


def test_categories_give_coverage_and_alpha_ndcg(small_cfg: Callable[..., DictConfig]) -> None:
    out = pipeline.run(
        small_cfg("rerank=diversify", "rerank.similarity=category", "rerank.category_feature=3",
                  "rerank.category_bins=4", "rerank.alpha=0.9", "tracking=none")
    ).metrics
    assert 0 < out["test/coverage_at_10"] <= 1
    assert 0 < out["test/alpha_ndcg_at_10"] <= 1
    assert out["test/coverage_at_5"] >= out["test/pre_rerank/coverage_at_5"]


def test_runs_without_rerank_log_no_rerank_settings(small_cfg: Callable[..., DictConfig], tracking_uri: str) -> None:
    out = pipeline.run(small_cfg())
    params = MlflowClient(tracking_uri).get_run(str(out.run_id)).data.params
    assert params["rerank.kind"] == "none"
    assert not [k for k in params if k.startswith("rerank.") and k != "rerank.kind"]
    assert not [k for k in out.metrics if "pre_rerank" in k or "ild_at" in k]


def test_online_ctr_on_click_data_is_reproducible_and_inside_its_interval(small_cfg: Callable[..., DictConfig]) -> None:
    cfg = ("data=synthetic_clicks", "tracking=none", "eval.clicks.online_sessions=50")
    a = pipeline.run(small_cfg(*cfg)).metrics
    b = pipeline.run(small_cfg(*cfg)).metrics
    for split in ("valid", "test"):
        ctr, lo, hi = (a[f"{split}/online/{k}"] for k in ("ctr", "ctr_ci_low", "ctr_ci_high"))
        n = a[f"{split}/online/n_sessions"]
        assert lo < ctr < hi
        assert n == 50 * a[f"{split}/n_queries"]
        se = np.sqrt(ctr * (1 - ctr) / n)
        assert abs(ctr - a[f"{split}/online/expected_ctr"]) < 5 * se  # the simulation matches its expectation
        assert a[f"{split}/online/ctr"] == b[f"{split}/online/ctr"]  # seeded: bit for bit


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["rerank=diversify", "rerank.alpha=1.5"], "rerank.alpha=1.5 is out of range: it must be <= 1 for rerank=diversify"),
        (["rerank=diversify", "rerank.similarity=category"], "rerank.similarity=category needs rerank.category_feature"),
        (["rerank=diversify", "rerank.features=[]"], "rerank.features=[] has fewer than 1 item"),
        (["eval.clicks.online_sessions=-1"], "eval.clicks.online_sessions=-1 is out of range: it must be >= 0"),
    ],
)
def test_bad_rerank_settings_fail_before_any_data(overrides: list[str], message: str) -> None:
    cfg = compose_train(overrides)
    with pytest.raises(LtrUserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_config(cfg)


def test_misspelt_rerank_option_is_refused_by_hydra() -> None:
    with pytest.raises(Exception, match="Could not find 'rerank/diversfy'"):
        compose_train(["rerank=diversfy"])


def test_feature_beyond_the_data_is_named(small_cfg: Callable[..., DictConfig]) -> None:
    with pytest.raises(LtrUserError, match=r"rerank.category_feature: column 99 is beyond the data's 17 features"):
        pipeline.run(small_cfg("rerank=diversify", "rerank.category_feature=99", "tracking=none"))
