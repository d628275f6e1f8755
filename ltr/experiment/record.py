"""What a run records in the tracker: its name, tags, params, metrics, curves and artifacts.

Tag, param and artifact names are those of the README's "What a run logs" section; every run
logs the same names so the MLflow UI compares runs side by side.
"""

from __future__ import annotations

import importlib
import importlib.util
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np
from omegaconf import OmegaConf

from ltr.experiment import names
from ltr.experiment.evaluation import Evaluation, lightgbm_key, our_curves
from ltr.experiment.figures.charts import plot_feature_importance, plot_ndcg_by_stratum
from ltr.experiment.figures.figure_worker import FigureWorker
from ltr.experiment.figures.run_figures import RunFigures
from ltr.experiment.report import (
    clicks_markdown,
    page_markdown,
    rerank_rows,
    run_lead,
    summary_rows,
    to_markdown,
)
from ltr.experiment.sources import Scored
from ltr.experiment.spec import ExperimentSpec, diversity_measures
from ltr.metrics.clicks.position_bias import position_bias_report
from ltr.metrics.clicks.propensity import PropensityEstimate
from ltr.metrics.conventions import MetricConventions
from ltr.metrics.plots import (
    plot_exposure,
    plot_idcg_histogram,
    plot_position_bias,
    plot_propensity,
)
from ltr.metrics.reports.gap import LIBRARIES
from ltr.tracking import Tracker
from ltr.tracking.gitinfo import code_state, source_tags, workdir_tags
from ltr.training.artifact import ShippedModel, ship_model
from ltr.training.backends import MODEL_FILES, backend_of, objective_of
from ltr.training.config_rules import trains_with
from ltr.training.local import TrainResult

#: A split's per-query table is also logged as ``per_query/{split}.json``, a table the MLflow
#: UI displays, when it has at most this many queries (rows); the Parquet file always.
UI_TABLE_MAX_QUERIES = 2000


def run_name(
    spec: ExperimentSpec, overrides: Sequence[str], varying: Sequence[str] | None = None, job: str | None = None
) -> str:
    """``tracking.run_name``, else what tells the run apart, first (:func:`ltr.experiment.names.run_name`:
    a sweep's job, ``varying`` the keys its sweep varies and ``job`` its number, by its values of
    those keys; a single run by its overrides, what it computes before how it is fitted)."""
    given = spec.config.tracking.run_name
    return names.run_name(
        overrides, model=str(spec.config.model.name), given=str(given) if given else None, varying=varying, job=job
    )


def discount_text(conventions: MetricConventions) -> str:
    """``log2_rank_plus_1``, ``jarvelin (base 2)`` or ``weights 1,0.7,0.5`` (positions beyond: 0)."""
    if not isinstance(conventions.discount, str):
        return "weights " + ",".join(f"{w:g}" for w in conventions.discount)
    return conventions.discount + ("" if conventions.discount == "log2_rank_plus_1" else f" (base {conventions.discount_base:g})")


def run_tags(spec: ExperimentSpec, data_sha: str, overrides: Sequence[str]) -> dict[str, str]:
    """The ``ltr.*`` tags (objective, model, data, code version, overrides, conventions, seed) and
    MLflow's own source tags (:func:`ltr.tracking.gitinfo.source_tags`)."""
    config, conventions = spec.config, spec.conventions
    commit, dirty = code_state()
    label_gain = "" if conventions.label_gain is None else ",".join(map(str, conventions.label_gain))
    return {
        "ltr.objective": objective_of(config.model),
        "ltr.backend": backend_of(config.model),
        "ltr.trainer": str(trains_with(config)),  # trainer=dask with CatBoost trains in this process: local
        "ltr.optimized_metric": spec.optimized_metric,
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
        "ltr.eval.discount": discount_text(conventions),
        "ltr.eval.strata": ",".join(spec.strata.labels),
        "ltr.eval.k": ",".join(str(k) for k in spec.ks),
        "ltr.seed": str(config.seed),
        **{f"ltr.labels.{role}": str(getattr(config.data, f"{role}_labels"))
           for role in ("train", "valid", "eval") if hasattr(config.data, f"{role}_labels")},
        "ltr.lightgbm_version": lightgbm.__version__,
        **library_version_tag(backend_of(config.model)),
    } | source_tags("ltr train") | workdir_tags()


