"""A sweep's trade-offs, read from its finished children: the diversity front and online vs offline.

On the split and cut-off of the sweep's objective (``valid/ndcg_at_10``: split ``valid``,
``K = 10``):

- **Front** of a sweep with two objectives (``optimized_metric`` a list of two keys, each in its
  ``sweep.directions``; an Optuna multi-objective search, or a grid): the first key against the
  second, over every finished child that logs both; else, for children that log
  ``{split}/ild_at_K`` (i.e. that re-rank): nDCG@K against ILD@K
  (:func:`ltr.sweeper.tradeoffs.pareto_front`, one implementation for grids and searches; a
  minimised key is negated for it). Every child gets the tag ``ltr.pareto``
  (``true`` / ``false``); the parent logs ``sweep/pareto/n_front``, the figure
  ``figures/pareto_front.png`` and its data ``report/pareto_front.json``.
- **Tail front** (children that re-rank with ``rerank=uncertainty`` and log ``{split}/tail_at_K``):
  nDCG@K against the long tail's share of the top-K exposure, the same way; the parent logs
  ``sweep/tail_front/n_front``, ``figures/tail_front.png`` and ``report/tail_front.json``.
- **Online vs offline** (children that log ``{split}/online/ctr``, i.e. click data): the
  least-squares line of simulated CTR on nDCG@K (:func:`ltr.sweeper.tradeoffs.fit_online`);
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
from ltr.metrics.measures import Measure
from ltr.sweeper.tradeoffs import fit_online, front_figure, online_figure, pareto_front
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
    if len(spec.objectives) == 2:
        x_key, y_key = spec.objectives
        both = [r for r in children if x_key in r.data.metrics and y_key in r.data.metrics]
        if len(both) >= 2:
            sx, sy = (1.0 if d == "maximize" else -1.0 for d in spec.directions)
            sections.append(_front(tracker, parent, both, x_key, y_key, names=(x_key, y_key), scope="", signs=(sx, sy)))
    elif len(diverse) >= 2:
        sections.append(_front(tracker, parent, diverse, ndcg_key, f"{split}/ild_at_{k}", names=(f"nDCG@{k}", f"ILD@{k}"),
                               scope=split, what=f"nDCG@{k} vs intra-list diversity@{k}"))  # fmt: skip
    tail_key = f"{split}/tail_at_{k}"
    raised = [r for r in children if ndcg_key in r.data.metrics and tail_key in r.data.metrics
              and r.data.params.get("rerank.kind") == "uncertainty"]  # fmt: skip
    if len(raised) >= 2:
        sections.append(_front(tracker, parent, raised, ndcg_key, tail_key, names=(f"nDCG@{k}", f"tail exposure@{k}"),
                               scope=split, what=f"nDCG@{k} vs the long tail's share of the top-{k} exposure",
                               stem=TAIL))  # fmt: skip
    online = [r for r in children if ndcg_key in r.data.metrics and f"{split}/online/ctr" in r.data.metrics]
    if len(online) >= 2:
        sections.append(_online(tracker, parent, online, ndcg_key, split, k))
    return "\n\n".join(sections)


def _name(run: Any) -> str:
    return str(run.data.tags.get("mlflow.runName", run.info.run_id))


#: The stem of a front's metric ``sweep/<stem>/n_front``: the objectives' or diversity front
#: (figure ``figures/pareto_front.png``, report ``report/pareto_front.json``) and the long tail's
#: (``figures/tail_front.png``, ``report/tail_front.json``).
PARETO = "pareto"
TAIL = "tail_front"


def _front(
    tracker: Any, parent: str, runs: list[Any], x_key: str, y_key: str, *, names: tuple[str, str], scope: str,
    what: str | None = None, signs: tuple[float, float] = (1.0, 1.0), stem: str = PARETO,
) -> str:  # fmt: skip
    """Mark the front of ``runs`` on ``x_key`` against ``y_key`` (``signs``: +1 maximised, -1
    minimised) and log it on the parent; returns its section. ``names``: the two measures as
    shown, ``scope``: the split they are on ("" when the names say it), ``what``: the figure's
    title (default ``"<x> vs <y>"``), ``stem``: :data:`PARETO` or :data:`TAIL`."""
    runs = sorted(runs, key=lambda r: signs[0] * r.data.metrics[x_key], reverse=True)
    x = np.array([r.data.metrics[x_key] for r in runs])
    y = np.array([r.data.metrics[y_key] for r in runs])
    on_front = pareto_front(signs[0] * x, signs[1] * y)
    x_name, y_name = names
    in_scope = f" ({scope})" if scope else ""
    run_names = [_name(r) for r in runs]
    for run, front in zip(runs, on_front, strict=True):
        tracker.client.set_tag(run.info.run_id, "ltr.pareto", "true" if front else "false")
    figure_path, report_path = ("figures/pareto_front.png", "report/pareto_front.json") if stem == PARETO else (
        f"figures/{stem}.png", f"report/{stem}.json")
    tracker.log_metrics({f"sweep/{stem}/n_front": float(on_front.sum())})
    tracker.set_tags({"ltr.pareto_runs": ",".join(r.info.run_id for r, f in zip(runs, on_front, strict=True) if f)})
    figure = front_figure(
        x, y, on_front, run_names, x_label=f"{x_name}{in_scope}", y_label=f"{y_name}{in_scope}",
        title=f"{parent}: {what or f'{x_name} vs {y_name}'}, {len(runs)} runs",
    )  # fmt: skip
    tracker.log_figure(figure, figure_path)
    tracker.log_dict(
        [{"run_id": r.info.run_id, "name": n, x_key: float(a), y_key: float(b), "on_front": bool(f)}
         for r, n, a, b, f in zip(runs, run_names, x, y, on_front, strict=True)],
        report_path,
    )  # fmt: skip
    rows = [
        f"| {run_link(n, tracker.experiment_id, r.info.run_id)} | {a:.4f} | {b:.4f} | {'yes' if f else ''} |"
        for r, n, a, b, f in zip(runs, run_names, x, y, on_front, strict=True)
    ]
    return "\n".join([
        f"### {x_name} vs {y_name}{in_scope}: {int(on_front.sum())} of {len(runs)} runs on the front",
        "", "No run on the front is beaten on both by another run (tag `ltr.pareto`, figure "
        f"`{figure_path}`).", "",
        f"| run | {x_name} | {y_name} | on the front |", "|---|---:|---:|---|", *rows,
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
        **{f"sweep/online/{key}": value for key, value in (
            ("slope_low", fit.slope_low), ("slope_high", fit.slope_high), ("p_value", fit.p_value),
        ) if np.isfinite(value)},
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
         "slope_se": fit.se, "slope_low": fit.slope_low, "slope_high": fit.slope_high, "p_value": fit.p_value,
         "runs": [{"run_id": r.info.run_id, "name": n, x_key: float(a), "ctr": float(b)}
                  for r, n, a, b in zip(runs, names, x, y, strict=True)]},
        "report/online_vs_ndcg.json",
    )  # fmt: skip
    return f"{heading}\n\n**{sentence}** (least squares across the runs; figure `figures/online_vs_ndcg.png`)."
