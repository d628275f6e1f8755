"""The structured configs of ltr's sweepers (``hydra/sweeper=optuna``, ``hydra/sweeper=basic``), in Hydra's ConfigStore."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import hydra._internal.core_plugins.basic_sweeper  # noqa: F401  stores Hydra's own hydra/sweeper=basic first: ours replaces it
from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

SWEEPER_TARGET = "hydra_plugins.ltr_sweeper.ltr_optuna_sweeper.LtrOptunaSweeper"
BASIC_SWEEPER_TARGET = "hydra_plugins.ltr_sweeper.ltr_basic_sweeper.LtrBasicSweeper"


@dataclass
class MedianPrunerConf:
    """``hydra/sweeper/pruner=median`` (the default): stop a trial whose valid value at a round
    is below the median of earlier trials' at that round, once ``n_startup_trials`` trials
    finished, from round ``n_warmup_steps`` + 1 on."""

    _target_: str = "optuna.pruners.MedianPruner"
    n_startup_trials: int = 5
    n_warmup_steps: int = 10
    interval_steps: int = 1


@dataclass
class ThresholdPrunerConf:
    """``hydra/sweeper/pruner=threshold``: stop a trial whose valid value falls below ``lower``
    (or above ``upper``) from round ``n_warmup_steps`` on."""

    _target_: str = "optuna.pruners.ThresholdPruner"
    lower: float | None = None
    upper: float | None = None
    n_warmup_steps: int = 0


@dataclass
class OptunaSweeperConf:
    """``hydra.sweeper`` of an Optuna search. There is no direction: ``optimized_metric`` is
    maximised (``sweep.directions`` says otherwise per key).

    ``sampler``: a ``_target_`` config of an Optuna sampler; None: ``TPESampler(seed=seed)``
    (one objective or several). ``pruner``: the ``hydra/sweeper/pruner`` group (``median``, the
    default; ``threshold``), or null: no pruning. ``storage``: an RDB URL
    (``sqlite:///study.db``) to keep the study across invocations; None: a journal file in the
    sweep's folder. ``n_jobs``: trials launched at once (the launcher runs them in parallel).
    ``params``: the search space, key -> Hydra sweep (``int(interval(7, 127))``).
    """

    defaults: list[Any] = field(default_factory=lambda: [{"pruner": "median"}])
    _target_: str = SWEEPER_TARGET
    # the sampler and pruner stay configs: the search builds them (the sampler seeded for the study)
    _recursive_: bool = False
    sampler: Any = None
    pruner: Any = MISSING  # from the hydra/sweeper/pruner group (defaults: median)
    study_name: str | None = None
    storage: str | None = None
    n_trials: int = 20
    n_jobs: int = 1
    params: dict[str, Any] | None = None


@dataclass
class BasicSweeperConf:
    """``hydra/sweeper=basic`` (a grid, ``ltr train -m``'s sweeper): Hydra's basic sweeper, that
    does not compose again a job ltr's start check composed
    (:mod:`hydra_plugins.ltr_sweeper.ltr_basic_sweeper`); Hydra's fields."""

    _target_: str = BASIC_SWEEPER_TARGET
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


def register_sweeper_config() -> None:
    """``hydra/sweeper=optuna`` -> :class:`OptunaSweeperConf` (ltr's sweeper), and its pruners;
    ``hydra/sweeper=basic`` (Hydra's default) -> :class:`BasicSweeperConf`, in place of Hydra's
    entry (whose module is imported first, so that its own entry is never stored after ours)."""
    cs = ConfigStore.instance()
    cs.store(group="hydra/sweeper", name="basic", node=BasicSweeperConf, provider="ltr")
    cs.store(group="hydra/sweeper", name="optuna", node=OptunaSweeperConf, provider="ltr")
    cs.store(group="hydra/sweeper/pruner", name="median", node=MedianPrunerConf, provider="ltr")
    cs.store(group="hydra/sweeper/pruner", name="threshold", node=ThresholdPrunerConf, provider="ltr")
