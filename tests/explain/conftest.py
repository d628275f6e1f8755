"""A tmp MLflow store with two real ``debug=default`` runs, built once per session for the
explain tests: ``a`` (seed 1), ``b`` (seed 2, subsampling on: another model on the same data)
and ``r`` (``a`` re-ranked for diversity)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import compose_train

COMMON = ("debug=default", "fit.num_threads=1", "fit.show_progress=false", "model.subsample=0.8", "model.subsample_freq=1")
RUNS = {"a": ("seed=1",), "b": ("seed=2", "model.colsample_bytree=0.7"), "r": ("seed=1", "rerank=diversify")}


@dataclass(frozen=True)
class Store:
    uri: str
    run_ids: dict[str, str]
    root: Path


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    # LightGBM and MLflow: not for the unit tests of this folder
    from ltr.experiment import run as pipeline

    root = tmp_path_factory.mktemp("explain_store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    run_ids = {}
    for name, extra in RUNS.items():
        overrides = [*COMMON, *extra, "data.seed=42", "split.seed=42", f"tracking.uri={uri}", f"tracking.run_name={name}"]
        outcome = pipeline.run(compose_train(overrides), overrides=overrides)
        assert outcome.run_id is not None
        run_ids[name] = outcome.run_id
    return Store(uri, run_ids, root)