def library_version_tag(backend: str) -> dict[str, str]:
    """``ltr.<library>_version`` of a backend other than LightGBM (whose tag every run has);
    {} when its library is not installed."""
    if backend == "lightgbm" or importlib.util.find_spec(backend) is None:
        return {}
    return {f"ltr.{backend}_version": str(importlib.import_module(backend).__version__)}


def headline_keys(spec: ExperimentSpec, metrics: dict[str, float]) -> list[str]:
    """The metric columns a user meets first in the MLflow runs table: the optimised metric, then
    valid and test nDCG at the largest cut-off and test's per stratum, then (with re-ranking)
    valid's nDCG before it and ILD, (on click data) valid's simulated CTR, a sweep's best, the
    round."""
    k = max(spec.ks)
    split = spec.optimized_metric.split("/")[0]
    extra = [f"{split}/pre_rerank/ndcg_at_{k}", f"{split}/ild_at_{k}"] if diversity_measures(spec.config.rerank) else []
    extra += [key for key in (f"{split}/online/ctr",) if key in metrics]  # data with a click model
    keys = [  # the kind's own columns after the strata: headline and strata fit a 1600 px window
        spec.optimized_metric, f"valid/ndcg_at_{k}", f"test/ndcg_at_{k}",
        *(f"test/ndcg_at_{k}/{stratum}" for stratum in spec.strata.keys), *extra,
        f"sweep/best/{spec.optimized_metric}", "best_iteration",
    ]
    return list(dict.fromkeys(keys))


def _gap_heading(library: str) -> str:
    """The heading of a run's gap notes: LightGBM's own metric, and the library's that trained."""
    if library not in LIBRARIES or library == "lightgbm":
        return "## Beside LightGBM's own metric"
    return f"## Beside LightGBM's and {LIBRARIES[library].title}'s own metrics"


def summary_markdown(
    spec: ExperimentSpec,
    evaluation: Evaluation,
    result: TrainResult,
    propensity: PropensityEstimate | None = None,
    label_sources: dict[str, str] | None = None,
) -> tuple[str, str, list[str], list[list[str]]]:
    """Title, ``report/summary.md`` text (the run's description in the MLflow UI under its lead:
    :func:`run_description`), and the header and rows of the printed table. A click log's run
    (``propensity``: the curve in use; ``label_sources``: role -> label source) has a
    ``## Clicks`` section after the table (:func:`ltr.experiment.report.clicks_markdown`)."""
    conventions = spec.conventions
    header, rows = summary_rows(evaluation.summaries, ks=spec.ks, strata=spec.strata)
    title = (
        f"{spec.config.model.name} on {spec.config.data.name}: our nDCG "
        f"({conventions.gain} gain, ties={conventions.ties}, zero_idcg={conventions.zero_idcg})"
    )
    rerank = spec.config.rerank
    measures = diversity_measures(rerank)
    reranked = ""
    if measures:
        what = f"rerank={rerank.kind}, alpha={rerank.alpha}, similarity={rerank.similarity}"
        title = title.replace(": our nDCG", f", re-ranked ({what}): our nDCG", 1)
        before_after = rerank_rows(
            evaluation.metrics, splits=list(spec.config.eval.splits), k=max(spec.ks),
            measures=("ndcg", *measures), strata=spec.strata,
        )  # fmt: skip
        reranked = (
            f"## Re-ranked: the model's order -> the final order\n\nEvery metric above and every "
            f"`{{split}}/...` key is of the final order ({what}); the model's own order is "
            f"`{{split}}/pre_rerank/...`, and its per-round curve `iter/{{split}}/pre_rerank/ndcg_at_k` "
            f"(no curve of the final order: the re-ranker is not run every round).\n\n"
            + to_markdown(*before_after) + "\n"
        )
    clicks = ""
    if propensity is not None:
        clicks = clicks_markdown(
            evaluation.metrics, propensity, click_column=click_column(spec), method=str(spec.config.eval.clicks.propensity),
            labels=label_sources or {}, splits=list(spec.config.eval.splits), k=max(spec.ks),
        ) + "\n"  # fmt: skip
    text = (
        f"# {title}\n\n" + to_markdown(header, rows)
        + f"\nBest round {result.best_iteration} of {result.n_rounds}.\n\n" + clicks + reranked
        + _gap_heading(result.library) + "\n\n" + "\n\n".join(evaluation.gap_notes) + "\n"
        + ("\n## Advice\n\n" + "\n\n".join(evaluation.advice) + "\n" if evaluation.advice else "")
    )
    return title, text, header, rows


