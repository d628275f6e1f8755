"""``hydra/sweeper=optuna``: ltr's Optuna sweeper, a thin Hydra shell over
:class:`ltr.sweeper.search.OptunaSearch` (configured by :class:`ltr.config.groups.sweeper.OptunaSweeperConf`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from ltr.config.groups.sweeper import register_sweeper_config

register_sweeper_config()


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


class LtrOptunaSweeper(Sweeper):
    """Asks Optuna for trials, launches them as jobs through the configured launcher, tells
    Optuna their values (:mod:`ltr.sweeper.search`)."""

    def __init__(
        self,
        sampler: Mapping[str, Any] | None = None,
        pruner: Mapping[str, Any] | None = None,
        study_name: str | None = None,
        storage: str | None = None,
        n_trials: int = 20,
        n_jobs: int = 1,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = {
            "sampler": _plain(sampler), "pruner": _plain(pruner), "study_name": study_name, "storage": storage,
            "n_trials": n_trials, "n_jobs": n_jobs, "params": _plain(params),
        }  # fmt: skip
        self.search: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        # Hydra imports every plugin at start-up: Optuna only when a search runs
        from ltr.cli.sweeps.callback import job_spec
        from ltr.sweeper.search import OptunaSearch, SearchSettings

        self.config = config
        self.hydra_context = hydra_context
        launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function
        )
        self.launcher = launcher
        self.search = OptunaSearch(SearchSettings(**self.settings), job_spec(config), config, launcher)

    def sweep(self, arguments: list[str]) -> Any:
        assert self.search is not None
        return self.search.run(arguments)
