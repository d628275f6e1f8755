"""Structured configs of the groups other than ``data`` / ``split`` (see :mod:`ltr.config.groups.data`).

Hydra validates every override against these dataclasses: a misspelt key or a wrong type fails
before any work starts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from ltr.config.allowed import INT32_MAX, SEED_MAX, allowed
from ltr.config.choices import (
    Direction,
    Discount,
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
from ltr.config.groups.backends import MODEL_OPTIONS
from ltr.config.groups.data import DATA_OPTIONS, DEFAULT_SEED, SplitConfig
from ltr.config.neutral import list_fields, neutral, neutral_fields

#: The splits ``eval.splits`` may name.
EVAL_SPLITS = ("train", "valid", "test")


@dataclass
class ModelConfig:
    """A LightGBM model. ``estimator`` picks ``LGBMRanker`` or ``LGBMRegressor`` (pointwise)."""

    name: str = field(default="lambdarank", metadata=allowed(min_len=1))
    estimator: Estimator = Estimator.ranker
    objective: str = field(default="lambdarank", metadata=allowed(min_len=1))
    learning_rate: float = field(default=0.05, metadata=allowed(gt=0))
    num_leaves: int = field(default=31, metadata=allowed(ge=2, le=131072))  # LightGBM's limits
    max_depth: int = field(default=-1, metadata=allowed(ge=-1, le=INT32_MAX, note="<= 0: no limit"))
    min_child_samples: int = field(default=20, metadata=allowed(ge=0, le=INT32_MAX))
    min_child_weight: float = field(default=1e-3, metadata=allowed(ge=0))
    subsample: float = field(default=1.0, metadata=allowed(gt=0, le=1))
    subsample_freq: int = field(default=0, metadata=allowed(ge=0, le=INT32_MAX, note="0: no bagging"))
    colsample_bytree: float = field(default=1.0, metadata=allowed(gt=0, le=1))
    reg_alpha: float = field(default=0.0, metadata=allowed(ge=0))
    reg_lambda: float = field(default=0.0, metadata=allowed(ge=0))
    max_bin: int = field(default=255, metadata=allowed(ge=2, le=INT32_MAX))
    lambdarank_truncation_level: int | None = field(default=None, metadata=allowed(ge=1, le=INT32_MAX))
    lambdarank_norm: bool | None = None
    label_gain: list[float] | None = field(default=None, metadata=allowed(ge=0, min_len=1))
    # Learn the position bias jointly (unbiased lambdarank; needs objective=lambdarank and data
    # with positions, e.g. data=synthetic_clicks); trains through lgb.train.
    position_bias: bool = False
    # Any other LightGBM parameter by its LightGBM name, e.g. model.params.path_smooth=0.1
    params: dict[str, Any] = field(default_factory=dict, metadata=allowed(free=True))


@dataclass
class FitConfig:
    """Boosting rounds and early stopping (on the validation split)."""

    num_boost_round: int = field(default=1000, metadata=allowed(ge=1, le=INT32_MAX))
    early_stopping_rounds: int | None = field(default=50, metadata=allowed(ge=1, le=INT32_MAX))  # None: no early stopping
    # watched on valid: ndcg_at_K (ours, the run's eval conventions) or ndcg@K (LightGBM's own),
    # K in eval.k; None: ndcg_at_<max(eval.k)>
    early_stopping_metric: str | None = field(default=None, metadata=allowed(min_len=1))
    num_threads: int = field(default=0, metadata=allowed(ge=0, le=4096, note="0: all cores"))
    show_progress: bool = field(default=True, metadata=neutral())
    # a sweep's next job in this process reuses the binned data when data and binning match
    reuse_binned_data: bool = field(default=True, metadata=neutral())


@dataclass
class ClickEvalConfig:
    """Click-based evaluation (data with clicks and positions, e.g. ``data=synthetic_clicks``).

    ``propensity``: ``config`` (the ``propensities`` list, or the data's examination curve when
    it is null), ``estimated`` (click-through rate by position), ``em`` (the position-based model
    fitted by regression EM), ``harvest`` (intervention harvesting: needs ``data.logger_column``
    and ``data.doc_id_column``), ``column`` (``data.propensity_column``, a logged propensity per
    row) or ``randomized`` (click-through rate by position on the sessions
    ``data.randomized_column`` marks as shown in random order); all but ``config`` on the training split's log (:mod:`ltr.metrics.clicks.propensity`).
    ``min_propensity`` clips the propensities from below (caps IPS weights).
    ``propensity_bootstrap``: resamples of the training queries behind the logged interval of
    every position's propensity (``propensity/pos_k/low`` and ``/high``, at
    ``propensity_confidence``); 0: no interval.
    """

    enabled: bool = True
    propensity: Propensity = Propensity.config
    propensities: list[float] | None = field(default=None, metadata=allowed(gt=0, le=1, min_len=1))  # per 0-based position; the last one extends
    min_propensity: float = field(default=0.01, metadata=allowed(gt=0, le=1))
    propensity_bootstrap: int = field(default=50, metadata=allowed(ge=0, le=10**5, note="0: no interval"))
    propensity_confidence: float = field(default=0.95, metadata=allowed(gt=0, lt=1))
    # the online click-through rate of the run's ranking under the data's click model (what an
    # A/B test would see): sessions simulated per query; 0 turns it off
    online_sessions: int = field(default=20, metadata=allowed(ge=0, le=10**6, note="0: off"))


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
    alpha: float = field(default=0.3, metadata=allowed(ge=0, le=1e6, note="0: the model's order; <= 1 for diversify"))
    similarity: Similarity = Similarity.cosine
    features: list[int] | None = field(default=None, metadata=allowed(ge=0, le=INT32_MAX, min_len=1, note="0-based columns"))
    category_feature: int | None = field(default=None, metadata=allowed(ge=0, le=INT32_MAX, note="a 0-based column"))
    category_bins: int | None = field(default=None, metadata=allowed(ge=2, le=10**6))
    depth: int | None = field(default=None, metadata=allowed(ge=1, le=INT32_MAX))
    alpha_ndcg_alpha: float = field(default=0.5, metadata=allowed(ge=0, lt=1))


@dataclass
class EvalConfig:
    """Our metric conventions (the ``ltr.metrics`` docstring); every value is logged with the run.

    ``gain``, ``ties`` and ``zero_idcg`` left null take the ``preset``'s value (``lightgbm``:
    exp / stable / one; ``sklearn``: linear / average / zero), or ours without a preset (exp /
    average / zero); a field that is set wins over the preset.
    """

    k: list[int] = field(default_factory=lambda: [5, 10], metadata=allowed(ge=1, le=INT32_MAX, min_len=1))
    preset: Preset | None = None
    gain: Gain | None = None
    label_gain: list[float] | None = field(default=None, metadata=allowed(ge=0, min_len=1))
    ties: Ties | None = None
    zero_idcg: ZeroIdcg | None = None
    rel_threshold: int = field(default=1, metadata=allowed(ge=0, le=INT32_MAX))  # binary relevance (P, R, AP, RR): label >= this
    # position discount of DCG/IDCG/NDCG and the per-round curves; jarvelin's base: discount_base
    discount: Discount = Discount.log2_rank_plus_1
    discount_base: float = field(default=2.0, metadata=allowed(gt=1, le=1e6))
    # explicit weight per position 1, 2, ... in place of eval.discount (positions beyond: 0)
    position_weights: list[float] | None = field(default=None, metadata=allowed(ge=0, min_len=1))
    strata: list[int] = field(default_factory=lambda: [1, 11, 51], metadata=allowed(ge=1, le=INT32_MAX, min_len=1))  # lower edges
    idcg_bins: int = field(default=30, metadata=allowed(ge=1, le=10**6))
    splits: list[str] = field(default_factory=lambda: ["valid", "test"], metadata=allowed(min_len=1, choices=EVAL_SPLITS))
    # weighted sums of per-query metrics, e.g. {ndcg_blend: {ndcg_at_3: 0.4, ndcg_at_10: 0.6}}
    composite: dict[str, dict[str, float]] = field(default_factory=dict, metadata=allowed(free=True))
    clicks: ClickEvalConfig = field(default_factory=ClickEvalConfig)


@dataclass
class TrackingConfig:
    """Where runs go. ``uri=None``: ``sqlite:///<cwd>/mlflow.db`` with artifacts beside it."""

    enabled: bool = True
    uri: str | None = field(default=None, metadata=allowed(min_len=1, note="checked by ltr.tracking.check_tracking_uri"))
    experiment: str = field(default="ltr", metadata=allowed(min_len=1))
    run_name: str | None = field(default=None, metadata=allowed(min_len=1))  # None: made from the overrides
    log_model: bool = True  # also log the booster as an MLflow model (mlflow.pyfunc.load_model)
    # liveness (ltr.tracking.liveness.heartbeat): a RUNNING run's process writes its ltr.heartbeat tag every
    # heartbeat_s seconds (null: no heartbeat); a command on another host reaps the run KILLED once
    # no beat came for heartbeat_s * stale_after seconds
    heartbeat_s: float | None = field(default=30.0, metadata=neutral(allowed(ge=0.1, le=3600)))
    stale_after: int = field(default=10, metadata=neutral(allowed(ge=2, le=10**4)))
    # a tracking server that does not answer (stopped, restarting) is waited for this many
    # seconds, one line every few seconds, before the run fails (ltr.tracking.server_wait)
    server_wait_s: float = field(default=120.0, metadata=neutral(allowed(ge=0, le=86400)))


