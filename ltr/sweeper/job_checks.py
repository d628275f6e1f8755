"""The checks of one job of a sweep, before it runs: its config without Hydra's node
(:func:`task_config`) checked and its data files found (:func:`check_job`, no data read); a grid's
jobs as Hydra's basic sweeper makes them (:func:`grid_jobs`); a key the command line gives twice
(:func:`repeated_key`). The sweep's start checks (:mod:`ltr.cli.sweeps.checks`) call them."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, open_dict, read_write

from ltr.config.overrides import override_key
from ltr.data.load import letor_fold_files, letor_parts_files
from ltr.experiment.checks import check_config
from ltr.experiment.spec import ExperimentSpec

__all__ = ["check_data_files", "check_job", "grid_jobs", "mark_checked", "repeated_key", "task_config", "were_checked"]


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


#: The jobs (overrides) of the grid this process's start check composed and checked last (:func:`mark_checked`).
_CHECKED: set[tuple[str, ...]] = set()


def mark_checked(jobs: list[list[str]]) -> None:
    """Record that every job of ``jobs`` (:func:`grid_jobs`) was composed and passed :func:`check_job`,
    in place of an earlier sweep's record (``[]``: a sweep starts, nothing of it checked yet)."""
    _CHECKED.clear()
    _CHECKED.update(tuple(job) for job in jobs)


def were_checked(batch: Sequence[Sequence[str]]) -> bool:
    """Whether every job of ``batch`` (a sweeper's batch of overrides) was :func:`mark_checked`."""
    return all(tuple(job) in _CHECKED for job in batch)
