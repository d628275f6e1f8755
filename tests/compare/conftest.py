"""A tmp MLflow store with real runs, built once per session for the compare tests.

Runs (all on the same data unless said; subsampling on, so the seed changes the model):

- ``base``: seed 1
- ``seed2``: the same config with seed 2 (data and split seeds pinned to 42)
- ``weak``: seed 1, one boosting round of a 2-leaf tree (a much worse model)
- ``other-data``: as ``weak`` (only its data matters) on a different synthetic data set
  (``data.n_queries`` differs, so does the fingerprint)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import compose_train

N_QUERIES = 300
COMMON = (
    "data.seed=42",
    "split.seed=42",
    "fit.num_boost_round=300",
    "fit.num_threads=1",
    "fit.early_stopping_rounds=5",
    "fit.show_progress=false",
    "model.num_leaves=7",
    "model.subsample=0.8",
    "model.subsample_freq=1",
    "model.colsample_bytree=0.8",
)
RUNS = {
    "base": ("seed=1",),
    "seed2": ("seed=2",),
    "weak": ("seed=1", "fit.num_boost_round=1", "model.num_leaves=2"),
    "other-data": ("seed=1", "fit.num_boost_round=1", "model.num_leaves=2", "data.n_queries=200"),
}


@dataclass(frozen=True)
class Store:
    """The tmp store: its URI and the run id of every run name in `RUNS`."""

    uri: str
    run_ids: dict[str, str]
    root: Path


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    # imported here: LightGBM and MLflow are not for the unit tests of this folder
    from ltr.experiment import run as pipeline

    root = tmp_path_factory.mktemp("compare_store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    run_ids: dict[str, str] = {}
    for name, extra in RUNS.items():
        overrides = [f"data.n_queries={N_QUERIES}", *COMMON, *extra, f"tracking.uri={uri}", f"tracking.run_name={name}"]
        outcome = pipeline.run(compose_train(overrides), overrides=overrides)
        assert outcome.run_id is not None
        run_ids[name] = outcome.run_id
    return Store(uri, run_ids, root)
