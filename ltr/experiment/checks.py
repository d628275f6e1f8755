"""Every rule a ``ltr train`` config must follow, checked before any data is read or run exists.

:func:`check_config` turns a composed config into an :class:`ExperimentSpec` or raises
:class:`ltr.errors.LtrUserError` with one line that names the config key and the fix. Fixed
choices (``trainer.kind``, ``eval.ties``, ...) are Enums, so Hydra refuses other values while
composing; the rules here are the ones that span fields or ranges. :func:`check_data` holds the
few rules that need the loaded data (positions for position-bias training, labels within
``model.label_gain``); it runs before the tracking run is started too.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import math
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from ltr.config.choices import Estimator, RerankKind, Similarity, TrainerKind
from ltr.config.schema import EvalConfig, FitConfig, ModelConfig, TrainConfig
from ltr.data.clicks import BEHAVIOURS
from ltr.data.ranking_data import RankingData
from ltr.data.recipes import BUILTIN_SOURCES, check_recipe
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.experiment.rerank import diversity_measures
from ltr.experiment.spec import Composites, ExperimentSpec
from ltr.metrics import Measure, MetricConventions, Strata, resolve_conventions
from ltr.metrics.composite import check_composites, composite_ks
from ltr.metrics.measures import table_measures
from ltr.training.local import (
    check_lightgbm_accepts,
    check_model_config,
    check_position_training,
    watchable_metrics,
    watched_metric,
)
from ltr.training.round_metric import is_our_curve

#: The splits ``eval.splits`` may name.
EVAL_SPLITS = ("train", "valid", "test")


def check_config(cfg: DictConfig) -> ExperimentSpec:
    """The checked, typed spec of a composed ``ltr train`` config.

    Raises
    ------
    LtrUserError
        One line naming the config key, for the first rule the config breaks.
    """
    config = _typed(cfg)
    ks = _check_ks(config.eval)
    strata = _check_strata(config.eval)
    conventions = _check_conventions(config.eval)
    composites = _check_composites(config.eval)
    table_ks = ks + tuple(k for k in composite_ks(composites) if k not in ks)
    _check_eval(config.eval)
    early_stopping_metric = _check_fit(config.fit, ks)
    _check_model(config.model)
    _check_trainer(config)
    _check_rerank(config)
    _check_labels(config)
    spec = ExperimentSpec(
        config=config,
        raw=cfg,
        ks=ks,
        table_ks=table_ks,
        strata=strata,
        conventions=conventions,
        composites=composites,
        optimized_metric="",
        early_stopping_metric=early_stopping_metric,
    )
    optimized_metric = _check_optimized_metric(spec)
    config.fit.early_stopping_metric = early_stopping_metric
    config.optimized_metric = optimized_metric
    return dataclasses.replace(spec, optimized_metric=optimized_metric)


def check_data(spec: ExperimentSpec, splits: Splits | None) -> None:
    """The rules that need the data (``splits``: the training view; None for partitioned data)."""
    model = spec.config.model
    max_label = 1
    if splits is not None:
        check_position_training(model, splits)
        max_label = max(int(part.labels.max()) for _, part in splits.items() if part.n_rows)
    if model.label_gain is not None and max_label >= len(model.label_gain):
        raise LtrUserError(
            f"model.label_gain has {len(model.label_gain)} entries (labels 0..{len(model.label_gain) - 1}) "
            f"but the data has label {max_label}; give one gain per label 0..{max_label}"
        )
    check_lightgbm_accepts(model, spec.config.fit, max_label=max_label, seed=spec.seed)
    if splits is not None:
        popularity_column(spec.config.data, splits.train)
    rerank = spec.config.rerank
    if splits is not None and rerank.kind != RerankKind.none:
        n_features = splits.train.n_features
        columns = [("features", c) for c in rerank.features or []]
        if rerank.category_feature is not None:
            columns.append(("category_feature", rerank.category_feature))
        for name, col in columns:
            if col >= n_features:
                raise LtrUserError(f"rerank.{name}: column {col} is beyond the data's {n_features} features (0-based)")


def metric_keys(spec: ExperimentSpec) -> list[str]:
    """The per-split measure keys a run of ``spec`` logs (``valid/ndcg_at_10``, ``.../len_1-10``)."""
    names = [m.key for m in table_measures(list(spec.table_ks))] + list(spec.composites)
    names += [f"{m}_at_{k}" for m in diversity_measures(spec.config.rerank) for k in spec.ks]
    suffixes = ["", *(f"/{key}" for key in spec.strata.keys)]
    return [f"{split}/{name}{suffix}" for split in spec.config.eval.splits for name in names for suffix in suffixes]


def _typed(cfg: DictConfig) -> TrainConfig:
    """``cfg`` as its dataclasses; a mandatory value left ``???`` is a one-line error."""
    try:
        config = OmegaConf.to_object(cfg)
    except MissingMandatoryValue as exc:
        key = exc.full_key or "a config key"
        raise LtrUserError(f"{key} is required: set it on the command line ({key}=...)") from exc
    except OmegaConfBaseException as exc:
        raise LtrUserError(f"{exc.full_key}: {str(exc).splitlines()[0]}") from exc
    if not isinstance(config, TrainConfig):
        raise LtrUserError("the config is not a ltr train config (compose it from ltr/conf/train.yaml)")
    return config


def _check_ks(eval_cfg: EvalConfig) -> tuple[int, ...]:
    ks = tuple(int(k) for k in eval_cfg.k)
    if not ks:
        raise LtrUserError("eval.k=[] is empty: give at least one cut-off, e.g. eval.k=[5,10]")
    if min(ks) < 1:
        raise LtrUserError(f"eval.k={list(ks)}: every cut-off must be >= 1")
    if len(set(ks)) != len(ks):
        raise LtrUserError(f"eval.k={list(ks)} repeats a cut-off")
    return ks


def _check_strata(eval_cfg: EvalConfig) -> Strata:
    try:
        return Strata(tuple(int(e) for e in eval_cfg.strata))
    except ValueError as exc:
        raise LtrUserError(f"eval.strata={list(eval_cfg.strata)}: {exc} (e.g. eval.strata=[1,11,51])") from exc


def _check_conventions(eval_cfg: EvalConfig) -> MetricConventions:
    if eval_cfg.rel_threshold < 0:
        raise LtrUserError(f"eval.rel_threshold={eval_cfg.rel_threshold} must be >= 0")
    try:
        conventions = resolve_conventions(
            None if eval_cfg.preset is None else str(eval_cfg.preset),
            gain=None if eval_cfg.gain is None else str(eval_cfg.gain),
            ties=None if eval_cfg.ties is None else str(eval_cfg.ties),
            zero_idcg=None if eval_cfg.zero_idcg is None else str(eval_cfg.zero_idcg),
            label_gain=eval_cfg.label_gain,
            rel_threshold=int(eval_cfg.rel_threshold),
        )
    except ValueError as exc:
        raise LtrUserError(f"eval: {exc}") from exc
    return conventions


def _check_composites(eval_cfg: EvalConfig) -> Composites:
    composites = {
        str(name): {str(part): float(weight) for part, weight in parts.items()}
        for name, parts in (eval_cfg.composite or {}).items()
    }
    check_composites(composites)
    return composites


def _check_eval(eval_cfg: EvalConfig) -> None:
    splits = list(eval_cfg.splits)
    if not splits:
        raise LtrUserError("eval.splits=[] is empty: e.g. eval.splits=[valid,test]")
    bad = [s for s in splits if s not in EVAL_SPLITS]
    if bad:
        raise LtrUserError(f"eval.splits: {bad[0]!r} is not one of {', '.join(EVAL_SPLITS)}")
    if len(set(splits)) != len(splits):
        raise LtrUserError(f"eval.splits={splits} repeats a split")
    if eval_cfg.idcg_bins < 1:
        raise LtrUserError(f"eval.idcg_bins={eval_cfg.idcg_bins} must be >= 1")
    clicks = eval_cfg.clicks
    if not 0 < clicks.min_propensity <= 1:
        raise LtrUserError(f"eval.clicks.min_propensity={clicks.min_propensity} must be in (0, 1]")
    if clicks.online_sessions < 0:
        raise LtrUserError(f"eval.clicks.online_sessions={clicks.online_sessions} must be >= 0 (0: off)")
    if clicks.propensities is not None:
        if not clicks.propensities:
            raise LtrUserError("eval.clicks.propensities=[] is empty; use null for the data's curve")
        bad_p = [p for p in clicks.propensities if not (math.isfinite(p) and 0 < p <= 1)]
        if bad_p:
            raise LtrUserError(f"eval.clicks.propensities has {bad_p[0]}; every propensity must be in (0, 1]")


def _check_fit(fit: FitConfig, ks: tuple[int, ...]) -> str:
    """The checks of ``fit``; returns the early-stopping metric (ours ``ndcg_at_k`` or LightGBM's ``ndcg@k``)."""
    if fit.num_boost_round < 1:
        raise LtrUserError(f"fit.num_boost_round={fit.num_boost_round} must be >= 1")
    if fit.early_stopping_rounds is not None and fit.early_stopping_rounds < 1:
        raise LtrUserError(
            f"fit.early_stopping_rounds={fit.early_stopping_rounds} must be >= 1 (null: no early stopping)"
        )
    if fit.num_threads < 0:
        raise LtrUserError(f"fit.num_threads={fit.num_threads} must be >= 0 (0: all cores)")
    metric = watched_metric(fit, ks)
    allowed = watchable_metrics(ks)
    if metric not in allowed:
        ours = [m for m in allowed if is_our_curve(m)]
        theirs = [m for m in allowed if not is_our_curve(m)]
        raise LtrUserError(
            f"fit.early_stopping_metric={metric!r} is not computed with eval.k={list(ks)}; use one of "
            f"{', '.join(ours)} (our nDCG, the run's conventions) or {', '.join(theirs)} "
            "(LightGBM's own), or add its cut-off to eval.k"
        )
    return metric


def _check_model(model: ModelConfig) -> None:
    if not model.learning_rate > 0:
        raise LtrUserError(f"model.learning_rate={model.learning_rate} must be > 0")
    if model.num_leaves < 2:
        raise LtrUserError(f"model.num_leaves={model.num_leaves} must be >= 2")
    if model.label_gain is not None:
        bad = [g for g in model.label_gain if not (math.isfinite(g) and g >= 0)]
        if bad or not model.label_gain:
            raise LtrUserError(f"model.label_gain={list(model.label_gain)}: give finite gains >= 0, one per label")
        gains = list(model.label_gain)
        if any(b < a for a, b in itertools.pairwise(gains)):
            raise LtrUserError(
                f"model.label_gain={gains} decreases: LightGBM orders its ideal list by label, not by "
                "gain, so its NDCG would not be NDCG; give gains that do not decrease with the label"
            )
    check_model_config(model)


def _check_trainer(config: TrainConfig) -> None:
    kind = config.trainer.kind
    if config.data.read_by_workers and kind != TrainerKind.dask:
        raise LtrUserError(
            f"data={config.data.kind} is read by Dask workers: add trainer=dask (got trainer={kind})"
        )
    if config.model.position_bias and kind != TrainerKind.local:
        raise LtrUserError("model.position_bias=true trains through lgb.train: use trainer=local")
    if kind == TrainerKind.dask:
        if config.model.estimator != Estimator.ranker:
            raise LtrUserError(
                f"trainer=dask trains DaskLGBMRanker only: model.estimator={config.model.estimator} needs trainer=local"
            )
        if config.trainer.n_workers < 1 or config.trainer.threads_per_worker < 1:
            raise LtrUserError(
                f"trainer.n_workers={config.trainer.n_workers} and trainer.threads_per_worker="
                f"{config.trainer.threads_per_worker} must both be >= 1"
            )
        if config.trainer.n_partitions is not None and config.trainer.n_partitions < 1:
            raise LtrUserError(f"trainer.n_partitions={config.trainer.n_partitions} must be >= 1")
        if importlib.util.find_spec("distributed") is None:
            raise LtrUserError("trainer=dask needs Dask: pip install 'ltr[dask]'")


def _check_rerank(config: TrainConfig) -> None:
    rerank = config.rerank
    if rerank.kind == RerankKind.none:
        return
    if config.data.read_by_workers:
        raise LtrUserError(
            f"rerank={rerank.kind} needs the rows in this process: data={config.data.kind} is "
            "evaluated on the Dask workers (use rerank=none, or an in-memory data option)"
        )
    if rerank.kind == RerankKind.uncertainty:
        if getattr(config.data, "popularity_feature", None) is None:
            raise LtrUserError("rerank=uncertainty needs data.popularity_feature (the column of the items' popularity)")
        if not rerank.alpha >= 0.0:
            raise LtrUserError(f"rerank.alpha={rerank.alpha} must be >= 0 (0: the model's order)")
        return
    if not 0.0 <= rerank.alpha <= 1.0:
        raise LtrUserError(f"rerank.alpha={rerank.alpha} must be in [0, 1] (0: the model's order)")
    if not 0.0 <= rerank.alpha_ndcg_alpha < 1.0:
        raise LtrUserError(f"rerank.alpha_ndcg_alpha={rerank.alpha_ndcg_alpha} must be in [0, 1)")
    if rerank.depth is not None and rerank.depth < 1:
        raise LtrUserError(f"rerank.depth={rerank.depth} must be >= 1 (null: the whole list)")
    if rerank.features is not None and (not rerank.features or min(rerank.features) < 0):
        raise LtrUserError(f"rerank.features={list(rerank.features)}: give 0-based feature columns, or null for all")
    if rerank.category_bins is not None and rerank.category_bins < 2:
        raise LtrUserError(f"rerank.category_bins={rerank.category_bins} must be >= 2")
    if rerank.category_feature is not None and rerank.category_feature < 0:
        raise LtrUserError(f"rerank.category_feature={rerank.category_feature} must be a 0-based feature column")
    if rerank.similarity == Similarity.category and rerank.category_feature is None:
        raise LtrUserError("rerank.similarity=category needs rerank.category_feature (the column holding categories)")


def popularity_column(data_cfg: Any, data: RankingData) -> int | None:
    """The feature column of ``data.popularity_feature`` (None when unset); a one-line error
    naming the feature names when the data has no such feature."""
    name = getattr(data_cfg, "popularity_feature", None)
    if name is None:
        return None
    if str(name) not in data.feature_names:
        shown = ", ".join(data.feature_names[:8]) + (", ..." if len(data.feature_names) > 8 else "")
        raise LtrUserError(f"data.popularity_feature={name!r} is not a feature of the data ({shown})")
    return data.feature_names.index(str(name))


def _check_labels(config: TrainConfig) -> None:
    """Label sources name a built-in source or a recipe of ``data.label_recipes``, and every recipe
    can grade the data's behaviour columns (``data=synthetic_clicks``: click, dwell, cart, purchase)."""
    data = config.data
    quantile = getattr(data, "tail_quantile", None)
    if quantile is not None and not 0.0 < quantile < 1.0:
        raise LtrUserError(f"data.tail_quantile={quantile} must lie in (0, 1) (null: 0.8)")
    if not hasattr(data, "train_labels"):
        return
    recipes = dict(getattr(data, "label_recipes", None) or {})
    known = [*BUILTIN_SOURCES, *recipes]
    for role in ("train", "valid", "eval"):
        value = str(getattr(data, f"{role}_labels"))
        if value not in known:
            raise LtrUserError(
                f"data.{role}_labels={value!r} is not one of: {', '.join(known)} (define a recipe in data.label_recipes)"
            )
    columns = BEHAVIOURS if str(data.kind) == "synthetic_clicks" else None
    for name, recipe in recipes.items():
        check_recipe(str(name), recipe, columns)


def _check_optimized_metric(spec: ExperimentSpec) -> str:
    """``optimized_metric``, or ``valid/ndcg_at_<max k>``; it must be a key the run logs."""
    config = spec.config
    if config.optimized_metric is None:
        if "valid" not in config.eval.splits:
            raise LtrUserError(
                f"eval.splits={list(config.eval.splits)} has no valid split to optimise on: "
                "add it, or set optimized_metric (e.g. optimized_metric=test/ndcg_at_10)"
            )
        return f"valid/{Measure('ndcg', max(spec.ks)).key}"
    key = str(config.optimized_metric)
    if key not in metric_keys(spec):
        examples = ", ".join(f"{s}/{Measure('ndcg', max(spec.ks)).key}" for s in config.eval.splits)
        raise LtrUserError(
            f"optimized_metric={key!r} is not a metric this run logs; use a measure of eval.splits "
            f"at a cut-off of eval.k, e.g. {examples} (or .../len_1-10 for a stratum)"
        )
    return key
