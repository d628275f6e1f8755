"""model=lambdarank / rank_xendcg / pointwise, and LightGBM parameters by override."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from omegaconf import DictConfig

from ltr.cli.main import main
from ltr.data.load import load_splits
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.experiment.checks import check_config
from ltr.training.local import TrainResult, fit_ranker
from tests.conftest import compose_train


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
        ("+model.params.monotone_constraints=[1,1]", "model.params.monotone_constraints has 2 entries but the data has 17 features"),
        ("+model.params.feature_penalty=[1,1]", "model.params.feature_penalty has 2 entries but the data has 17 features"),
        ("+model.params.interaction_constraints=[[0,17]]", "feature index 17 is beyond the data's 17 features"),
        ("+model.params.forcedsplits_filename=/nonexist.json", "forcedsplits_filename=/nonexist.json: the file does not exist"),
    ],
)
def test_bad_model_settings_fail_before_a_run_exists(
    small_cfg: Callable[..., DictConfig], unmade_store: str, tmp_path: Path, override: str, message: str
) -> None:
    with pytest.raises(LtrUserError, match=message):
        pipeline.run(small_cfg(override, unmade_store))
    assert not (tmp_path / "unmade" / "mlflow.db").exists()


def _steps_along(result: TrainResult, rows: NDArray[np.float32], column: int) -> NDArray[np.float64]:
    """Per row of ``rows``, the model's score differences as feature ``column`` sweeps its range
    in 40 increasing steps (the other features held)."""
    grid = np.linspace(rows[:, column].min() - 1, rows[:, column].max() + 1, 40, dtype=np.float32)
    swept = np.repeat(rows[:, None, :], grid.size, axis=1)
    swept[:, :, column] = grid
    scores = result.booster.predict(swept.reshape(-1, rows.shape[1])).reshape(rows.shape[0], grid.size)
    return np.diff(scores, axis=1)


def test_per_feature_params_of_the_data_width_are_applied(small_cfg: Callable[..., DictConfig]) -> None:
    """monotone_constraints and feature_contri with one entry per feature (17 on the synthetic
    data) train, and LightGBM applies them."""
    cfg = small_cfg()
    splits = load_splits(cfg.data, cfg.split, seed=cfg.seed)
    n = splits.train.n_features
    assert n == 17
    rows = splits.test.features[:50]
    free = fit_ranker(splits, cfg.model, cfg.fit, eval_at=[10], seed=cfg.seed)
    # signal_0 raises relevance: unconstrained, the scores rise along it
    assert (_steps_along(free, rows, 0) > 0).any()
    # -1: decreasing in signal_0, +1: increasing in signal_1, for every row and step
    monotone = [-1, 1] + [0] * (n - 2)
    model = small_cfg(f"+model.params.monotone_constraints={monotone}").model
    constrained = fit_ranker(splits, model, cfg.fit, eval_at=[10], seed=cfg.seed)
    assert (_steps_along(constrained, rows, 0) <= 0).all()
    assert (_steps_along(constrained, rows, 1) >= 0).all()
    assert (_steps_along(constrained, rows, 1) > 0).any()  # signal_1 is used, upwards only
    # feature_penalty (feature_contri) 0 on the 8 informative features: no split on them
    penalty = [0] * 8 + [1] * (n - 8)
    model = small_cfg(f"+model.params.feature_penalty={penalty}").model
    penalised = fit_ranker(splits, model, cfg.fit, eval_at=[10], seed=cfg.seed)
    assert free.booster.feature_importance()[:8].sum() > 0
    assert penalised.booster.feature_importance()[:8].tolist() == [0] * 8
    assert penalised.booster.feature_importance()[8:].sum() > 0


def test_per_feature_length_is_refused_before_the_data_is_read_when_the_config_fixes_the_width() -> None:
    with pytest.raises(LtrUserError) as info:
        check_config(compose_train(["+model.params.mc=[1,1]", "data.n_informative=3", "data.n_noise=1"]))
    assert str(info.value).startswith(
        "model.params.mc has 2 entries but the data has 5 features (data.n_informative + data.n_noise + 1)"
    )


def test_per_feature_length_is_refused_once_a_file_is_read(unmade_store: str, tmp_path: Path) -> None:
    """A text file's width is known once it is read: refused then, before any run exists."""
    train = tmp_path / "train.txt"
    train.write_text("".join(f"{(q + d) % 3} qid:{q} 1:{d / 10:.2f} 2:{q / 100:.2f}\n" for q in range(20) for d in range(5)))
    base = ["data=svmlight", f"data.train={train}", f"data.cache_dir={tmp_path / 'cache'}", "fit.show_progress=false", unmade_store]
    cfg = compose_train([*base, "+model.params.monotone_constraints=[1,1,1]"])
    check_config(cfg)  # the width is not in the config
    with pytest.raises(LtrUserError, match=r"^model.params.monotone_constraints has 3 entries but the data has 2 features; give"):
        pipeline.run(cfg)
    assert not (tmp_path / "unmade" / "mlflow.db").exists()
    outcome = pipeline.run(compose_train([*base, "+model.params.monotone_constraints=[1,0]", "tracking=none"]))
    assert outcome.best_iteration >= 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+model.params.min_data_in_bin=0", "LightGBM refuses the model settings"),  # LightGBM's own refusal
        (f"+model.params.max_bin_by_feature={[255] * 16}", "has 16 entries but the data has 17 features"),
    ],
)
def test_a_refused_setting_prints_no_lightgbm_line(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, message: str
) -> None:
    """LightGBM's C++ code prints "[LightGBM] [Fatal] ..." to the console itself before it raises:
    the refusal is ltr's one line only."""
    monkeypatch.chdir(tmp_path)
    code = main(["train", "data.n_queries=300", "tracking=none", "fit.show_progress=false", override])
    err = capfd.readouterr().err
    assert code == 2
    assert "[LightGBM]" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ltr: error: ")
    assert message in lines[0]
