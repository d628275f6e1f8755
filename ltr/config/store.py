"""Every group's schema registered in Hydra's ConfigStore, and the resolvers of `ltr/conf/train.yaml`.

Hydra deep-copies its config repository at the start of every composition, and with it the
ConfigStore, every stored schema's structured config included (a fifth of a composition's cost).
:func:`register_configs` gives the ConfigStore a deep copy that copies its tree of groups and
shares the stored ``ConfigNode``\\ s (:func:`copy_of_store`): Hydra never changes a stored node in
place (``ConfigStore.store`` puts a new one in the tree, ``ConfigStore.load`` hands out a deep copy
of one), so a copy that shares them reads and stores exactly as a full copy does.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

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


def _tree(groups: dict[str, Any]) -> dict[str, Any]:
    """``groups`` (the ConfigStore's ``repo``) with a dict of its own at every level, the
    ``ConfigNode`` leaves shared."""
    return {key: _tree(value) if isinstance(value, dict) else value for key, value in groups.items()}


def copy_of_store(store: ConfigStore, memo: dict[int, Any]) -> ConfigStore:
    """``copy.deepcopy(store)``: a ConfigStore with its own tree of groups (storing into it leaves
    ``store`` as it was) and ``store``'s ``ConfigNode``\\ s (module docstring); any other attribute
    deep-copied."""
    twin: ConfigStore = object.__new__(type(store))
    memo[id(store)] = twin
    for name, value in vars(store).items():
        setattr(twin, name, _tree(value) if name == "repo" else copy.deepcopy(value, memo))
    return twin


def register_configs() -> None:
    """Store each schema so that ``ltr/conf/<group>/*.yaml`` can extend it (``defaults: [<x>_schema]``),
    and register the ``ltr_unique`` resolver of ``ltr/conf/train.yaml``'s run and sweep folders.

    Idempotent and cheap after the first call in a process (every composition calls it): the
    schemas are stored once (building their structured configs is a quarter of a composition).
    """
    ConfigStore.__deepcopy__ = copy_of_store  # type: ignore[attr-defined]
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
