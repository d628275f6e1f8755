"""From the per-query tables of a trained model to everything a run reports, before any logging.

Per evaluated split: the summary (:func:`ltr.metrics.summarize`: every measure overall and per
list-length stratum, with counts), the composites (``eval.composite``), the extra summaries of
the source (click estimates), the IDCG reports per cut-off (of the labels the run judges:
``data.eval_labels`` on click data), the label histograms of click data's label sources, LightGBM's own values at the best
round and the decomposition of the gap to them (of an XGBoost or CatBoost run, the library's own
values and its gap too: :mod:`ltr.metrics.reports.gap`). The flat metric keys are the MLflow keys
(``valid/ndcg_at_10``, ``valid/ndcg_at_10/len_1-10``, ``valid/lightgbm/ndcg_at_10``, ...).

:func:`our_curves` are the per-round curves of ours a run logs (``iter/`` + their key): each
ends at the best round on the metric of its key. Where nothing else computes that metric (our
nDCG against a click log's training labels, ``valid/train_labels/ndcg_at_10``), the curve's
value at the best round is the metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ltr.experiment.sources import Scored
from ltr.experiment.spec import ExperimentSpec
from ltr.metrics import IdcgReport, idcg_report, summarize
from ltr.metrics.composite import composite_columns, summarize_composites
from ltr.metrics.measures import Measure
from ltr.metrics.reports.idcg_report import low_idcg_note
from ltr.metrics.reports.k_check import k_notes
from ltr.metrics.summary import is_metric_column
from ltr.training.round_metric import PRE_RERANK_PREFIX

#: A click log's propensities are logged as metrics for positions 1..max(this, eval.k).
PROPENSITY_POSITIONS = 10


@dataclass
class Evaluation:
    """Summaries per split (keys without the split prefix), tables, IDCG reports, flat metrics."""

    summaries: dict[str, dict[str, float]]
    tables: dict[str, pd.DataFrame]
    reports: dict[tuple[str, int], IdcgReport]
    metrics: dict[str, float]
    gap_notes: list[str]
    #: lines on what the numbers mean for this data (exposure against eval.k, low-IDCG queries)
    advice: list[str] = field(default_factory=list)


def evaluate(spec: ExperimentSpec, scored: Scored) -> Evaluation:
    """Summaries, composites, IDCG reports and flat metric keys of every evaluated split."""
    summaries: dict[str, dict[str, float]] = {}
    tables: dict[str, pd.DataFrame] = {}
    reports: dict[tuple[str, int], IdcgReport] = {}
    metrics: dict[str, float] = {}
    notes: list[str] = []
    advice: list[str] = []
    for split in spec.config.eval.splits:
        table, summary = split_summary(spec, scored.tables[split])
        summary |= scored.extra_summaries.get(split, {})
        tables[split], summaries[split] = table, summary
        metrics.update({f"{split}/{key}": value for key, value in summary.items()})
        if split in scored.pre_rerank:  # the model's own order, before the re-ranking step
            before = summarize(scored.pre_rerank[split], strata=spec.strata)
            metrics.update({f"{split}/pre_rerank/{key}": v for key, v in before.items() if is_metric_column(key.split("/")[0])})
        for k in spec.ks:
            report = idcg_report(table, k, bins=int(spec.config.eval.idcg_bins))
            reports[(split, k)] = report
            metrics[f"{split}/idcg_at_{k}/share_zero"] = report.share_zero
            metrics[f"{split}/idcg_at_{k}/share_le_one"] = report.share_le_one
            metrics[f"{split}/share_shorter_than_{k}"] = report.share_shorter_than_k
        note = low_idcg_note(table, max(spec.ks), split=split)
        if note:
            advice.append(note)
        rerank = spec.config.rerank
        depth = None if str(rerank.kind) == "none" or rerank.depth is None else int(rerank.depth)
        advice += k_notes(table["list_len"].to_numpy(), list(spec.ks), rerank_depth=depth, split=split)
        for name, value in scored.lightgbm_values.get(split, {}).items():
            metrics[f"{split}/lightgbm/{lightgbm_key(name)}"] = value
        for name, value in scored.library_values.get(split, {}).items():  # XGBoost's, CatBoost's own
            metrics[f"{split}/{scored.library}/{lightgbm_key(name)}"] = value
        for gap in (scored.gaps[split], *([scored.library_gaps[split]] if split in scored.library_gaps else [])):
            metrics |= gap.metrics(split)
            notes.append(gap.explain(split))
    computed = set(metrics)
    metrics |= {key: values[-1] for key, values in our_curves(scored).items() if key not in computed and values}
    for key, by_metric in scored.lightgbm_values.items():
        if "/" in key:  # {split}/lightgbm_train_labels: LightGBM's values on the training labels
            metrics.update({f"{key}/{lightgbm_key(name)}": value for name, value in by_metric.items()})
    metrics |= label_metrics(scored.label_histograms, scored.label_sources)
    if scored.exposure is not None:  # a click log: where its exposure ends, and K against it
        metrics |= {f"data/{key}": value for key, value in scored.exposure.metrics().items()}
        line = scored.exposure.advice(max(spec.ks))
        if line:
            advice.append(line)
    if scored.propensity is not None:  # a click log: the propensities in use, with their interval
        metrics |= scored.propensity.metrics(max(PROPENSITY_POSITIONS, max(spec.ks)))
    result = scored.result
    metrics |= {
        "best_iteration": float(result.best_iteration),
        "n_rounds": float(result.n_rounds),
        "train_seconds": result.seconds,
    }
    return Evaluation(summaries, tables, reports, metrics, notes, advice)


def split_summary(spec: ExperimentSpec, table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """A split's per-query table with the composite columns (``eval.composite``) and its summary:
    every measure overall and per stratum, with counts (keys without the split prefix)."""
    summary = summarize(table, strata=spec.strata)
    if spec.composites:
        extra = composite_columns(table, spec.composites)
        table = pd.concat([table, extra], axis=1)
        summary |= summarize_composites(table, list(extra.columns), strata=spec.strata)
    return table, summary


def lightgbm_key(name: str) -> str:
    """LightGBM's metric name as a measure key: ``ndcg@10`` -> ``ndcg_at_10``."""
    measure, _, k = name.partition("@")
    return Measure(measure, int(k)).key if k.isdigit() and measure == "ndcg" else name.replace("@", "_at_")


