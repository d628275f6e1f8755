"""`compare_runs`: per metric, per stratum and overall, every run against a baseline.

For each metric, each group of queries (``all``, then every list-length stratum) and each run,
a `ComparisonRow` holds the run's mean with its bootstrap CI; for every run but the baseline
also the paired delta against the baseline with its bootstrap CI, the paired t-test and
sign-flip p-values, their Holm-adjusted values, and wins / ties / losses (conventions in
:mod:`ltr.compare.stats`). Holm's family is every non-baseline row of the comparison (all
metrics, groups and runs shown), once for the t-test and once for the sign-flip test.

A query whose value of a metric is NaN in any run (``zero_idcg=skip``) is left out of that
metric's rows, so every row of a metric and group is over the same queries; ``n`` counts them.

Random draws: for one group of queries, one bootstrap draw (seeded with ``seed``) resamples
every series at once and one sign-flip draw serves every delta: a row's numbers depend on its
queries, ``seed`` and ``n_resamples`` only, not on which other runs or metrics are shown, and
the cost of the draws is paid once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.compare import stats
from ltr.compare.align import AlignedRuns, align_tables

#: Label of the group of all queries.
ALL = "all"


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One run on one metric over one group of queries (``stratum`` is ``"all"`` or a label).

    Delta, CI of the delta, p-values and W/T/L are NaN / 0 on the baseline's own row.
    """

    metric: str
    stratum: str
    run: str
    is_baseline: bool
    n: int
    mean: float
    mean_ci_low: float
    mean_ci_high: float
    delta: float = math.nan
    delta_ci_low: float = math.nan
    delta_ci_high: float = math.nan
    p_t: float = math.nan
    p_rand: float = math.nan
    p_t_holm: float = math.nan
    p_rand_holm: float = math.nan
    wins: int = 0
    ties: int = 0
    losses: int = 0


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of `compare_runs`: rows grouped by metric, then stratum, then run."""

    labels: tuple[str, ...]
    baseline: str
    metrics: tuple[str, ...]
    strata: tuple[str, ...]
    rows: tuple[ComparisonRow, ...]
    n_queries: int
    n_dropped: tuple[int, ...]
    seed: int
    n_resamples: int
    confidence: float
    meta: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per `ComparisonRow`, columns named as its fields."""
        return pd.DataFrame([asdict(r) for r in self.rows])

    def rows_for(self, metric: str, *, baseline: bool | None = None) -> list[ComparisonRow]:
        """Rows of ``metric`` (optionally only the baseline's or only the others')."""
        return [
            r for r in self.rows if r.metric == metric and (baseline is None or r.is_baseline == baseline)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: settings, run labels, ``meta`` (e.g. split, run ids), rows; NaN is ``None``."""

        def clean(value: Any) -> Any:
            return None if isinstance(value, float) and math.isnan(value) else value

        return {
            "baseline": self.baseline,
            "labels": list(self.labels),
            "metrics": list(self.metrics),
            "strata": [ALL, *self.strata],
            "n_queries": self.n_queries,
            "n_dropped": dict(zip(self.labels, self.n_dropped, strict=True)),
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            **self.meta,
            "rows": [{k: clean(v) for k, v in asdict(r).items()} for r in self.rows],
        }


def _group_rows(
    matrices: dict[str, NDArray[np.float64]],
    group: str,
    labels: tuple[str, ...],
    baseline: int,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, list[ComparisonRow]]:
    """Rows of one group of queries for metrics whose (runs, n) matrices hold no NaN.

    One bootstrap draw serves every series (each run's values and each delta, of every metric)
    and one sign-flip draw serves every delta.
    """
    n_runs = len(labels)
    others = [i for i in range(n_runs) if i != baseline]
    metrics = list(matrices)
    n = next(iter(matrices.values())).shape[1]
    runs = np.concatenate([matrices[m] for m in metrics])  # (metrics * runs, n)
    base = np.concatenate([np.repeat(matrices[m][baseline][None, :], len(others), axis=0) for m in metrics])
    paired = np.concatenate([matrices[m][others] for m in metrics])  # (metrics * others, n)
    deltas = paired - base
    if n:
        dist = stats.bootstrap_means(np.concatenate([runs, deltas]), n_resamples=n_resamples, seed=seed)
        ci = stats.percentile_interval(dist, confidence=confidence)
        means = np.concatenate([runs, deltas]).mean(axis=1)
    else:
        ci = np.full((runs.shape[0] + deltas.shape[0], 2), np.nan)
        means = np.full(runs.shape[0] + deltas.shape[0], np.nan)
    p_t = stats.paired_t_pvalues(paired, base)
    p_rand = stats.sign_flip_pvalues(deltas, n_resamples=n_resamples, seed=seed)
    wins = np.count_nonzero(paired > base, axis=1)
    ties = np.count_nonzero(paired == base, axis=1)
    losses = np.count_nonzero(paired < base, axis=1)

    out: dict[str, list[ComparisonRow]] = {}
    n_run_rows = runs.shape[0]
    for m_index, metric in enumerate(metrics):
        def run_at(i: int, m_index: int = m_index) -> int:
            return m_index * n_runs + i

        rows = [
            ComparisonRow(
                metric=metric, stratum=group, run=labels[baseline], is_baseline=True, n=n,
                mean=float(means[run_at(baseline)]),
                mean_ci_low=float(ci[run_at(baseline), 0]), mean_ci_high=float(ci[run_at(baseline), 1]),
            )
        ]
        for j, i in enumerate(others):
            k = m_index * len(others) + j  # index among the deltas
            rows.append(
                ComparisonRow(
                    metric=metric, stratum=group, run=labels[i], is_baseline=False, n=n,
                    mean=float(means[run_at(i)]),
                    mean_ci_low=float(ci[run_at(i), 0]), mean_ci_high=float(ci[run_at(i), 1]),
                    delta=float(means[n_run_rows + k]),
                    delta_ci_low=float(ci[n_run_rows + k, 0]), delta_ci_high=float(ci[n_run_rows + k, 1]),
                    p_t=float(p_t[k]), p_rand=float(p_rand[k]),
                    wins=int(wins[k]), ties=int(ties[k]), losses=int(losses[k]),
                )
            )
        out[metric] = rows
    return out


def compare_aligned(
    aligned: AlignedRuns,
    *,
    baseline: int = 0,
    seed: int = 0,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> Comparison:
    """Compare every run of ``aligned`` with run number ``baseline`` (see the module docstring).

    Rows come per metric (in ``aligned.values`` order), per group (``all``, then strata by
    list length), baseline first, then the other runs in input order.
    """
    n_runs = len(aligned.labels)
    if not 0 <= baseline < n_runs:
        raise ValueError(f"baseline={baseline} is not a run index (0..{n_runs - 1})")
    if n_runs < 2:
        raise ValueError("a comparison needs at least two runs")
    strata = aligned.stratum_order()
    groups = [(ALL, np.ones(aligned.n_queries, dtype=bool))] + [
        (s, aligned.strata == s) for s in strata
    ]
    # A query counts for a metric when every run has a value (NaN under zero_idcg=skip).
    complete = {m: ~np.isnan(v).any(axis=0) for m, v in aligned.values.items()}
    by_key: dict[tuple[str, str], list[ComparisonRow]] = {}
    for group, in_group in groups:
        # Metrics with the same queries share their random draws.
        buckets: dict[bytes, list[str]] = {}
        for metric, ok in complete.items():
            buckets.setdefault(np.packbits(in_group & ok).tobytes(), []).append(metric)
        for metrics in buckets.values():
            keep = in_group & complete[metrics[0]]
            rows = _group_rows(
                {m: aligned.values[m][:, keep] for m in metrics}, group, aligned.labels, baseline,
                n_resamples=n_resamples, seed=seed, confidence=confidence,
            )
            by_key.update({(m, group): r for m, r in rows.items()})
    ordered = [row for metric in aligned.values for group, _ in groups for row in by_key[(metric, group)]]
    return Comparison(
        labels=aligned.labels,
        baseline=aligned.labels[baseline],
        metrics=tuple(aligned.values),
        strata=tuple(strata),
        rows=tuple(_with_holm(ordered)),
        n_queries=aligned.n_queries,
        n_dropped=aligned.n_dropped,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
    )


def _with_holm(rows: list[ComparisonRow]) -> list[ComparisonRow]:
    """Fill ``p_t_holm`` and ``p_rand_holm`` over the family of all non-baseline rows."""
    tested = [i for i, r in enumerate(rows) if not r.is_baseline]
    p_t = stats.holm([rows[i].p_t for i in tested])
    p_rand = stats.holm([rows[i].p_rand for i in tested])
    out = list(rows)
    for j, i in enumerate(tested):
        out[i] = replace(rows[i], p_t_holm=float(p_t[j]), p_rand_holm=float(p_rand[j]))
    return out


def compare_runs(
    tables: Sequence[pd.DataFrame],
    labels: Sequence[str],
    *,
    metrics: Sequence[str] = ("ndcg_at_10",),
    baseline: int = 0,
    seed: int = 0,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> Comparison:
    """Align per-query tables by qid and compare every run with ``tables[baseline]``.

    Parameters
    ----------
    tables : per-query tables of the runs (``qid``, ``list_len``, ``stratum`` and metric columns)
    labels : a distinct display label per run
    metrics : metric columns to compare (higher is better)
    baseline : index of the baseline run in ``tables``
    seed : seed of every bootstrap and randomisation draw
    n_resamples : bootstrap resamples and randomisation draws per comparison
    confidence : level of the bootstrap intervals

    Returns
    -------
    Comparison

    Examples
    --------
    >>> a = pd.DataFrame({"qid": [1, 2, 3, 4], "list_len": [5, 5, 20, 20],
    ...                   "stratum": ["1-10", "1-10", "11-50", "11-50"], "m": [0.5, 0.6, 0.7, 0.8]})
    >>> b = a.assign(m=[0.4, 0.6, 0.9, 0.1])
    >>> c = compare_runs([a, b], ["a", "b"], metrics=["m"], n_resamples=100)
    >>> [(r.stratum, r.run, r.n, r.wins, r.ties, r.losses) for r in c.rows_for("m", baseline=False)]
    [('all', 'b', 4, 1, 1, 2), ('1-10', 'b', 2, 0, 1, 1), ('11-50', 'b', 2, 1, 0, 1)]
    """
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be distinct, got {list(labels)}")
    aligned = align_tables(tables, labels, metrics=metrics)
    return compare_aligned(
        aligned, baseline=baseline, seed=seed, n_resamples=n_resamples, confidence=confidence
    )
