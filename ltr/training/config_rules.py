"""The model's and training's rules of a ``ltr train`` config (``fit``, ``model``, LightGBM's
per-feature parameters, ``trainer``), and of the data they train on.

A concern's rules of :mod:`ltr.experiment.checks`: :func:`check_config` (its ``ConfigRules``:
before any data is read; returns the early-stopping metric) and :func:`check_data` (its
``DataRules``: once the data is read). Each raises :class:`ltr.errors.LtrUserError` at the first
rule broken. The config rules import no LightGBM (the rules of its settings are
:mod:`ltr.training.settings` and :mod:`ltr.training.feature_params`); :func:`check_data` asks
LightGBM itself, importing it then.
"""

from __future__ import annotations

import importlib.util
import itertools
from typing import Any

from ltr.config.choices import Estimator, TrainerKind
from ltr.config.groups.backends import backend_of
from ltr.config.schema import FitConfig, TrainConfig
from ltr.data.formats.width import configured_width
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.training.feature_params import check_feature_params
from ltr.training.settings import (
    check_model_config,
    is_our_curve,
    watchable_metrics,
    watched_metric,
)


def check_config(config: TrainConfig, *, paths: bool = True) -> str:
    """The rules of ``fit``, ``model``, the per-feature parameters and ``trainer``, in that order;
    returns the early-stopping metric (ours ``ndcg_at_k`` or LightGBM's ``ndcg@k``). ``paths``:
    the files the per-feature parameters name are read too."""
    early_stopping_metric = _check_fit(config.fit, tuple(int(k) for k in config.eval.k))
    _check_model(config.model, config.fit, seed=config.seed)
    _check_feature_params(config, files=paths)
    _check_trainer(config)
    return early_stopping_metric


def check_data(config: TrainConfig, splits: Splits | None, *, n_features: int | None = None) -> None:
    """The rules that need the data (``splits``: the training view; None for partitioned data,
    whose feature count ``n_features`` comes from the files' footers): positions for
    position-bias training, the per-feature parameters against the feature count, labels within
    ``model.label_gain``, and LightGBM's own word on the parameters
    (:func:`ltr.training.local.check_lightgbm_accepts`, which imports LightGBM)."""
    if backend_of(config.model) != "lightgbm":
        return
    from ltr.training.local import check_lightgbm_accepts, check_position_training

    model = config.model
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
    check_lightgbm_accepts(model, config.fit, max_label=max_label, seed=config.seed, n_features=n_features)


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


def trains_with(config: TrainConfig) -> TrainerKind:
    """The trainer that actually trains ``config``'s model: ``trainer.kind``, except CatBoost,
    which has no Dask training and trains in this process under ``trainer=dask`` too."""
    if config.trainer.kind == TrainerKind.dask and backend_of(config.model) == "catboost":
        return TrainerKind.local
    return config.trainer.kind


def _check_trainer(config: TrainConfig) -> None:
    kind = config.trainer.kind
    if config.data.read_by_workers and kind != TrainerKind.dask:
        raise LtrUserError(
            f"data={config.data.kind} is read by Dask workers: add trainer=dask (got trainer={kind})"
        )
    backend = backend_of(config.model)
    if backend != "lightgbm" and config.data.read_by_workers:
        raise LtrUserError(
            f"data={config.data.kind} is read and trained on by Dask workers, which train LightGBM models only: "
            f"model={config.model.name} needs data this process reads (e.g. data=parquet)"
        )
    if backend == "lightgbm" and config.model.position_bias and kind != TrainerKind.local:
        raise LtrUserError("model.position_bias=true trains through lgb.train: use trainer=local")
    if trains_with(config) == TrainerKind.dask:
        if backend == "lightgbm" and config.model.estimator != Estimator.ranker:
            raise LtrUserError(
                f"trainer=dask trains rankers only: model.estimator={config.model.estimator} needs trainer=local"
            )
        if importlib.util.find_spec("distributed") is None:
            raise LtrUserError("trainer=dask needs Dask: pip install 'ltr[dask]'")
