"""A run's own split, made again from its config and checked against the fingerprint it logged.

``ltr predict RUN --split test`` promises the run's test split, bit for bit: the rows the run
evaluated. Its config names the data (files, a folder, a seed), not the rows: a file rewritten
since the run, or a relative path (``data.test=te.txt``, taken from the current folder) that
names another file here, would make other rows, scored and shown as the run's split.

So the split set is made again (:func:`ltr.experiment.sources.open_source`, which fingerprints it
with :func:`ltr.data.fingerprint.fingerprint`, the function ``ltr train`` logs) and compared with
the run's ``ltr.data.fingerprint`` tag and, per split, its ``data/fingerprint.json`` artifact:

- the asked split's hash differs from the logged one (or, without per-split hashes, the whole
  set's): refused in one line naming the split, where it comes from (``data.test=te.txt``) and
  both hashes (:class:`ltr.errors.DataError`, exit 2, before anything is written);
- the asked split is the run's but another split changed: scored, with a warning naming it
  (the asked split's rows, and so every value, are the run's);
- a run that logged no fingerprint (an old run): scored, with one warning line saying the rows
  are not checked.

Relative data paths (``data.test=te.txt``) are taken from the folder the run was trained in,
its ``ltr.workdir`` tag, when that folder exists here: ``--split`` works from any folder. A run
without the tag, or whose folder is not on this machine (a copied store), takes them from the
current folder. Data paths that do not exist are refused first, in one line naming the key and
the folder relative paths were taken from.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from ltr.config.allowed import allowed_of, problems
from ltr.data.cache import wait_for_stores
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError, LtrUserError
from ltr.experiment.sources import InMemorySource, open_source
from ltr.models.logged import LoggedRun
from ltr.tracking.gitinfo import WORKDIR_TAG

log = logging.getLogger(__name__)

#: The run's tag holding its data set's content hash (``ltr.experiment.record.run_tags``).
FINGERPRINT_TAG = "ltr.data.fingerprint"
#: The run's artifact holding the whole fingerprint, one entry per split.
FINGERPRINT_ARTIFACT = "data/fingerprint.json"
SPLITS = ("train", "valid", "test")


def own_split(run: LoggedRun, split: str) -> RankingData:
    """``run``'s ``split`` (``train``, ``valid`` or ``test``) with the labels its evaluation used,
    made again from its config and checked against its logged fingerprint (module docstring).

    Raises
    ------
    LtrUserError
        an unknown split; a data path of the run that does not exist here; data read on Dask
        workers (``data=parquet_partitions``).
    DataError
        the split made again is not the one the run logged (its fingerprint differs).
    """
    if split not in SPLITS:
        raise LtrUserError(f"--split={split!r} is not one of {', '.join(SPLITS)}")
    folder = paths_folder(run)
    data_config = absolute_paths(run.spec.config.data, folder)
    missing = problems(data_config, "data.")  # the run's other settings were checked when read
    if missing:
        raise LtrUserError(
            f"--split {split}: the data of run {run.label} is not here: "
            f"{_as_set(missing[0], run.spec.config.data, data_config)} (relative paths are taken "
            f"from {_folder_note(run, folder)}); score files with --data"
        )
    spec = dataclasses.replace(run.spec, config=dataclasses.replace(run.spec.config, data=data_config))
    source = open_source(spec)
    wait_for_stores()  # the cache entries of files parsed just now: written before predict goes on
    if not isinstance(source, InMemorySource):
        raise LtrUserError(
            f"run {run.label} read its data on Dask workers (data={source.name}): pass --data <data.root>/{split}"
        )
    check_fingerprint(run, split, source.fingerprint, folder)
    data: RankingData = getattr(source.evaluation, split)
    return data


def check_fingerprint(run: LoggedRun, split: str, now: dict[str, Any], folder: Path | None = None) -> None:
    """Refuse ``split`` when its fingerprint made again (``now``, as ``ltr train`` computes it)
    is not the one ``run`` logged; warn when only another split changed, or when the run logged
    no fingerprint (module docstring). ``folder``: where relative paths were taken from
    (:func:`paths_folder`; default the current folder), named in the refusal."""
    logged_sha = run.record.tags.get(FINGERPRINT_TAG)
    if not logged_sha:
        log.warning(
            "run %s logged no data fingerprint (%s): its %s split is made again from its config "
            "without a check that it holds the rows the run evaluated", run.label, FINGERPRINT_TAG, split,
        )  # fmt: skip
        return
    if logged_sha == now["sha256"]:
        return
    logged = _logged_splits(run)
    changed = [s for s in SPLITS if s in logged and logged[s].get("sha256") != now[s]["sha256"]]
    where = run.spec.config.data
    if split in logged:
        if split not in changed:
            log.warning(
                "the data of run %s changed since it ran (%s), but its %s split is the one it evaluated "
                "(fingerprint %s): scored", run.label, "; ".join(origin(where, s) for s in changed) or "the split set",
                split, now[split]["sha256"],
            )  # fmt: skip
            return
        old, new, what = logged[split], now[split], f"the {split} split"
    else:  # no per-split hashes: the whole set's
        old, new, what = {"sha256": logged_sha}, now, "the data"
    rows = "" if old.get("n_rows") in (None, new["n_rows"]) else f", {new['n_rows']} rows vs {old['n_rows']}"
    raise DataError(
        f"--split {split}: {what} of run {run.label} made again from {origin(where, split)} is not the one the "
        f"run evaluated (fingerprint {new['sha256']} here, {old['sha256']} logged{rows}): the file changed since "
        f"the run, or a relative path names another file in {folder or Path.cwd()}; score the files as they are with --data"
    )


def _logged_splits(run: LoggedRun) -> dict[str, dict[str, Any]]:
    """The per-split entries of the run's ``data/fingerprint.json`` ({} when it has none)."""
    text = run.text_artifact(FINGERPRINT_ARTIFACT)
    if text is None:
        return {}
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        return {}
    if not isinstance(whole, dict):
        return {}
    return {s: whole[s] for s in SPLITS if isinstance(whole.get(s), dict)}


