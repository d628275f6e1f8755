"""Compare runs per query: align their per-query tables, then paired statistics per stratum.

Pure numpy / scipy / pandas; nothing here reads a tracking store (that is
:mod:`ltr.tracking.runs`) or prints (that is :mod:`ltr.compare.render` and ``ltr compare``).
The statistical conventions are written once, in :mod:`ltr.compare.stats`.
"""

from __future__ import annotations

from ltr.compare.align import AlignedRuns, align_tables
from ltr.compare.comparison import ALL, Comparison, ComparisonRow, compare_aligned, compare_runs
from ltr.compare.stats import (
    bootstrap_means,
    holm,
    paired_bootstrap_ci,
    paired_t_pvalue,
    paired_t_pvalues,
    percentile_interval,
    sign_flip_pvalue,
    sign_flip_pvalues,
    wins_ties_losses,
)

__all__ = [
    "ALL",
    "AlignedRuns",
    "Comparison",
    "ComparisonRow",
    "align_tables",
    "bootstrap_means",
    "compare_aligned",
    "compare_runs",
    "holm",
    "paired_bootstrap_ci",
    "paired_t_pvalue",
    "paired_t_pvalues",
    "percentile_interval",
    "sign_flip_pvalue",
    "sign_flip_pvalues",
    "wins_ties_losses",
]
