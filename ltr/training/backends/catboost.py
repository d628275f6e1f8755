"""``model=catboost``: CatBoost's ranker, with early stopping on our nDCG.

No callback of CatBoost sees the model's scores while it trains, so CatBoost trains
:data:`CHUNK` rounds per ``fit``, each going on from the model so far (``init_model``: the same
trees one ``fit`` of all the rounds grows); after each, :class:`ltr.training.backends.rounds.RoundDriver`
walks the new rounds on ``staged_predict`` of ``valid`` and ``test`` (each round adds its tree),
scores them with ours, and stops where early stopping on our nDCG stops, with the same progress
line. At most ``CHUNK - 1`` rounds are trained beyond the stop (and never shipped). CatBoost's own ``NDCG:top=k`` (its defaults: linear gain, its tie rule)
is recorded per round beside ours. Deterministic for a seed and a thread count
(``random_seed``, ``thread_count``: ``fit.num_threads``, else the machine's physical cores).

The model a run ships is cut at the best round (``shrink``), saved in CatBoost's binary format
(``model_text/model.cbm``) and logged with ``mlflow.catboost``.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import catboost as cb
import numpy as np
from numpy.typing import NDArray

from ltr.config.groups.backends import CatBoostModelConfig
from ltr.config.schema import FitConfig
from ltr.data.ranking_data import RankingData, text_feature_names
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.metrics import MetricConventions
from ltr.training.backends.rounds import EVALUATED, RoundDriver
from ltr.training.local import TrainResult, physical_cores
from ltr.training.round_metric import RoundNdcg
from ltr.training.settings import watched_metric

#: Rounds CatBoost trains per ``fit`` call: training goes on from the model so far
#: (``init_model``: the trees one ``fit`` of all the rounds grows) until early stopping stops it.
CHUNK = 10
#: Set by ltr (from fit.*, seed, eval.k); model.params may not override them.
RESERVED = frozenset({
    "iterations", "num_boost_round", "n_estimators", "num_trees", "random_seed", "random_state", "thread_count",
    "loss_function", "custom_metric", "eval_metric", "use_best_model", "early_stopping_rounds", "verbose",
})  # fmt: skip


def catboost_params(model: CatBoostModelConfig, *, seed: int, num_threads: int, rounds: int, eval_at: list[int] | None = None) -> dict[str, Any]:
    """CatBoost's parameters from the model config: explicit fields, then ``model.params``, then
    what ltr sets (rounds, seed, threads, its own ``NDCG:top=k`` at ``eval_at``)."""
    params: dict[str, Any] = {
        "loss_function": model.loss,
        "learning_rate": model.learning_rate,
        "depth": model.max_depth,
        "grow_policy": model.grow_policy,
        "l2_leaf_reg": model.reg_lambda,
        "border_count": model.max_bin,
        "random_strength": model.random_strength,
    }
    if model.num_leaves is not None and model.grow_policy == "Lossguide":
        params["max_leaves"] = model.num_leaves
    params.update({str(key): value for key, value in model.params.items()})
    params.update({
        "iterations": rounds, "random_seed": seed,
        "thread_count": num_threads if num_threads > 0 else physical_cores(),
        "verbose": False, "allow_writing_files": False,
    })  # fmt: skip
    if eval_at:
        params["custom_metric"] = [f"NDCG:top={k}" for k in sorted(set(eval_at))]
    return params


def check(model: CatBoostModelConfig, fit: FitConfig, *, seed: int) -> None:
    """Ask CatBoost whether it takes the settings (one round on 4 rows): an unknown
    ``model.params`` key or a value it refuses is one line."""
    reserved = sorted(RESERVED & {str(k) for k in model.params})
    if reserved:
        raise LtrUserError(
            f"model.params.{reserved[0]} is set by ltr (model.loss, fit.num_boost_round, fit.num_threads, seed, eval.k); "
            "override those settings instead"
        )
    params = catboost_params(model, seed=seed, num_threads=1, rounds=1)
    features = np.arange(8, dtype=np.float32).reshape(4, 2)
    pool = cb.Pool(features, label=np.array([0, 1, 0, 2]), group_id=np.array([0, 0, 1, 1]))
    try:
        cb.CatBoost(params).fit(pool)
    except (cb.CatBoostError, TypeError, ValueError) as exc:
        raise LtrUserError(f"CatBoost refuses the model settings: {_error_line(exc)}") from None


def _error_line(exc: Exception) -> str:
    """CatBoost's message without its source path (``catboost/private/.../x.cpp:128: ``)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.split(": ", 1)[1] if ".cpp:" in text.split(": ", 1)[0] else text


def _pool(data: RankingData) -> cb.Pool:
    group = np.repeat(np.arange(data.n_queries, dtype=np.int64), np.diff(data.offsets))
    return cb.Pool(data.features, label=data.labels.astype(np.float64), group_id=group, feature_names=feature_names(data))


def feature_names(data: RankingData) -> list[str]:
    """The data's feature names (``f1 .. fN`` when it has none, or repeats one)."""
    names = list(data.feature_names)
    return names if names and len(set(names)) == len(names) else text_feature_names(data.n_features)


