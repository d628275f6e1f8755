"""``run(cfg)``: load -> split -> fit -> predict -> evaluate -> track, as one plain function.

Hydra only composes the config (``ltr.app``); everything here is testable with a composed config.
Data is read and validated before a tracking run exists, so bad input never leaves a run behind;
once a run exists it always ends FINISHED, FAILED or KILLED.

Click data (``data=synthetic_clicks``): the trainer sees the training view (train / valid labels
= ``data.train_labels``), every evaluation uses the true grades, and each evaluated split also
gets the naive and IPS click estimates (``{split}/clicks/...``, ``{split}/clicks_ips/...``,
``{split}/clicks_truth/...``). Composite metrics (``eval.composite``) are added to every table.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from omegaconf import DictConfig, OmegaConf

from ltr.data.fingerprint import fingerprint
from ltr.data.load import ClickSplits, load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.metrics import (
    IdcgReport,
    MetricConventions,
    Strata,
    idcg_report,
    per_query_table,
    summarize,
)
from ltr.tracking import RunStatus, Tracker, make_tracker

if TYPE_CHECKING:
    from ltr.gap import LightgbmGap

log = logging.getLogger(__name__)


class Terminated(BaseException):
    """Raised by the SIGTERM handler so the run ends KILLED, like Ctrl-C."""


@dataclass
class RunOutcome:
    """What one job produced: summaries per split (keys without the split prefix) and the run id."""

    summaries: dict[str, dict[str, float]]
    tables: dict[str, pd.DataFrame]
    metrics: dict[str, float]
    run_id: str | None
    best_iteration: int
    objective_value: float
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Evaluation:
    """Everything computed from one trained model, before anything is logged."""

    summaries: dict[str, dict[str, float]]
    tables: dict[str, pd.DataFrame]
    reports: dict[tuple[str, int], IdcgReport]
    metrics: dict[str, float]
    gap_notes: list[str]


def conventions_from(eval_cfg: Any) -> MetricConventions:
    """The metric conventions an ``eval`` config asks for."""
    return MetricConventions(
        gain=eval_cfg.gain,
        label_gain=None if eval_cfg.label_gain is None else tuple(float(g) for g in eval_cfg.label_gain),
        ties=eval_cfg.ties,
        zero_idcg=eval_cfg.zero_idcg,
        rel_threshold=int(eval_cfg.rel_threshold),
    )


def flatten(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to ``{"model.num_leaves": 31, ...}``; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def run_name_from(overrides: Sequence[str], model_name: str) -> str:
    """A run name that says what differs: the model and the overrides that are not tracking's."""
    shown = [o for o in overrides if not o.lstrip("+~").startswith(("tracking", "hydra"))]
    return model_name if not shown else f"{model_name} " + " ".join(shown)


