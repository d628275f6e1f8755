"""What a run records in the tracker: its name, tags, params, metrics, curves and artifacts.

Tag, param and artifact names are those of the README's "What a run logs" section; every run
logs the same names so the MLflow UI compares runs side by side.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np
from omegaconf import OmegaConf

from ltr.experiment.charts import plot_feature_importance, plot_ndcg_by_stratum
from ltr.experiment.evaluation import Evaluation, lightgbm_key
from ltr.experiment.report import summary_rows, to_markdown
from ltr.experiment.spec import ExperimentSpec
from ltr.metrics.plots import plot_idcg_histogram
from ltr.tracking import Tracker
from ltr.tracking.gitinfo import git_state
from ltr.training.local import TrainResult


def shown_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides that say what a run computes: not tracking's (where it is logged) or Hydra's."""
    return [o for o in overrides if not o.lstrip("+~").startswith(("tracking", "hydra"))]


def run_name(spec: ExperimentSpec, overrides: Sequence[str]) -> str:
    """``tracking.run_name``, or the model and the overrides of :func:`shown_overrides`."""
    if spec.config.tracking.run_name:
        return str(spec.config.tracking.run_name)
    return " ".join([str(spec.config.model.name), *shown_overrides(overrides)])


def run_tags(spec: ExperimentSpec, data_sha: str, overrides: Sequence[str]) -> dict[str, str]:
    """The ``ltr.*`` tags: objective, model, data, code version, overrides, conventions, seed."""
    config, conventions = spec.config, spec.conventions
    commit, dirty = git_state(Path(__file__).resolve().parent)
    label_gain = "" if conventions.label_gain is None else ",".join(map(str, conventions.label_gain))
    return {
        "ltr.objective": str(config.model.objective),
        "ltr.model": str(config.model.name),
        "ltr.data.name": str(config.data.name),
        "ltr.data.fingerprint": data_sha,
        "ltr.git.commit": commit,
        "ltr.git.dirty": str(dirty).lower(),
        "ltr.overrides": " ".join(overrides),
        "ltr.eval.gain": label_gain or conventions.gain,
        "ltr.eval.ties": conventions.ties,
        "ltr.eval.zero_idcg": conventions.zero_idcg,
        "ltr.eval.rel_threshold": str(conventions.rel_threshold),
        "ltr.eval.strata": ",".join(spec.strata.labels),
        "ltr.eval.k": ",".join(str(k) for k in spec.ks),
        "ltr.seed": str(config.seed),
        "ltr.lightgbm_version": lightgbm.__version__,
    }


def summary_markdown(spec: ExperimentSpec, evaluation: Evaluation, result: TrainResult) -> tuple[str, str, list[str], list[list[str]]]:
    """Title, ``report/summary.md`` text, and the header and rows of the printed table."""
    conventions = spec.conventions
    header, rows = summary_rows(evaluation.summaries, ks=spec.ks, strata=spec.strata)
    title = (
        f"{spec.config.model.name} on {spec.config.data.name}: our nDCG "
        f"({conventions.gain} gain, ties={conventions.ties}, zero_idcg={conventions.zero_idcg})"
    )
    text = (
        f"# {title}\n\n" + to_markdown(header, rows)
        + f"\nBest round {result.best_iteration} of {result.n_rounds}.\n\n## Beside LightGBM's own metric\n\n"
        + "\n\n".join(evaluation.gap_notes) + "\n"
    )
    return title, text, header, rows


def record_results(
    tracker: Tracker,
    spec: ExperimentSpec,
    overrides: Sequence[str],
    evaluation: Evaluation,
    result: TrainResult,
    data_fingerprint: dict[str, Any],
    summary_md: str,
    our_curves: dict[str, dict[str, list[float]]],
) -> None:
    """Metrics, per-round curves and every artifact.

    Curves (step = boosting round): ``iter/{split}/ndcg_at_k``, our nDCG (the run's
    conventions, the same number as ``{split}/ndcg_at_k`` at the best round), and
    ``iter/{split}/lightgbm/ndcg_at_k``, LightGBM's own values (its conventions).
    """
    curves = {
        f"iter/{split}/lightgbm/{lightgbm_key(name)}": values
        for split, by_metric in result.evals_result.items()
        for name, values in by_metric.items()
    } | {
        f"iter/{split}/{key}": values
        for split, by_key in our_curves.items()
        for key, values in by_key.items()
    }
    tracker.log_metrics(evaluation.metrics)
    tracker.log_curves(curves)
    if not tracker.enabled:  # tracking=none: nothing to draw or write
        return
    tracker.log_text(OmegaConf.to_yaml(spec.raw), "config/config.yaml")
    tracker.log_text("".join(f"- {o}\n" for o in overrides) or "[]\n", "config/overrides.yaml")
    tracker.log_dict(data_fingerprint, "data/fingerprint.json")
    for (split, k), report in evaluation.reports.items():
        tracker.log_figure(plot_idcg_histogram(report, title=f"{split}: IDCG@{k} per query"), f"idcg/{split}/hist_at_{k}.png")
        tracker.log_dict(report.to_dict(), f"idcg/{split}/hist_at_{k}.json")
    tracker.log_figure(
        plot_ndcg_by_stratum(evaluation.summaries, ks=list(spec.ks), strata=spec.strata, title="nDCG by list length"),
        "report/ndcg_by_stratum.png",
    )
    importance = np.asarray(result.booster.feature_importance(importance_type="gain"), dtype=np.float64)
    names = list(result.booster.feature_name())
    tracker.log_figure(
        plot_feature_importance(importance, names, title="feature importance (gain)"), "feature_importance.png"
    )
    tracker.log_dict(dict(zip(names, importance.tolist(), strict=True)), "feature_importance.json")
    tracker.log_text(summary_md, "report/summary.md")
    with tempfile.TemporaryDirectory() as tmp:
        for split, table in evaluation.tables.items():
            path = Path(tmp) / f"{split}.parquet"
            table.to_parquet(path, index=False)
            tracker.log_file(path, "per_query")
        model_path = Path(tmp) / "model.txt"
        result.booster.save_model(str(model_path), num_iteration=result.best_iteration)
        tracker.log_file(model_path, "model_text")
    if spec.config.tracking.log_model:
        tracker.log_model(result.booster, names)
