"""The ConfigStore's deep copy (``ltr.config.store.copy_of_store``): its own tree of groups, the
stored nodes shared; every composition is the one Hydra's full copy gives."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigNode, ConfigStore
from omegaconf import OmegaConf

from ltr.config.compose import CONF_DIR
from ltr.config.store import copy_of_store, register_configs


def _leaves(groups: dict[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in groups.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{path}{key}/")
        else:
            yield f"{path}{key}", value


def _compose(overrides: list[str]) -> str:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="train", overrides=overrides, return_hydra_config=True)
    del cfg.hydra.runtime  # the folders and choices of this composition
    return OmegaConf.to_yaml(cfg)


def test_a_copy_has_its_own_groups_and_the_stored_nodes() -> None:
    register_configs()
    store = ConfigStore.instance()
    twin = copy.deepcopy(store)
    assert twin is not store
    assert isinstance(twin, ConfigStore)
    ours, theirs = dict(_leaves(store.repo)), dict(_leaves(twin.repo))
    assert ours.keys() == theirs.keys()
    assert {"train_schema.yaml", "model/model_schema.yaml", "hydra/sweeper/optuna.yaml"} <= ours.keys()
    assert all(theirs[name] is node and isinstance(node, ConfigNode) for name, node in ours.items())
    twin.store(name="mine", node={"a": 1}, group="model")
    twin.store(name="other", node={"b": 2})
    assert "mine.yaml" in twin.repo["model"]
    assert "mine.yaml" not in store.repo["model"]
    assert "other.yaml" not in store.repo
    assert dict(_leaves(store.repo)) == ours
    node = twin.load("model/model_schema.yaml").node  # a reader's copy, as Hydra's load gives
    node.num_leaves = 3
    assert store.load("model/model_schema.yaml").node.num_leaves != 3


@pytest.mark.parametrize(
    "overrides",
    [[], ["model=xgboost", "data=letor", "data.root=/tmp"], ["hydra/sweeper=optuna", "model.num_leaves=7", "debug=default"]],
)
def test_every_composition_is_the_one_a_full_copy_gives(overrides: list[str]) -> None:
    """The same config, Hydra's own settings included, with the store copied as Hydra copies it
    (every stored node deep-copied) and as ltr copies it."""
    register_configs()
    assert ConfigStore.__deepcopy__ is copy_of_store  # type: ignore[attr-defined]
    ours = _compose(overrides)
    del ConfigStore.__deepcopy__  # type: ignore[attr-defined]
    try:
        assert not hasattr(ConfigStore, "__deepcopy__")
        hydras = _compose(overrides)
    finally:
        ConfigStore.__deepcopy__ = copy_of_store  # type: ignore[attr-defined]
    assert ours == hydras
    assert "num_leaves" in ours
