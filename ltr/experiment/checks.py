"""Every rule a ``ltr train`` config must follow, checked before any data is read or run exists.

:func:`check_config` turns a composed config into an :class:`ExperimentSpec` or raises
:class:`ltr.errors.LtrUserError` with one line that names the config key and the fix. Fixed
choices (``trainer.kind``, ``eval.ties``, ...) are Enums, so Hydra refuses other values while
composing; the rules here are the ones that span fields or ranges. :func:`check_data` holds the
few rules that need the loaded data (positions for position-bias training, labels within
``model.label_gain``, per-feature LightGBM parameters when the config does not fix the feature
count); it runs before the tracking run is started too. This module imports
neither LightGBM nor pandas (``ltr train``'s config errors answer in a blink): the config rules
of LightGBM's settings are :mod:`ltr.training.settings`; :func:`check_data` imports LightGBM.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import logging
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from ltr.config.allowed import problems
from ltr.config.backends import backend_of
from ltr.config.choices import Estimator, RerankKind, Similarity, TrainerKind
from ltr.config.schema import (
    EvalConfig,
    FitConfig,
    RerankConfig,
    TrainConfig,
    TrainerConfig,
)
from ltr.config.unknown_key import data_option_of, unknown_key_message, unknown_keys
from ltr.data.clicks import BEHAVIOURS
from ltr.data.ranking_data import RankingData
from ltr.data.recipes import BUILTIN_SOURCES, TABLE_SOURCES, check_recipe
from ltr.data.splits import Splits
from ltr.data.width import configured_width
from ltr.errors import DataError, LtrUserError
from ltr.experiment.guardrails import parse_constraints
from ltr.experiment.spec import Composites, ExperimentSpec, diversity_measures
from ltr.metrics import Measure, MetricConventions, Strata, resolve_conventions
from ltr.metrics.composite_rules import check_composites, composite_ks, parse_composite
from ltr.metrics.measures import table_measures
from ltr.training.feature_params import check_feature_params
from ltr.training.settings import (
    check_model_config,
    is_our_curve,
    watchable_metrics,
    watched_metric,
)

log = logging.getLogger(__name__)


def check_config(cfg: DictConfig, *, paths: bool = True) -> ExperimentSpec:
    """The checked, typed spec of a composed ``ltr train`` config. ``paths=False``: data paths
    need not exist (a logged run's settings, read to score other data: :mod:`ltr.models.logged`).

    Raises
    ------
    LtrUserError
        One line naming the config key, for the first rule the config breaks.
    """
    config = _typed(cfg)
    check_schema(cfg, config, paths=paths)
    check_run_name(config.tracking.run_name)
    ks = _check_ks(config.eval)
    strata = _check_strata(config.eval)
    conventions = _check_conventions(config.eval)
    composites = _check_composites(config.eval) | _objective_composites(config)
    table_ks = ks + tuple(k for k in composite_ks(composites) if k not in ks)
    _check_eval(config.eval)
    early_stopping_metric = _check_fit(config.fit, ks)
    _check_model(config.model, config.fit, seed=config.seed)
    _check_feature_params(config, files=paths)
    _check_trainer(config)
    _check_rerank(config)
    _check_labels(config)
    _check_click_log(config)
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
    objectives = _check_optimized_metric(spec)
    directions = _check_sweep(config, objectives, metric_keys(spec))
    config.fit.early_stopping_metric = early_stopping_metric
    config.optimized_metric = objectives[0] if len(objectives) == 1 else list(objectives)
    return dataclasses.replace(spec, optimized_metric=objectives[0], objectives=objectives, directions=directions)


def check_data(spec: ExperimentSpec, splits: Splits | None, *, n_features: int | None = None) -> None:
    """The rules that need the data (``splits``: the training view; None for partitioned data,
    whose feature count ``n_features`` comes from the files' footers).

    Asks LightGBM itself (:func:`ltr.training.local.check_lightgbm_accepts`), so LightGBM is
    imported here, once the data is read, not with this module: the config rules above answer
    without it."""
    model = spec.config.model
    if backend_of(model) == "lightgbm":
        _check_lightgbm_data(spec, splits, n_features)
    if splits is not None:
        popularity_column(spec.config.data, splits.train)
    _check_rerank_columns(spec.config.rerank, splits)


def _check_lightgbm_data(spec: ExperimentSpec, splits: Splits | None, n_features: int | None) -> None:
    """LightGBM's rules that need the data: positions, labels within ``model.label_gain``, and
    LightGBM's own answer on the settings."""
    from ltr.training.local import check_lightgbm_accepts, check_position_training

    model = spec.config.model
    max_label = 1
    if splits is not None:
        check_position_training(model, splits)
        max_label = max(int(part.labels.max()) for _, part in splits.items() if part.n_rows)
        n_features = splits.train.n_features
    check_feature_params(model.params, n_features)
    if model.label_gain is not None and max_label >= len(model.label_gain):
        raise LtrUserError(
            f"model.label_gain has {len(model.label_gain)} entries (labels 0..{len(model.label_gain) - 1}) "
            f"but the data has label {max_label}; give one gain per label 0..{max_label}"
        )
    check_lightgbm_accepts(model, spec.config.fit, max_label=max_label, seed=spec.seed, n_features=n_features)


def _check_rerank_columns(rerank: RerankConfig, splits: Splits | None) -> None:
    if splits is not None and rerank.kind != RerankKind.none:
        n_features = splits.train.n_features
        columns = [("features", c) for c in rerank.features or []]
        if rerank.category_feature is not None:
            columns.append(("category_feature", rerank.category_feature))
        for name, col in columns:
            if col >= n_features:
                raise LtrUserError(f"rerank.{name}: column {col} is beyond the data's {n_features} features (0-based)")
        _check_categories(rerank, splits)


def check_schema(cfg: DictConfig, config: TrainConfig, *, paths: bool = True) -> None:
    """The rules every config dataclass declares: no key the schemas lack (a ``+key=`` override
    is checked as any other; the free maps ``model.params`` and ``eval.composite`` excepted), and
    every field's allowed values (:mod:`ltr.config.allowed`). Then a setting that cannot take
    effect (it needs another one that is off) is warned about in one line."""
    unknown = unknown_keys(cfg)
    if unknown:
        key, known = unknown[0]
        raise LtrUserError(unknown_key_message(key, known, data_option=data_option_of(OmegaConf.get_type(cfg.data))))
    found = problems(config, paths=paths)
    if found:
        raise LtrUserError(found[0])
    for warning in inactive_settings(config):
        log.warning("ltr: %s", warning)


def _changed(value: Any, schema: type[Any], prefix: str) -> list[str]:
    """``key=value`` of each field of the dataclass instance ``value`` set away from the schema's default."""
    default = schema()
    return [
        f"{prefix}{f.name}={getattr(value, f.name)}"
        for f in dataclasses.fields(value)
        if getattr(value, f.name) != getattr(default, f.name)
    ]


def inactive_settings(config: TrainConfig) -> list[str]:
    """One line per setting that cannot take effect because the setting it serves is off."""
    out = []
    if config.rerank.kind == RerankKind.none:
        changed = [c for c in _changed(config.rerank, RerankConfig, "rerank.") if not c.startswith("rerank.kind=")]
        if changed:
            out.append(f"{', '.join(changed)} has no effect with rerank=none (add rerank=diversify to re-rank)")
    if config.trainer.kind == TrainerKind.local:
        changed = [c for c in _changed(config.trainer, TrainerConfig, "trainer.") if not c.startswith("trainer.kind=")]
        if changed:
            out.append(f"{', '.join(changed)} has no effect with trainer=local (add trainer=dask)")
    if config.fit.early_stopping_rounds is None and config.fit.early_stopping_metric is not None:
        out.append(
            f"fit.early_stopping_metric={config.fit.early_stopping_metric} has no effect with "
            "fit.early_stopping_rounds=null (no early stopping)"
        )
    model = config.model
    if backend_of(model) == "catboost" and model.num_leaves is not None and model.grow_policy != "Lossguide":
        out.append(f"model.num_leaves={model.num_leaves} has no effect with model.grow_policy={model.grow_policy} (add model.grow_policy=Lossguide)")
    split = config.split
    if getattr(split, "n_folds", None) is None and getattr(split, "fold", 1) != 1:
        out.append(f"split.fold={split.fold} has no effect without split.n_folds (k-fold by query)")
    return out


def metric_keys(spec: ExperimentSpec) -> list[str]:
    """The per-split measure keys a run of ``spec`` logs (``valid/ndcg_at_10``, ``.../len_1-10``)."""
    names = [m.key for m in table_measures(list(spec.table_ks))] + list(spec.composites)
    names += [f"{m}_at_{k}" for m in diversity_measures(spec.config.rerank) for k in spec.ks]
    suffixes = ["", *(f"/{key}" for key in spec.strata.keys)]
    return [f"{split}/{name}{suffix}" for split in spec.config.eval.splits for name in names for suffix in suffixes]


def _check_categories(rerank: RerankConfig, splits: Splits) -> None:
    """Categories are integer codes: a column of other values needs ``rerank.category_bins``
    (else every distinct value is its own category and ``similarity=category`` re-ranks nothing)."""
    col = rerank.category_feature
    if col is None or rerank.category_bins is not None:
        return
    values = splits.train.features[:, col]
    fractional = values[np.isfinite(values) & (values != np.rint(values))]
    if fractional.size:
        raise LtrUserError(
            f"rerank.category_feature={col}: column {col} holds non-integer values (e.g. {fractional[0]:.6g}), "
            "so each value would be a category of its own; set rerank.category_bins=N to cut it into N "
            "quantile bins, or pick a column of integer categories"
        )


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


#: The longest ``tracking.run_name``: MLflow keeps a run's name in a column of 250 characters.
MAX_RUN_NAME = 250


def check_run_name(name: str | None) -> None:
    """Refuse a ``tracking.run_name`` longer than :data:`MAX_RUN_NAME` characters, or with a
    control character (ESC, BEL, a newline: a name is printed to terminals and drawn in figure
    titles), before any work; None (a name made from the overrides) passes."""
    if name is None:
        return
    if len(name) > MAX_RUN_NAME:
        raise LtrUserError(
            f"tracking.run_name is {len(name):,} characters long ({name[:20]}...): at most {MAX_RUN_NAME}, "
            "MLflow's limit of a run name; give a shorter name"
        )
    control = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        raise LtrUserError(
            f"tracking.run_name {name!r} has a control character ({control!r}): give a name of printable characters"
        )


def _check_ks(eval_cfg: EvalConfig) -> tuple[int, ...]:
    ks = tuple(int(k) for k in eval_cfg.k)
    if len(set(ks)) != len(ks):
        raise LtrUserError(f"eval.k={list(ks)} repeats a cut-off")
    return ks


def _check_strata(eval_cfg: EvalConfig) -> Strata:
    try:
        return Strata(tuple(int(e) for e in eval_cfg.strata))
    except ValueError as exc:
        raise LtrUserError(f"eval.strata={list(eval_cfg.strata)}: {exc} (e.g. eval.strata=[1,11,51])") from exc


def _check_conventions(eval_cfg: EvalConfig) -> MetricConventions:
    weights = getattr(eval_cfg, "position_weights", None)
    if weights is not None and str(eval_cfg.discount) != "log2_rank_plus_1":
        raise LtrUserError(
            f"eval.position_weights replaces eval.discount={eval_cfg.discount}: set one of them"
        )
    if weights is not None and len(weights) and not any(float(w) > 0 for w in weights):
        raise LtrUserError(
            f"eval.position_weights=[{','.join(f'{float(w):g}' for w in weights)}]: every weight is 0, so every DCG and "
            "nDCG would be 0; give at least one weight > 0"
        )
    if eval_cfg.gain is not None and str(eval_cfg.gain) == "value":
        raise LtrUserError(
            "eval.gain=value: ltr train evaluates the labels it trains on, and LightGBM's lambdarank "
            "needs integer grades; train on grades and evaluate the real values (revenue, margin) with "
            "ltr evaluate --gain value --data FILE --scores PREDS (ltr predict writes the scores)"
        )
    try:
        conventions = resolve_conventions(
            None if eval_cfg.preset is None else str(eval_cfg.preset),
            gain=None if eval_cfg.gain is None else str(eval_cfg.gain),
            ties=None if eval_cfg.ties is None else str(eval_cfg.ties),
            zero_idcg=None if eval_cfg.zero_idcg is None else str(eval_cfg.zero_idcg),
            label_gain=eval_cfg.label_gain,
            rel_threshold=int(eval_cfg.rel_threshold),
            discount=str(eval_cfg.discount) if weights is None else tuple(float(w) for w in weights),
            discount_base=float(eval_cfg.discount_base),
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


def _objective_composites(config: TrainConfig) -> Composites:
    """Composites defined in ``optimized_metric`` (a sweep's objectives), in the syntax of ``ltr
    evaluate --composite``: ``valid/blend=0.4*ndcg_at_3+0.6*ndcg_at_10`` is the key
    ``valid/blend`` of the composite ``eval.composite.blend={ndcg_at_3: 0.4, ndcg_at_10: 0.6}``.
    The key is rewritten to ``valid/blend`` and the composite added to ``eval.composite`` (so the
    run logs it as every composite); a name ``eval.composite`` defines with other weights is an
    error."""
    raw = config.optimized_metric
    if raw is None:
        return {}
    many = isinstance(raw, list | tuple | ListConfig)
    keys = [str(k) for k in raw] if many else [str(raw)]
    found: dict[str, dict[str, float]] = {}
    rewritten = []
    for key in keys:
        split, slash, rest = key.partition("/")
        if not slash or "=" not in rest:
            rewritten.append(key)
            continue
        one = parse_composite(rest, where=f"optimized_metric={key!r}:")
        name, parts = next(iter(one.items()))
        known = (config.eval.composite or {}).get(name)
        if known is not None and {str(p): float(w) for p, w in known.items()} != parts:
            raise LtrUserError(f"optimized_metric={key!r}: eval.composite.{name} has other weights; give the composite another name")
        found[name] = parts
        rewritten.append(f"{split}/{name}")
    if found:
        config.optimized_metric = rewritten if many else rewritten[0]
        config.eval.composite = {**(config.eval.composite or {}), **found}
    return found


def _check_eval(eval_cfg: EvalConfig) -> None:
    splits = list(eval_cfg.splits)
    if len(set(splits)) != len(splits):
        raise LtrUserError(f"eval.splits={splits} repeats a split")


def _check_fit(fit: FitConfig, ks: tuple[int, ...]) -> str:
    """The checks of ``fit``; returns the early-stopping metric (ours ``ndcg_at_k`` or LightGBM's ``ndcg@k``)."""
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


def _check_model(model: Any, fit: FitConfig, *, seed: int) -> None:
    """The model's settings: LightGBM's rules here, another backend's by its own module
    (:func:`ltr.training.backends.check_backend`: its library installed, its parameters)."""
    if backend_of(model) != "lightgbm":
        from ltr.training.backends import check_backend

        check_backend(model, fit, seed=seed)
        return
    if model.label_gain is not None:
        gains = list(model.label_gain)
        if any(b < a for a, b in itertools.pairwise(gains)):
            raise LtrUserError(
                f"model.label_gain={gains} decreases: LightGBM orders its ideal list by label, not by "
                "gain, so its NDCG would not be NDCG; give gains that do not decrease with the label"
            )
    check_model_config(model)


def _check_feature_params(config: TrainConfig, *, files: bool) -> None:
    """LightGBM's per-feature parameters against the feature count the data option fixes, if it
    fixes one (synthetic data, ``data.n_features``, a table's ``data.feature_columns``); else
    their values and files only (``files``: the files they name too), and :func:`check_data`
    checks the count once the data is read."""
    if backend_of(config.model) != "lightgbm":
        return
    width = configured_width(config.data)
    if width is None:
        check_feature_params(config.model.params, None, files=files)
    else:
        check_feature_params(config.model.params, width.n_features, source=width.source, files=files)


def _check_trainer(config: TrainConfig) -> None:
    kind = config.trainer.kind
    if config.data.read_by_workers and kind != TrainerKind.dask:
        raise LtrUserError(
            f"data={config.data.kind} is read by Dask workers: add trainer=dask (got trainer={kind})"
        )
    backend = backend_of(config.model)
    if backend != "lightgbm":
        if kind != TrainerKind.local:
            raise LtrUserError(
                f"model={config.model.name} trains in this process ({backend}): use trainer=local "
                "(trainer=dask trains LightGBM models)"
            )
        return
    if config.model.position_bias and kind != TrainerKind.local:
        raise LtrUserError("model.position_bias=true trains through lgb.train: use trainer=local")
    if kind == TrainerKind.dask:
        if config.model.estimator != Estimator.ranker:
            raise LtrUserError(
                f"trainer=dask trains rankers only: model.estimator={config.model.estimator} needs trainer=local"
            )
        if importlib.util.find_spec("distributed") is None:
            raise LtrUserError("trainer=dask needs Dask: pip install 'ltr[dask]'")


def _check_rerank(config: TrainConfig) -> None:
    rerank = config.rerank
    if rerank.alpha > 1 and rerank.kind != RerankKind.uncertainty:
        raise LtrUserError(
            f"rerank.alpha={rerank.alpha:g} is out of range: it must be <= 1 for rerank=diversify "
            "(score x (1 - alpha x similarity)); only rerank=uncertainty's bonus weight may exceed 1"
        )
    if rerank.kind == RerankKind.none:
        return
    if config.data.read_by_workers:
        raise LtrUserError(
            f"rerank={rerank.kind} needs the rows in this process: data={config.data.kind} is "
            "evaluated on the Dask workers (use rerank=none, or an in-memory data option)"
        )
    if rerank.kind == RerankKind.uncertainty:
        # rerank.alpha's range (>= 0) is declared on the field (ltr.config.allowed): a bonus weight
        if getattr(config.data, "popularity_feature", None) is None:
            raise LtrUserError("rerank=uncertainty needs data.popularity_feature (the column of the items' popularity)")
        return
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
    clicks = str(data.kind) == "synthetic_clicks"
    known = [*(BUILTIN_SOURCES if clicks else TABLE_SOURCES), *recipes]
    for role in ("train", "valid", "eval"):
        value = str(getattr(data, f"{role}_labels"))
        if value not in known:
            raise LtrUserError(
                f"data.{role}_labels={value!r} is not one of: {', '.join(known)} (define a recipe in data.label_recipes)"
            )
    columns = BEHAVIOURS if clicks else [str(c) for c in getattr(data, "behaviour_columns", None) or []]
    for name, recipe in recipes.items():
        try:
            check_recipe(str(name), recipe, columns)
        except DataError as exc:
            if clicks:
                raise
            raise LtrUserError(f"{exc}; a table's recipes grade the columns listed in data.behaviour_columns") from None


def _check_click_log(config: TrainConfig) -> None:
    """A click log's options fit together (:mod:`ltr.data.click_log`): a user's log
    (``data.click_column``) needs ``data.position_column`` and propensities it can have; each
    propensity method needs its columns; the simulator's log has no logged propensities or
    rankers. One line each, before any data is read."""
    data, clicks = config.data, config.eval.clicks
    method = str(clicks.propensity)
    simulated = str(data.kind) == "synthetic_clicks"
    user_log = getattr(data, "click_column", None) is not None
    for key in ("propensity_column", "logger_column", "query_column", "randomized_column"):
        if getattr(data, key, None) is not None and not user_log:
            raise LtrUserError(f"data.{key} is a column of a click log: set data.click_column too (the column of clicks)")
    if method == "randomized" and getattr(data, "randomized_column", None) is None:
        raise LtrUserError(
            "eval.clicks.propensity=randomized needs data.randomized_column (0/1 per row: 1 for a session shown in random "
            "order); data=synthetic_clicks has none: write it with ltr data write synthetic_clicks data.randomized_share=0.3 "
            "and train on the files (data=parquet)"
            if simulated else
            "eval.clicks.propensity=randomized needs data.randomized_column (0/1 per row: 1 for a session shown in random order)"
        )  # fmt: skip
    if not user_log:
        if simulated and method in ("harvest", "column"):
            raise LtrUserError(
                f"eval.clicks.propensity={method} needs a logged "
                f"{'ranker id per row (several logging rankers)' if method == 'harvest' else 'propensity per row'}, which "
                "data=synthetic_clicks has not; use config, estimated or em"
            )
        return
    if getattr(data, "position_column", None) is None:
        raise LtrUserError(f"data.click_column={data.click_column!r} needs data.position_column (the logged 0-based positions)")
    if method == "config" and clicks.propensities is None:
        raise LtrUserError(
            "a click log (data.click_column) has no known examination curve: give eval.clicks.propensities=[1,0.6,...] "
            "or estimate it: eval.clicks.propensity=em (or estimated, harvest with data.logger_column, column with "
            "data.propensity_column)"
        )
    if method == "column" and getattr(data, "propensity_column", None) is None:
        raise LtrUserError("eval.clicks.propensity=column needs data.propensity_column (the logged propensity of every row)")
    if method == "harvest":
        if getattr(data, "logger_column", None) is None:
            raise LtrUserError("eval.clicks.propensity=harvest needs data.logger_column (the id of the ranker that showed each list)")
        if getattr(data, "doc_id_column", None) is None:
            raise LtrUserError("eval.clicks.propensity=harvest needs data.doc_id_column (the same document under several rankers)")


def _check_optimized_metric(spec: ExperimentSpec) -> tuple[str, ...]:
    """The keys of ``optimized_metric`` (one, or a list: several objectives), or
    ``(valid/ndcg_at_<max k>,)``; each must be a key the run logs, none twice."""
    config = spec.config
    if config.optimized_metric is None:
        if "valid" not in config.eval.splits:
            raise LtrUserError(
                f"eval.splits={list(config.eval.splits)} has no valid split to optimise on: "
                "add it, or set optimized_metric (e.g. optimized_metric=test/ndcg_at_10)"
            )
        return (f"valid/{Measure('ndcg', max(spec.ks)).key}",)
    raw = config.optimized_metric
    keys = tuple(str(k) for k in raw) if isinstance(raw, list | tuple | ListConfig) else (str(raw),)
    if not keys:
        raise LtrUserError("optimized_metric=[] names no metric; give a key (valid/ndcg_at_10) or a list of keys")
    logged = metric_keys(spec)
    for key in keys:
        if key not in logged:
            examples = ", ".join(f"{s}/{Measure('ndcg', max(spec.ks)).key}" for s in config.eval.splits)
            raise LtrUserError(
                f"optimized_metric={key!r} is not a metric this run logs; use a measure of eval.splits "
                f"at a cut-off of eval.k, e.g. {examples} (or .../len_1-10 for a stratum)"
            )
    if len(set(keys)) != len(keys):
        raise LtrUserError(f"optimized_metric={list(keys)} names a key twice")
    if len(keys) > 2:
        raise LtrUserError(f"optimized_metric={list(keys)}: a sweep optimises one key or two (a front of two objectives)")
    return keys


def _check_sweep(config: TrainConfig, objectives: tuple[str, ...], logged: Sequence[str]) -> tuple[str, ...]:
    """``sweep.directions`` (one per objective; default: maximise each) and the grammar and keys
    of ``sweep.constraints``; returns the directions."""
    sweep = config.sweep
    directions = tuple(str(d) for d in sweep.directions) if sweep.directions is not None else ("maximize",) * len(objectives)
    if len(directions) != len(objectives):
        raise LtrUserError(
            f"sweep.directions={list(directions)} has {len(directions)} entries but optimized_metric has "
            f"{len(objectives)} ({', '.join(objectives)}): give one direction per key"
        )
    parse_constraints(list(sweep.constraints), known_keys=logged)
    return directions
