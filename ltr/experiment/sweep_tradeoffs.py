"""A sweep's trade-offs, read from its finished children: the diversity front and online vs offline.

On the split and cut-off of the sweep's objective (``valid/ndcg_at_10``: split ``valid``,
``K = 10``):

- **Front** (children that log ``{split}/ild_at_K``, i.e. that re-rank): nDCG@K against ILD@K
  (:func:`ltr.experiment.tradeoffs.pareto_front`). Every child gets the tag ``ltr.pareto``
  (``true`` / ``false``); the parent logs ``sweep/pareto/n_front``, the figure
  ``figures/pareto_front.png`` and its data ``report/pareto_front.json``.
- **Tail front** (children that re-rank with ``rerank=uncertainty`` and log ``{split}/tail_at_K``):
  nDCG@K against the long tail's share of the top-K exposure, the same way; the parent logs
  ``sweep/tail_front/n_front``, ``figures/tail_front.png`` and ``report/tail_front.json``.
- **Online vs offline** (children that log ``{split}/online/ctr``, i.e. click data): the
  least-squares line of simulated CTR on nDCG@K (:func:`ltr.experiment.tradeoffs.fit_online`);
  the parent logs ``sweep/online/slope``, ``intercept``, ``r2``, ``gain_per_tenth_ndcg`` and
  ``relative_gain_per_tenth_ndcg``, the figure ``figures/online_vs_ndcg.png`` and its data
  ``report/online_vs_ndcg.json``. A sweep whose runs all have the same nDCG gets no line, and
  its description says why.

Each part adds a section to the parent's description (returned as Markdown).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ltr.experiment.spec import ExperimentSpec
from ltr.experiment.tradeoffs import fit_online, front_figure, online_figure, pareto_front
from ltr.metrics.measures import Measure
from ltr.tracking.sweep_summary import run_link

log = logging.getLogger(__name__)


def summarise_tradeoffs(tracker: Any, spec: ExperimentSpec, children: list[Any]) -> str:
    """Log the front and the online fit of ``children`` (finished MLflow runs) on ``tracker``'s
    current run (the sweep's parent); returns the description's sections ("" when neither applies)."""
    split = spec.optimized_metric.split("/")[0]
    k = max(spec.ks)
    parent = str(tracker.client.get_run(tracker.run_id).data.tags.get("mlflow.runName", "sweep"))
    ndcg_key = f"{split}/{Measure('ndcg', k).key}"
    sections = []
    diverse = [r for r in children if ndcg_key in r.data.metrics and f"{split}/ild_at_{k}" in r.data.metrics]
    if len(diverse) >= 2:
        sections.append(_front(tracker, parent, diverse, ndcg_key, f"{split}/ild_at_{k}", split, k))
    tail_key = f"{split}/tail_at_{k}"
    raised = [r for r in children if ndcg_key in r.data.metrics and tail_key in r.data.metrics
              and r.data.params.get("rerank.kind") == "uncertainty"]  # fmt: skip
    if len(raised) >= 2:
        sections.append(_front(tracker, parent, raised, ndcg_key, tail_key, split, k, what=TAIL))
    online = [r for r in children if ndcg_key in r.data.metrics and f"{split}/online/ctr" in r.data.metrics]
    if len(online) >= 2:
        sections.append(_online(tracker, parent, online, ndcg_key, split, k))
    return "\n\n".join(sections)


def _name(run: Any) -> str:
    return str(run.data.tags.get("mlflow.runName", run.info.run_id))


#: What a front plots on y: its display name, its title, and the stem of its metric, figure and report.
DIVERSITY = ("ILD@{k}", "intra-list diversity@{k}", "pareto")
TAIL = ("tail exposure@{k}", "the long tail's share of the top-{k} exposure", "tail_front")


def _front(
    tracker: Any, parent: str, runs: list[Any], x_key: str, y_key: str, split: str, k: int,
    what: tuple[str, str, str] = DIVERSITY,
) -> str:  # fmt: skip
    runs = sorted(runs, key=lambda r: r.data.metrics[x_key], reverse=True)
    x = np.array([r.data.metrics[x_key] for r in runs])
    y = np.array([r.data.metrics[y_key] for r in runs])
    on_front = pareto_front(x, y)
    names = [_name(r) for r in runs]
    for run, front in zip(runs, on_front, strict=True):
        tracker.client.set_tag(run.info.run_id, "ltr.pareto", "true" if front else "false")
    y_name, y_title, stem = what[0].format(k=k), what[1].format(k=k), what[2]
    figure_path, report_path = ("figures/pareto_front.png", "report/pareto_front.json") if stem == "pareto" else (
        f"figures/{stem}.png", f"report/{stem}.json")
    tracker.log_metrics({f"sweep/{stem}/n_front": float(on_front.sum())})
    tracker.set_tags({"ltr.pareto_runs": ",".join(r.info.run_id for r, f in zip(runs, on_front, strict=True) if f)})
    figure = front_figure(
        x, y, on_front, names, x_label=f"nDCG@{k} ({split})", y_label=f"{y_name} ({split})",
        title=f"{parent}: nDCG@{k} vs {y_title}, {len(runs)} runs",
    )  # fmt: skip
    tracker.log_figure(figure, figure_path)
    tracker.log_dict(
        [{"run_id": r.info.run_id, "name": n, x_key: float(a), y_key: float(b), "on_front": bool(f)}
         for r, n, a, b, f in zip(runs, names, x, y, on_front, strict=True)],
        report_path,
    )  # fmt: skip
    rows = [
        f"| {run_link(n, tracker.experiment_id, r.info.run_id)} | {a:.4f} | {b:.4f} | {'yes' if f else ''} |"
        for r, n, a, b, f in zip(runs, names, x, y, on_front, strict=True)
    ]
    return "\n".join([
        f"### nDCG@{k} vs {y_name} ({split}): {int(on_front.sum())} of {len(runs)} runs on the front",
        "", "No run on the front is beaten on both by another run (tag `ltr.pareto`, figure "
        f"`{figure_path}`).", "",
        f"| run | nDCG@{k} | {y_name} | on the front |", "|---|---:|---:|---|", *rows,
    ])  # fmt: skip


def _online(tracker: Any, parent: str, runs: list[Any], x_key: str, split: str, k: int) -> str:
    runs = sorted(runs, key=lambda r: r.data.metrics[x_key])
    m = [r.data.metrics for r in runs]
    x = np.array([v[x_key] for v in m])
    y = np.array([v[f"{split}/online/ctr"] for v in m])
    lo = np.array([v.get(f"{split}/online/ctr_ci_low", np.nan) for v in m])
    hi = np.array([v.get(f"{split}/online/ctr_ci_high", np.nan) for v in m])
    heading = f"### Offline nDCG@{k} vs simulated online CTR ({split}, {len(runs)} runs)"
    try:
        fit = fit_online(x, y)
    except ValueError as exc:
        log.info("no online-vs-offline line: %s", exc)
        return f"{heading}\n\nNo line: {exc}."
    sentence = fit.describe(x_name=f"nDCG@{k}", y_name="CTR")
    tracker.log_metrics({
        "sweep/online/slope": fit.slope,
        "sweep/online/intercept": fit.intercept,
        "sweep/online/r2": fit.r2,
        "sweep/online/gain_per_tenth_ndcg": fit.gain_per_tenth,
        "sweep/online/relative_gain_per_tenth_ndcg": fit.relative_gain_per_tenth,
    })  # fmt: skip
    y_err = np.vstack([y - lo, hi - y]) if np.isfinite(lo).all() and np.isfinite(hi).all() else None
    names = [_name(r) for r in runs]
    figure = online_figure(
        x, y, fit, names, title=f"{parent}: simulated CTR vs nDCG@{k}", y_err=y_err,
        x_label=f"nDCG@{k} ({split})", y_label=f"simulated CTR ({split}, 95 % interval)", x_name=f"nDCG@{k}",
    )  # fmt: skip
    tracker.log_figure(figure, "figures/online_vs_ndcg.png")
    tracker.log_dict(
        {"slope": fit.slope, "intercept": fit.intercept, "r2": fit.r2, "n": fit.n, "sentence": sentence,
         "runs": [{"run_id": r.info.run_id, "name": n, x_key: float(a), "ctr": float(b)}
                  for r, n, a, b in zip(runs, names, x, y, strict=True)]},
        "report/online_vs_ndcg.json",
    )  # fmt: skip
    return f"{heading}\n\n**{sentence}** (least squares across the runs; figure `figures/online_vs_ndcg.png`)."
