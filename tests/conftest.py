"""Shared fixtures (real Hydra composition, a real sqlite MLflow store in a tmp dir) and the tiers.

Every test is in one tier, by marker (``make test-unit``, ``test-integration``, ``test-e2e``;
``make test`` runs all three):

- ``e2e``: real subprocesses of the ``ltr`` command, sweeps, servers, notebooks (``slow``);
- ``integration``: real training, a real MLflow store or a Dask cluster in this process (the
  modules of :data:`INTEGRATION_MODULES`);
- ``unit``: everything else: the metrics, readers, configs and statistics on small arrays.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import settings
from omegaconf import DictConfig

from ltr.cli.train import CONF_DIR
from ltr.data.cache import forget_recent

REPO = Path(__file__).resolve().parents[1]

# CI (CI=true) draws the same hypothesis examples every run, so a red build is reproducible; a
# developer's runs draw new ones (and keep the failures they find in .hypothesis/).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

#: Test modules that run whole programs (a notebook's kernel) besides the ``slow`` ones.
E2E_MODULES = frozenset({"tests/compare/test_notebook.py", "tests/compare/test_cli_subprocess.py"})

#: Test modules that train models, write MLflow stores or start Dask clusters in this process.
INTEGRATION_MODULES = frozenset(
    {
        "tests/test_end_to_end.py",
        "tests/test_api.py",
        "tests/test_model_options.py",
        "tests/models/test_shipped_models.py",
        "tests/test_real_data.py",
        "tests/test_training.py",
        "tests/test_round_hook.py",
        "tests/test_binned_cache.py",
        "tests/test_binned_reuse.py",
        "tests/clicks/test_position_training.py",
        "tests/clicks/test_label_recipes.py",
        "tests/compare/test_abtest.py",
        "tests/experiment/test_tail.py",
        "tests/compare/test_compare_runs.py",
        "tests/dask/test_eval.py",
        "tests/dask/test_partitioned_pipeline.py",
        "tests/dask/test_partitions.py",
        "tests/dask/test_parquet.py",
        "tests/dask/test_partition_cli.py",
        "tests/dask/test_training_dask.py",
        "tests/data/test_positions_in_files.py",
        "tests/data/test_cache_integrity.py",
        "tests/reliability/test_bad_input.py",
        "tests/experiment/test_checks.py",
        "tests/experiment/test_rerun.py",
        "tests/experiment/test_rerank_runs.py",
        "tests/tracking/test_lifecycle.py",
        "tests/tracking/test_run_contents.py",
        "tests/tracking/test_store.py",
        "tests/tracking/test_stop_requests.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put every test in its tier (see the module docstring)."""
    for item in items:
        module = Path(str(item.fspath)).resolve().relative_to(REPO).as_posix()
        if item.get_closest_marker("slow") is not None or module in E2E_MODULES:
            item.add_marker(pytest.mark.e2e)
        elif module in INTEGRATION_MODULES:
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _fresh_recent_entries() -> Iterator[None]:
    """Each test starts without the data the previous test's reads kept in memory (the disk
    cache tests corrupt entries between reads: they must meet the disk)."""
    forget_recent()
    yield
    forget_recent()


@pytest.fixture(autouse=True)
def _no_store_from_the_environment() -> Iterator[None]:
    """MLflow exports ``MLFLOW_TRACKING_URI`` when a tracker sets its URI; readers of runs honour
    it (``ltr.tracking.find_tracking_uri``), so no test may see the store of a test before it."""
    for var in ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"):
        os.environ.pop(var, None)
    yield
    for var in ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"):
        os.environ.pop(var, None)


def compose_train(overrides: Sequence[str] = ()) -> DictConfig:
    """The ``ltr train`` config composed from the real ``ltr/conf/`` with ``overrides``."""
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
