"""Structured configs of the ``model`` options trained by XGBoost and CatBoost.

The ``model`` group has one schema per training library: :class:`ltr.config.schema.ModelConfig`
(LightGBM: ``model=lambdarank``, ``rank_xendcg``, ``pointwise``), :class:`XGBoostModelConfig`
(``model=xgboost``) and :class:`CatBoostModelConfig` (``model=catboost``), each registered in
Hydra's ConfigStore as ``<option>_schema``. What means the same in the three libraries has one
name: ``model.learning_rate``, ``model.max_depth``, ``model.num_leaves``, and outside the model
``fit.num_boost_round``, ``fit.early_stopping_rounds`` (on our nDCG), ``fit.num_threads`` and
``seed``. Each library's own parameters keep their names (``model.objective`` of XGBoost,
``model.loss`` of CatBoost) and ``model.params`` passes any other one by the library's own name.

This module imports neither library: :func:`backend_of` and :func:`require_library` answer
before any data is read.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ltr.config.allowed import INT32_MAX, allowed
from ltr.errors import LtrUserError

#: XGBoost's ranking objectives ``model.objective`` may name.
XGBOOST_OBJECTIVES = ("rank:ndcg", "rank:pairwise", "rank:map")
#: XGBoost's pair construction of its ranking objectives.
XGBOOST_PAIR_METHODS = ("topk", "mean")
#: CatBoost's ranking losses ``model.loss`` may name.
CATBOOST_LOSSES = ("YetiRank", "YetiRankPairwise", "PairLogit", "QuerySoftMax", "QueryRMSE", "LambdaMart")
#: CatBoost's tree growing policies.
CATBOOST_GROW_POLICIES = ("SymmetricTree", "Depthwise", "Lossguide")


@dataclass
class XGBoostModelConfig:
    """An XGBoost ranker (``xgb.train``, ``tree_method=hist``).

    ``objective``: ``rank:ndcg`` (LambdaMART on NDCG), ``rank:pairwise`` or ``rank:map``.
    ``lambdarank_pair_method``: ``topk`` (pairs within the top ``lambdarank_num_pair_per_sample``
    of each list) or ``mean`` (that many sampled pairs per document); null: XGBoost's default
    count. ``ndcg_exp_gain``: exponential gain (``2^label - 1``) in ``rank:ndcg``'s NDCG, else the
    label. ``lambdarank_unbiased``: learn the position bias jointly (needs data with positions,
    e.g. ``data=synthetic_clicks``; ``lambdarank_bias_norm`` its regularisation).
    ``max_depth``: 0 means no limit; ``num_leaves``: XGBoost's ``max_leaves``, 0 no limit.
    """

    name: str = field(default="xgboost", metadata=allowed(min_len=1))
    objective: str = field(default="rank:ndcg", metadata=allowed(choices=XGBOOST_OBJECTIVES))
    learning_rate: float = field(default=0.05, metadata=allowed(gt=0))
    max_depth: int = field(default=6, metadata=allowed(ge=0, le=INT32_MAX, note="0: no limit"))
    num_leaves: int = field(default=0, metadata=allowed(ge=0, le=INT32_MAX, note="XGBoost's max_leaves; 0: no limit"))
    min_child_weight: float = field(default=1.0, metadata=allowed(ge=0))
    subsample: float = field(default=1.0, metadata=allowed(gt=0, le=1))
    colsample_bytree: float = field(default=1.0, metadata=allowed(gt=0, le=1))
    reg_alpha: float = field(default=0.0, metadata=allowed(ge=0))
    reg_lambda: float = field(default=1.0, metadata=allowed(ge=0))
    max_bin: int = field(default=256, metadata=allowed(ge=2, le=INT32_MAX))
    lambdarank_pair_method: str = field(default="topk", metadata=allowed(choices=XGBOOST_PAIR_METHODS))
    lambdarank_num_pair_per_sample: int | None = field(default=None, metadata=allowed(ge=1, le=INT32_MAX))
    ndcg_exp_gain: bool = True
    lambdarank_unbiased: bool = False
    lambdarank_bias_norm: float = field(default=2.0, metadata=allowed(ge=0))
    # Any other XGBoost parameter by its XGBoost name, e.g. model.params.gamma=0.1
    params: dict[str, Any] = field(default_factory=dict, metadata=allowed(free=True))


@dataclass
class CatBoostModelConfig:
    """A CatBoost ranker (``CatBoost`` with a ranking ``loss_function``).

    ``loss``: ``YetiRank`` (the default), ``YetiRankPairwise``, ``PairLogit``, ``QuerySoftMax``,
    ``QueryRMSE`` or ``LambdaMart``. ``max_depth``: CatBoost's ``depth``; ``num_leaves``: its
    ``max_leaves``, which only ``grow_policy=Lossguide`` grows to (null: CatBoost's default).
    ``reg_lambda``: ``l2_leaf_reg``; ``max_bin``: ``border_count``.
    """

    name: str = field(default="catboost", metadata=allowed(min_len=1))
    loss: str = field(default="YetiRank", metadata=allowed(choices=CATBOOST_LOSSES))
    learning_rate: float = field(default=0.05, metadata=allowed(gt=0))
    max_depth: int = field(default=6, metadata=allowed(ge=1, le=16, note="CatBoost's depth"))
    num_leaves: int | None = field(default=None, metadata=allowed(ge=2, le=64, note="CatBoost's max_leaves (grow_policy=Lossguide)"))
    grow_policy: str = field(default="SymmetricTree", metadata=allowed(choices=CATBOOST_GROW_POLICIES))
    reg_lambda: float = field(default=3.0, metadata=allowed(ge=0, note="CatBoost's l2_leaf_reg"))
    max_bin: int = field(default=254, metadata=allowed(ge=1, le=65535, note="CatBoost's border_count"))
    random_strength: float = field(default=1.0, metadata=allowed(ge=0))
    # Any other CatBoost parameter by its CatBoost name, e.g. model.params.bootstrap_type=Bernoulli
    params: dict[str, Any] = field(default_factory=dict, metadata=allowed(free=True))


#: The ``model`` options with a schema of their own (LightGBM's share ``model_schema``).
MODEL_OPTIONS: dict[str, type] = {"xgboost": XGBoostModelConfig, "catboost": CatBoostModelConfig}

#: The backends, by the name of their library, and the extra that installs each.
BACKENDS = ("lightgbm", "xgboost", "catboost")
EXTRAS = {"xgboost": "xgboost", "catboost": "catboost"}


def backend_of(model: Any) -> str:
    """``lightgbm``, ``xgboost`` or ``catboost``: the library that trains ``model`` (a model
    config dataclass, or a composed ``model`` node)."""
    schema = OmegaConf.get_type(model) if isinstance(model, DictConfig) else type(model)
    if schema is XGBoostModelConfig:
        return "xgboost"
    if schema is CatBoostModelConfig:
        return "catboost"
    return "lightgbm"


def objective_of(model: Any) -> str:
    """The training objective in its library's own words (``lambdarank``, ``rank:ndcg``, ``YetiRank``)."""
    return str(model.loss if backend_of(model) == "catboost" else model.objective)


def require_library(backend: str, *, option: str | None = None) -> None:
    """Refuse, in one line naming the extra, a backend whose library is not installed."""
    if backend == "lightgbm" or importlib.util.find_spec(backend) is not None:
        return
    raise LtrUserError(
        f"model={option or backend} needs {backend}, which is not installed: install the {EXTRAS[backend]} extra ('ltr-harness[{EXTRAS[backend]}]', or make install in a clone)"
    )
