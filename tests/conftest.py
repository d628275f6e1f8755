"""Shared fixtures: real Hydra composition, a real sqlite MLflow store in a tmp dir."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from ltr.app import CONF_DIR

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def compose_train(overrides: Sequence[str] = ()) -> DictConfig:
    """The ``ltr train`` config composed from the real ``conf/`` with ``overrides``."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.fixture
def tracking_uri(tmp_path: Path) -> str:
    """A fresh sqlite MLflow store in the test's tmp dir."""
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def small_cfg(tracking_uri: str) -> Callable[..., DictConfig]:
    """Compose a small, fast experiment into the tmp store; extra overrides win."""

    def make(*extra: str) -> DictConfig:
        return compose_train(
            [
                "data.n_queries=300",
                "fit.num_boost_round=40",
                "fit.early_stopping_rounds=10",
                "fit.show_progress=false",
                "model.num_leaves=7",
                f"tracking.uri={tracking_uri}",
                *extra,
            ]
        )

    return make