def run(
    cfg: DictConfig,
    *,
    overrides: Sequence[str] = (),
    tracker: Tracker | None = None,
    parent_run_id: str | None = None,
    extra_tags: dict[str, str] | None = None,
) -> RunOutcome:
    """Run one experiment described by a composed ``ltr train`` config.

    Returns the summaries and the value a sweeper maximises (valid NDCG@10 by our conventions).
    """
    t0 = time.perf_counter()
    seed = int(cfg.seed)
    ks = [int(k) for k in cfg.eval.k]
    strata = Strata(tuple(int(e) for e in cfg.eval.strata))
    conventions = conventions_from(cfg.eval)

    from ltr.metrics.composite import check_composites
    from ltr.training import check_model_config, check_position_training

    check_model_config(cfg.model)
    check_composites(_composites(cfg))
    if bool(getattr(cfg.model, "position_bias", False)) and cfg.trainer.kind != "local":
        from ltr.errors import LtrUserError

        raise LtrUserError("model.position_bias=true trains through lgb.train: use trainer=local")
    clicks: ClickSplits | None = None
    splits: Splits | None
    eval_splits: Splits | None
    if cfg.data.kind == "parquet_partitions":
        # Read by the Dask workers (ltr.dask_pipeline); the client reads only Parquet footers here.
        from ltr.dask_pipeline import partitions_fingerprint

        splits = eval_splits = None
        data_fingerprint = partitions_fingerprint(cfg.data, cfg.trainer)
        timings = {"load": time.perf_counter() - t0}
    else:
        if cfg.data.kind == "synthetic_clicks":
            clicks = load_click_splits(cfg.data, cfg.split, seed=seed)
            splits = clicks.training_view(str(cfg.data.train_labels), str(cfg.data.valid_labels))
            eval_splits = clicks.relevance
        else:
            splits = eval_splits = load_splits(cfg.data, cfg.split, seed=seed)
        check_position_training(cfg.model, splits)
        timings = {"load": time.perf_counter() - t0}
        for name, part in splits.items():
            log.info("%s: %d queries, %d rows, %d features", name, part.n_queries, part.n_rows, part.n_features)
        data_fingerprint = fingerprint(splits, strata=strata)

    if tracker is None:
        tracker = make_tracker(cfg.tracking.enabled, cfg.tracking.uri, cfg.tracking.experiment)
    run_name = cfg.tracking.run_name or run_name_from(overrides, str(cfg.model.name))
    tags = _tags(cfg, str(data_fingerprint["sha256"]), overrides, conventions, strata) | (extra_tags or {})
    run_id = tracker.start_run(run_name, tags, parent_run_id=parent_run_id) or None
    try:
        outcome = _fit_evaluate_log(
            cfg, overrides, splits, data_fingerprint, tracker, ks=ks, strata=strata,
            conventions=conventions, eval_splits=eval_splits, clicks=clicks,
        )
    except (KeyboardInterrupt, Terminated) as exc:
        tracker.end_run(RunStatus.KILLED, error=f"{type(exc).__name__}: interrupted")
        raise
    except BaseException as exc:
        tracker.end_run(RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    tracker.end_run(RunStatus.FINISHED)
    outcome.run_id = run_id
    outcome.timings = timings | outcome.timings
    outcome.timings["total"] = time.perf_counter() - t0
    return outcome


def _tags(
    cfg: DictConfig, data_sha: str, overrides: Sequence[str], conventions: MetricConventions, strata: Strata
) -> dict[str, str]:
    from ltr.gitinfo import git_state

    commit, dirty = git_state(Path(__file__).resolve().parent)
    label_gain = "" if conventions.label_gain is None else ",".join(map(str, conventions.label_gain))
    return {
        "ltr.objective": str(cfg.model.objective),
        "ltr.model": str(cfg.model.name),
        "ltr.data.name": str(cfg.data.name),
        "ltr.data.fingerprint": data_sha,
        "ltr.git.commit": commit,
        "ltr.git.dirty": str(dirty).lower(),
        "ltr.overrides": " ".join(overrides),
        "ltr.eval.gain": label_gain or conventions.gain,
        "ltr.eval.ties": conventions.ties,
        "ltr.eval.zero_idcg": conventions.zero_idcg,
        "ltr.eval.rel_threshold": str(conventions.rel_threshold),
        "ltr.eval.strata": ",".join(strata.labels),
        "ltr.eval.k": ",".join(str(k) for k in cfg.eval.k),
        "ltr.seed": str(cfg.seed),
    }


def evaluate_model(
    cfg: DictConfig,
    splits: Splits,
    scores_by_split: dict[str, NDArray[np.float64]],
    lightgbm_values: dict[str, dict[str, float]],
    *,
    ks: list[int],
    strata: Strata,
    conventions: MetricConventions,
    clicks: ClickSplits | None = None,
) -> Evaluation:
    """Per-query tables, summaries, IDCG reports and flat metric keys for every evaluated split.

    ``lightgbm_values[split]["ndcg@10"]`` is LightGBM's own value at the best round; it is logged
    beside ours as ``{split}/lightgbm/ndcg_at_10`` and the difference is decomposed.
    ``eval.composite`` adds one column per composite to each table and its summary keys
    (``{split}/ndcg_blend``, ``{split}/ndcg_blend/len_1-10``, ...); the cut-offs its parts need
    are added to the table. With ``clicks`` (the click view of the same splits) the naive and
    IPS click estimates are added (:mod:`ltr.metrics.ips`).
    """
    from ltr.gap import lightgbm_gap

    table_ks = table_cutoffs(cfg, ks)
    tables: dict[str, pd.DataFrame] = {}
    gaps: dict[str, LightgbmGap] = {}
    for split in cfg.eval.splits:
        data: RankingData = getattr(splits, split)
        scores = scores_by_split[split]
        tables[split] = per_query_table(
            data.labels, scores, data.offsets, data.qids, ks=table_ks, conventions=conventions, strata=strata
        )
        gaps[split] = lightgbm_gap(data, scores, max(ks), conventions)
    click_summary: Callable[[str, pd.DataFrame], dict[str, float]] | None = None
    if clicks is not None and bool(cfg.eval.clicks.enabled):
        click_view = clicks

        def click_summary(split: str, table: pd.DataFrame) -> dict[str, float]:
            return _click_summary(
                cfg, getattr(click_view.clicks, split), scores_by_split[split], table, click_view, ks, conventions, strata
            )

    return evaluate_tables(cfg, tables, gaps, lightgbm_values, ks=ks, strata=strata, click_summary=click_summary)


def table_cutoffs(cfg: DictConfig, ks: list[int]) -> list[int]:
    """The cut-offs of the per-query tables: ``eval.k`` and those the composites need."""
    from ltr.metrics.composite import composite_ks

    return ks + [k for k in composite_ks(_composites(cfg)) if k not in ks]


def evaluate_tables(
    cfg: DictConfig,
    tables: dict[str, pd.DataFrame],
    gaps: dict[str, LightgbmGap],
    lightgbm_values: dict[str, dict[str, float]],
    *,
    ks: list[int],
    strata: Strata,
    click_summary: Callable[[str, pd.DataFrame], dict[str, float]] | None = None,
) -> Evaluation:
    """Everything :func:`evaluate_model` derives from the per-query tables (cut-offs
    :func:`table_cutoffs`) and LightGBM gaps of the evaluated splits: summaries, composites,
    IDCG reports and flat metric keys. ``click_summary(split, table)`` adds click estimates.
    """
    from ltr.metrics.composite import composite_columns, summarize_composites

    summaries: dict[str, dict[str, float]] = {}
    out_tables: dict[str, pd.DataFrame] = {}
    reports: dict[tuple[str, int], IdcgReport] = {}
    metrics: dict[str, float] = {}
    notes: list[str] = []
    composites = _composites(cfg)
    for split in cfg.eval.splits:
        table = tables[split]
        summary = summarize(table, strata=strata)
        if composites:
            extra = composite_columns(table, composites)
            table = pd.concat([table, extra], axis=1)
            summary |= summarize_composites(table, list(extra.columns), strata=strata)
        if click_summary is not None:
            summary |= click_summary(split, table)
        out_tables[split], summaries[split] = table, summary
        metrics.update({f"{split}/{key}": value for key, value in summary.items()})
        for k in ks:
            report = idcg_report(table, k, bins=int(cfg.eval.idcg_bins))
            reports[(split, k)] = report
            metrics[f"{split}/idcg_at_{k}/share_zero"] = report.share_zero
            metrics[f"{split}/idcg_at_{k}/share_le_one"] = report.share_le_one
            metrics[f"{split}/share_shorter_than_{k}"] = report.share_shorter_than_k
        for name, value in lightgbm_values.get(split, {}).items():
            metrics[f"{split}/lightgbm/{name.replace('@', '_at_')}"] = value
        gap = gaps[split]
        metrics[f"{split}/lightgbm_gap/ndcg_at_{gap.k}/zero_idcg"] = gap.from_zero_idcg
        metrics[f"{split}/lightgbm_gap/ndcg_at_{gap.k}/ties"] = gap.from_ties
        notes.append(gap.explain(split))
    return Evaluation(summaries, out_tables, reports, metrics, notes)


def _composites(cfg: DictConfig) -> dict[str, dict[str, float]]:
    composite = getattr(cfg.eval, "composite", None) or {}
    return {str(n): {str(p): float(w) for p, w in parts.items()} for n, parts in composite.items()}


def _click_summary(
    cfg: DictConfig,
    data: RankingData,
    scores: NDArray[np.float64],
    truth: pd.DataFrame,
    clicks: ClickSplits,
    ks: list[int],
    conventions: MetricConventions,
    strata: Strata,
) -> dict[str, float]:
    """Naive and IPS click NDCG of one split, and the true NDCG on the queries with clicks."""
    from ltr.metrics.ips import click_summary, click_tables, estimate_propensities, propensity_table

    click_cfg = cfg.eval.clicks
    assert data.positions is not None  # a click log always has positions
    n_positions = int(data.positions.max()) + 1
    floor = float(click_cfg.min_propensity)
    if click_cfg.propensity == "config":
        curve = clicks.examination if click_cfg.propensities is None else list(click_cfg.propensities)
        props = propensity_table(curve, n_positions, min_propensity=floor)
    elif click_cfg.propensity == "estimated":
        train = clicks.clicks.train  # estimated on the training log, applied to every split
        assert train.positions is not None
        props = estimate_propensities(
            train.labels, train.positions, n_positions=n_positions, min_propensity=floor
        )
    else:
        from ltr.errors import LtrUserError

        raise LtrUserError(f"eval.clicks.propensity={click_cfg.propensity!r} is not one of: config, estimated")
    naive, ips = click_tables(
        data.labels, data.positions, scores, data.offsets, data.qids, propensities=props,
        ks=ks, conventions=conventions, strata=strata,
    )
    return click_summary(naive, ips, truth, strata=strata)


def _fit(cfg: DictConfig, splits: Splits, ks: list[int]) -> Any:
    """Train with the configured trainer; every trainer returns a :class:`ltr.training.TrainResult`."""
    if cfg.trainer.kind == "dask":
        from ltr.training_dask import fit_dask

        return fit_dask(splits, cfg.model, cfg.fit, cfg.trainer, eval_at=ks, seed=int(cfg.seed))
    if cfg.trainer.kind != "local":
        from ltr.errors import LtrUserError

        raise LtrUserError(f"trainer.kind={cfg.trainer.kind!r} is not one of: local, dask")
    from ltr.training import fit_ranker

    return fit_ranker(splits, cfg.model, cfg.fit, eval_at=ks, seed=int(cfg.seed))


def _fit_evaluate_log(
    cfg: DictConfig,
    overrides: Sequence[str],
    splits: Splits | None,
    data_fingerprint: dict[str, Any],
    tracker: Tracker,
    *,
    ks: list[int],
    strata: Strata,
    conventions: MetricConventions,
    eval_splits: Splits | None = None,
    clicks: ClickSplits | None = None,
) -> RunOutcome:
    from ltr.report import print_table, summary_rows, to_markdown

    timings: dict[str, float] = {}
    t = time.perf_counter()
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    tracker.log_params(flatten(container))
    if splits is None:  # data=parquet_partitions: train, predict and build the tables on the workers
        from ltr.dask_pipeline import fit_partitioned_tables

        timings["log_start"] = time.perf_counter() - t
        result, tables, gaps, part_timings = fit_partitioned_tables(
            cfg, ks=ks, table_ks=table_cutoffs(cfg, ks), strata=strata, conventions=conventions
        )
        timings |= part_timings
        t = time.perf_counter()
        lightgbm_values = {
            split: {name: values[result.best_iteration - 1] for name, values in by_metric.items()}
            for split, by_metric in result.evals_result.items()
        }
        evaluation = evaluate_tables(cfg, tables, gaps, lightgbm_values, ks=ks, strata=strata)
        t -= timings.pop("evaluate_tables")  # the per-query tables, computed on the workers
    else:
        eval_splits = splits if eval_splits is None else eval_splits
        for split, part in splits.items():
            tracker.log_dataset(
                f"{cfg.data.name}/{split}", str(data_fingerprint[split]["sha256"]),
                part.features, part.labels, context=split,
            )
        timings["log_start"] = time.perf_counter() - t

        t = time.perf_counter()
        result = _fit(cfg, splits, ks)
        timings["train"] = time.perf_counter() - t

        t = time.perf_counter()
        scores = {split: result.predict(getattr(eval_splits, split).features) for split in cfg.eval.splits}
        # LightGBM's values on a split whose training labels are not the evaluation labels (clicks on
        # valid) are not comparable with ours: they are logged as {split}/lightgbm_train_labels/...
        lightgbm_values = {
            split if getattr(splits, split) is getattr(eval_splits, split) else f"{split}/lightgbm_train_labels": {
                name: values[result.best_iteration - 1] for name, values in by_metric.items()
            }
            for split, by_metric in result.evals_result.items()
        }
        evaluation = evaluate_model(
            cfg, eval_splits, scores, lightgbm_values, ks=ks, strata=strata, conventions=conventions, clicks=clicks
        )
    for key, by_metric in lightgbm_values.items():
        if "/" in key:
            evaluation.metrics.update({f"{key}/{n.replace('@', '_at_')}": v for n, v in by_metric.items()})
    metrics = evaluation.metrics | {
        "best_iteration": float(result.best_iteration),
        "n_rounds": float(result.n_rounds),
        "train_seconds": result.seconds,
    }
    timings["evaluate"] = time.perf_counter() - t

    header, rows = summary_rows(evaluation.summaries, ks=ks, strata=strata)
    title = (
        f"{cfg.model.name} on {cfg.data.name}: our nDCG "
        f"({conventions.gain} gain, ties={conventions.ties}, zero_idcg={conventions.zero_idcg})"
    )
    summary_md = (
        f"# {title}\n\n" + to_markdown(header, rows)
        + f"\nBest round {result.best_iteration} of {result.n_rounds}.\n\n## Beside LightGBM's own metric\n\n"
        + "\n\n".join(evaluation.gap_notes) + "\n"
    )

    t = time.perf_counter()
    curves = {
        f"iter/{split}/{name.replace('@', '_at_')}": values
        for split, by_metric in result.evals_result.items()
        for name, values in by_metric.items()
    }
    tracker.log_metrics(metrics)
    tracker.log_curves(curves)
    _log_artifacts(tracker, cfg, overrides, evaluation, result, data_fingerprint, summary_md, ks=ks, strata=strata)
    timings["log"] = time.perf_counter() - t

    print_table(header, rows, title=title)
    for note in evaluation.gap_notes:
        log.info(note)
    valid = evaluation.summaries.get("valid", {})
    objective_value = valid.get("ndcg_at_10", float("nan"))
    return RunOutcome(
        evaluation.summaries, evaluation.tables, metrics, None, result.best_iteration, objective_value, timings
    )


def _log_artifacts(
    tracker: Tracker,
    cfg: DictConfig,
    overrides: Sequence[str],
    evaluation: Evaluation,
    result: Any,
    data_fingerprint: dict[str, Any],
    summary_md: str,
    *,
    ks: list[int],
    strata: Strata,
) -> None:
    if not tracker.enabled:
        return
    from ltr.charts import plot_feature_importance, plot_ndcg_by_stratum
    from ltr.metrics.plots import plot_idcg_histogram

    tracker.log_text(OmegaConf.to_yaml(cfg), "config/config.yaml")
    tracker.log_text("".join(f"- {o}\n" for o in overrides) or "[]\n", "config/overrides.yaml")
    tracker.log_dict(data_fingerprint, "data/fingerprint.json")
    for (split, k), report in evaluation.reports.items():
        tracker.log_figure(plot_idcg_histogram(report, title=f"{split}: IDCG@{k} per query"), f"idcg/{split}/hist_at_{k}.png")
        tracker.log_dict(report.to_dict(), f"idcg/{split}/hist_at_{k}.json")
    tracker.log_figure(
        plot_ndcg_by_stratum(evaluation.summaries, ks=ks, strata=strata, title="nDCG by list length"),
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
    if cfg.tracking.log_model:
        tracker.log_model(result.booster, names)
