"""The config's own rules: a composed ``ltr train`` config as its dataclasses, no key the schemas
lack, every field's allowed values, and the settings that cannot take effect.

Called first by the one pass of :mod:`ltr.experiment.checks`; the rules of each concern (the
metrics', the model's, the data's, ...) come after, in their own packages.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from ltr.config.allowed import problems
from ltr.config.choices import RerankKind, TrainerKind
from ltr.config.groups.backends import backend_of
from ltr.config.schema import RerankConfig, TrainConfig, TrainerConfig
from ltr.config.unknown_key import data_option_of, unknown_key_message, unknown_keys
from ltr.errors import LtrUserError


def check_config(cfg: DictConfig, *, paths: bool = True) -> TrainConfig:
    """``cfg`` as its dataclasses, after the rules every config dataclass declares: no key the
    schemas lack (a ``+key=`` override is checked as any other; the free maps ``model.params``
    and ``eval.composite`` excepted), and every field's allowed values (:mod:`ltr.config.allowed`;
    ``paths=False``: data paths need not exist)."""
    config = typed(cfg)
    unknown = unknown_keys(cfg)
    if unknown:
        key, known = unknown[0]
        raise LtrUserError(unknown_key_message(key, known, data_option=data_option_of(OmegaConf.get_type(cfg.data))))
    found = problems(config, paths=paths)
    if found:
        raise LtrUserError(found[0])
    return config


def typed(cfg: DictConfig) -> TrainConfig:
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
    if config.trainer.kind == TrainerKind.dask and backend_of(config.model) == "catboost" and not config.data.read_by_workers:
        out.append(
            f"model={config.model.name} trains in this process: CatBoost has no Dask training; trainer.* settings are not used"
        )
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
