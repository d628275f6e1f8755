"""What a sweep's parent run is named and tagged, and what it shows of a cross-validation:
its name (:func:`sweep_name`), an Optuna search's space and study (:func:`search_space_params`,
:func:`study_tags`), the objective its children optimised (:func:`children_objective`), the fold
means and standard deviations of a CV sweep (:func:`summarise_folds`). The parent run itself is
created and ended by :class:`ltr.cli.sweeps.parent.SweepParent`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ltr.config.overrides import override_key
from ltr.experiment import names
from ltr.experiment.names import search_name
from ltr.experiment.record import headline_keys
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.cv import cv_columns, cv_coverage, cv_frame, cv_headline, cv_metrics, cv_table
from ltr.sweeper.link import JOURNAL_FILE
from ltr.sweeper.record import is_ltr_search
from ltr.sweeper.study_config import study_name
from ltr.tracking.liveness.reaped_trials import search_tags
from ltr.tracking.sweep_summary import child_runs

__all__ = ["children_objective", "search_space_params", "study_tags", "summarise_folds", "sweep_name"]


def sweep_name(config: DictConfig, varying: list[str], spec: ExperimentSpec | None = None, n_jobs: int | None = None) -> str:
    """A sweep's parent run name (:mod:`ltr.experiment.names`): ``tracking.run_name`` as given
    (its jobs ``<values> (<name>)``); a cross-validation (``cv.fold_key``) by what tells it from
    other CVs, its fold list left out (:func:`ltr.experiment.names.cv_name`; ``n_jobs``: the
    jobs planned, its folds when it varies the fold only); an Optuna search by its search,
    ``optuna:<study> (<n> trials, maximize valid/ndcg_at_10)``, not its space (``spec``: the base
    config, for the study's default name and the objectives); a grid by what it varies
    (``varying``: :func:`varying_keys`), then its other overrides."""
    if config.tracking.get("run_name"):
        return str(config.tracking.run_name)
    sweeper = config.hydra.sweeper
    task = list(config.hydra.overrides.task)
    fold_key = spec.config.cv.fold_key if spec is not None else config.get("cv", {}).get("fold_key")
    if fold_key and not is_ltr_search(config):
        model = spec.config.model.name if spec is not None else config.get("model", {}).get("name", "model")
        n_folds = n_jobs if list(varying) == [str(fold_key)] else None
        return names.cv_name(task, str(fold_key), n_folds, model=str(model))
    if is_ltr_search(config):
        model = spec.config.model.name if spec is not None else config.get("model", {}).get("name", "model")
        if spec is not None:
            objectives = list(spec.objectives or [spec.optimized_metric])
        else:  # the base config was refused: the objectives as given
            given = config.get("optimized_metric")
            objectives = [str(m) for m in given] if OmegaConf.is_list(given) else [str(given)]
        directions = list(spec.directions) if spec is not None and spec.directions else ["maximize"] * len(objectives)
        study = str(sweeper.get("study_name") or f"ltr_{model}")
        return search_name(study, int(sweeper.get("n_trials") or 0), objectives, directions, task, varying)
    return names.sweep_name(task, varying, dict(sweeper.get("params") or {}))


def search_space_params(config: DictConfig, varying: list[str]) -> dict[str, str]:
    """An Optuna search's space as the parent's params: ``space.<key>`` -> its range
    (``int(interval(7, 127))``), from ``hydra.sweeper.params`` and the command line's sweeps."""
    space = {str(k): str(v) for k, v in (config.hydra.sweeper.get("params") or {}).items()}
    for override in config.hydra.overrides.task:
        if override_key(override) in varying and "=" in override:
            space[override_key(override)] = override.split("=", 1)[1]
    return {f"space.{key}": value for key, value in space.items()}


def study_tags(config: DictConfig, spec: ExperimentSpec | None, sweep_dir: Path) -> dict[str, str]:
    """An Optuna search's study and storage as its parent's tags (a dead search's trials are
    told FAIL when its parent is reaped: :mod:`ltr.tracking.liveness.reaped_trials`); {} for other sweeps."""
    if not is_ltr_search(config) or spec is None:
        return {}
    sweeper = config.hydra.sweeper
    return search_tags(study_name(sweeper.get("study_name"), spec), str(sweeper.get("storage") or sweep_dir / JOURNAL_FILE))


def children_objective(tracker: Any) -> str:
    """The ``optimized_metric`` param of the current run's first child that logged one, or ""."""
    for run in child_runs(tracker.client, tracker.experiment_id, tracker.run_id):
        if run.data.params.get("optimized_metric"):
            return str(run.data.params["optimized_metric"])
    return ""


def summarise_folds(
    tracker: Any, spec: ExperimentSpec, fold_key: str, summary_md: str, children: list[Any], *, n_planned: int | None, name: str
) -> str:
    """A cross-validation sweep's parent run (``tracker``'s current run, named ``name``, of
    ``n_planned`` folds): the mean and standard deviation over the folds (``children``: the finished child runs):
    the headline keys' fold means under the keys themselves (``test/ndcg_at_10``) and their
    standard deviations (``test/ndcg_at_10/sd``), the runs table's columns; every
    per-split key's in the table artifact ``report/cv_metrics.json``. The parent's
    description is a lead line (test nDCG@k's mean ± sd, over which folds), the per-stratum
    table of means ± sd, then the jobs (``summary_md``):
    returned, and printed. A CV that lacks some of its planned folds is marked partial (the
    table's title, the tags ``ltr.cv.folds`` / ``ltr.cv.partial`` and the parent's name:
    ``... (2 of 5 folds)``); with one fold no sd is logged."""
    folds = {str(r.data.params.get(fold_key, r.info.run_id)): dict(r.data.metrics) for r in children}
    coverage = cv_coverage(len(folds), n_planned)
    partial = n_planned is not None and len(folds) < n_planned
    stats = cv_metrics(folds)
    common = set.intersection(*(set(m) for m in folds.values())) if folds else set()
    headline = [key for key in headline_keys(spec, dict.fromkeys(common, 0.0)) if f"cv/{key}/mean" in stats]
    tracker.log_metrics(cv_headline(stats, headline))
    tracker.show_first(cv_columns(headline) if len(folds) > 1 else headline)  # one fold: no sd
    tracker.log_table(cv_frame(stats), "report/cv_metrics.json")
    c = spec.conventions
    what = "mean ± sd" if len(folds) > 1 else "mean"  # the sd of one fold is undefined
    title = (
        f"{spec.config.model.name} on {spec.config.data.name}: {what} over {coverage}{', a partial CV' * partial} "
        f"({fold_key} = {', '.join(sorted(folds)) or 'none'}), test, nDCG ({c.gain} gain, ties={c.ties}, "
        f"zero_idcg={c.zero_idcg})"
    )
    table = cv_table(stats, split="test", ks=spec.ks, strata=spec.strata, title=title)
    tracker.log_text(table, "report/cv.md")
    key = f"test/ndcg_at_{max(spec.ks)}"
    lead = ""
    if f"cv/{key}/mean" in stats:  # what the MLflow page's description box shows whole, first
        sd = stats[f"cv/{key}/std"]
        value = f"{stats[f'cv/{key}/mean']:.4f}" + ("" if math.isnan(sd) else f" ± {sd:.4f}")
        lead = f"**test nDCG@{max(spec.ks)} {value}** over {coverage} ({fold_key} = {', '.join(sorted(folds))})\n\n"
    tags = {"mlflow.note.content": f"{lead}{table}\n\n{summary_md}", "ltr.cv.fold_key": fold_key,
            "ltr.cv.folds": coverage, "ltr.cv.partial": "true" if partial else "false"}  # fmt: skip
    if partial:  # the runs table's name says it too: "... (lambdarank, 5-fold CV, 2 of 5 folds)"
        tags["mlflow.runName"] = f"{name[:-1]}, {coverage})" if name.endswith("CV)") else f"{name} ({coverage})"
    tracker.set_tags(tags)
    print(table)
    return f"{lead}{table}\n\n{summary_md}"
