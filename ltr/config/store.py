"""Every group's schema registered in Hydra's ConfigStore, and the resolvers of `ltr/conf/train.yaml`."""

from __future__ import annotations

import secrets

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from ltr.config.groups.backends import MODEL_OPTIONS
from ltr.config.groups.data import DATA_OPTIONS
from ltr.config.groups.sweeper import register_sweeper_config
from ltr.config.schema import GROUP_SCHEMAS, TrainConfig

__all__ = ["register_configs"]


def _unique_suffix() -> str:
    """Six random hex digits; cached per config (and copied into each job's config by Hydra,
    as ``${now:...}``), so one sweep's folder is the same in every job and no two sweeps share one."""
    return secrets.token_hex(3)


def register_configs() -> None:
    """Store each schema so that ``ltr/conf/<group>/*.yaml`` can extend it (``defaults: [<x>_schema]``),
    and register the ``ltr_unique`` resolver of ``ltr/conf/train.yaml``'s run and sweep folders.

    Idempotent and cheap after the first call in a process (every composition calls it): the
    schemas are stored once (building their structured configs is a quarter of a composition).
    """
    if not OmegaConf.has_resolver("ltr_unique"):
        OmegaConf.register_new_resolver("ltr_unique", _unique_suffix, use_cache=True)
    cs = ConfigStore.instance()
    if "train_schema.yaml" in cs.repo and "rerank_schema.yaml" in cs.repo.get("rerank", {}):
        return  # stored by an earlier call (the last store below is rerank's)
    cs.store(name="train_schema", node=TrainConfig)
    register_sweeper_config()  # hydra/sweeper=optuna: ltr's own Optuna sweeper
    for name, cls in DATA_OPTIONS.items():
        cs.store(group="data", name=f"{name}_schema", node=cls)
    for name, cls in MODEL_OPTIONS.items():  # model=xgboost, model=catboost
        cs.store(group="model", name=f"{name}_schema", node=cls)
    for group, schema in GROUP_SCHEMAS.items():  # rerank's last
        cs.store(group=group, name=f"{group}_schema", node=schema)
