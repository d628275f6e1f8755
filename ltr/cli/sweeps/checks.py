"""The checks a multirun runs at its start, before its parent run exists (README "Override anything").

:func:`check_sweep_start` is called by the sweep callback (:mod:`ltr.cli.sweeps.callback`) in
``on_multirun_start``, which Hydra calls before it builds the sweeper, so a refused sweep leaves no
parent run, no job and no folder: one line, exit 2. What it checks:

- the command line gives each key once (``model.num_leaves=7,15 model.num_leaves=3,4`` would run
  only the second list);
- a grid (Hydra's basic sweeper, ``experiment=letor_cv`` too): every job's config, composed as
  the launcher will compose it, passes :func:`ltr.experiment.checks.check_config` and its data
  files exist (:func:`check_data_files`; no data is read). A mistake every job shares is refused
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
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from ltr.config.compose import user_message
from ltr.config.overrides import override_key
from ltr.data.load import letor_fold_files, letor_parts_files
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.pruner import check_pruner
from ltr.sweeper.record import check_sweep, is_ltr_search

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


@dataclass(frozen=True)
class SweepPlan:
    """What the start checks found: ``spec``, the checked config the parent run is summarised by
    (the base config's; a grid whose base config only its swept values mend: job 0's; None for
    another sweeper whose base config is refused) and ``n_jobs``, the jobs the sweep will launch
    (a grid's product, a search's ``n_trials``; None: another sweeper)."""

    spec: ExperimentSpec | None
    n_jobs: int | None


def task_config(config: DictConfig) -> DictConfig:
    """A copy of ``config`` without Hydra's ``hydra`` node (what a job checks)."""
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return task


def repeated_key(overrides: Sequence[str]) -> str | None:
    """The first key two of ``overrides`` set (``model.num_leaves=7,15 model.num_leaves=3,4``), or None.

    >>> repeated_key(["model.num_leaves=7,15", "seed=1", "model.num_leaves=3,4"])
    'model.num_leaves'
    >>> repeated_key(["model=lambdarank", "model.num_leaves=7"])
    """
    seen: set[str] = set()
    for override in overrides:
        key = override_key(override)
        if key in seen:
            return key
        seen.add(key)
    return None


def check_data_files(spec: ExperimentSpec) -> None:
    """The data files a job will read exist (a LETOR fold's folder, a parts set's parts); no
    file is opened. Other kinds' paths are checked by :func:`check_config` (``exists`` keys)."""
    data = spec.config.data
    kind = str(data.kind)
    if kind == "letor":
        letor_fold_files(str(data.root), getattr(data, "fold", None))
    elif kind == "letor_parts":
        letor_parts_files(str(data.root), [str(p) for p in data.parts], fold=int(data.fold),
                          n_train_parts=int(data.n_train_parts))  # fmt: skip


def check_job(config: DictConfig) -> ExperimentSpec:
    """One job's config (``hydra`` node included or not): its checked spec; its data files exist."""
    spec = check_config(task_config(config))
    check_data_files(spec)
    return spec


def grid_jobs(config: DictConfig) -> list[list[str]]:
    """Each job's overrides, as Hydra's basic sweeper makes them: ``hydra.sweeper.params`` (an
    experiment's sweep), then the command line's overrides (a key given in both: the command
    line's values), every combination."""
    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    parsed = OverridesParser.create().parse_overrides([*params, *config.hydra.overrides.task])
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


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
    elif target == BASIC_SWEEPER:
        first, n_jobs = check_grid(config, varying)
        base = base or first
    if not is_ltr_search(config):
        check_sweep(config, base)  # the baseline run
    return SweepPlan(spec=base, n_jobs=n_jobs)

