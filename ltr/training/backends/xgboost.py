"""``model=xgboost``: XGBoost's ranker, trained round by round with early stopping on our nDCG.

Every round (``Booster.update``), XGBoost evaluates ``valid`` and ``test`` with its own
``ndcg@k`` (``eval_at`` = ``eval.k``; its conventions: ``ndcg_exp_gain``, ties in input order, an
all-zero list scores 1) and :class:`ltr.training.backends.rounds.RoundDriver` scores its
predictions of the two sets (XGBoost's prediction cache: each round adds its tree) with ours.
Training is deterministic for a seed and a thread count: ``tree_method=hist``, ``seed``, and an
explicit ``nthread`` (``fit.num_threads``, else the machine's physical cores, as LightGBM's).

The model a run ships is the booster sliced at the best round (``booster[:best]``), saved in
XGBoost's JSON format (``model_text/model.json``) and logged with ``mlflow.xgboost``.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb
from numpy.typing import NDArray

from ltr.config.groups.backends import XGBoostModelConfig
from ltr.config.schema import FitConfig
from ltr.data.ranking_data import RankingData, text_feature_names
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.metrics.clicks.position_bias import xgboost_bias
from ltr.training.backends.rounds import EVALUATED, RoundTrainer
from ltr.training.local import TrainResult, physical_cores

#: Set by ltr (from fit.*, seed, eval.k); model.params may not override them.
RESERVED = frozenset({"seed", "random_state", "nthread", "n_jobs", "eval_metric", "num_boost_round", "n_estimators", "verbosity", "objective"})
#: Characters XGBoost refuses in a feature name.
_BAD_NAME = re.compile(r"[\[\]<,]")


def xgboost_params(model: XGBoostModelConfig, *, seed: int, num_threads: int, eval_at: list[int] | None = None) -> dict[str, Any]:
    """XGBoost's parameters from the model config: explicit fields, then ``model.params``, then
    what ltr sets (seed, threads, its own ``ndcg@k`` at ``eval_at``)."""
    params: dict[str, Any] = {
        "objective": model.objective,
        "tree_method": "hist",
        "eta": model.learning_rate,
        "max_depth": model.max_depth,
        "max_leaves": model.num_leaves,
        "min_child_weight": model.min_child_weight,
        "subsample": model.subsample,
        "colsample_bytree": model.colsample_bytree,
        "alpha": model.reg_alpha,
        "lambda": model.reg_lambda,
        "max_bin": model.max_bin,
        "lambdarank_pair_method": model.lambdarank_pair_method,
        "ndcg_exp_gain": model.ndcg_exp_gain,
        "lambdarank_unbiased": model.lambdarank_unbiased,
        "lambdarank_bias_norm": model.lambdarank_bias_norm,
    }
    if model.lambdarank_num_pair_per_sample is not None:
        params["lambdarank_num_pair_per_sample"] = model.lambdarank_num_pair_per_sample
    params.update({str(key): _plain(value) for key, value in model.params.items()})
    params.update({"seed": seed, "nthread": num_threads if num_threads > 0 else physical_cores(), "verbosity": 1})
    if eval_at:
        params["eval_metric"] = [f"ndcg@{k}" for k in sorted(set(eval_at))]
    return params


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def check(model: XGBoostModelConfig, fit: FitConfig, *, seed: int) -> None:
    """Ask XGBoost whether it takes the settings (one round on 4 rows); an unknown
    ``model.params`` key (XGBoost only warns) or a value it refuses is one line."""
    reserved = sorted(RESERVED & {str(k) for k in model.params})
    if reserved:
        raise LtrUserError(
            f"model.params.{reserved[0]} is set by ltr (model.objective, fit.num_boost_round, fit.num_threads, seed, eval.k); "
            "override those settings instead"
        )
    params = xgboost_params(model, seed=seed, num_threads=1)
    dmat = xgb.DMatrix(np.arange(8, dtype=np.float32).reshape(4, 2), label=np.array([0, 1, 0, 2], dtype=np.float32))
    dmat.set_group([2, 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            xgb.train(params, dmat, num_boost_round=1)
        except xgb.core.XGBoostError as exc:
            raise LtrUserError(f"XGBoost refuses the model settings: {error_line(exc)}") from None
    for warning in caught:
        unused = re.search(r"Parameters: \{(.*?)\} are not used", str(warning.message), re.DOTALL)
        if unused:
            names = [n.strip().strip('"') for n in unused.group(1).split(",")]
            raise LtrUserError(f"model.params.{names[0]} is not an XGBoost parameter (XGBoost would ignore it)")


def error_line(exc: Exception) -> str:
    """XGBoost's message without its source path (``[12:00:00] /src/learner.cc:782: ``)."""
    lines = [re.sub(r"^\[[\d:]+\]\s+\S+:\d+:\s*", "", line).strip() for line in str(exc).splitlines()]
    return next((line for line in lines if line and not line.startswith("Stack trace")), str(exc))