@dataclass
class TrainerConfig:
    """Where training runs: ``local`` (one process) or ``dask`` (lightgbm.dask on a cluster)."""

    kind: TrainerKind = TrainerKind.local
    # dask only: a scheduler address (tcp://host:8786), or None for a LocalCluster on this machine
    scheduler_address: str | None = field(default=None, metadata=allowed(min_len=1))
    n_workers: int = field(default=2, metadata=allowed(ge=1, le=4096))
    threads_per_worker: int = field(default=1, metadata=allowed(ge=1, le=4096))
    n_partitions: int | None = field(default=None, metadata=allowed(ge=1, le=10**6))  # per split; None: one per worker


@dataclass
class CvConfig:
    """Cross-validation: a sweep over the folds of a data set (``experiment=letor_cv``).

    ``fold_key``: the config key the sweep varies to pick a fold (``data.fold``); when set, the
    sweep's parent run reports every metric's mean and standard deviation over the folds.
    """

    fold_key: str | None = field(default=None, metadata=allowed(min_len=1))


@dataclass
class SweepConfig:
    """What a sweep's parent run judges its jobs by, for grids and searches alike (README:
    "Searches: several objectives, guardrails, pruning").

    ``directions``: one per ``optimized_metric`` key (``maximize`` / ``minimize``); None:
    maximise each. ``constraints``: guardrails a job must meet to count as the sweep's best,
    each ``"<metric key> <op> <number | baseline>"`` with op one of ``>= <= > <``, e.g.
    ``"valid/ild_at_10 >= 0.30"``, ``"valid/ndcg_at_10/len_51_plus >= baseline"``.
    ``baseline``: the run ``baseline`` means (a run id, name or id prefix in the experiment);
    None: the sweep's first job (job 0).
    """

    directions: list[Direction] | None = field(default=None, metadata=allowed(min_len=1))
    constraints: list[str] = field(default_factory=list, metadata=allowed(note="each '<key> <op> <number | baseline>'"))
    baseline: str | None = field(default=None, metadata=allowed(min_len=1))


