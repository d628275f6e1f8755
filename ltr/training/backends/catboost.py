"""``model=catboost``: CatBoost's ranker, with early stopping on our nDCG.

No callback of CatBoost sees the model's scores while it trains. Without early stopping (and no
search pruner) CatBoost trains all the rounds in one ``fit``; else it trains in chunks
(:func:`chunk_sizes`: :data:`CHUNK` rounds, then twice as many each time, up to
:data:`CHUNK_MAX` or ``fit.early_stopping_rounds``), each going on from the model so far
(``init_model``: the same trees one ``fit`` of all the rounds grows). After each ``fit``,
:class:`ltr.training.backends.rounds.RoundDriver` walks the new rounds' scores of ``valid`` and
``test`` (:func:`staged_scores`: each round adds its tree, equal bit for bit to CatBoost's
``predict`` of the first rounds), scores them with ours, and stops where early stopping on our
nDCG stops, with the same progress line. Rounds trained beyond the stop (at most a chunk's) are
never shipped. CatBoost's own ``NDCG:top=k`` (its defaults: linear gain, its tie rule) is
recorded per round beside ours. Deterministic for a seed and a thread count (``random_seed``,
``thread_count``: ``fit.num_threads``, else the machine's physical cores).

The model a run ships is cut at the best round (``shrink``), saved in CatBoost's binary format
(``model_text/model.cbm``) and logged with ``mlflow.catboost``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
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
from ltr.training.backends.rounds import EVALUATED, RoundTrainer
from ltr.training.local import TrainResult, physical_cores
from ltr.training.round_hook import current_round_hook

#: Rounds of CatBoost's first ``fit`` when training may stop early; training goes on from the
#: model so far (``init_model``: the trees one ``fit`` of all the rounds grows), each ``fit``
#: twice as many rounds as the one before, up to :data:`CHUNK_MAX` (:func:`chunk_sizes`).
CHUNK = 10
CHUNK_MAX = 80
#: Trees whose leaf of every row :func:`staged_scores` asks CatBoost for at once.
LEAF_BLOCK = 40
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
class CatBoostTrainer(RoundTrainer[CatBoostModelConfig]):
    """:class:`ltr.training.trainer.Trainer` of ``model=catboost`` (in this process)."""

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        model, fit = self.model, self.fit_config
        train = splits.train
        params = catboost_params(model, seed=seed, num_threads=fit.num_threads, rounds=fit.num_boost_round, eval_at=eval_at)
        pools = {split: _pool(getattr(splits, split)) for split in EVALUATED}
        sizes = chunk_sizes(fit.num_boost_round, fit.early_stopping_rounds, stoppable=current_round_hook() is not None)
        what = (
            f"CatBoost {model.loss} on {train.n_queries} queries / {train.n_rows} rows, {train.n_features} features"
            + (f" ({sizes[0]} rounds in the first fit, each next one twice as many, up to {max(sizes)})" if len(sizes) > 1 else
               f" (all {sizes[0]} rounds in one fit: nothing stops training early)")
        )
        round_metric, driver = self.start_rounds(splits, eval_at, what, library="CatBoost")
        train_pool = _pool(train)
        booster: cb.CatBoost | None = None
        done = 0
        last: dict[str, NDArray[np.float64]] = {}  # each set's scores after the rounds done
        try:
            for rounds in sizes:
                chunk = cb.CatBoost(params | {"iterations": rounds})
                chunk.fit(train_pool, eval_set=list(pools.values()), use_best_model=False, init_model=booster)
                booster = chunk
                if len(sizes) == 1:
                    driver.all_trained()
                own = _own_curves(chunk.get_evals_result(), eval_at)
                staged = [staged_scores(booster, pool, done, last.get(split), params["thread_count"]) for split, pool in pools.items()]
                stop = False
                for j, scores in enumerate(zip(*staged, strict=True)):
                    by_split = dict(zip(EVALUATED, scores, strict=True))
                    last = by_split
                    values = {split: {name: curve[j] for name, curve in own[split].items()} for split in EVALUATED}
                    if driver.after_round(done + j, by_split, values):
                        stop = True
                        break
                done += rounds
                if stop:
                    break
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


def chunk_sizes(num_boost_round: int, early_stopping_rounds: int | None, *, stoppable: bool = False) -> list[int]:
    """The rounds of each ``fit``: all of them in one when nothing can stop training early
    (no ``early_stopping_rounds``, no search pruner: ``stoppable``); else :data:`CHUNK`, then
    twice as many each time, up to :data:`CHUNK_MAX` or ``early_stopping_rounds`` when that is
    more. Every ``fit`` goes on from the model so far, so the trees do not depend on the sizes."""
    if early_stopping_rounds is None and not stoppable:
        return [num_boost_round]
    cap = max(CHUNK_MAX, early_stopping_rounds or 0)
    sizes: list[int] = []
    size, done = CHUNK, 0
    while done < num_boost_round:
        sizes.append(min(size, num_boost_round - done))
        done += sizes[-1]
        size = min(2 * size, cap)
    return sizes


def staged_scores(
    booster: cb.CatBoost, pool: cb.Pool, start: int, before: NDArray[np.float64] | None, thread_count: int,
    block: int = LEAF_BLOCK,
) -> Iterator[NDArray[np.float64]]:
    """The raw scores of ``pool`` after each round from ``start`` (0-based) on, each equal bit
    for bit to ``predict(ntree_end=i + 1, prediction_type="RawFormulaVal")``; ``before``: the
    scores after round ``start - 1``.

    CatBoost adds tree after tree to a float64 sum per row (times 1, plus 0): from ``start`` on,
    each new tree's leaf value (``calc_leaf_indexes``) is added to ``before``, so a chunk costs
    its own trees only (their leaves ``block`` trees at a time). A model with another scale or
    bias walks ``staged_predict`` from round 0.
    """
    end = int(booster.tree_count_)
    if start == 0 or before is None or tuple(booster.get_scale_and_bias()) != (1.0, 0.0):
        staged = booster.staged_predict(pool, prediction_type="RawFormulaVal", eval_period=1, thread_count=thread_count)
        yield from (np.asarray(s, dtype=np.float64) for i, s in enumerate(staged) if i >= start)
        return
    values = np.asarray(booster.get_leaf_values(), dtype=np.float64)
    first = np.concatenate([[0], np.cumsum(booster.get_tree_leaf_counts())]).astype(np.int64)
    scores = before
    for low in range(start, end, block):  # the leaves of a block of trees at a time: bounded memory
        high = min(low + block, end)
        leaves = np.asarray(booster.calc_leaf_indexes(pool, ntree_start=low, ntree_end=high, thread_count=thread_count))
        for j in range(high - low):
            scores = scores + values[first[low + j] + leaves[:, j].astype(np.int64)]
            yield scores


def _own_curves(evals: dict[str, dict[str, list[float]]], eval_at: list[int]) -> dict[str, dict[str, list[float]]]:
    """CatBoost's ``NDCG:top=k`` per round of each evaluated set, named ``ndcg@k``."""
    out: dict[str, dict[str, list[float]]] = {}
    for split, key in zip(EVALUATED, ("validation_0", "validation_1"), strict=True):
        by_name = evals.get(key, {})
        out[split] = {
            f"ndcg@{k}": list(by_name[f"NDCG:top={k};type=Base"]) for k in sorted(set(eval_at)) if f"NDCG:top={k};type=Base" in by_name
        }
    return out