def click_column(spec: ExperimentSpec) -> str:
    """The click column of a run's click log: ``data.click_column``, or the simulator's
    ``click`` (``data=synthetic_clicks``, whose clicks are the label source ``clicks``)."""
    given = getattr(spec.config.data, "click_column", None)
    return str(given) if given is not None else "click"


def run_description(spec: ExperimentSpec, evaluation: Evaluation, scored: Scored, summary_md: str) -> str:
    """The run's description (``mlflow.note.content``): :func:`ltr.experiment.report.page_markdown`
    of ``summary_md`` under the lead of :func:`ltr.experiment.report.run_lead` (a click log's
    run adds its click column and propensity method to the lead)."""
    clicks = ""
    if scored.propensity is not None:
        trained = scored.label_sources.get("train")
        clicks = f"click column `{click_column(spec)}`" + (f", trained on `{trained}`" if trained else "")
        clicks += f", propensities `{spec.config.eval.clicks.propensity}`"
    lead = run_lead(
        evaluation.metrics, optimized=spec.optimized_metric, k=max(spec.ks),
        best_round=scored.result.best_iteration, n_rounds=scored.result.n_rounds, clicks=clicks,
    )  # fmt: skip
    return page_markdown(summary_md, lead)


def label_histogram_markdown(histograms: dict[str, dict[str, list[int]]], sources: dict[str, str]) -> str:
    """A table of rows per grade of every label source and split, with the roles of the run's
    sources (``train``, ``valid``, ``eval``) beside their names.

    Examples
    --------
    >>> print(label_histogram_markdown({"clicks": {"train": [5, 2]}}, {"train": "clicks"}), end="")
    # Labels per source (rows per grade)
    <BLANKLINE>
    | source | split | grade 0 | grade 1 |
    |---|---|---:|---:|
    | clicks (train) | train | 5 | 2 |
    """
    width = max((len(c) for by_split in histograms.values() for c in by_split.values()), default=0)
    lines = [
        "# Labels per source (rows per grade)", "",
        "| source | split | " + " | ".join(f"grade {g}" for g in range(width)) + " |",
        "|---|---|" + "---:|" * width,
    ]  # fmt: skip
    for source, by_split in histograms.items():
        roles = [role for role, name in sources.items() if name == source]
        shown = f"{source} ({', '.join(roles)})" if roles else source
        for split, counts in by_split.items():
            padded = [*counts, *([0] * (width - len(counts)))]
            lines.append(f"| {shown} | {split} | " + " | ".join(str(c) for c in padded) + " |")
    return "\n".join(lines) + "\n"


def logged_curves(scored: Scored) -> dict[str, list[float]]:
    """The per-round curves a run logs (step = boosting round, 1 to the best round).

    ``iter/{split}/ndcg_at_k``: our nDCG (the run's conventions; at the best round the very
    number ``{split}/ndcg_at_k`` is); ``iter/{split}/lightgbm/ndcg_at_k``: LightGBM's own values
    (its conventions). A split the trainer saw with other labels than evaluation uses (clicks)
    has ``iter/{split}/train_labels/...`` and ``iter/{split}/lightgbm_train_labels/...`` instead.
    A re-ranked run has ``iter/{split}/pre_rerank/ndcg_at_k`` (the model's order) and no curve
    of its final order (:func:`ltr.experiment.evaluation.our_curves`). Every curve ends at the
    best round, on the value of the metric it is named after: the MLflow runs table and compare
    page show that last value.
    """
    best = scored.result.best_iteration
    theirs = {
        (f"iter/{key}/{scored.library}" if "/" not in key else f"iter/{key}") + f"/{lightgbm_key(name)}": values[:best]
        for key, by_name in scored.lightgbm_curves.items()
        for name, values in by_name.items()
    }
    return theirs | {f"iter/{key}": values for key, values in our_curves(scored).items()}


