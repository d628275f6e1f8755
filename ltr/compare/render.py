"""A `Comparison` as text: markdown, JSON, or rich tables for the terminal (one per metric)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from ltr.compare.comparison import Comparison, ComparisonRow
from ltr.metrics.measures import Measure

if TYPE_CHECKING:
    from rich.table import Table

HEADER = ["stratum", "n", "run", "mean", "delta", "95% CI of delta", "p t-test", "p rand", "p Holm t", "p Holm rand", "W/T/L"]

def display_name(metric: str) -> str:
    """``ndcg_at_10`` -> ``nDCG@10``, ``rr`` -> ``RR``; other names unchanged.

    Examples
    --------
    >>> display_name("ndcg_at_10"), display_name("p_at_5"), display_name("rr")
    ('nDCG@10', 'P@5', 'RR')
    """
    try:
        return Measure.from_key(metric).display
    except ValueError:  # a composite or another column: its own name
        return metric


def _num(value: float, digits: int = 4) -> str:
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def _signed(value: float) -> str:
    return "" if math.isnan(value) else f"{value:+.4f}"


def _p(value: float) -> str:
    if math.isnan(value):
        return ""
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def _cells(row: ComparisonRow) -> list[str]:
    if row.is_baseline:
        return [row.stratum, str(row.n), row.run, _num(row.mean), "baseline", "", "", "", "", "", ""]
    ci = "" if math.isnan(row.delta_ci_low) else f"[{row.delta_ci_low:+.4f}, {row.delta_ci_high:+.4f}]"
    return [
        row.stratum,
        str(row.n),
        row.run,
        _num(row.mean),
        _signed(row.delta),
        ci,
        _p(row.p_t),
        _p(row.p_rand),
        _p(row.p_t_holm),
        _p(row.p_rand_holm),
        f"{row.wins}/{row.ties}/{row.losses}",
    ]


def title(comparison: Comparison, metric: str) -> str:
    """``nDCG@10 on test: baseline 'a'`` (the split when known from ``meta``)."""
    split = comparison.meta.get("split")
    where = f" on {split}" if split else ""
    return f"{display_name(metric)}{where}: runs vs baseline {comparison.baseline!r}"


def legend(comparison: Comparison) -> list[str]:
    """Lines that explain the columns and name the runs (ids from ``meta["runs"]`` if present)."""
    n_tests = sum(not r.is_baseline for r in comparison.rows)
    lines = [
        f"{comparison.n_queries} queries aligned by qid"
        + (
            ""
            if not any(comparison.n_dropped)
            else " (not shared, left out: "
            + ", ".join(f"{lab} {n}" for lab, n in zip(comparison.labels, comparison.n_dropped, strict=True) if n)
            + ")"
        ),
        f"delta = run - baseline; {comparison.confidence:.0%} CI: paired bootstrap, "
        f"{comparison.n_resamples} resamples, seed {comparison.seed}",
        f"p: paired t-test, paired sign-flip randomisation test ({comparison.n_resamples} draws); "
        f"Holm over the {n_tests} comparisons shown",
        "W/T/L: queries where the run beats / ties / loses to the baseline",
    ]
    for run in comparison.meta.get("runs", []):
        lines.append(f"run {run['label']!r}: {run['run_id']}")
    return lines


def to_markdown(comparison: Comparison) -> str:
    """One markdown table per metric, then the legend as a bullet list."""
    out: list[str] = []
    for metric in comparison.metrics:
        out += [f"**{title(comparison, metric)}**", ""]
        out += ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" if h in ("stratum", "run") else "--:" for h in HEADER) + "|"]
        out += ["| " + " | ".join(_cells(r)) + " |" for r in comparison.rows_for(metric)]
        out.append("")
    out += [f"- {line}" for line in legend(comparison)]
    return "\n".join(out) + "\n"


def to_json(comparison: Comparison) -> str:
    """`Comparison.to_dict` as indented JSON (NaN as ``null``)."""
    return json.dumps(comparison.to_dict(), indent=2, allow_nan=False)


def rich_tables(comparison: Comparison, *, alpha: float = 0.05) -> list[Table]:
    """One rich table per metric; deltas whose Holm-adjusted randomisation p < ``alpha`` are
    coloured (green better, red worse)."""
    from rich.markup import escape
    from rich.table import Table

    tables = []
    for metric in comparison.metrics:
        table = Table(title=escape(title(comparison, metric)))
        for i, name in enumerate(HEADER):
            table.add_column(name, justify="left" if name in ("stratum", "run") else "right", no_wrap=i != 2)
        previous = None
        for row in comparison.rows_for(metric):
            cells = [escape(c) for c in _cells(row)]
            if not row.is_baseline and row.p_rand_holm < alpha:
                colour = "green" if row.delta > 0 else "red"
                cells[4] = f"[{colour}]{cells[4]}[/{colour}]"
            if previous is not None and row.stratum != previous:
                table.add_section()
            previous = row.stratum
            table.add_row(*cells)
        tables.append(table)
    return tables
