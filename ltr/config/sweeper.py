"""The structured config of ``hydra/sweeper=optuna`` (ltr's sweeper), in Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

SWEEPER_TARGET = "hydra_plugins.ltr_sweeper.ltr_optuna_sweeper.LtrOptunaSweeper"


def _median_pruner() -> dict[str, Any]:
    return {"_target_": "optuna.pruners.MedianPruner", "n_startup_trials": 5, "n_warmup_steps": 10}


@dataclass
class OptunaSweeperConf:
    """``hydra.sweeper`` of an Optuna search. There is no direction: ``optimized_metric`` is
    maximised (``sweep.directions`` says otherwise per key).

    ``sampler``: a ``_target_`` config of an Optuna sampler; None: ``TPESampler(seed=seed)``
    (one objective or several). ``pruner``: a ``_target_`` config of an Optuna pruner, null: no
    pruning (default: a median pruner after 5 trials and 10 rounds). ``storage``: an RDB URL
    (``sqlite:///study.db``) to keep the study across invocations; None: a journal file in the
    sweep's folder. ``n_jobs``: trials launched at once (the launcher runs them in parallel).
    ``params``: the search space, key -> Hydra sweep (``int(interval(7, 127))``).
    """

    _target_: str = SWEEPER_TARGET
    # the sampler and pruner stay configs: the search builds them (with its constraints_func)
    _recursive_: bool = False
    sampler: Any = None
    pruner: Any = field(default_factory=_median_pruner)
    study_name: str | None = None
    storage: str | None = None
    n_trials: int = 20
    n_jobs: int = 1
    params: dict[str, Any] | None = None


def register_sweeper_config() -> None:
    """``hydra/sweeper=optuna`` -> :class:`OptunaSweeperConf` (ltr's sweeper)."""
    ConfigStore.instance().store(group="hydra/sweeper", name="optuna", node=OptunaSweeperConf, provider="ltr")