def feature_names(data: RankingData) -> list[str]:
    """The data's feature names as XGBoost takes them (``f1 .. fN`` when it has none, or names
    XGBoost refuses)."""
    names = list(data.feature_names)
    if not names or len(set(names)) != len(names) or any(_BAD_NAME.search(n) for n in names):
        return text_feature_names(data.n_features)
    return names


def require_positions(model: XGBoostModelConfig, train: RankingData) -> None:
    """Refuse ``model.lambdarank_unbiased=true`` on training data without a position per row."""
    if model.lambdarank_unbiased and train.positions is None:
        raise LtrUserError(
            f"model.lambdarank_unbiased=true needs a position per training row, but {train.name!r} has none; "
            "use data=synthetic_clicks or give the data a position column"
        )


def learned_bias(booster: xgb.Booster) -> Any:
    """The position bias ``lambdarank_unbiased`` learned (XGBoost's ``ti+`` after the last round
    trained), as :func:`ltr.metrics.clicks.position_bias.xgboost_bias`; None when it has none."""
    ti_plus = json.loads(booster.save_config())["learner"]["objective"].get("ti+")
    return xgboost_bias([float(v) for v in ti_plus]) if ti_plus else None


def rows_by_position(data: RankingData) -> tuple[NDArray[np.float32], NDArray[np.integer]]:
    """``data``'s features and labels with each query's rows in the order of their positions
    (XGBoost's ``lambdarank_unbiased`` reads a row's position as its place in the list)."""
    assert data.positions is not None
    query = np.repeat(np.arange(data.n_queries), np.diff(data.offsets))
    order = np.lexsort((np.arange(data.n_rows), data.positions, query))
    return data.features[order], data.labels[order]


def ranking_dmatrix(features: NDArray[np.float32], labels: NDArray[np.integer], offsets: NDArray[np.int64], names: list[str]) -> xgb.DMatrix:
    dmat = xgb.DMatrix(features, label=labels.astype(np.float32), feature_names=names)
    dmat.set_group(np.diff(offsets))
    return dmat


def _own_values(text: str) -> dict[str, dict[str, float]]:
    """``Booster.eval_set``'s line (``[3]\\tvalid-ndcg@10:0.5\\t...``) as split -> name -> value."""
    out: dict[str, dict[str, float]] = {}
    for part in text.split("\t")[1:]:
        key, _, value = part.rpartition(":")
        split, _, name = key.partition("-")
        out.setdefault(split, {})[name] = float(value)
    return out


