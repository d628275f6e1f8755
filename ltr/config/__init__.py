"""Hydra structured configs: every group's schema, registered in one ConfigStore."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from ltr.config.data import DATA_OPTIONS, SplitConfig
from ltr.config.schema import (
    EvalConfig,
    FitConfig,
    ModelConfig,
    TrackingConfig,
    TrainConfig,
    TrainerConfig,
)

__all__ = ["TrainConfig", "register_configs"]


def register_configs() -> None:
    """Store each schema so that ``conf/<group>/*.yaml`` can extend it (``defaults: [<x>_schema]``)."""
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    for name, cls in DATA_OPTIONS.items():
        cs.store(group="data", name=f"{name}_schema", node=cls)
    cs.store(group="split", name="split_schema", node=SplitConfig)
    cs.store(group="model", name="model_schema", node=ModelConfig)
    cs.store(group="fit", name="fit_schema", node=FitConfig)
    cs.store(group="eval", name="eval_schema", node=EvalConfig)
    cs.store(group="tracking", name="tracking_schema", node=TrackingConfig)
    cs.store(group="trainer", name="trainer_schema", node=TrainerConfig)
