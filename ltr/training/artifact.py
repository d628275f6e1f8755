"""The model a run ships: one place builds it for every trainer.

A run measures its model at the best round (``TrainResult.best_iteration``); the local trainer
keeps the rounds after it (early stopping's patience) and the Dask trainer all
``fit.num_boost_round`` rounds. :func:`ship_model` cuts the booster at the best round, so every
exit of the run (the MLflow model, ``model_text/model.txt``, feature importance, ``ltr predict``)
holds exactly the trees the run's metrics describe: its ``predict`` (all its trees) returns, bit
for bit, the scores the run evaluated.

Feature names are the data's: Parquet/CSV column names, the synthetic generators' names, and for
text formats (LETOR/SVMlight, whose features are numbered from 1) ``f1 .. fN``, LightGBM's
``Column_0 .. Column_{N-1}`` renamed (``f1`` is LETOR feature ``1:``, column 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.data.ranking_data import text_feature_names

#: LightGBM's names of features it was given without names.
_DEFAULT_NAME = re.compile(r"Column_(\d+)")
#: Rows of the input example logged with the MLflow model.
INPUT_EXAMPLE_ROWS = 5


def model_feature_names(names: list[str]) -> list[str]:
    """``names`` (a booster's), with LightGBM's ``Column_i`` defaults as ``f{i+1}``.

    >>> model_feature_names(["Column_0", "Column_1"]), model_feature_names(["bm25", "pagerank"])
    (['f1', 'f2'], ['bm25', 'pagerank'])
    """
    defaults = [_DEFAULT_NAME.fullmatch(name) for name in names]
    if names and all(m is not None and int(m.group(1)) == i for i, m in enumerate(defaults)):
        return text_feature_names(len(names))
    return list(names)


@dataclass(frozen=True)
class ShippedModel:
    """The booster cut at the best round, with the data's feature names.

    ``booster.num_trees()`` covers rounds ``1 .. best_iteration`` only; ``booster.predict(x)``
    equals ``TrainResult.predict(x)`` bit for bit. ``params`` are LightGBM's resolved parameters
    (the dict given to ``lgb.train`` or to every machine of ``trainer=dask``).
    """

    booster: Any  # lgb.Booster, or XGBoost's / CatBoost's ltr.training.backends.ScoringModel
    best_iteration: int
    params: dict[str, Any]

    @property
    def feature_names(self) -> list[str]:
        return list(self.booster.feature_name())

    def importance(self) -> dict[str, dict[str, float]]:
        """Split and gain importance of the shipped trees: ``{"split": {name: n}, "gain": {name: g}}``."""
        names = self.feature_names
        return {
            kind: dict(zip(names, np.asarray(self.booster.feature_importance(importance_type=kind), dtype=np.float64).tolist(), strict=True))
            for kind in ("split", "gain")
        }

    def input_example(self, features: NDArray[np.float32], *, rows: int = INPUT_EXAMPLE_ROWS) -> pd.DataFrame:
        """The first ``rows`` rows of ``features`` as a DataFrame of the model's named columns
        (float64: JSON clients send doubles; float32 values are exact in float64)."""
        return pd.DataFrame(np.asarray(features[:rows], dtype=np.float64), columns=self.feature_names)


def ship_model(booster: lgb.Booster, best_iteration: int, params: dict[str, Any]) -> ShippedModel:
    """``booster`` cut at ``best_iteration`` (1-based) with the data's feature names.

    The cut goes through LightGBM's model text (``model_to_string(num_iteration=...)``, which
    writes every double with round-trip precision), so DART's final tree weights and rf's average
    over the kept trees are what ``predict(num_iteration=best_iteration)`` used.
    """
    if best_iteration < 1 or best_iteration > booster.current_iteration():
        raise ValueError(f"best_iteration={best_iteration} is outside 1..{booster.current_iteration()}")
    text = booster.model_to_string(num_iteration=best_iteration)
    names = model_feature_names(list(booster.feature_name()))
    if names != list(booster.feature_name()):
        text = re.sub(r"^feature_names=.*$", "feature_names=" + " ".join(names), text, count=1, flags=re.MULTILINE)
    return ShippedModel(lgb.Booster(model_str=text), best_iteration, dict(params))