def record_start(tracker: Tracker, spec: ExperimentSpec, overrides: Sequence[str]) -> None:
    """What a run records as it starts: its params and its config (``config/config.yaml``,
    ``config/overrides.yaml``), so a run that fails later still says what it was asked to do.
    (MLflow reads a run whole at its first artifact, to find where its artifacts go: cheapest
    while the run has no metrics yet.)"""
    tracker.log_params(spec.params())
    tracker.log_text(OmegaConf.to_yaml(spec.raw), "config/config.yaml")
    tracker.log_text("".join(f"- {o}\n" for o in overrides) or "[]\n", "config/overrides.yaml")


def record_results(
    tracker: Tracker,
    spec: ExperimentSpec,
    evaluation: Evaluation,
    scored: Scored,
    data_fingerprint: dict[str, Any],
    summary_md: str,
    name: str,
    figure_worker: FigureWorker | None = None,
) -> None:
    """Metrics, per-round curves (:func:`logged_curves`), the description (``summary_md``, as
    ``mlflow.note.content``) and every artifact; figures and the model carry the run's ``name``.

    ``figure_worker``: the run's worker; the figures are drawn there while the rest is logged (it
    is closed on return). None: they are drawn in this process."""
    result = scored.result
    curves = logged_curves(scored)
    if not tracker.enabled:  # tracking=none: nothing to log, draw or write
        return
    # every exit of the run holds the trees its metrics describe: the booster cut at the best
    # round (the Dask trainer keeps every round, early stopping its patience), real feature names
    shipped = shipped_model(result)
    importance = shipped.importance()
    with RunFigures(figure_worker) as figures:
        _add_figures(figures, spec, evaluation, scored, shipped.feature_names, importance, name)
        # the headline keys first: MLflow lists a run's metrics in logging order, and its compare
        # page plots the first one by default
        headline = headline_keys(spec, evaluation.metrics)
        first = {key: evaluation.metrics[key] for key in headline if key in evaluation.metrics}
        # the model before the metrics, which name it: MLflow shows them on the model's page too
        model_id = None
        if spec.config.tracking.log_model and scored.example_features is not None:
            model_id = tracker.log_model(
                shipped.booster, shipped.input_example(scored.example_features), model_metadata(spec, shipped, name)
            )
        tracker.log_metrics(first | evaluation.metrics, model_id=model_id)
        tracker.log_curves(curves)
        tracker.log_params(lightgbm_params_logged(shipped.params, library=result.library))
        # the description on the run's page: a lead line, then the summary (its title a heading of the page's size)
        tracker.set_tags({"mlflow.note.content": run_description(spec, evaluation, scored, summary_md)})
        tracker.show_first(headline, list(curves))
        tracker.log_dict(data_fingerprint, "data/fingerprint.json")
        for (split, k), report in evaluation.reports.items():
            tracker.log_dict(report.to_dict(), f"idcg/{split}/hist_at_{k}.json")
        if scored.exposure is not None:
            tracker.log_dict(scored.exposure.to_dict(), "data/exposure.json")
        if scored.propensity is not None:
            tracker.log_dict(scored.propensity.to_dict(), "data/propensity.json")
            tracker.log_dict(position_bias_of(spec, scored), "data/position_bias.json")
        tracker.log_dict(importance, "feature_importance.json")
        tracker.log_dict(shipped.params, f"model_text/{result.library}_params.json")
        tracker.log_text(summary_md, "report/summary.md")
        for split, table in evaluation.tables.items():  # the UI shows these as tables; Parquet it cannot
            if len(table) <= UI_TABLE_MAX_QUERIES:
                tracker.log_table(table, f"per_query/{split}.json")
        if scored.label_histograms:
            tracker.log_dict({"sources": scored.label_sources, "histograms": scored.label_histograms}, "labels/histogram.json")
            tracker.log_text(label_histogram_markdown(scored.label_histograms, scored.label_sources), "labels/histogram.md")
        with tempfile.TemporaryDirectory() as tmp:
            for split, table in evaluation.tables.items():
                path = Path(tmp) / f"{split}.parquet"
                table.to_parquet(path, index=False)
                tracker.log_file(path, "per_query")
            model_path = Path(tmp) / MODEL_FILES[result.library]
            shipped.booster.save_model(str(model_path))
            tracker.log_file(model_path, "model_text")
        figures.log_to(tracker)  # drawn by the worker meanwhile