@dataclass(frozen=True)
class XGBoostModel:
    """An XGBoost booster as a :class:`ltr.training.backends.ScoringModel` (its ``predict``
    takes float rows; scores as float64)."""

    booster: xgb.Booster
    flavour: str = field(default="xgboost", init=False)

    @property
    def native(self) -> xgb.Booster:
        return self.booster

    @property
    def requirement(self) -> str:
        for dist in ("xgboost-cpu", "xgboost"):
            try:
                return f"{dist}=={metadata.version(dist)}"
            except metadata.PackageNotFoundError:
                continue
        return f"xgboost=={xgb.__version__}"

    def predict(self, data: Any, num_iteration: int | None = None, *, pred_contrib: bool = False) -> NDArray[np.float64]:
        """Scores of the rows of ``data``, shape (n_rows,); ``pred_contrib``: XGBoost's exact
        TreeSHAP contributions, shape (n_rows, n_features + 1), the expected value last (as
        LightGBM's ``pred_contrib``)."""
        dmat = xgb.DMatrix(np.asarray(data, dtype=np.float32), feature_names=self.feature_name())
        rounds = (0, num_iteration) if num_iteration else (0, 0)
        return np.asarray(self.booster.predict(dmat, iteration_range=rounds, pred_contribs=pred_contrib), dtype=np.float64)

    def feature_name(self) -> list[str]:
        names = self.booster.feature_names
        return list(names) if names else text_feature_names(self.num_feature())

    def num_feature(self) -> int:
        return int(self.booster.num_features())

    def current_iteration(self) -> int:
        return int(self.booster.num_boosted_rounds())

    def feature_importance(self, importance_type: str = "split") -> NDArray[np.float64]:
        kind = {"split": "weight", "gain": "total_gain"}[importance_type]
        scores = self.booster.get_score(importance_type=kind)
        return np.array([scores.get(name, 0.0) for name in self.feature_name()], dtype=np.float64)

    def save_model(self, filename: str) -> None:
        self.booster.save_model(filename)

    def cut(self, best_iteration: int) -> XGBoostModel:
        """The first ``best_iteration`` rounds."""
        return XGBoostModel(self.booster[:best_iteration])

    @classmethod
    def load(cls, path: Path) -> XGBoostModel:
        booster = xgb.Booster()
        try:
            booster.load_model(str(path))
        except xgb.core.XGBoostError as exc:
            raise ValueError(f"not an XGBoost model: {error_line(exc)}") from None
        return cls(booster)


@dataclass(frozen=True, slots=True)
class XGBoostTrainer(RoundTrainer[XGBoostModelConfig]):
    """:class:`ltr.training.trainer.Trainer` of ``model=xgboost`` (in this process)."""

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        model, fit = self.model, self.fit_config
        train = splits.train
        require_positions(model, train)
        rows = rows_by_position(train) if model.lambdarank_unbiased else (train.features, train.labels)
        params = xgboost_params(model, seed=seed, num_threads=fit.num_threads, eval_at=eval_at)
        names = feature_names(train)
        dtrain = ranking_dmatrix(rows[0], rows[1], train.offsets, names)
        evaluated = {
            split: ranking_dmatrix(getattr(splits, split).features, getattr(splits, split).labels, getattr(splits, split).offsets, names)
            for split in EVALUATED
        }
        what = f"XGBoost {model.objective} on {train.n_queries} queries / {train.n_rows} rows, {train.n_features} features"
        round_metric, driver = self.start_rounds(splits, eval_at, what, library="XGBoost")
        try:
            booster = xgb.Booster(params, [dtrain, *evaluated.values()])
            for i in range(fit.num_boost_round):
                booster.update(dtrain, iteration=i)
                own = _own_values(booster.eval_set([(d, s) for s, d in evaluated.items()], i))
                scores = {split: booster.predict(d, training=False) for split, d in evaluated.items()}
                if driver.after_round(i, scores, own):
                    break
        except xgb.core.XGBoostError as exc:
            raise LtrUserError(f"XGBoost rejected the training setup: {error_line(exc)}") from None
        finally:
            seconds = driver.close()
        learned = learned_bias(booster) if model.lambdarank_unbiased else None
        return TrainResult(
            XGBoostModel(booster).cut(driver.best_iteration), params, driver.trimmed(driver.library_curves),
            driver.best_iteration, driver.n_rounds, seconds, driver.trimmed(driver.curves),
            round_metric.seconds, library="xgboost", position_bias=learned,
        )  # fmt: skip
