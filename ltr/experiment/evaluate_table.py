"""``ltr evaluate``'s summary as a terminal table (:func:`print_evaluation_table`), for the
result of :func:`ltr.experiment.external.evaluate_rankings`."""

from __future__ import annotations

from typing import Any

from ltr.metrics import Strata
from ltr.metrics.measures import Measure, trec_eval_name
from ltr.runtime.terminal import console as terminal_console

__all__ = ["fmt", "print_evaluation_table"]


def print_evaluation_table(
    summary: dict[str, float | None],
    measures: list[Measure],
    strata: Strata,
    conv: dict[str, Any],
    preset: str | None,
    composites: list[str] | None = None,
    *,
    stderr: bool = False,
) -> None:
    """Print ``ltr evaluate``'s table (on stderr with ``stderr``): a row per measure (its
    trec_eval name beside it under ``preset`` trec_eval) and per composite, a column for all
    queries and one per list-length stratum (and the empty lists'), the conventions in its
    title; then the no-result rate and the queries skipped for IDCG = 0."""
    composites = composites or []
    from rich.table import Table

    keys = [*strata.keys]
    labels = [*strata.labels]
    if "n_queries/len_empty" in summary:
        keys.append("len_empty")
        labels.append("empty")
    if conv.get("discount") == "log2_rank_plus_1":
        conv = {k: v for k, v in conv.items() if k != "discount_base"}  # the base is jarvelin's only
    if isinstance(conv.get("discount"), tuple):
        conv = conv | {"discount": ",".join(f"{w:g}" for w in conv["discount"])}
    conv_text = ", ".join(f"{k}={v}" for k, v in conv.items() if v is not None)
    title = f"ltr evaluate ({'preset ' + preset + ': ' if preset else ''}{conv_text})"
    table = Table(title=title, title_justify="left")
    table.add_column("measure")
    table.add_column("all", justify="right")
    for lab in labels:
        table.add_column(f"len {lab}", justify="right")
    table.add_row(
        "queries",
        f"{summary['n_queries']:.0f}",
        *(f"{summary[f'n_queries/{k}']:.0f}" for k in keys),
    )
    for m in measures:
        cells = [fmt(summary.get(m.key))] + [fmt(summary.get(f"{m.key}/{k}")) for k in keys]
        peer = trec_eval_name(m) if preset == "trec_eval" else None
        table.add_row(m.display if peer is None else f"{m.display} ({peer})", *cells)
    for name in composites:
        table.add_row(name, fmt(summary.get(name)), *(fmt(summary.get(f"{name}/{k}")) for k in keys))
    console = terminal_console(stderr=stderr)
    console.print(table)
    console.print(
        f"no-result rate {summary['no_result_rate']:.4f}; "
        f"queries skipped for IDCG = 0: {summary['n_skipped_zero_idcg']:.0f}"
    )


def fmt(value: float | None) -> str:
    """A value of the table: 4 decimals, ``-`` for none."""
    return "-" if value is None else f"{value:.4f}"
