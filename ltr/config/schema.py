"""Structured configs of the groups other than ``data`` / ``split`` (see :mod:`ltr.config.data`).

Hydra validates every override against these dataclasses: a misspelt key or a wrong type fails
before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from ltr.config.choices import (
    Estimator,
    Gain,
    Preset,
    Propensity,
    RerankKind,
    Similarity,
    Ties,
    TrainerKind,
    ZeroIdcg,
)


@dataclass
class ModelConfig:
    """A LightGBM model. ``estimator`` picks ``LGBMRanker`` or ``LGBMRegressor`` (pointwise)."""

    name: str = "lambdarank"
    estimator: Estimator = Estimator.ranker
    objective: str = "lambdarank"
    learning_rate: float = 0.05
    num_leaves: int = 31
    max_depth: int = -1
    min_child_samples: int = 20
    min_child_weight: float = 1e-3
    subsample: float = 1.0
    subsample_freq: int = 0
    colsample_bytree: float = 1.0
    reg_alpha: float = 0.0
    reg_lambda: float = 0.0
    max_bin: int = 255
    lambdarank_truncation_level: int | None = None
    lambdarank_norm: bool | None = None
    label_gain: list[float] | None = None
    # Learn the position bias jointly (unbiased lambdarank; needs objective=lambdarank and data
    # with positions, e.g. data=synthetic_clicks); trains through lgb.train.
    position_bias: bool = False
    # Any other LightGBM parameter by its LightGBM name, e.g. model.params.path_smooth=0.1
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class FitConfig:
    """Boosting rounds and early stopping (on the validation split)."""

    num_boost_round: int = 1000
    early_stopping_rounds: int | None = 50  # None: no early stopping
    # watched on valid: ndcg_at_K (ours, the run's eval conventions) or ndcg@K (LightGBM's own),
    # K in eval.k; None: ndcg_at_<max(eval.k)>
    early_stopping_metric: str | None = None
    num_threads: int = 0  # 0: LightGBM's default (all cores); else >= 1
    show_progress: bool = True
    # a sweep's next job in this process reuses the binned data when data and binning match
    reuse_binned_data: bool = True


@dataclass
class ClickEvalConfig:
    """Click-based evaluation (data with clicks and positions, e.g. ``data=synthetic_clicks``).

    ``propensity``: ``config`` (the ``propensities`` list, or the data's examination curve when
    it is null) or ``estimated`` (click-through rate by position, from randomized sessions when
    the log has any). ``min_propensity`` clips the propensities from below (caps IPS weights).
    """

    enabled: bool = True
    propensity: Propensity = Propensity.config
    propensities: list[float] | None = None  # per 0-based position; the last one extends
    min_propensity: float = 0.01
    # the online click-through rate of the run's ranking under the data's click model (what an
    # A/B test would see): sessions simulated per query; 0 turns it off
    online_sessions: int = 20


@dataclass
class RerankConfig:
    """A re-ranking step after prediction (``rerank=diversify``; ``rerank=none``, the default).

    ``diversify``: within each query, the greedy re-order of :func:`ltr.rerank.diversify`: the
    next item maximises ``score * (1 - alpha * max similarity to the items above it)`` (scores
    min-max normalised per query), similarity ``cosine`` on the feature columns ``features``
    (0-based; null: all) or ``category`` (same category or not). ``category_feature``: the
    column whose values are the items' categories (integers; or cut into ``category_bins``
    quantile bins of the split), for ``similarity=category``, category coverage and alpha-nDCG;
    null: those two measures are not computed. ``depth``: re-rank only the top ``depth`` of
    each list (null: all). ``alpha_ndcg_alpha``: the redundancy penalty of alpha-nDCG@k.

    ``uncertainty``: within each query, the order of ``score + alpha * bonus`` (scores min-max
    normalised per query), where an item's bonus is ``1 - q``, ``q`` its popularity's quantile
    rank in the split (``data.popularity_feature``): items with little data behind them, whose
    score is the least certain, are raised (a count-based exploration bonus).
    """

    kind: RerankKind = RerankKind.none
    alpha: float = 0.3
    similarity: Similarity = Similarity.cosine
    features: list[int] | None = None
    category_feature: int | None = None
    category_bins: int | None = None
    depth: int | None = None
    alpha_ndcg_alpha: float = 0.5


@dataclass
class EvalConfig:
    """Our metric conventions (the ``ltr.metrics`` docstring); every value is logged with the run.

    ``gain``, ``ties`` and ``zero_idcg`` left null take the ``preset``'s value (``lightgbm``:
    exp / stable / one; ``sklearn``: linear / average / zero), or ours without a preset (exp /
    average / zero); a field that is set wins over the preset.
    """

    k: list[int] = field(default_factory=lambda: [5, 10])
    preset: Preset | None = None
    gain: Gain | None = None
    label_gain: list[float] | None = None
    ties: Ties | None = None
    zero_idcg: ZeroIdcg | None = None
    rel_threshold: int = 1
    strata: list[int] = field(default_factory=lambda: [1, 11, 51])  # lower edges of the strata
    idcg_bins: int = 30
    splits: list[str] = field(default_factory=lambda: ["valid", "test"])
    # weighted sums of per-query metrics, e.g. {ndcg_blend: {ndcg_at_3: 0.4, ndcg_at_10: 0.6}}
    composite: dict[str, dict[str, float]] = field(default_factory=dict)
    clicks: ClickEvalConfig = field(default_factory=ClickEvalConfig)


@dataclass
class TrackingConfig:
    """Where runs go. ``uri=None``: ``sqlite:///<cwd>/mlflow.db`` with artifacts beside it."""

    enabled: bool = True
    uri: str | None = None
    experiment: str = "ltr"
    run_name: str | None = None  # None: made from the overrides
    log_model: bool = True  # also log the booster as an MLflow model (mlflow.pyfunc.load_model)


@dataclass
class TrainerConfig:
    """Where training runs: ``local`` (one process) or ``dask`` (lightgbm.dask on a cluster)."""

    kind: TrainerKind = TrainerKind.local
    # dask only: a scheduler address (tcp://host:8786), or None for a LocalCluster on this machine
    scheduler_address: str | None = None
    n_workers: int = 2
    threads_per_worker: int = 1
    n_partitions: int | None = None  # partitions of whole queries per split; None: one per worker


@dataclass
class CvConfig:
    """Cross-validation: a sweep over the folds of a data set (``experiment=letor_cv``).

    ``fold_key``: the config key the sweep varies to pick a fold (``data.fold``); when set, the
    sweep's parent run reports every metric's mean and standard deviation over the folds.
    """

    fold_key: str | None = None


@dataclass
class TrainConfig:
    """The composed config of ``ltr train``."""

    seed: int = 42
    # The value ``ltr train`` returns to a sweeper (maximised): a metric key the run logs, e.g.
    # valid/ndcg_at_10 or valid/ndcg_at_10/len_51_plus; None: valid/ndcg_at_<max(eval.k)>.
    optimized_metric: str | None = None
    data: Any = MISSING
    split: Any = MISSING
    model: ModelConfig = MISSING
    fit: FitConfig = MISSING
    eval: EvalConfig = MISSING
    tracking: TrackingConfig = MISSING
    trainer: TrainerConfig = MISSING
    rerank: RerankConfig = MISSING
    cv: CvConfig = field(default_factory=CvConfig)