@dataclass(frozen=True)
class CatBoostModel:
    """A CatBoost model as a :class:`ltr.training.backends.ScoringModel` (raw scores, float64)."""

    model: cb.CatBoost
    flavour: str = field(default="catboost", init=False)

    @property
    def native(self) -> cb.CatBoost:
        return self.model

    @property
    def requirement(self) -> str:
        return f"catboost=={cb.__version__}"

    def predict(self, data: Any, num_iteration: int | None = None, *, pred_contrib: bool = False) -> NDArray[np.float64]:
        """Raw scores of the rows of ``data``, shape (n_rows,); ``pred_contrib``: CatBoost's SHAP
        values, shape (n_rows, n_features + 1), the expected value last (as LightGBM's
        ``pred_contrib``)."""
        rows = np.asarray(data, dtype=np.float32)
        if pred_contrib:
            pool = cb.Pool(rows, feature_names=self.feature_name())
            return np.asarray(self.model.get_feature_importance(data=pool, type="ShapValues", thread_count=1), dtype=np.float64)
        end = num_iteration or 0
        return np.asarray(self.model.predict(rows, prediction_type="RawFormulaVal", ntree_end=end, thread_count=1), dtype=np.float64)

    def feature_name(self) -> list[str]:
        return [str(n) for n in self.model.feature_names_]

    def num_feature(self) -> int:
        return len(self.model.feature_names_)

    def current_iteration(self) -> int:
        return int(self.model.tree_count_)

    def feature_importance(self, importance_type: str = "split") -> NDArray[np.float64]:
        if importance_type == "split":  # how often a feature splits a tree
            counts = np.zeros(self.num_feature(), dtype=np.float64)
            for index in _split_features(self.model):
                counts[index] += 1
            return counts
        return np.asarray(self.model.get_feature_importance(type="PredictionValuesChange"), dtype=np.float64)

    def save_model(self, filename: str) -> None:
        self.model.save_model(filename)

    def cut(self, best_iteration: int) -> CatBoostModel:
        """The first ``best_iteration`` rounds."""
        copy = self.model.copy()
        copy.shrink(ntree_end=best_iteration)
        return CatBoostModel(copy)

    @classmethod
    def load(cls, path: Path) -> CatBoostModel:
        model = cb.CatBoost()
        try:
            model.load_model(str(path))
        except cb.CatBoostError as exc:
            raise ValueError(f"not a CatBoost model: {_error_line(exc)}") from None
        return cls(model)


def _split_features(model: cb.CatBoost) -> list[int]:
    """The feature index of every split of every tree (float features only)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.json"
        model.save_model(str(path), format="json")
        trees = json.loads(path.read_text()).get("oblivious_trees") or []
    return [int(split["float_feature_index"]) for tree in trees for split in tree.get("splits", []) if "float_feature_index" in split]


@dataclass(frozen=True, slots=True)
class CatBoostTrainer:
    """:class:`ltr.training.trainer.Trainer` of ``model=catboost`` (in this process)."""

    model: CatBoostModelConfig
    fit_config: FitConfig
    conventions: MetricConventions = field(default_factory=MetricConventions)
    table_ks: tuple[int, ...] = ()
    model_order: bool = False  # the run re-ranks: curves of the model's strict order too (RoundNdcg)

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        model, fit = self.model, self.fit_config
        train = splits.train
        params = catboost_params(model, seed=seed, num_threads=fit.num_threads, rounds=fit.num_boost_round, eval_at=eval_at)
        pools = {split: _pool(getattr(splits, split)) for split in EVALUATED}
        round_metric = RoundNdcg(
            ks=eval_at, table_ks=self.table_ks or tuple(eval_at), conventions=self.conventions, model_order=self.model_order
        )
        what = (
            f"CatBoost {model.loss} on {train.n_queries} queries / {train.n_rows} rows, {train.n_features} features "
            f"({CHUNK} rounds per fit)"
        )
        driver = RoundDriver(fit, watched_metric(fit, eval_at), round_metric, what, library="CatBoost")
        for split in EVALUATED:
            data = getattr(splits, split)
            driver.register(split, data.labels, data.offsets)
        train_pool = _pool(train)
        booster: cb.CatBoost | None = None
        done, stop = 0, False
        try:
            while done < fit.num_boost_round and not stop:
                rounds = min(CHUNK, fit.num_boost_round - done)
                chunk = cb.CatBoost(params | {"iterations": rounds})
                chunk.fit(train_pool, eval_set=list(pools.values()), use_best_model=False, init_model=booster)
                booster = chunk
                own = _own_curves(chunk.get_evals_result(), eval_at)
                staged = [
                    booster.staged_predict(pool, prediction_type="RawFormulaVal", eval_period=1, thread_count=params["thread_count"])
                    for pool in pools.values()
                ]
                for i, scores in enumerate(zip(*staged, strict=True)):
                    if i < done:
                        continue
                    values = {split: {name: curve[i - done] for name, curve in own[split].items()} for split in EVALUATED}
                    if driver.after_round(i, dict(zip(EVALUATED, scores, strict=True)), values):
                        stop = True
                        break
                done += rounds
        except cb.CatBoostError as exc:
            raise LtrUserError(f"CatBoost rejected the training setup: {_error_line(exc)}") from None
        finally:
            seconds = driver.close()
        assert booster is not None  # fit.num_boost_round >= 1
        return TrainResult(
            CatBoostModel(booster).cut(driver.best_iteration), params, driver.trimmed(driver.library_curves),
            driver.best_iteration, driver.n_rounds, seconds, driver.trimmed(driver.curves),
            round_metric.seconds, library="catboost",
        )  # fmt: skip


def _own_curves(evals: dict[str, dict[str, list[float]]], eval_at: list[int]) -> dict[str, dict[str, list[float]]]:
    """CatBoost's ``NDCG:top=k`` per round of each evaluated set, named ``ndcg@k``."""
    out: dict[str, dict[str, list[float]]] = {}
    for split, key in zip(EVALUATED, ("validation_0", "validation_1"), strict=True):
        by_name = evals.get(key, {})
        out[split] = {
            f"ndcg@{k}": list(by_name[f"NDCG:top={k};type=Base"]) for k in sorted(set(eval_at)) if f"NDCG:top={k};type=Base" in by_name
        }
    return out