def our_curves(scored: Scored) -> dict[str, list[float]]:
    """Our per-round curves, rounds 1 to the best, by metric key (``valid/ndcg_at_10``; logged
    as ``iter/valid/ndcg_at_10``).

    A run that re-ranks has no per-round curve of its final order (the re-ranker is not run
    every round): the model's own order is drawn as ``{split}/pre_rerank/ndcg_at_k`` (ending
    on the metric of that name), and the curve under the final order's name is left out.
    """
    best = scored.result.best_iteration
    return {
        f"{key}/{name}": list(values[:best])
        for key, by_name in scored.curves.items()
        for name, values in by_name.items()
        if not scored.pre_rerank or name.startswith(PRE_RERANK_PREFIX)
    }


def label_metrics(histograms: dict[str, dict[str, list[int]]], sources: dict[str, str]) -> dict[str, float]:
    """``labels/{source}/{split}/grade_{g}``: rows per grade, for the label sources the run uses
    (its train, valid and eval labels; every source is in the ``labels/histogram.json`` artifact).

    Examples
    --------
    >>> label_metrics({"clicks": {"train": [5, 2]}, "relevance": {"train": [6, 1]}}, {"train": "clicks"})
    {'labels/clicks/train/grade_0': 5.0, 'labels/clicks/train/grade_1': 2.0}
    """
    used = dict.fromkeys(sources.values())
    return {
        f"labels/{source}/{split}/grade_{g}": float(n)
        for source in used if source in histograms
        for split, counts in histograms[source].items()
        for g, n in enumerate(counts)
    }
