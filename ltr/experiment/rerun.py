"""Run a logged run again: its overrides recomposed, what changed since said in one line, and the
two runs compared key by key.

A run logs its overrides (``config/overrides.yaml``), its composed config
(``config/config.yaml``), the code (``ltr.git.commit``, ``ltr.git.dirty``), the data
(``ltr.data.fingerprint``) and LightGBM's version (``ltr.lightgbm_version``). :func:`plan_rerun`
turns that and extra overrides into the overrides of the new run; :func:`describe_changes` says
what differs (code, tree, LightGBM, the composed config, and after the run the data);
:func:`metric_differences` compares the metrics of the two runs bit for bit, and
:func:`thread_change` says when LightGBM trained them on different thread counts (another
machine: ``fit.num_threads=0`` takes its physical cores). The new run is named
:func:`rerun_name` and its description opens with :func:`rerun_note`: the source run (a link to
its page) and whether the metrics were identical.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import lightgbm
from omegaconf import OmegaConf

from ltr.config.overrides import override_key
from ltr.experiment.names import MAX_RUN_NAME
from ltr.experiment.record import library_version_tag
from ltr.tracking.gitinfo import WORKDIR_TAG, git_state
from ltr.tracking.runs import RunRecord, unfinished
from ltr.tracking.sweep_summary import run_link

#: Metrics that measure time, not results: left out of the comparison.
TIMING_SUFFIX = "_seconds"
#: Keys that name where a run is logged, not what it computes.
WHERE_KEYS = ("tracking.",)


def logged_overrides(text: str) -> list[str]:
    """The overrides of ``config/overrides.yaml`` (a YAML list; ``[]`` when there were none)."""
    loaded = OmegaConf.to_container(OmegaConf.create(text or "[]"))
    return [str(item) for item in loaded] if isinstance(loaded, list) else []


@dataclass(frozen=True)
class RerunPlan:
    """The overrides of the new run and what the user changed on purpose (``changed`` keys)."""

    overrides: list[str]
    changed: list[str]


#: Where the source run was logged: its own overrides of these keys are dropped, so the rerun goes
#: to the store it was read from (a copied store, not the original's path) unless ``extra`` says.
STORE_KEYS = ("tracking.uri", "tracking.experiment")


def plan_rerun(source: Sequence[str], extra: Sequence[str], *, tracking_uri: str, experiment: str) -> RerunPlan:
    """The source run's overrides, each replaced by an extra override of the same key, then the
    extra overrides that set new keys. The rerun is logged in ``tracking_uri`` and ``experiment``
    (the store and experiment the source run was read from), whatever the source run's own
    overrides said, unless ``extra`` gives ``tracking.uri=`` / ``tracking.experiment=``."""
    replaced = {override_key(o): o for o in extra}
    source = [o for o in source if override_key(o) not in STORE_KEYS or override_key(o) in replaced]
    overrides = [replaced.pop(override_key(o), o) for o in source]
    overrides += [o for o in extra if override_key(o) in replaced]
    keys = {override_key(o) for o in overrides}
    if "tracking.uri" not in keys:
        overrides.append(f"tracking.uri={tracking_uri}")
    if "tracking.experiment" not in keys:
        overrides.append(f"tracking.experiment={experiment}")
    return RerunPlan(overrides, [override_key(o) for o in extra])


def _flat(tree: object, prefix: str = "") -> dict[str, object]:
    if isinstance(tree, dict):
        out: dict[str, object] = {}
        for key, value in tree.items():
            out |= _flat(value, f"{prefix}{key}.")
        return out
    return {prefix.rstrip("."): tree}


def config_differences(logged_yaml: str, composed_yaml: str, *, ignore: Sequence[str] = ()) -> list[str]:
    """Keys whose value in the composed config differs from the logged one (``key: old -> new``),
    leaving out ``tracking.*`` and the keys in ``ignore`` (changed on purpose)."""
    old = _flat(OmegaConf.to_container(OmegaConf.create(logged_yaml)))
    new = _flat(OmegaConf.to_container(OmegaConf.create(composed_yaml)))
    skip = tuple(ignore)
    out = []
    for key in sorted(set(old) | set(new)):
        if key.startswith(WHERE_KEYS) or any(key == k or key.startswith(k + ".") for k in skip):
            continue
        if old.get(key, "(absent)") != new.get(key, "(absent)"):
            out.append(f"{key}: {old.get(key, '(absent)')} -> {new.get(key, '(absent)')}")
    return out


def describe_changes(source: RunRecord, config_changes: Sequence[str]) -> list[str]:
    """What differs between the source run's code and environment and this one, before running
    (the folder too: relative data paths are taken from the current one, :data:`WORKDIR_TAG`)."""
    out = [] if source.status == "FINISHED" else [f"the source run {unfinished(source.status)}"]
    commit, dirty = git_state(Path(__file__).resolve().parent)
    old_commit = source.tags.get("ltr.git.commit", "unknown")
    if old_commit != commit:
        out.append(f"code commit {old_commit[:10]} -> {commit[:10]}")
    if source.tags.get("ltr.git.dirty") == "true":
        out.append("the source run's tree had uncommitted changes")
    if dirty:
        out.append("this tree has uncommitted changes")
    old_lgb = source.tags.get("ltr.lightgbm_version")
    if old_lgb is None:
        out.append(f"LightGBM version of the source run unknown (now {lightgbm.__version__})")
    elif old_lgb != lightgbm.__version__:
        out.append(f"LightGBM {old_lgb} -> {lightgbm.__version__}")
    backend = source.tags.get("ltr.backend", "lightgbm")
    if backend != "lightgbm":  # XGBoost's or CatBoost's version too
        old, now = source.tags.get(f"ltr.{backend}_version"), library_version_tag(backend).get(f"ltr.{backend}_version")
        if old != now:
            out.append(f"{backend} {old or 'unknown'} -> {now or 'not installed'}")
    old_dir, here = source.tags.get(WORKDIR_TAG), str(Path.cwd())
    if old_dir and old_dir != here:
        out.append(f"folder {old_dir} -> {here} (relative data paths are taken from here)")
    if config_changes:
        shown = "; ".join(config_changes[:3]) + (f"; +{len(config_changes) - 3} more" if len(config_changes) > 3 else "")
        out.append(f"the composed config differs from the logged one ({shown})")
    return out


#: The logged param of the thread count LightGBM trained with (``fit.num_threads``, or the
#: machine's physical cores when it is 0).
THREADS_PARAM = "lightgbm.n_jobs"
#: The same of XGBoost and CatBoost runs.
LIBRARY_THREADS_PARAMS = ("xgboost.nthread", "catboost.thread_count")


def thread_change(old_params: Mapping[str, str], new_params: Mapping[str, str]) -> str | None:
    """What to say when the two runs' LightGBM trained on different thread counts (None when
    they did not, or a run did not log it): LightGBM sums gradients over threads, so another
    count can give another model, bit-wise, for the same config and seed."""
    key = next((k for k in (THREADS_PARAM, *LIBRARY_THREADS_PARAMS) if k in old_params), THREADS_PARAM)
    old, new = old_params.get(key), new_params.get(key)
    if old is None or new is None or old == new:
        return None
    if key != THREADS_PARAM:
        library = key.partition(".")[0]
        return f"{library} threads {old} -> {new} (set fit.num_threads for the same model on every machine)"
    return (
        f"LightGBM threads {old} -> {new} (its sums depend on the thread count; fit.num_threads=0 takes "
        "the machine's physical cores: set fit.num_threads for the same model on every machine)"
    )


def metric_differences(old: Mapping[str, float], new: Mapping[str, float]) -> list[tuple[str, float, float]]:
    """``(key, old, new)`` of every metric (timings left out) whose value is not the same float,
    bit for bit (NaN equals NaN), or that only one run has; largest change first."""
    keys = sorted(k for k in set(old) | set(new) if not k.endswith(TIMING_SUFFIX))
    out = []
    for key in keys:
        a, b = old.get(key, math.nan), new.get(key, math.nan)
        same = (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
        if not same or (key in old) != (key in new):
            out.append((key, a, b))
    return sorted(out, key=lambda d: -abs(d[2] - d[1]) if not (math.isnan(d[1]) or math.isnan(d[2])) else -math.inf)


#: What a rerun's name adds to its source run's name.
RERUN_SUFFIX = " (rerun)"


def rerun_name(source_name: str) -> str:
    """The rerun's name: ``<source name> (rerun)``; a rerun of a rerun keeps one suffix. A name
    ``tracking.run_name`` could not be (a control character, which a run logged by other means
    may have; beyond :data:`~ltr.experiment.names.MAX_RUN_NAME` characters) loses those
    characters, and its end.

    >>> rerun_name("mine_a"), rerun_name("mine_a (rerun)"), rerun_name(""), rerun_name("b\x1b]0;x\x07")
    ('mine_a (rerun)', 'mine_a (rerun)', 'run (rerun)', 'b]0;x (rerun)')
    """
    base = "".join(c for c in source_name.removesuffix(RERUN_SUFFIX) if unicodedata.category(c) != "Cc")
    return (base[: MAX_RUN_NAME - len(RERUN_SUFFIX)] or "run") + RERUN_SUFFIX


def rerun_note(
    source: RunRecord,
    differences: Sequence[tuple[str, float, float]] | None,
    *,
    n_keys: int,
    changes: Sequence[str] = (),
    same_store: bool = True,
) -> str:
    """The Markdown paragraph that opens a rerun's description: the source run (a link to its
    page when ``same_store``, else its id), whether the metrics were identical (``differences``:
    :func:`metric_differences`, ``n_keys`` metric keys compared; None: nothing was compared, the
    source run did not finish), and what differed before the run (``changes``)."""
    shown = f"{source.run_name} ({source.short_id})"
    where = run_link(shown, source.experiment_id, source.run_id) if same_store else f"run {source.run_id} ({source.run_name}) of another store"
    if differences is None:
        outcome = "the source run did not finish, so no metric was compared"
    elif not differences:
        outcome = f"identical metrics, bit for bit ({n_keys} keys)"
    else:
        key, old, new = differences[0]
        outcome = f"{len(differences)} of {n_keys} metric keys moved; the most: {key} {old:.6g} -> {new:.6g}"
    said = f"**Rerun** of {where}: {outcome}."
    if changes:
        said += " What differed: " + "; ".join(changes) + "."
    return said