def paths_folder(run: LoggedRun) -> Path:
    """The folder ``run``'s relative data paths are taken from: the folder it was trained in (its
    ``ltr.workdir`` tag) when that is a folder here, else the current folder."""
    recorded = run.record.tags.get(WORKDIR_TAG)
    if recorded and Path(recorded).is_dir():
        return Path(recorded)
    return Path.cwd()


def absolute_paths(data: Any, folder: Path) -> Any:
    """The data config ``data`` (a dataclass of :mod:`ltr.config.groups.data`) with each relative path
    of a field that names an existing file or folder (``data.train``, ``data.root``, ...) taken
    from ``folder``; ``~`` expanded. Other fields, and absolute paths, as they are."""
    changes = {name: str(path if path.is_absolute() else folder / path) for name, path in _path_fields(data)}
    return dataclasses.replace(data, **changes) if changes else data


def _path_fields(data: Any) -> list[tuple[str, Path]]:
    """``(field name, path)`` (``~`` expanded) of each field of ``data`` set to a path that must exist."""
    out = []
    for f in dataclasses.fields(data):
        rule, value = allowed_of(f), getattr(data, f.name)
        if rule is not None and rule.exists and isinstance(value, str):
            out.append((f.name, Path(value).expanduser()))
    return out


def _as_set(problem: str, data: Any, absolute: Any) -> str:
    """``problem`` (``data.train=/abs/tr.txt does not exist``, of ``absolute``) with the path as
    the run's config ``data`` names it (``data.train=tr.txt does not exist``)."""
    key = problem.split("=", 1)[0]
    name = key.removeprefix("data.")
    was, now = getattr(data, name, None), getattr(absolute, name, None)
    if isinstance(was, str) and isinstance(now, str):
        return problem.replace(f"{key}={now}", f"{key}={was}", 1)
    return problem


def _folder_note(run: LoggedRun, folder: Path) -> str:
    """Where relative paths were taken from, and why, for a refusal."""
    recorded = run.record.tags.get(WORKDIR_TAG)
    if recorded and Path(recorded) == folder:
        return f"the folder the run was trained in, {folder}"
    if recorded:
        return f"the current folder, {folder}: the folder the run was trained in, {recorded}, is not on this machine"
    return f"the current folder, {folder}: the run did not record its folder; run in the folder it was trained in"


def data_paths(run: LoggedRun) -> list[Path]:
    """The files and folders of ``run``'s data settings that exist here (``data.train``,
    ``data.root``, ...: the fields that name a path; relative ones taken from
    :func:`paths_folder`), what ``--split`` reads."""
    data = absolute_paths(run.spec.config.data, paths_folder(run))
    return [path for _, path in _path_fields(data) if path.exists()]


def origin(data: Any, split: str) -> str:
    """Where ``split`` of a data config comes from, as the user set it: ``data.test=te.txt``,
    ``data.train=tr.txt (test cut from it)``, ``data.root=...`` or ``data=synthetic``."""
    value = getattr(data, split, None)
    if isinstance(value, str):
        return f"data.{split}={value}"
    train = getattr(data, "train", None)
    if isinstance(train, str):
        return f"data.train={train} ({split} cut from it)"
    root = getattr(data, "root", None)
    if isinstance(root, str):
        fold = getattr(data, "fold", None)
        return f"data.root={root}" + ("" if fold is None else f" fold {fold}")
    return f"data={data.name} (made from the run's seed)"
