"""Every rule a ``ltr train`` config must follow, checked in one pass before any data is read or
run exists; and the rules that need the data, in one pass once it is read.

Each concern owns its rules, beside what they check, behind one small interface: a concern's
:class:`ConfigRules` (``check_config(config, *, paths)``) raises
:class:`ltr.errors.LtrUserError` with one line naming the config key and the fix at the first
rule it breaks, and returns what follows from the config (None when nothing does); its
:class:`DataRules` (``check_data(config, splits, *, n_features)``) does the same once the data is
read. :func:`check_config` calls each concern's config rules once, in a fixed order (the first
broken rule is the one reported):

1. the config's own (:mod:`ltr.config.rules`: its dataclasses, no unknown key, allowed values;
   settings that cannot take effect are warned about) and the run name (:mod:`ltr.experiment.names`);
2. the metrics' (:mod:`ltr.metrics.config_rules`: cut-offs, strata, conventions, composites, splits);
3. training's (:mod:`ltr.training.config_rules`: ``fit``, ``model``, per-feature parameters, ``trainer``);
4. the re-ranking's (:mod:`ltr.rerank.config_rules`), then the data's (:mod:`ltr.data.config_rules`:
   labels, click logs);
5. the objectives, which need the keys all of the above make the run log: ``optimized_metric``
   (:func:`ltr.metrics.config_rules.check_optimized_metric`) and ``sweep``
   (:func:`ltr.experiment.guardrails.check_sweep`).

and composes the :class:`ExperimentSpec`. :func:`check_data` calls the data rules of training,
the data and the re-ranking, in that order. Fixed choices (``trainer.kind``, ``eval.ties``, ...)
are Enums, so Hydra refuses other values while composing. This module and the config rules import
neither LightGBM nor pandas (``ltr train``'s config errors answer in a blink); the data rules of
training import LightGBM.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Protocol, TypeVar

from omegaconf import DictConfig

from ltr.config import rules as config_rules
from ltr.config.schema import TrainConfig
from ltr.data import config_rules as data_rules
from ltr.data.splits import Splits
from ltr.experiment.guardrails import check_sweep
from ltr.experiment.names import check_run_name
from ltr.experiment.spec import ExperimentSpec, metric_keys
from ltr.metrics import config_rules as metric_rules
from ltr.metrics.config_rules import MetricChoices
from ltr.rerank import config_rules as rerank_rules
from ltr.training import config_rules as training_rules

log = logging.getLogger(__name__)

Derived = TypeVar("Derived", covariant=True)


class ConfigRules(Protocol[Derived]):
    """A concern's rules of a ``ltr train`` config, before any data is read: one LtrUserError
    line at the first rule broken; returns what follows from the config. ``paths=False``: the
    files the config names need not exist (a logged run's settings)."""

    def __call__(self, config: TrainConfig, *, paths: bool) -> Derived: ...


class DataRules(Protocol):
    """A concern's rules of the data a config trains on (``splits``: the training view; None for
    partitioned data, whose feature count ``n_features`` comes from the files' footers)."""

    def __call__(self, config: TrainConfig, splits: Splits | None, *, n_features: int | None) -> None: ...


METRIC_RULES: ConfigRules[MetricChoices] = metric_rules.check_config
TRAINING_RULES: ConfigRules[str] = training_rules.check_config
#: The rules that derive nothing, in the order they run after the metrics' and training's.
OTHER_RULES: tuple[ConfigRules[None], ...] = (rerank_rules.check_config, data_rules.check_config)
#: The rules of the data, in the order they run.
DATA_RULES: tuple[DataRules, ...] = (training_rules.check_data, data_rules.check_data, rerank_rules.check_data)


def check_config(cfg: DictConfig, *, paths: bool = True) -> ExperimentSpec:
    """The checked, typed spec of a composed ``ltr train`` config. ``paths=False``: data paths
    need not exist (a logged run's settings, read to score other data: :mod:`ltr.models.logged`).

    Raises
    ------
    LtrUserError
        One line naming the config key, for the first rule the config breaks.
    """
    config = config_rules.check_config(cfg, paths=paths)
    for warning in config_rules.inactive_settings(config):
        log.warning("ltr: %s", warning)
    check_run_name(config.tracking.run_name)
    metrics = METRIC_RULES(config, paths=paths)
    early_stopping_metric = TRAINING_RULES(config, paths=paths)
    for rules in OTHER_RULES:
        rules(config, paths=paths)
    spec = ExperimentSpec(
        config=config,
        raw=cfg,
        ks=metrics.ks,
        table_ks=metrics.table_ks,
        strata=metrics.strata,
        conventions=metrics.conventions,
        composites=metrics.composites,
        optimized_metric="",
        early_stopping_metric=early_stopping_metric,
    )
    logged = metric_keys(spec)
    objectives = metric_rules.check_optimized_metric(config.optimized_metric, config.eval.splits, spec.ks, logged)
    directions = check_sweep(config.sweep, objectives, logged)
    config.fit.early_stopping_metric = early_stopping_metric
    config.optimized_metric = objectives[0] if len(objectives) == 1 else list(objectives)
    return dataclasses.replace(spec, optimized_metric=objectives[0], objectives=objectives, directions=directions)


def check_data(spec: ExperimentSpec, splits: Splits | None, *, n_features: int | None = None) -> None:
    """The rules that need the data (``splits``: the training view; None for partitioned data,
    whose feature count ``n_features`` comes from the files' footers), before the tracking run
    is started. Training's ask LightGBM itself, so LightGBM is imported here, once the data is
    read, not with this module."""
    for rules in DATA_RULES:
        rules(spec.config, splits, n_features=n_features)
