"""Shared fixtures (real Hydra composition, a real sqlite MLflow store in a tmp dir) and the tiers.

Every test is in one tier, by marker (``make test-unit``, ``test-integration``, ``test-e2e``;
``make test`` runs all three):

- ``e2e``: real subprocesses of the ``ltr`` command, sweeps, servers, notebooks (``slow``);
- ``integration``: real training, a real MLflow store or a Dask cluster in this process (the
  modules of :data:`INTEGRATION_MODULES`, and any test using a fixture of
  :data:`INTEGRATION_FIXTURES`);
- ``unit``: everything else: the metrics, readers, configs and statistics on small arrays.

``-m unit`` (or ``-m integration``) does not even import the modules that hold no test of that
tier (:func:`pytest_ignore_collect`): importing every test module costs seconds of MLflow, Dask
and Optuna imports that ``make test-unit`` does not need.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import settings
from omegaconf import DictConfig

from ltr.config.compose import CONF_DIR
from ltr.config.store import register_configs
from ltr.data.cache import forget_recent

REPO = Path(__file__).resolve().parents[1]

register_configs()  # the schemas that ltr/conf extends, as `ltr train` registers them

#: ``LTR_TEST_BUDGET=dev`` (``make test-unit`` sets it): every hypothesis property draws a fifth of
#: its examples (:func:`examples`), for a tier that answers in seconds; ``make test`` and CI draw all.
DEV_BUDGET = os.environ.get("LTR_TEST_BUDGET", "full") == "dev"


def examples(n: int) -> int:
    """The examples a hypothesis property written for ``n`` draws: ``n``, or under
    ``LTR_TEST_BUDGET=dev`` a fifth of it, at least 10 (``@settings(max_examples=examples(150))``;
    a property without ``max_examples`` gets ``examples(100)``, hypothesis' default, the same way)."""
    return max(10, n // 5) if DEV_BUDGET else n


# CI (CI=true) draws the same hypothesis examples every run, so a red build is reproducible; a
# developer's runs draw new ones (and keep the failures they find in .hypothesis/).
_CI = bool(os.environ.get("CI"))
settings.register_profile("ltr", derandomize=_CI, print_blob=_CI, max_examples=examples(settings.default.max_examples))
settings.load_profile("ltr")

#: Test modules that run whole programs (a notebook's kernel) besides the ``slow`` ones.
E2E_MODULES = frozenset({"tests/compare/test_notebook.py", "tests/compare/test_cli_subprocess.py"})

#: Test modules that train models, write MLflow stores or start Dask clusters in this process.
INTEGRATION_MODULES = frozenset(
    {
        "tests/test_end_to_end.py",
        "tests/reliability/test_liveness.py",
        "tests/reliability/test_study_storage.py",
        "tests/test_api.py",
        "tests/test_model_options.py",
        "tests/test_backends.py",
        "tests/models/test_shipped_models.py",
        "tests/models/test_predict_reader_holes.py",
        "tests/models/test_predict_partitions.py",
        "tests/test_real_data.py",
        "tests/test_training.py",
        "tests/test_round_hook.py",
        "tests/test_binned_cache.py",
        "tests/test_binned_reuse.py",
        "tests/test_neutral_fields.py",
        "tests/clicks/test_position_training.py",
        "tests/clicks/test_exposure_run.py",
        "tests/clicks/test_click_log.py",
        "tests/clicks/test_randomized_log.py",
        "tests/experiment/test_doc_id_tables.py",
        "tests/experiment/test_discount_run.py",
        "tests/dask/test_doc_id_partitions.py",
        "tests/clicks/test_label_recipes.py",
        "tests/compare/test_abtest.py",
        "tests/online/test_ope_run.py",
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
        "tests/reliability/test_faults.py",
        "tests/experiment/test_checks.py",
        "tests/experiment/test_rerun.py",
        "tests/experiment/test_rerank_runs.py",
        "tests/tracking/test_lifecycle.py",
        "tests/tracking/test_run_contents.py",
        "tests/tracking/test_store.py",
        "tests/tracking/test_stop_requests.py",
        "tests/tracking/test_store_lock_wait.py",
        "tests/models/test_labels_run.py",
        "tests/explain/test_explain_run.py",
        "tests/models/test_promote.py",
        "tests/metrics/test_oracle_lightgbm.py",
        "tests/metrics/test_oracle_xgboost_catboost.py",
        "tests/experiment/test_string_qid_tables.py",
        "tests/experiment/test_figure_worker.py",
        "tests/reliability/test_output_guard.py",
        "tests/tracking/test_reaper_host_id.py",
    }
)


#: Fixtures that train, write a store or start a cluster: a test using one is ``integration``
#: wherever it lives.
INTEGRATION_FIXTURES = frozenset({"tracking_uri", "small_cfg", "client", "store"})

_MODULE_SLOW = re.compile(r"^pytestmark\s*=.*\bslow\b", re.MULTILINE)


def _only_slow_tests(source: str) -> bool:
    """Whether every test of a module's ``source`` is ``slow`` (its ``pytestmark``, or a
    ``@pytest.mark.slow`` on each test function), read from its syntax tree, not imported."""
    if _MODULE_SLOW.search(source):
        return True
    tree = ast.parse(source)
    tests = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")]
    tests += [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name.startswith("Test")
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]

    def slow(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr == "slow"

    return bool(tests) and all(any(map(slow, test.decorator_list)) for test in tests)


def _module_tiers(path: Path) -> frozenset[str]:
    """The tiers the tests of the module at ``path`` can have, known without importing it."""
    module = path.resolve().relative_to(REPO).as_posix()
    if module in E2E_MODULES or _only_slow_tests(path.read_text()):
        return frozenset({"e2e"})
    if module in INTEGRATION_MODULES:
        return frozenset({"integration", "e2e"})
    return frozenset({"unit", "integration", "e2e"})


#: The modules that take longest (six seconds or more of one process each), longest first, as
#: measured in a full run: ``make test``'s processes start them first
#: (:func:`pytest_collection_modifyitems`), so the last modules handed out are short ones and the
#: two processes end together. pytest-xdist's own order (most tests first) left long modules of
#: few tests for the end, where one process ran them while the other had nothing left to do. The
#: fault matrix leads (its cases run in threads of their own beside the other process). A module
#: that grows as long belongs here, at its place.
LONGEST_MODULES = (
    "tests/reliability/test_fault_matrix.py",
    "tests/test_package.py",
    "tests/tracking/test_team_sweeps.py",
    "tests/docs/test_examples_b.py",
    "tests/test_sweeps.py",
    "tests/tracking/test_lifecycle.py",
    "tests/tracking/test_team_server.py",
    "tests/docs/test_examples_a.py",
    "tests/test_optuna_search.py",
    "tests/tracking/test_store.py",
    "tests/test_warmup.py",
    "tests/models/test_shipped_models.py",
    "tests/experiment/test_rerun.py",
    "tests/tracking/test_ui.py",
    "tests/reliability/test_liveness.py",
    "tests/dask/test_xgboost_dask.py",
    "tests/tracking/test_run_pages.py",
    "tests/test_api.py",
    "tests/tracking/test_server.py",
    "tests/test_cv.py",
    "tests/models/test_ship_e2e.py",
    "tests/tracking/test_run_page_browser.py",
    "tests/experiment/test_tail.py",
    "tests/dask/test_determinism.py",
    "tests/clicks/test_click_log.py",
    "tests/compare/test_notebook.py",
    "tests/reliability/test_bad_input.py",
    "tests/models/test_predict_partitions.py",
    "tests/test_sweep_checks.py",
    "tests/test_backends.py",
    "tests/experiment/test_checks.py",
    "tests/dask/test_lost_worker.py",
    "tests/clicks/test_position_training.py",
    "tests/data/test_data_write.py",
    "tests/tracking/test_run_contents.py",
    "tests/online/test_ope_run.py",
    "tests/test_binned_cache.py",
    "tests/test_model_options.py",
    "tests/experiment/test_string_qid_tables.py",
    "tests/models/test_promote.py",
    "tests/models/test_predict_backends_on_workers.py",
    "tests/experiment/test_figure_worker.py",
    "tests/test_config_schema.py",
    "tests/dask/test_training_dask.py",
    "tests/experiment/test_rerank_runs.py",
    "tests/models/test_predict_reader_holes.py",
    "tests/dask/test_partition_cli.py",
    "tests/compare/test_compare_runs.py",
    "tests/test_completion.py",
    "tests/reliability/test_study_storage.py",
    "tests/dask/test_string_qid_runs.py",
    "tests/compare/test_abtest.py",
    "tests/test_default_metrics.py",
    "tests/compare/test_abtest_fitted.py",
    "tests/test_quick_exit.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """Check the unit tier's contract while its tests run (:mod:`tests.tier_guard`); let
    pytest-xdist hand out the modules in the order :func:`pytest_collection_modifyitems` gives."""
    from tests.tier_guard import TierGuardPlugin

    config.pluginmanager.register(TierGuardPlugin(), "ltr-tier-guard")
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's --no-loadscope-reorder
        config.option.loadscopereorder = False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m unit`` or ``-m integration``, skip importing a test module with no test of that tier."""
    tier = str(config.getoption("markexpr", "") or "").strip()
    if tier not in {"unit", "integration"} or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return True if tier not in _module_tiers(collection_path) else None


def _longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` module by module: :data:`LONGEST_MODULES` in its order, then the others by their
    number of tests, most first (pytest-xdist's own order); each module's tests in their order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(Path(str(item.fspath)).resolve().relative_to(REPO).as_posix(), []).append(item)

    def rank(module: str) -> tuple[int, int]:
        if module in LONGEST_MODULES:
            return (0, LONGEST_MODULES.index(module))
        return (1, -len(modules[module]))

    return [item for module in sorted(modules, key=rank) for item in modules[module]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put every test in its tier (see the module docstring); order the modules longest first
    (:func:`_longest_first`): with two processes, the last module to start is a short one."""
    items[:] = _longest_first(items)
    for item in items:
        module = Path(str(item.fspath)).resolve().relative_to(REPO).as_posix()
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("slow") is not None or module in E2E_MODULES:
            item.add_marker(pytest.mark.e2e)
        elif module in INTEGRATION_MODULES or fixtures & INTEGRATION_FIXTURES:
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True, scope="module")
def _figures_in_the_test_process() -> Iterator[None]:
    """Runs trained in a test's own process (``ltr.experiment.run``, the API) draw their figures
    in that process: the path a run takes where no figure worker can start (``start_worker``
    gives None), the same files (``tests/tracking/test_run_contents.py`` checks both paths). A
    worker per run is a Python start-up and matplotlib's import (0.6-0.7 CPU-s) that only
    shortens a run's wall time. The worker is tested by ``tests/experiment/test_figure_worker.py``
    and runs in the ``ltr`` processes tests start (not in the docs examples' forks, which draw their
    own: ``tests/docs/forkserver.py``). Module-scoped, so the runs of module
    fixtures are covered, and so are the runs of ``ltr train`` called in the test's process
    (``ltr.cli.main.main``, which imports the runs only when it trains); a module that imports
    nothing of the runs or the command imports nothing here."""
    if not any(name in sys.modules for name in ("ltr.experiment.run", "ltr.api", "ltr.cli.main")):
        yield
        return
    from ltr.experiment import run as pipeline

    real = pipeline.start_worker
    pipeline.start_worker = lambda: None
    try:
        yield
    finally:
        pipeline.start_worker = real


@pytest.fixture(scope="session")
def _working_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the modules and tests of this process make their working folders (outside the checkout)."""
    return tmp_path_factory.mktemp("cwd")


@contextlib.contextmanager
def _working_in(parent: Path, prefix: str) -> Iterator[Path]:
    """In a new empty folder under ``parent`` as the working directory; the old one back after."""
    before = os.getcwd()
    folder = Path(tempfile.mkdtemp(prefix=prefix[-40:].replace("/", "_") + "-", dir=parent))
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)


@pytest.fixture(autouse=True, scope="module")
def _module_outside_the_checkout(_working_folders: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A module's fixtures, then each of its tests (:func:`_test_outside_the_checkout`), run in an
    empty folder outside the checkout, never in it: what a command finds in its working directory
    (the store ``make train`` leaves at the root, which ``ltr``'s readers and output guard open,
    ``ltr.tracking.find_tracking_uri``; Hydra's ``outputs/``) is the test's own, and a test that
    runs ``ltr train`` without ``tracking.uri`` writes beside itself, not into the developer's
    store. Module-scoped too, so module fixtures (set up before any test's fixture) are covered."""
    with _working_in(_working_folders, request.node.name.removesuffix(".py")) as folder:
        yield folder


@pytest.fixture(autouse=True)
def _test_outside_the_checkout(_module_outside_the_checkout: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test in an empty folder of its own, in its module's (:func:`_module_outside_the_checkout`)."""
    with _working_in(_module_outside_the_checkout, request.node.name):
        yield


@pytest.fixture(autouse=True)
def _fresh_recent_entries() -> Iterator[None]:
    """Each test starts without the data the previous test's reads kept in memory (the disk
    cache tests corrupt entries between reads: they must meet the disk)."""
    forget_recent()
    yield
    forget_recent()


def _loggers() -> list[logging.Logger]:
    return [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger))]


def _ours(handler: logging.Handler) -> bool:
    """A handler of the code under test (not pytest's capture handlers)."""
    return not type(handler).__module__.startswith("_pytest")


@pytest.fixture(autouse=True)
def _logging_handlers_restored() -> Iterator[None]:
    """No logging handler a test adds outlives it (Hydra's job logging and a CLI's console
    handler bind the stream of the moment: a test's capture stream, closed after the test, where
    a later test's log lines would fail with "--- Logging error ---"); a handler left on a closed
    stream by a module's fixtures is dropped before the next test."""
    for logger in _loggers():
        for handler in list(logger.handlers):
            if _ours(handler) and getattr(getattr(handler, "stream", None), "closed", False):
                logger.removeHandler(handler)
    before = {id(logger): set(map(id, logger.handlers)) for logger in _loggers()}
    yield
    for logger in _loggers():
        kept = before.get(id(logger), set())
        for handler in list(logger.handlers):
            if _ours(handler) and id(handler) not in kept:
                logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def _no_store_from_the_environment() -> Iterator[None]:
    """No test sees the store of a test before it: the URI variables that readers of runs honour
    (``ltr.tracking.find_tracking_uri``) are unset, and MLflow's process-wide tracking and
    registry URIs (which a test may set with ``mlflow.set_tracking_uri`` for MLflow's own
    ``runs:/`` loaders; ltr never leaves them changed, ``tests/tracking/test_mlflow_uris.py``)
    are put back after each test."""
    variables = ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    for var in variables:
        os.environ.pop(var, None)
    saved = {name: getattr(sys.modules.get(name), attr, None) for name, attr in _MLFLOW_URI_GLOBALS}
    yield
    for name, attr in _MLFLOW_URI_GLOBALS:  # a module MLflow loaded during the test: its initial None
        if name in sys.modules:
            setattr(sys.modules[name], attr, saved[name])
    for var in variables:
        os.environ.pop(var, None)


#: Where MLflow keeps its process-wide URIs (read without importing MLflow: unit tests never do).
_MLFLOW_URI_GLOBALS = (
    ("mlflow.tracking._tracking_service.utils", "_tracking_uri"),
    ("mlflow.tracking._model_registry.utils", "_registry_uri"),
)


#: A LightGBM forced split (``model.params.forcedsplits_filename``, as JSON) no row can take:
#: feature 0 above 1e30. Every check of ltr passes (LightGBM's format, features that exist), and
#: LightGBM stops inside training, on the data ("Check failed: (best_split_info.right_count) >
#: (0)"): the real failure after a run started that the failure-path tests need.
FORCED_SPLIT_NO_ROW_TAKES = {"feature": 0, "threshold": 1e30, "left": {"feature": 1, "threshold": 1e30}}


def compose_train(overrides: Sequence[str] = ()) -> DictConfig:
    """The ``ltr train`` config composed from the real ``ltr/conf/`` with ``overrides``."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.fixture
def tracking_uri(tmp_path: Path) -> str:
    """A fresh sqlite MLflow store in the test's tmp dir."""
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def made_store(db: Path) -> str:
    """The URI of an empty store made at ``db`` as ``ltr train`` makes one (``ensure_store``):
    after the machine's first store, a copy of the installed MLflow's empty-store template
    (``ltr.tracking.sqlite.template``; milliseconds instead of MLflow's migrations)."""
    from ltr.tracking.store import ensure_store

    uri = f"sqlite:///{db}"
    ensure_store(uri)
    return uri


@pytest.fixture
def unmade_store(tmp_path: Path) -> str:
    """``tracking.uri=...`` of a store that does not exist yet, in a folder of its own (for the
    tests that check that a refused config makes no store; :func:`small_cfg`'s store exists)."""
    folder = tmp_path / "unmade"
    folder.mkdir()
    return f"tracking.uri=sqlite:///{folder / 'mlflow.db'}"


@pytest.fixture
def small_cfg(tracking_uri: str, tmp_path: Path) -> Callable[..., DictConfig]:
    """Compose a small, fast experiment into the tmp store; extra overrides win.

    The store at ``tracking_uri`` exists, empty, before the test (:func:`made_store`). A test
    that checks that nothing makes a store gives its own ``tracking.uri`` in a folder of its own."""
    made_store(tmp_path / "mlflow.db")

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
