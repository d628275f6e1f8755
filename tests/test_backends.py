"""model=xgboost and model=catboost beside LightGBM: one run path, one set of metric keys, the
model in its library's MLflow flavour, ``ltr predict`` on it, and their settings refused before
any run exists."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import DictConfig

from ltr.cli.main import main
from ltr.config.compose import CONF_DIR
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from tests.conftest import compose_train, made_store

pytest.importorskip("xgboost")
pytest.importorskip("catboost")

BACKENDS = ("xgboost", "catboost")


def _keys(outcome: pipeline.RunOutcome, uri: str) -> set[str]:
    from mlflow import MlflowClient

    assert outcome.run_id is not None
    return set(MlflowClient(uri).get_run(outcome.run_id).data.metrics)


#: ``small_cfg``'s overrides, for the module's shared runs.
SMALL = ("data.n_queries=300", "fit.num_boost_round=40", "fit.early_stopping_rounds=10", "fit.show_progress=false", "model.num_leaves=7")


#: The module's run of each library: its ``model=...`` (CatBoost's with 20 rounds, the slowest).
OWN = {model: (f"model={model}",) for model in ("lambdarank", *BACKENDS)} | {"catboost": ("model=catboost", "fit.num_boost_round=20")}


@dataclass(frozen=True)
class BackendRuns:
    """One logged run of each library (``small_cfg``'s config and :data:`OWN`) in one store."""

    uri: str
    outcomes: dict[str, pipeline.RunOutcome]  # by model: lambdarank (LightGBM), xgboost, catboost


@pytest.fixture(scope="module")
def backend_runs(tmp_path_factory: pytest.TempPathFactory) -> BackendRuns:
    """The runs the tests here only read: three logged runs are the costly part."""
    root = tmp_path_factory.mktemp("backends")
    uri = made_store(root / "mlflow.db")
    outcomes = {
        model: pipeline.run(compose_train([*SMALL, *OWN[model], f"tracking.uri={uri}"]), print_summary=False)
        for model in ("lambdarank", *BACKENDS)
    }
    return BackendRuns(uri, outcomes)


def test_a_backend_run_logs_every_key_of_a_lightgbm_run_and_ships_its_flavour(backend_runs: BackendRuns, tmp_path: Path) -> None:
    """Every metric key a LightGBM run logs (valid and test, strata, IDCG, LightGBM's own
    conventions and their gap, curves), plus the library's own ndcg@k and the parts of its gap
    to ours, which add up to it; the model logged in the
    library's MLflow flavour predicts what the run evaluated, and ``ltr predict`` on the run's
    test split reproduces its test/ndcg_at_10 to 1e-12."""
    lightgbm = _keys(backend_runs.outcomes["lambdarank"], backend_runs.uri)
    for model in BACKENDS:
        _same_keys_and_predictions(backend_runs.outcomes[model], backend_runs.uri, tmp_path, model, lightgbm)


def _same_keys_and_predictions(other: pipeline.RunOutcome, tracking_uri: str, tmp_path: Path, model: str, theirs: set[str]) -> None:
    ours = _keys(other, tracking_uri)
    assert theirs <= ours
    parts = ("zero_idcg", "ties", "gain", "discount")
    assert sorted(ours - theirs) == sorted(
        [f"{prefix}{split}/{model}/ndcg_at_{k}" for prefix in ("", "iter/") for split in ("valid", "test") for k in (5, 10)]
        + [f"{split}/{model}_gap/ndcg_at_10/{part}" for split in ("valid", "test") for part in parts]
    )
    metrics = other.metrics
    for split in ("valid", "test"):  # ours + the parts = the library's own value, as the library computed it
        total = metrics[f"{split}/ndcg_at_10"] + sum(metrics[f"{split}/{model}_gap/ndcg_at_10/{part}"] for part in parts)
        assert total == pytest.approx(metrics[f"{split}/{model}/ndcg_at_10"], abs=1e-12)
        assert metrics[f"{split}/{model}_gap/ndcg_at_10/zero_idcg"] > 0  # the data has lists with nothing relevant
    assert (metrics[f"test/{model}_gap/ndcg_at_10/gain"] != 0) == (model == "catboost")  # its gain is the label
    # the library's conventions are not ours: an all-zero list scores 1 in LightGBM's
    assert metrics["test/lightgbm/ndcg_at_10"] > metrics["test/ndcg_at_10"]
    # early stopping watched our nDCG: its best round is the best of our curve
    assert other.objective_value == metrics["valid/ndcg_at_10"]
    assert 1 <= other.best_iteration <= metrics["n_rounds"] <= 40

    import mlflow

    assert other.run_id is not None
    mlflow.set_tracking_uri(tracking_uri)
    info = mlflow.models.get_model_info(f"runs:/{other.run_id}/model")
    assert model in info.flavors
    assert info.signature is not None

    per_query = tmp_path / f"{model}.parquet"
    code = main(["predict", other.run_id, "--split", "test", "--per-query", str(per_query), "--tracking-uri", tracking_uri])
    assert code == 0
    table = pd.read_parquet(per_query)
    assert abs(float(table["ndcg_at_10"].mean()) - metrics["test/ndcg_at_10"]) <= 1e-12


@pytest.mark.parametrize("model", BACKENDS)
def test_a_backend_run_is_deterministic(small_cfg: Callable[..., DictConfig], model: str) -> None:
    """The same seed gives the same metrics, bit for bit (two threads)."""
    cfg = (f"model={model}", "tracking=none", "fit.num_threads=2", "fit.num_boost_round=15")
    first = pipeline.run(small_cfg(*cfg), print_summary=False).metrics
    second = pipeline.run(small_cfg(*cfg), print_summary=False).metrics
    timing = {"train_seconds"}
    assert {k: v for k, v in first.items() if k not in timing} == {k: v for k, v in second.items() if k not in timing}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("model=xgboost", "model.objective=rank:foo"), "model.objective=rank:foo: 'rank:foo' is not one of rank:ndcg, rank:pairwise, rank:map"),
        (("model=xgboost", "+model.params.max_dept=3"), "model.params.max_dept is not an XGBoost parameter"),
        (("model=xgboost", "+model.params.seed=3"), "model.params.seed is set by ltr"),
        (("model=xgboost", "+model.params.max_bin=1"), "XGBoost refuses the model settings: "),
        (("model=catboost", "model.loss=Foo"), "model.loss=Foo: 'Foo' is not one of YetiRank"),
        (("model=catboost", "+model.params.fooo=1"), "CatBoost refuses the model settings: "),
        (("model=catboost", "model.max_depth=17"), "model.max_depth=17 is out of range"),
    ],
)
def test_bad_backend_settings_fail_before_a_run_exists(
    small_cfg: Callable[..., DictConfig], unmade_store: str, tmp_path: Path, overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(LtrUserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pipeline.run(small_cfg(*overrides, unmade_store))
    assert not (tmp_path / "unmade" / "mlflow.db").exists()


@pytest.mark.parametrize("model", BACKENDS)
def test_data_read_by_workers_is_refused_for_another_backend(unmade_store: str, tmp_path: Path, model: str) -> None:
    """Dask workers read ``data=parquet_partitions`` and train LightGBM on it: any other backend
    is one line, before any data is read or store made."""
    overrides = (f"model={model}", "trainer=dask", "data=parquet_partitions", f"data.root={tmp_path}", unmade_store)
    message = (
        "data=parquet_partitions is read and trained on by Dask workers, which train LightGBM models only: "
        f"model={model} needs data this process reads (e.g. data=parquet)"
    )
    with pytest.raises(LtrUserError) as raised:
        pipeline.run(compose_train(list(overrides)))
    assert str(raised.value) == message
    assert not (tmp_path / "unmade" / "mlflow.db").exists()


@pytest.mark.parametrize(
    ("model", "trainer", "used"),
    [("lambdarank", "dask", "dask"), ("xgboost", "dask", "dask"), ("catboost", "dask", "local"), ("catboost", "local", "local")],
)
def test_the_trainer_that_trains_each_backend(model: str, trainer: str, used: str) -> None:
    """``trainer=dask`` is accepted for every backend; CatBoost's trains in this process."""
    from ltr.experiment.checks import check_config
    from ltr.training.config_rules import trains_with

    spec = check_config(compose_train([f"model={model}", f"trainer={trainer}"]))
    assert str(trains_with(spec.config)) == used


def test_catboost_under_trainer_dask_trains_here_and_says_so_once(backend_runs: BackendRuns, caplog: pytest.LogCaptureFixture) -> None:
    """CatBoost has no Dask training: ``trainer=dask`` trains it in this process (the same
    metrics as ``trainer=local``, the module's CatBoost run, bit for bit), says so in one line,
    and the run's ``ltr.trainer`` tag records the trainer used."""
    from mlflow import MlflowClient

    tracking_uri = backend_runs.uri
    local = backend_runs.outcomes["catboost"]
    with caplog.at_level("WARNING"):
        cfg = compose_train([*SMALL, *OWN["catboost"], f"tracking.uri={tracking_uri}", "trainer=dask", "trainer.n_workers=3"])
        dask = pipeline.run(cfg, print_summary=False)
    said = [r.getMessage() for r in caplog.records if "trainer" in r.getMessage()]
    assert said == ["ltr: model=catboost trains in this process: CatBoost has no Dask training; trainer.* settings are not used"]
    timing = {"train_seconds"}
    assert {k: v for k, v in dask.metrics.items() if k not in timing} == {k: v for k, v in local.metrics.items() if k not in timing}
    client = MlflowClient(tracking_uri)
    assert dask.run_id is not None
    assert local.run_id is not None
    run = client.get_run(dask.run_id)
    assert (run.data.tags["ltr.trainer"], run.data.params["trainer.kind"]) == ("local", "dask")
    assert client.get_run(local.run_id).data.tags["ltr.trainer"] == "local"


@pytest.mark.parametrize("model", BACKENDS)
def test_a_backend_without_its_library_names_the_extra(
    small_cfg: Callable[..., DictConfig], unmade_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """The library not installed (as Python's import system reports it): one line naming the
    extra, before any data is read or store made."""
    found = importlib.util.find_spec

    def without(name: str, *args: Any) -> Any:
        return None if name == model else found(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    with pytest.raises(LtrUserError, match=rf"model={model} needs {model}, which is not installed: install the {model} extra \('ltr-harness\[{model}\]', or make install in a clone\)"):
        pipeline.run(small_cfg(f"model={model}", unmade_store))
    assert not (tmp_path / "unmade" / "mlflow.db").exists()


def test_xgboost_parameters_come_from_the_shared_names() -> None:
    """The names the three libraries share map onto XGBoost's own; the library's own keep theirs."""
    from ltr.config.groups.backends import XGBoostModelConfig
    from ltr.training.backends.xgboost import xgboost_params

    model = XGBoostModelConfig(learning_rate=0.2, max_depth=4, num_leaves=9, objective="rank:pairwise", lambdarank_num_pair_per_sample=3)
    params = xgboost_params(model, seed=7, num_threads=2, eval_at=[10, 5])
    shared = ("eta", "max_depth", "max_leaves", "objective", "lambdarank_num_pair_per_sample", "seed", "nthread", "eval_metric")
    assert [params[key] for key in shared] == [0.2, 4, 9, "rank:pairwise", 3, 7, 2, ["ndcg@5", "ndcg@10"]]


def test_catboost_parameters_come_from_the_shared_names() -> None:
    from ltr.config.groups.backends import CatBoostModelConfig
    from ltr.training.backends.catboost import catboost_params

    model = CatBoostModelConfig(loss="LambdaMart", learning_rate=0.2, max_depth=4, num_leaves=9, grow_policy="Lossguide")
    params = catboost_params(model, seed=7, num_threads=2, rounds=30, eval_at=[10])
    shared = ("loss_function", "learning_rate", "depth", "max_leaves", "iterations", "random_seed", "thread_count", "custom_metric")
    assert [params[key] for key in shared] == ["LambdaMart", 0.2, 4, 9, 30, 7, 2, ["NDCG:top=10"]]
    assert "max_leaves" not in catboost_params(CatBoostModelConfig(num_leaves=9), seed=1, num_threads=1, rounds=1)


@pytest.mark.parametrize("model", BACKENDS)
def test_contributions_add_up_to_the_scores_as_lightgbm_s_do(model: str) -> None:
    """``predict(pred_contrib=True)``: one column per feature and the expected value last, their
    sum the score (``ltr explain`` reads XGBoost's and CatBoost's models as LightGBM's)."""
    import numpy as np

    rng = np.random.default_rng(0)
    features = rng.normal(size=(300, 4)).astype(np.float32)
    labels = np.clip(np.round(features[:, 0] + 1), 0, 3)
    sizes = np.full(30, 10)
    if model == "xgboost":
        import xgboost as xgb

        from ltr.training.backends.xgboost import XGBoostModel

        dmat = xgb.DMatrix(features, label=labels, feature_names=["a", "b", "c", "d"])
        dmat.set_group(sizes)
        scorer: Any = XGBoostModel(xgb.train({"objective": "rank:ndcg", "nthread": 1, "seed": 0}, dmat, 5))
        tolerance = 1e-5  # XGBoost sums in float32
    else:
        import catboost as cb

        from ltr.training.backends.catboost import CatBoostModel

        pool = cb.Pool(features, label=labels, group_id=np.repeat(np.arange(30), 10), feature_names=["a", "b", "c", "d"])
        fitted = cb.CatBoost({"loss_function": "YetiRank", "iterations": 5, "thread_count": 1, "verbose": False, "allow_writing_files": False})
        scorer = CatBoostModel(fitted.fit(pool))
        tolerance = 1e-12
    contributions = scorer.predict(features, pred_contrib=True)
    assert contributions.shape == (300, 5)
    assert np.max(np.abs(contributions.sum(axis=1) - scorer.predict(features))) <= tolerance
    assert scorer.feature_name() == ["a", "b", "c", "d"]
    assert scorer.feature_importance("split").sum() > 0


@pytest.mark.unit
@pytest.mark.parametrize(("search", "backend"), [("optuna", "lightgbm"), ("optuna_xgboost", "xgboost"), ("optuna_catboost", "catboost")])
def test_each_backend_has_a_search_over_its_own_keys(search: str, backend: str) -> None:
    """``hparams_search=optuna_<backend>`` searches keys its model config has (LightGBM's own search
    names keys XGBoost and CatBoost lack: a search of theirs is refused by its first job)."""
    import dataclasses

    import yaml

    from ltr.config.groups.backends import MODEL_OPTIONS
    from ltr.config.schema import ModelConfig

    params = yaml.safe_load((Path(CONF_DIR) / "hparams_search" / f"{search}.yaml").read_text())["hydra"]["sweeper"]["params"]
    fields = {f.name for f in dataclasses.fields(MODEL_OPTIONS.get(backend, ModelConfig))}
    assert params
    assert {key.removeprefix("model.") for key in params} <= fields


def _catboost_splits(seed: int = 0) -> Any:
    import numpy as np

    from ltr.data.ranking_data import RankingData
    from ltr.data.splits import Splits

    rng = np.random.default_rng(seed)

    def part(n_queries: int) -> RankingData:
        sizes = rng.integers(3, 25, n_queries)
        x = rng.normal(size=(int(sizes.sum()), 6)).astype(np.float32)
        x[:, 5] = np.round(x[:, 5])  # a coarse feature: tied scores
        y = np.clip(np.round(x[:, 0] + 0.5 * x[:, 1] + rng.normal(size=len(x))), 0, 3).astype(np.int32)
        return RankingData.from_group_sizes(x, y, np.arange(n_queries), sizes)

    return Splits(part(120), part(40), part(40))


def test_catboost_sizes_its_fits_by_what_can_stop_training() -> None:
    from ltr.training.backends.catboost import chunk_sizes

    assert chunk_sizes(200, None) == [200]  # nothing stops it early: one fit
    assert chunk_sizes(200, None, stoppable=True) == [10, 20, 40, 80, 50]  # a search's pruner may
    assert chunk_sizes(200, 50) == [10, 20, 40, 80, 50]
    assert chunk_sizes(400, 150) == [10, 20, 40, 80, 150, 100]  # up to the patience when it is longer
    assert chunk_sizes(7, 5) == [7]


@pytest.mark.parametrize("grow_policy", ["SymmetricTree", "Lossguide"])
def test_catboost_scores_of_each_round_are_its_predictions_bit_for_bit(grow_policy: str) -> None:
    """``staged_scores`` after a ``fit`` that went on from another (``init_model``): the earlier
    scores plus the new trees' leaf values equal ``predict`` of the first rounds, bit for bit."""
    import catboost as cb
    import numpy as np

    from ltr.training.backends.catboost import _pool, staged_scores

    splits = _catboost_splits()
    train, valid = _pool(splits.train), _pool(splits.valid)
    params = {"loss_function": "YetiRank", "random_seed": 3, "thread_count": 1, "verbose": False, "allow_writing_files": False,
              "grow_policy": grow_policy, "learning_rate": 0.3}  # fmt: skip
    first = cb.CatBoost(params | {"iterations": 4}).fit(train)
    model = cb.CatBoost(params | {"iterations": 9}).fit(train, init_model=first)
    before = np.asarray(model.predict(valid, prediction_type="RawFormulaVal", ntree_end=4))
    for block in (40, 4):  # the new trees' leaves at once, and 4 trees at a time
        walked = list(staged_scores(model, valid, 4, before, 1, block=block))
        assert len(walked) == 9
        for i, scores in enumerate(walked, start=5):
            assert np.array_equal(scores, model.predict(valid, prediction_type="RawFormulaVal", ntree_end=i))
    assert len({float(s) for s in walked[-1]}) < len(walked[-1])  # the data has tied scores


def test_catboost_with_early_stopping_trains_what_one_fit_trains() -> None:
    """Early stopping trains in growing chunks, each going on from the model so far; without it,
    one fit. Both give the same curves (ours and CatBoost's) and the same shipped model."""
    import numpy as np

    from ltr.config.groups.backends import CatBoostModelConfig
    from ltr.config.schema import FitConfig
    from ltr.training.backends.catboost import CatBoostTrainer

    splits = _catboost_splits(1)
    model = CatBoostModelConfig(learning_rate=0.3, max_depth=4)
    runs = {
        patience: CatBoostTrainer(model, FitConfig(num_boost_round=45, early_stopping_rounds=patience, num_threads=1, show_progress=False)).fit(
            splits, eval_at=[5, 10], seed=4
        )
        for patience in (None, 8)
    }  # fmt: skip
    whole, stopped = runs[None], runs[8]
    assert whole.n_rounds == 45
    assert 10 < stopped.n_rounds == stopped.best_iteration + 8 < 45  # it stopped in its second fit
    n = stopped.n_rounds
    for by, of_whole in ((stopped.curves, whole.curves), (stopped.evals_result, whole.evals_result)):
        assert by == {split: {name: values[:n] for name, values in curves.items()} for split, curves in of_whole.items()}
    assert whole.best_iteration == 1 + int(np.argmax(whole.curves["valid"]["ndcg_at_10"]))
    features = splits.test.features
    cut = whole.model.cut(stopped.best_iteration)
    assert np.array_equal(stopped.model.predict(features), cut.predict(features))
    assert stopped.model.current_iteration() == stopped.best_iteration


def test_xgboost_s_gap_follows_its_gain(small_cfg: Callable[..., DictConfig]) -> None:
    """``model.ndcg_exp_gain=false``: XGBoost's own NDCG takes the label as the gain, and so does
    the run's gap to it (a ``gain`` part; ours + the parts = XGBoost's value)."""
    metrics = pipeline.run(small_cfg("model=xgboost", "model.ndcg_exp_gain=false", "tracking=none", "fit.num_boost_round=15"), print_summary=False).metrics
    parts = ("zero_idcg", "ties", "gain", "discount")
    for split in ("valid", "test"):
        total = metrics[f"{split}/ndcg_at_10"] + sum(metrics[f"{split}/xgboost_gap/ndcg_at_10/{part}"] for part in parts)
        assert total == pytest.approx(metrics[f"{split}/xgboost/ndcg_at_10"], abs=1e-12)
        assert metrics[f"{split}/xgboost_gap/ndcg_at_10/gain"] != 0
        assert metrics[f"{split}/xgboost_gap/ndcg_at_10/discount"] == 0
