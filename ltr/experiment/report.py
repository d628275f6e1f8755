"""The end-of-run summary: one table of NDCG per split, overall and per list-length stratum.

The same rows are printed to the terminal (rich) and logged as ``report/summary.md``; the run's
description in the MLflow UI is that summary under a lead line (:func:`page_markdown`,
:func:`run_lead`), with a click log's clicks, propensities and off-policy summary
(:func:`clicks_markdown`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ltr.metrics import Strata
from ltr.metrics.clicks.propensity import PropensityEstimate
from ltr.runtime.terminal import console as terminal_console

Summary = Mapping[str, float]


def summary_rows(
    summaries: Mapping[str, Summary], *, ks: Sequence[int], strata: Strata
) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per stratum (``all`` first), per split: queries and NDCG@k."""
    header = ["stratum"]
    for split in summaries:
        header += [f"{split} queries"] + [f"{split} nDCG@{k}" for k in ks]
    rows: list[list[str]] = []
    for label, suffix in [("all", "")] + [(lab, f"/{key}") for lab, key in zip(strata.labels, strata.keys, strict=True)]:
        row = [label]
        for summary in summaries.values():
            n = summary.get(f"n_queries{suffix}", 0.0)
            row.append(str(int(n)))
            for k in ks:
                value = summary.get(f"ndcg_at_{k}{suffix}")
                row.append("-" if value is None else f"{value:.4f}")
        rows.append(row)
    return header, rows