def _add_figures(
    figures: RunFigures,
    spec: ExperimentSpec,
    evaluation: Evaluation,
    scored: Scored,
    names: Sequence[str],
    importance: dict[str, dict[str, float]],
    name: str,
) -> None:
    """The run's figures: IDCG@k histograms per split, exposure (with a click log), nDCG by list
    length, feature importance (gain)."""
    for (split, k), report in evaluation.reports.items():
        figures.add(f"idcg/{split}/hist_at_{k}.png", plot_idcg_histogram, report, title=f"{name}\n{split}: IDCG@{k} per query")
    if scored.exposure is not None:
        figures.add(
            "data/exposure.png", plot_exposure, scored.exposure,
            title=f"{name}\nexposure by position (training log)", eval_k=max(spec.ks),
        )  # fmt: skip
    if scored.propensity is not None:
        figures.add(
            "data/propensity.png", plot_propensity, scored.propensity,
            title=f"{name}\nexamination propensity by position ({scored.propensity.method})", eval_k=max(spec.ks),
        )  # fmt: skip
        figures.add(
            "data/position_bias.png", plot_position_bias, position_bias_of(spec, scored),
            title=f"{name}\nposition bias: learned, propensities in use, truth",
        )  # fmt: skip
    figures.add(
        "report/ndcg_by_stratum.png", plot_ndcg_by_stratum, evaluation.summaries,
        ks=list(spec.ks), strata=spec.strata, title=f"{name}\nnDCG by list length",
    )  # fmt: skip
    gain = np.asarray(list(importance["gain"].values()), dtype=np.float64)
    figures.add("feature_importance.png", plot_feature_importance, gain, list(names), title=f"{name}\nfeature importance (gain)")


def position_bias_of(spec: ExperimentSpec, scored: Scored) -> dict[str, Any]:
    """``data/position_bias.json`` of a click-log run (:mod:`ltr.metrics.clicks.position_bias`):
    the curve its training learned (or why none), its propensities, the truth of a synthetic log."""
    assert scored.propensity is not None
    model = spec.config.model
    learned = scored.result.position_bias
    note = ""
    if bool(getattr(model, "position_bias", False)):
        training = "LightGBM lambdarank with position_bias=true (unbiased lambdarank)"
        if learned is None:
            note = "LightGBM logged no position bias factors"
    elif bool(getattr(model, "lambdarank_unbiased", False)):
        training = "XGBoost with lambdarank_unbiased=true"
        if learned is None:
            note = "XGBoost's config holds no ti+"
    else:
        training = f"{scored.result.library}, no position-bias treatment"
        note = "this training learns no position bias (model.position_bias=true or model=xgboost model.lambdarank_unbiased=true do)"
    return position_bias_report(
        scored.propensity, learned, training=training, truth=scored.true_examination, note=note
    )


def model_metadata(spec: ExperimentSpec, shipped: ShippedModel, name: str) -> dict[str, Any]:
    """The ``metadata`` of the run's MLflow model (its MLmodel file): what its scores are and the
    ranking step the run applied after them (``ltr predict`` applies it; the pyfunc does not)."""
    rerank = spec.config.rerank
    reranked = str(rerank.kind) != "none"
    return {
        "ltr.run_name": name,
        "ltr.best_iteration": shipped.best_iteration,
        "ltr.scores": "the model's scores at the best round (the run's order before any re-ranking)",
        "ltr.rerank": OmegaConf.to_container(OmegaConf.structured(rerank), enum_to_str=True) if reranked else "none",
        "ltr.ranking": (
            "the run re-ranked each list after these scores (ltr.rerank); ltr predict applies it"
            if reranked else "the run's order is these scores, descending"
        ),
    }


def lightgbm_params_logged(params: dict[str, Any], *, library: str = "lightgbm") -> dict[str, str]:
    """The library's resolved parameters (the dict given to ``lgb.train`` / every machine of
    ``trainer=dask``, or to XGBoost / CatBoost) as run params ``<library>.<name>``; the exact dict
    is ``model_text/<library>_params.json``."""
    return {f"{library}.{key}": str(value) for key, value in sorted(params.items()) if value is not None}


def shipped_model(result: TrainResult) -> ShippedModel:
    """The model the run ships: LightGBM's booster cut at the best round
    (:func:`ltr.training.artifact.ship_model`); XGBoost's and CatBoost's are cut by their trainer."""
    if result.library == "lightgbm":
        return ship_model(result.booster, result.best_iteration, result.params)
    return ShippedModel(result.booster, result.best_iteration, dict(result.params))
