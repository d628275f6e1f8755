"""The checks a multirun runs at its start, before its parent run exists (README "Override anything").

:func:`check_sweep_start` is called by the sweep callback (:mod:`ltr.cli.sweeps.callback`) in
``on_multirun_start``, which Hydra calls before it builds the sweeper, so a refused sweep leaves no
parent run, no job and no folder: one line, exit 2. What it checks:

- the command line gives each key once (``model.num_leaves=7,15 model.num_leaves=3,4`` would run
  only the second list);
- a grid (Hydra's basic sweeper, ``experiment=letor_cv`` too): every job's config, composed as
  the launcher will compose it, passes :func:`ltr.experiment.checks.check_config` and its data
  files exist (:func:`ltr.sweeper.job_checks.check_data_files`; no data is read). A mistake every job shares is refused
  with its own line; one only some jobs have names the first such job and its overrides;
- an Optuna search (ltr's sweeper): its base config (the trials' values are drawn later), its
  settings (:func:`ltr.sweeper.search.check_settings`), its pruner
  (:func:`ltr.sweeper.pruner.check_pruner`) and its data files;
- any sweep: the named baseline run of ``sweep.constraints`` (:func:`ltr.sweeper.record.check_sweep`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.config.compose import user_message
from ltr.config.groups.sweeper import BASIC_SWEEPER_TARGET
from ltr.config.overrides import override_key
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.job_checks import (
    check_data_files,
    check_job,
    grid_jobs,
    mark_checked,
    repeated_key,
    task_config,
)
from ltr.sweeper.pruner import check_pruner
from ltr.sweeper.record import check_sweep, is_ltr_search

#: Hydra's basic sweeper and ltr's (``hydra/sweeper=basic``, :class:`ltr.config.groups.sweeper.BasicSweeperConf`): a grid.
BASIC_SWEEPERS = frozenset({"hydra._internal.core_plugins.basic_sweeper.BasicSweeper", BASIC_SWEEPER_TARGET})


@dataclass(frozen=True)
class SweepPlan:
    """What the start checks found: ``spec``, the checked config the parent run is summarised by
    (the base config's; a grid whose base config only its swept values mend: job 0's; None for
    another sweeper whose base config is refused) and ``n_jobs``, the jobs the sweep will launch
    (a grid's product, a search's ``n_trials``; None: another sweeper)."""

    spec: ExperimentSpec | None
    n_jobs: int | None


def _job_configs(config: DictConfig, jobs: list[list[str]]) -> Iterator[tuple[int, DictConfig | Exception]]:
    """Each job's config, as the launcher composes it (``load_sweep_config``), or the error
    composing it raised. A job that differs from job 0 only in plain values (``model.num_leaves=15``,
    not a config group, not ``+`` / ``~``) is job 0's config with those values applied, as the
    last step of composing applies them: the same config, without composing the defaults again."""

    loader: Any = GlobalHydra.instance().config_loader()
    repository = getattr(loader, "repository", None)
    parser = OverridesParser.create()
    first: DictConfig | None = None

    def plain(override: Any) -> bool:
        key = str(override.key_or_group)
        return (
            override.type == OverrideType.CHANGE and override.package is None and not key.startswith("hydra.")
            and repository is not None and not repository.group_exists(key.replace(".", "/"))
        )  # fmt: skip

    for number, job in enumerate(jobs):
        try:
            changed = parser.parse_overrides([o for o in job if o not in jobs[0]])
            if first is not None and all(plain(o) for o in changed):
                cfg = copy.deepcopy(first)
                ConfigLoaderImpl._apply_overrides_to_config(changed, cfg)
            else:
                cfg = loader.load_sweep_config(config, list(job))
                first = cfg if number == 0 else first
        except (HydraException, OmegaConfBaseException) as exc:
            yield number, exc
        else:
            yield number, cfg


def check_grid(config: DictConfig, varying: Sequence[str]) -> tuple[ExperimentSpec, int]:
    """Check every job of a grid (see the module docstring); returns job 0's spec and the number of jobs."""
    try:
        jobs = grid_jobs(config)
    except (HydraException, OmegaConfBaseException) as exc:  # e.g. interval(...), which only a search reads
        raise LtrUserError(user_message(exc, list(config.hydra.overrides.task))) from exc
    errors: dict[int, str] = {}
    first: ExperimentSpec | None = None
    for number, composed in _job_configs(config, jobs):
        try:
            if isinstance(composed, Exception):
                raise composed
            spec = check_job(composed)
        except LtrUserError as exc:
            errors[number] = str(exc)
        except (HydraException, OmegaConfBaseException) as exc:
            errors[number] = user_message(exc, jobs[number])
        else:
            first = spec if first is None else first
    if not errors:
        assert first is not None
        mark_checked(jobs)  # the sweeper need not compose them again (hydra_plugins.ltr_sweeper.ltr_basic_sweeper)
        return first, len(jobs)
    if len(errors) == len(jobs) and len(set(errors.values())) == 1:
        raise LtrUserError(next(iter(errors.values())))
    number, error = next(iter(errors.items()))
    own = [o for o in jobs[number] if override_key(o) in set(varying)] or jobs[number]
    refused = f"{len(errors)} of {len(jobs)} jobs refused"
    raise LtrUserError(f"job {number} ({' '.join(own)}): {error} ({refused}; no job ran)")


def check_sweep_start(config: DictConfig, varying: Sequence[str]) -> SweepPlan:
    """Run the start checks (see the module docstring) on the multirun's ``config``
    (``varying``: the keys it varies, :func:`ltr.cli.sweeps.callback.varying_keys`).

    Raises
    ------
    LtrUserError
        One line, for the first mistake.
    """
    mark_checked([])  # no job of an earlier sweep of this process counts as checked for this one
    key = repeated_key(list(config.hydra.overrides.task))
    if key is not None:
        given = " ".join(o for o in config.hydra.overrides.task if override_key(o) == key)
        raise LtrUserError(f"{key} is given twice ({given}): give it once, with every value (key=a,b,c)")
    base: ExperimentSpec | None = None
    base_error: LtrUserError | None = None
    try:
        base = check_config(task_config(config))
    except LtrUserError as exc:
        base_error = exc
    target = str(config.hydra.sweeper.get("_target_", ""))
    n_jobs: int | None = None
    if is_ltr_search(config):
        if base_error is not None:  # the search's own setup checks the base config too
            raise base_error
        assert base is not None
        check_sweep(config, base)  # n_trials, n_jobs, storage, search space; the baseline run
        pruner = config.hydra.sweeper.get("pruner")
        check_pruner(OmegaConf.to_container(pruner, resolve=True) if isinstance(pruner, DictConfig) else pruner)
        check_data_files(base)
        n_jobs = int(config.hydra.sweeper.n_trials) if isinstance(config.hydra.sweeper.get("n_trials"), int) else None
    elif target in BASIC_SWEEPERS:
        first, n_jobs = check_grid(config, varying)
        base = base or first
    if not is_ltr_search(config):
        check_sweep(config, base)  # the baseline run
    return SweepPlan(spec=base, n_jobs=n_jobs)