def rerank_rows(
    metrics: Mapping[str, float], *, splits: Sequence[str], k: int, measures: Sequence[str], strata: Strata
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a re-ranked run's before/after table: one row per stratum (``all``
    first); per split and measure (``ndcg``, ``ild``, ...) at cut-off ``k`` a cell ``model's
    order -> final order (difference)`` from the flat ``metrics`` (``valid/pre_rerank/ndcg_at_10``
    and ``valid/ndcg_at_10``, per stratum with the ``/len_...`` suffix)."""
    names = {"ndcg": "nDCG", "ild": "ILD", "coverage": "coverage", "alpha_ndcg": "alpha-nDCG"}
    header = ["stratum"] + [f"{split} {names.get(m, m)}@{k}" for split in splits for m in measures]
    rows: list[list[str]] = []
    for label, suffix in [("all", "")] + [(lab, f"/{key}") for lab, key in zip(strata.labels, strata.keys, strict=True)]:
        row = [label]
        for split in splits:
            for measure in measures:
                before = metrics.get(f"{split}/pre_rerank/{measure}_at_{k}{suffix}")
                after = metrics.get(f"{split}/{measure}_at_{k}{suffix}")
                row.append("-" if before is None or after is None else f"{before:.4f} → {after:.4f} ({after - before:+.4f})")
        rows.append(row)
    return header, rows


def to_markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def print_table(header: list[str], rows: list[list[str]], *, title: str) -> None:
    """Print the table to stdout with rich."""
    from rich.table import Table

    table = Table(title=title)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    terminal_console().print(table)


#: Positions of a click log's propensity curve a run's description shows.
DESCRIBED_POSITIONS = 5


def page_markdown(summary_md: str, lead: str) -> str:
    """A run's description (``mlflow.note.content``) from its ``summary_md`` (a ``# title``, its
    ``## sections``): ``lead`` first, a paragraph of at most two lines (the MLflow run page
    shows the first 100 px of a description, its lower part faded, until *Show more*: the lead
    is what that box shows whole), then the summary with every heading two levels down (the
    title a heading of the page's size, its sections below it).

    >>> print(page_markdown("# t\\n\\ntext\\n\\n## s\\n", "**lead**"))
    **lead**
    <BLANKLINE>
    ### t
    <BLANKLINE>
    text
    <BLANKLINE>
    #### s
    <BLANKLINE>
    """
    body = "\n".join("##" + line if line.startswith("#") else line for line in summary_md.split("\n"))
    return f"{lead}\n\n{body}" if lead else body


def run_lead(metrics: Mapping[str, float], *, optimized: str, k: int, best_round: int, n_rounds: int, clicks: str = "") -> str:
    """The lead of a run's description: its optimised metric and test nDCG@k in bold, its best
    round, then ``clicks`` (what a click-log run trained on and its propensities).

    >>> run_lead({"valid/ndcg_at_10": 0.52151, "test/ndcg_at_10": 0.56}, optimized="valid/ndcg_at_10", k=10,
    ...          best_round=8, n_rounds=13)
    '**valid nDCG@10 0.5215 · test nDCG@10 0.5600** · best round 8 of 13'
    """
    shown = [key for key in dict.fromkeys([optimized, f"test/ndcg_at_{k}"]) if key in metrics]
    values = " · ".join(f"{metric_label(key)} {metrics[key]:.4f}" for key in shown)
    parts = [f"**{values}**"] if values else []
    parts.append(f"best round {best_round} of {n_rounds}")
    if clicks:
        parts.append(clicks)
    return " · ".join(parts)


def metric_label(key: str) -> str:
    """A metric key as a description says it: ``valid/ndcg_at_10`` -> ``valid nDCG@10``; other
    keys as they are.

    >>> metric_label("valid/ndcg_at_10"), metric_label("test/clicks_ips/ndcg_at_5"), metric_label("valid/err_at_10")
    ('valid nDCG@10', 'test clicks_ips nDCG@5', 'valid/err_at_10')
    """
    parts = key.split("/")
    last = parts[-1]
    if last.startswith("ndcg_at_") and last.removeprefix("ndcg_at_").isdigit():
        return " ".join([*parts[:-1], f"nDCG@{last.removeprefix('ndcg_at_')}"])
    return key


def propensity_text(propensity: PropensityEstimate, n: int = DESCRIBED_POSITIONS) -> str:
    """A propensity curve's first ``n`` positions with their intervals, or ``no interval``
    where the curve has none (a given curve, no bootstrap); a position the estimator could not
    reach is ``not identified``.

    >>> import numpy as np
    >>> est = PropensityEstimate(np.array([1.0, 0.4, 0.3, np.nan]), np.array([1.0, 0.3, np.nan, np.nan]),
    ...                          np.array([1.0, 0.5, np.nan, np.nan]), "em", n_bootstrap=50)
    >>> propensity_text(est)
    '1: 1.000 · 2: 0.400 [0.300, 0.500] · 3: 0.300 no interval · 4: not identified (95 % intervals, 50 resamples)'
    >>> propensity_text(PropensityEstimate(np.array([1.0, 0.5]), np.array([1.0, 0.5]), np.array([1.0, 0.5]), "given"))
    '1: 1.000 · 2: 0.500 (no interval)'
    """
    interval = propensity.method != "given" and propensity.n_bootstrap > 0
    cells: list[str] = []
    for k in range(1, min(n, propensity.n_positions) + 1):
        value, low, high = (float(a[k - 1]) for a in (propensity.propensities, propensity.low, propensity.high))
        if not math.isfinite(value):
            cells.append(f"{k}: not identified")
        elif k == 1 or not interval:
            cells.append(f"{k}: {value:.3f}")
        elif not (math.isfinite(low) and math.isfinite(high)):  # withheld at this position (EM outside the randomized interval)
            cells.append(f"{k}: {value:.3f} no interval")
        else:
            cells.append(f"{k}: {value:.3f} [{low:.3f}, {high:.3f}]")
    note = (
        f"{propensity.confidence * 100:g} % intervals, {propensity.n_bootstrap} resamples" if interval else "no interval"
    )
    return " · ".join(cells) + f" ({note})"


def clicks_markdown(
    metrics: Mapping[str, float],
    propensity: PropensityEstimate,
    *,
    click_column: str,
    method: str,
    labels: Mapping[str, str],
    splits: Sequence[str],
    k: int,
) -> str:
    """The ``## Clicks`` section of a click-log run's summary: the click column (``click_column``:
    the log's column, or what the simulator names), the label sources (``labels``, role ->
    source), the propensities in use (``eval.clicks.propensity`` = ``method``,
    :func:`propensity_text`), then per evaluated split the off-policy summary the run logged at
    cut-off ``k``: nDCG on the judged labels, the naive and IPS click nDCG, the true grades of
    the clicked queries and the simulated CTR where the run has them (the simulator's log)."""
    trained = labels.get("train", "")
    lines = [
        "## Clicks", "",
        f"Click column `{click_column}`" + (f"; trained on `{trained}`, judged on `{labels.get('eval', '')}`" if trained else "") + ".",
        "",
        f"Propensities (`eval.clicks.propensity={method}`), positions 1-{min(DESCRIBED_POSITIONS, propensity.n_positions)}: "
        f"{propensity_text(propensity)}; every position: `data/propensity.json`.",
    ]  # fmt: skip
    columns = [
        (f"ndcg_at_{k}", f"nDCG@{k}"), (f"clicks/ndcg_at_{k}", f"clicks nDCG@{k} (naive)"),
        (f"clicks_ips/ndcg_at_{k}", f"clicks nDCG@{k} (IPS)"), (f"clicks_truth/ndcg_at_{k}", f"true grades of clicked queries nDCG@{k}"),
        ("online/ctr", "simulated CTR (95 % interval)"),
    ]  # fmt: skip
    present = [(key, name) for key, name in columns[1:] if any(f"{split}/{key}" in metrics for split in splits)]
    if present:
        header = ["split", columns[0][1], *(name for _, name in present)]
        rows: list[list[str]] = []
        for split in splits:
            row = [split, _cell(metrics, f"{split}/{columns[0][0]}")]
            for key, _ in present:
                cell = _cell(metrics, f"{split}/{key}")
                if key == "online/ctr" and f"{split}/online/ctr_ci_low" in metrics:
                    cell += f" [{metrics[f'{split}/online/ctr_ci_low']:.4f}, {metrics[f'{split}/online/ctr_ci_high']:.4f}]"
                row.append(cell)
            rows.append(row)
        lines += ["", "Off-policy summary:", "", to_markdown(header, rows).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _cell(metrics: Mapping[str, float], key: str) -> str:
    return f"{metrics[key]:.4f}" if key in metrics else "-"