@dataclass
class TrainConfig:
    """The composed config of ``ltr train``."""

    seed: int = field(default=DEFAULT_SEED, metadata=allowed(ge=0, le=SEED_MAX))
    # The value ``ltr train`` returns to a sweeper (maximised): a metric key the run logs, e.g.
    # valid/ndcg_at_10 or valid/ndcg_at_10/len_51_plus; None: valid/ndcg_at_<max(eval.k)>.
    # A list of keys is a multi-objective search (sweep.directions; the first key is the primary).
    optimized_metric: Any = field(default=None, metadata=allowed(min_len=1, note="a metric key the run logs, or a list of two"))
    data: Any = MISSING
    split: Any = MISSING
    model: Any = MISSING  # ModelConfig (LightGBM), or an option of ltr.config.groups.backends.MODEL_OPTIONS
    fit: FitConfig = MISSING
    eval: EvalConfig = MISSING
    tracking: TrackingConfig = MISSING
    trainer: TrainerConfig = MISSING
    rerank: RerankConfig = MISSING
    cv: CvConfig = field(default_factory=CvConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)


#: The schema of each config group but ``data`` (whose options have one each:
#: ``ltr.config.groups.data.DATA_OPTIONS``); ``ltr.config.store.register_configs`` stores them in this
#: order (``rerank`` last: its check that the schemas are stored reads that one).
GROUP_SCHEMAS: dict[str, type] = {
    "split": SplitConfig, "model": ModelConfig, "fit": FitConfig, "eval": EvalConfig,
    "tracking": TrackingConfig, "trainer": TrainerConfig, "rerank": RerankConfig,
}  # fmt: skip


@functools.cache
def neutral_keys() -> frozenset[str]:
    """The dotted keys of ``ltr train``'s neutral fields (:mod:`ltr.config.neutral`): the root
    config's, every group's, and the data options' as ``data.<name>`` whichever option declares them."""
    keys = neutral_fields(TrainConfig)
    keys += [key for cls in DATA_OPTIONS.values() for key in neutral_fields(cls, "data.")]
    keys += [key for group, cls in GROUP_SCHEMAS.items() for key in neutral_fields(cls, f"{group}.")]
    keys += [key for cls in MODEL_OPTIONS.values() for key in neutral_fields(cls, "model.")]
    return frozenset(keys)


@functools.cache
def list_keys() -> frozenset[str]:
    """The dotted keys of ``ltr train``'s fields that hold a list (``eval.k``, ``sweep.constraints``):
    the root config's, every group's and every data option's."""
    keys = list_fields(TrainConfig)
    keys += [key for cls in DATA_OPTIONS.values() for key in list_fields(cls, "data.")]
    keys += [key for group, cls in GROUP_SCHEMAS.items() for key in list_fields(cls, f"{group}.")]
    keys += [key for cls in MODEL_OPTIONS.values() for key in list_fields(cls, "model.")]
    return frozenset(keys)
